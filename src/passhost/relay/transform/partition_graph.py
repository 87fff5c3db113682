"""PartitionGraph: move each annotated region into a module function for its target.

A region is what ``annotation.compiler_end(K)`` reaches backwards before meeting
``annotation.compiler_begin(K)`` nodes (constants are inside). It becomes a function tagged
``Compiler=K``, ``global_symbol=<K>_main_<n>`` and ``Primitive=1`` (``K`` with characters that
cannot be in an identifier replaced by ``_``), called from where the region was.
"""

from __future__ import annotations

import re

from passhost.errors import PasshostError
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.ir.types import FuncType
from passhost.relay.expr import Call, Constant, Function, Var
from passhost.relay.op.annotation import compiler_begin, compiler_end
from passhost.relay.transform.common import optimisable
from passhost.relay.visitor import ExprMutator, post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["PartitionError", "PartitionGraph", "kind_identifier"]


class PartitionError(PasshostError, ValueError):
    """The compiler annotations do not delimit regions PartitionGraph can extract."""


def kind_identifier(kind: str) -> str:
    """``kind`` with every character that cannot be in an identifier replaced by ``_``."""
    return re.sub(r"[^0-9A-Za-z_]", "_", kind)


def _is_annotation(node: BaseExpr, op: object) -> bool:
    return isinstance(node, Call) and node.op is op


def _kind(node: Call) -> str:
    return node.attrs.compiler  # type: ignore[union-attr]


def _describe(node: BaseExpr) -> str:
    if isinstance(node, Var):
        return f"variable %{node.name_hint}"
    if isinstance(node, Call) and not isinstance(node.op, (Function, GlobalVar)):
        return f"a call of {node.op.name}"  # type: ignore[attr-defined]
    return f"a {type(node).__name__}"


def _is_function(node: BaseExpr) -> bool:
    return isinstance(node, Function)


def _is_region_stop(node: BaseExpr) -> bool:
    return (_is_annotation(node, compiler_begin) or _is_annotation(node, compiler_end)
            or isinstance(node, Function))


@module_pass(opt_level=0, name="PartitionGraph")
class PartitionGraph:
    """Turn each ``compiler_begin``/``compiler_end`` region into a ``Compiler=<kind>``
    function of the module and call it instead; remove the annotations."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Partition every optimisable graph function (the same module if nothing is
        annotated)."""
        partitioner = _Partitioner(mod)
        changed = {}
        for gvar, func in mod.functions.items():
            if optimisable(func):
                new = partitioner.partition(func)
                if new is not func:
                    changed[gvar] = new
        if not changed:
            return mod
        return mod.with_functions({**changed, **partitioner.created})


class _Partitioner:
    """Extracts regions into new module functions, numbered per target kind."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.created: dict[GlobalVar, Function] = {}
        self.counters: dict[str, int] = {}

    def partition(self, func: Function) -> Function:
        """``func`` with each region replaced by a call of its new function."""
        nodes = post_order(func.body, stop=_is_function)
        begins = [n for n in nodes if _is_annotation(n, compiler_begin)]
        ends = [n for n in nodes if _is_annotation(n, compiler_end)]
        if not begins and not ends:
            return func
        owner: dict[int, Call] = {}
        boundary: set[int] = set()
        calls = {}
        for end in ends:
            region_begins, has_call = self._region(end, owner)
            boundary.update(id(b) for b in region_begins)
            if has_call:
                calls[id(end)] = (self._extract(end, region_begins), region_begins)
        for begin in begins:
            if id(begin) not in boundary:
                raise PartitionError(f"PartitionGraph: compiler_begin({_kind(begin)}) on "
                                     f"{_describe(begin.args[0])} has no compiler_end")
        rewriter = _MainRewriter(calls)
        rewriter.memo.update({id(n): n for n in nodes if isinstance(n, Function)})
        body = rewriter.visit(func.body)
        return Function(func.params, body, func.ret_type, func.attrs, span=func.span)

    def _region(self, end: Call, owner: dict[int, Call]) -> tuple[list[Call], bool]:
        """The begin nodes bounding ``end``'s region (first appearance order), and whether
        the region holds a call; checks the region is well formed."""
        kind = _kind(end)
        region_begins: list[Call] = []
        has_call = False
        for node in post_order(end.args[0], stop=_is_region_stop):
            if _is_annotation(node, compiler_begin):
                if _kind(node) != kind:
                    raise PartitionError(
                        f"PartitionGraph: the region of compiler_end({kind}) starts at "
                        f"compiler_begin({_kind(node)}); the kinds must match")
                region_begins.append(node)
            elif isinstance(node, (Constant, Function)):
                continue
            elif _is_annotation(node, compiler_end) or isinstance(node, Var):
                raise PartitionError(
                    f"PartitionGraph: the region of compiler_end({kind}) reaches "
                    f"{_describe(node)} without passing a compiler_begin")
            else:
                if owner.setdefault(id(node), end) is not end:
                    raise PartitionError(
                        f"PartitionGraph: {_describe(node)} is reachable from two different "
                        f"compiler_end({kind}) annotations without a compiler_begin between")
                has_call = has_call or isinstance(node, Call)
        return region_begins, has_call

    def _extract(self, end: Call, region_begins: list[Call]) -> GlobalVar:
        """Add the function of ``end``'s region to the created functions; its GlobalVar."""
        kind = _kind(end)
        ident = kind_identifier(kind)
        n = self._next_number(ident)
        types = [b.checked_type for b in region_begins]
        params = [Var(f"{ident}_{n}_i{k}", ty) for k, ty in enumerate(types)]
        builder = ExprMutator()
        builder.memo.update({id(b): p for b, p in zip(region_begins, params)})
        body = builder.visit(end.args[0])
        symbol = f"{ident}_main_{n}"
        ret_type = end.checked_type  # the annotation is the identity: the region's type
        func = Function(params, body, ret_type,
                        {"Compiler": kind, "global_symbol": symbol, "Primitive": 1})
        gvar = GlobalVar(symbol, FuncType(types, ret_type))
        self.created[gvar] = func
        return gvar

    def _next_number(self, ident: str) -> int:
        n = self.counters.get(ident, 0)
        while f"{ident}_main_{n}" in self.mod:
            n += 1
        self.counters[ident] = n + 1
        return n


class _MainRewriter(ExprMutator):
    """Replace each partitioned region's end by a call of its function on the begins'
    arguments; drop every other annotation."""

    def __init__(self, calls: dict[int, tuple[GlobalVar, list[Call]]]) -> None:
        super().__init__()
        self.calls = calls

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """The call of the region's function, the argument of an annotation, or the
        default."""
        extracted = self.calls.get(id(call))
        if extracted is not None:
            gvar, region_begins = extracted
            return Call(gvar, [self.memo[id(b)] for b in region_begins], span=call.span)
        if call.op is compiler_begin or call.op is compiler_end:
            return args[0]
        return super().visit_call(call, op, args)
