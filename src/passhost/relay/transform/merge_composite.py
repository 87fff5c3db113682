"""MergeComposite: wrap matches of a pattern table in ``Composite`` functions.

Each match becomes a call of a small function tagged ``Composite=<name>`` (and
``PartitionedFromPattern``, the matched operators in post order), so that an external target
sees, for example, conv2d + bias_add + relu as one unit. Patterns come from
:mod:`passhost.relay.dataflow_pattern`; named tables are registered there
(:func:`~passhost.relay.dataflow_pattern.register_pattern_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from attrs import frozen

from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.plugins.options import STR
from passhost.relay.dataflow_pattern import (
    Check,
    Pattern,
    VarPattern,
    WildcardPattern,
    get_pattern_table,
    match_bindings,
    node_key,
    normalize_pattern_table,
)
from passhost.relay.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from passhost.relay.op.registry import Op
from passhost.relay.transform.common import map_graph_functions
from passhost.relay.visitor import ExprMutator, post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["MergeComposite"]

_ROOT_KINDS = (Call, Tuple, TupleGetItem)


def _is_function(node: BaseExpr) -> bool:
    return isinstance(node, Function)


def _is_value(node: BaseExpr) -> bool:
    """Constants and functions: values that several matches (and users) may share."""
    return isinstance(node, (Constant, Function))


@module_pass(opt_level=0, name="MergeComposite")
class MergeComposite:
    """Wrap every match of ``pattern_table`` (entries ``(name, pattern)`` or ``(name,
    pattern, check)``, or the name of a registered table) in a Composite function call.
    Entries are applied in order, so earlier entries win; an empty table does nothing."""

    def __init__(self, pattern_table: Annotated[
            str | Sequence[tuple] | None, STR,
            "the name of a registered pattern table"] = None) -> None:
        if pattern_table is None:
            pattern_table = ()
        if isinstance(pattern_table, str):
            self.pattern_table = get_pattern_table(pattern_table)
        else:
            self.pattern_table = normalize_pattern_table(
                pattern_table, "MergeComposite option 'pattern_table'")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Merge matches in every optimisable graph function."""
        if not self.pattern_table:
            return mod
        return map_graph_functions(mod, self.merge_function)

    def merge_function(self, func: Function) -> Function:
        """``func`` with the matches of the pattern table wrapped (``func`` if none)."""
        nodes = post_order(func.body, stop=_is_function)
        users = _count_users(nodes)
        claimed: set[int] = set()
        found: dict[int, _Match] = {}
        for name, pattern, check in self.pattern_table:
            keys = pattern.root_keys()
            for node in reversed(nodes):
                if id(node) in claimed or not isinstance(node, _ROOT_KINDS):
                    continue
                if keys is not None and node_key(node) not in keys:
                    continue
                match = _match_at(name, pattern, check, node, users, claimed)
                if match is not None:
                    found[id(node)] = match
                    claimed.update(id(n) for n in match.inside if not _is_value(n))
        if not found:
            return func
        rewriter = _CompositeRewriter(found)
        rewriter.memo.update({id(n): n for n in nodes if isinstance(n, Function)})
        body = rewriter.visit(func.body)
        return Function(func.params, body, func.ret_type, func.attrs, span=func.span)


@frozen(eq=False)
class _Match:
    """An accepted match: its composite name, its inputs (first appearance order) and the
    nodes it puts inside the composite (post order, the root last)."""

    name: str
    inputs: tuple[BaseExpr, ...]
    inside: tuple[BaseExpr, ...]


def _count_users(nodes: Sequence[BaseExpr]) -> dict[int, int]:
    """How many times each node is referred to by ``nodes`` (nested functions' bodies are
    not looked into)."""
    users: dict[int, int] = {}
    for node in nodes:
        if isinstance(node, Function) or not isinstance(node, Expr):
            continue
        for child in node.children():
            users[id(child)] = users.get(id(child), 0) + 1
    return users


