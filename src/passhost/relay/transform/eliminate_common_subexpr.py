"""EliminateCommonSubexpr: compute each repeated operator call, projection and tuple once.

Bottom-up, two nodes are merged when they are the same kind of node over the same (already
merged) children, compared by identity, with equal attributes: operator calls with the same
operator and equal attrs (attrs classes compare by value and hash cheaply), projections with
the same index, tuples. Constants, variables and calls of functions are never merged; two
constants are the same only when they are one object (arrays are not compared). The walk is
iterative and linear in the size of the function.

Nested functions are separate scopes (a function body cannot use a node of its enclosing
function), so each nested function is rewritten on its own; ``Primitive`` and ``Composite``
functions are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Function, Tuple, TupleGetItem
from passhost.relay.transform.common import optimisable
from passhost.relay.transform.function_pass import function_pass
from passhost.relay.visitor import ExprMutator, post_order
from passhost.transform.context import PassContext

__all__ = ["EliminateCommonSubexpr"]

SkipFn = Callable[[Call], bool]


@function_pass(opt_level=3, name="EliminateCommonSubexpr", required=("InferType",))
class EliminateCommonSubexpr:
    """Merge operator calls (and projections and tuples) that compute the same value.

    ``fskip(call)``, when given, is asked about each operator call of the input; calls for
    which it returns True are kept as they are (neither merged nor merged into).
    """

    def __init__(self, fskip: SkipFn | None = None) -> None:
        if fskip is not None and not callable(fskip):
            raise TypeError(f"EliminateCommonSubexpr: fskip must be callable or None, "
                            f"found {fskip!r}")
        self.fskip = fskip

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` with common subexpressions merged (``func`` itself if there are none)."""
        if not optimisable(func):
            return func
        return _eliminate(func, self.fskip)


def _eliminate(func: Function, fskip: SkipFn | None) -> Function:
    """``func`` with repeated computations merged; nested plain functions are rewritten as
    separate scopes."""
    mutator = _Merger(fskip)
    for node in post_order(func.body, stop=lambda n: isinstance(n, Function)):
        if isinstance(node, Function):
            mutator.memo[id(node)] = _rewrite_nested(node, fskip)
    body = mutator.visit(func.body)
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_type, func.attrs, span=func.span)


def _rewrite_nested(func: Function, fskip: SkipFn | None) -> Function:
    if func.attrs.get("Primitive") or func.attrs.get("Composite"):
        return func
    return _eliminate(func, fskip)


class _Merger(ExprMutator):
    """The bottom-up rewrite: a table from a node's key to the first node with that key."""

    def __init__(self, fskip: SkipFn | None) -> None:
        super().__init__()
        self.fskip = fskip
        self.seen: dict[Hashable, BaseExpr] = {}

    def _canonical(self, key: Hashable, build: Callable[[], BaseExpr]) -> BaseExpr:
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = build()
        return found

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """The first equal call seen, or ``call`` rebuilt on the merged arguments."""
        if isinstance(op, (Function, GlobalVar)) or (self.fskip and self.fskip(call)):
            return super().visit_call(call, op, args)
        key: Any = (op, tuple(map(id, args)), call.attrs)
        return self._canonical(key, lambda: super(_Merger, self).visit_call(call, op, args))

    def visit_tuple(self, tup: Tuple, fields: list[BaseExpr]) -> BaseExpr:
        """The first equal tuple seen, or ``tup`` rebuilt on the merged fields."""
        key = (Tuple, tuple(map(id, fields)))
        return self._canonical(key, lambda: super(_Merger, self).visit_tuple(tup, fields))

    def visit_tuple_get_item(self, item: TupleGetItem, tuple_value: BaseExpr) -> BaseExpr:
        """The first equal projection seen, or ``item`` rebuilt on the merged tuple."""
        key = (TupleGetItem, id(tuple_value), item.index)
        return self._canonical(
            key, lambda: super(_Merger, self).visit_tuple_get_item(item, tuple_value))
