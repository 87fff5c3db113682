"""AnnotateTarget: mark the calls external targets support with compiler annotations.

A call is supported by target kind ``K`` when it calls a Composite function named ``K.<...>``
(as MergeComposite makes from ``K``'s pattern table), or when an operator-support predicate
registered here with :func:`register_op_support` accepts it. Each supported call becomes its
own region: its non-constant arguments are wrapped in ``annotation.compiler_begin`` and its
result in ``annotation.compiler_end`` (regions are not merged). PartitionGraph then moves each
region into a function tagged ``Compiler=K``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

from passhost.errors import OptionError
from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.plugins.options import STR_LIST
from passhost.relay.expr import Call, Constant, Function
from passhost.relay.op.annotation import compiler_begin, compiler_end
from passhost.relay.op.registry import Op, get_op
from passhost.relay.transform.common import map_graph_functions
from passhost.relay.visitor import ExprMutator, post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["AnnotateTarget", "register_op_support", "supported_kind"]

OpPredicate = Callable[[Call], object]

_OP_SUPPORT: dict[tuple[str, str], OpPredicate | None] = {}


def register_op_support(kind: str, op_name: str, predicate: OpPredicate | None = None, *,
                        override: bool = False) -> None:
    """Declare that target kind ``kind`` runs calls of operator ``op_name`` (those for which
    ``predicate(call)`` is true, when given)."""
    get_op(op_name)  # unknown operators are errors listing close matches
    key = (kind, op_name)
    if key in _OP_SUPPORT and not override:
        raise ValueError(f"support of {op_name} by {kind!r} is already registered "
                         f"(pass override=True to replace it)")
    _OP_SUPPORT[key] = predicate


def _supports(kind: str, call: Call) -> bool:
    op = call.op
    if isinstance(op, Function):
        composite = op.attrs.get("Composite")
        return isinstance(composite, str) and composite.startswith(kind + ".")
    if not isinstance(op, Op) or (kind, op.name) not in _OP_SUPPORT:
        return False
    predicate = _OP_SUPPORT[(kind, op.name)]
    return predicate is None or bool(predicate(call))


def supported_kind(call: Call, kinds: Sequence[str]) -> str | None:
    """The first of ``kinds`` that supports ``call``, or None."""
    for kind in kinds:
        if _supports(kind, call):
            return kind
    return None


def _check_kinds(kinds: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(kinds, str):
        kinds = (kinds,)
    try:
        out = tuple(kinds)
    except TypeError:
        raise OptionError(f"AnnotateTarget: option 'kinds' expected target kind names, "
                          f"found {kinds!r}") from None
    for kind in out:
        if not isinstance(kind, str) or not kind:
            raise OptionError(f"AnnotateTarget: option 'kinds' expected target kind names, "
                              f"found {kind!r}")
    return out


def _is_function(node: BaseExpr) -> bool:
    return isinstance(node, Function)


@module_pass(opt_level=0, name="AnnotateTarget", required=("InferType",))
class AnnotateTarget:
    """Wrap each call supported by one of ``kinds`` (the first that supports it wins) in
    ``compiler_begin``/``compiler_end`` annotations naming that kind."""

    def __init__(self, kinds: Annotated[Sequence[str] | str, STR_LIST,
                                        "the target kinds, e.g. cmsis-nn"] = ()) -> None:
        self.kinds = _check_kinds(kinds)
        if not self.kinds:
            raise OptionError("AnnotateTarget: option 'kinds' is empty; name at least one "
                              "target kind (e.g. kinds=['cmsis-nn'])")

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Annotate every optimisable graph function."""
        return map_graph_functions(mod, self.annotate_function)

    def annotate_function(self, func: Function) -> Function:
        """``func`` with its supported calls annotated (``func`` if there are none)."""
        nodes = post_order(func.body, stop=_is_function)
        regions = {}
        for node in nodes:
            if isinstance(node, Call):
                kind = supported_kind(node, self.kinds)
                if kind is not None:
                    regions[id(node)] = kind
        if not regions:
            return func
        annotator = _Annotator(regions)
        annotator.memo.update({id(n): n for n in nodes if isinstance(n, Function)})
        body = annotator.visit(func.body)
        return Function(func.params, body, func.ret_type, func.attrs, span=func.span)


class _Annotator(ExprMutator):
    """Wrap the arguments and result of each chosen call in annotations of its kind."""

    def __init__(self, regions: dict[int, str]) -> None:
        super().__init__()
        self.regions = regions

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """The annotated call for a supported call, else the default."""
        kind = self.regions.get(id(call))
        if kind is None:
            return super().visit_call(call, op, args)
        begins: dict[int, BaseExpr] = {}
        wrapped = []
        for arg in args:
            if isinstance(arg, Constant):
                wrapped.append(arg)
                continue
            if id(arg) not in begins:
                begins[id(arg)] = compiler_begin(arg, compiler=kind)
            wrapped.append(begins[id(arg)])
        inner = Call(op, wrapped, call.attrs, span=call.span)
        return compiler_end(inner, compiler=kind)