def _split(bindings: dict[Pattern, BaseExpr]) -> tuple[tuple[BaseExpr, ...],
                                                       tuple[BaseExpr, ...]]:
    """The inputs of a match (what wildcards and variable patterns matched) and the nodes
    it holds, each in first-appearance post order (the order in which matching bound them:
    children before parents, left to right; the root comes last)."""
    input_ids = {id(e) for p, e in bindings.items()
                 if isinstance(p, (WildcardPattern, VarPattern)) or isinstance(e, Var)}
    inputs: dict[int, BaseExpr] = {}
    inside: dict[int, BaseExpr] = {}
    for expr in bindings.values():
        if isinstance(expr, Op):
            continue
        if id(expr) in input_ids and not isinstance(expr, (Function, GlobalVar)):
            inputs.setdefault(id(expr), expr)
        else:
            inside.setdefault(id(expr), expr)
    return tuple(inputs.values()), tuple(inside.values())


def _match_at(name: str, pattern: Pattern, check: Check | None, root: BaseExpr,
              users: dict[int, int], claimed: set[int]) -> _Match | None:
    """The match of ``pattern`` rooted at ``root`` if it may become a composite: no node
    already in a composite, no interior node used outside, and ``check(root)`` true."""
    bindings = match_bindings(pattern, root)
    if bindings is None:
        return None
    inputs, inside = _split(bindings)
    if not inside or inside[-1] is not root:
        return None  # the root itself is an input: nothing to wrap
    if any(id(n) in claimed for n in inside if not _is_value(n)):
        return None
    if not _only_used_inside(inside, users):
        return None
    if check is not None and not check(root):
        return None
    return _Match(name, inputs, inside)


def _only_used_inside(inside: tuple[BaseExpr, ...], users: dict[int, int]) -> bool:
    """True when every interior node (all but the root; constants and functions are values
    that may be shared) is used only by nodes of the match."""
    inner_uses = _count_users(inside)
    for node in inside[:-1]:
        if not _is_value(node) and inner_uses.get(id(node), 0) != users.get(id(node), 0):
            return False
    return True


def _pattern_name(inside: tuple[BaseExpr, ...]) -> str:
    """TVM's ``PartitionedFromPattern``: the matched operators in post order, each
    followed by ``_`` (tuple projections appear as ``TupleGetItem<index>_``)."""
    parts = []
    for node in inside:
        if isinstance(node, Call) and isinstance(node.op, Op):
            parts.append(node.op.name + "_")
        elif isinstance(node, TupleGetItem):
            parts.append(f"TupleGetItem{node.index}_")
        elif isinstance(node, Tuple):
            parts.append("Tuple_")
    return "".join(parts)


def _composite_function(match: _Match) -> Function:
    """The composite function of ``match``: one parameter per input, the matched nodes (with
    their constants) as body."""
    params = [Var(f"in{k}", inp.checked_type) for k, inp in enumerate(match.inputs)]
    builder = ExprMutator()
    builder.memo.update({id(inp): p for inp, p in zip(match.inputs, params)})
    builder.memo.update({id(n): n for n in match.inside if isinstance(n, Function)})
    body = builder.visit(match.inside[-1])
    return Function(params, body, None, {"Composite": match.name,
                                         "PartitionedFromPattern": _pattern_name(match.inside)})


class _CompositeRewriter(ExprMutator):
    """Replace the root of each match by a call of its composite function."""

    def __init__(self, matches: dict[int, _Match]) -> None:
        super().__init__()
        self.matches = matches

    def _composite_call(self, match: _Match, node: BaseExpr) -> Call:
        args = [self.memo[id(inp)] for inp in match.inputs]
        return Call(_composite_function(match), args, span=node.span)

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """A composite call for a match root, else the default."""
        match = self.matches.get(id(call))
        if match is not None:
            return self._composite_call(match, call)
        return super().visit_call(call, op, args)

    def visit_tuple(self, tup: Tuple, fields: list[BaseExpr]) -> BaseExpr:
        """A composite call for a match root, else the default."""
        match = self.matches.get(id(tup))
        if match is not None:
            return self._composite_call(match, tup)
        return super().visit_tuple(tup, fields)

    def visit_tuple_get_item(self, item: TupleGetItem, tuple_value: BaseExpr) -> BaseExpr:
        """A composite call for a match root, else the default."""
        match = self.matches.get(id(item))
        if match is not None:
            return self._composite_call(match, item)
        return super().visit_tuple_get_item(item, tuple_value)
