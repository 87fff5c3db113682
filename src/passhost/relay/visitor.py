"""Iterative, memoised traversal and rewriting of graph expressions.

Nothing here recurses over the depth of the IR: a 100 000-node chain is fine. Each node is
visited once however many times it is used (memoised on identity).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from passhost.ir import traversal
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var

__all__ = ["ExprMutator", "ExprVisitor", "post_order", "post_order_visit"]


def _children(node: BaseExpr) -> tuple[BaseExpr, ...]:
    children = getattr(node, "children", None)
    return children() if children is not None else ()


def _children_with_ops(node: BaseExpr) -> tuple[BaseExpr, ...]:
    kids = _children(node)
    if isinstance(node, Call) and not isinstance(node.op, (Function, GlobalVar)):
        return (node.op, *kids)
    return kids


def post_order(roots: BaseExpr | Iterable[BaseExpr], *, include_ops: bool = False,
               stop: Callable[[BaseExpr], bool] | None = None) -> list[BaseExpr]:
    """Every node reachable from ``roots``, each once, children before parents.

    ``include_ops`` also lists the operators of calls (as TVM's ``post_order_visit`` does);
    nodes for which ``stop`` is true are listed but not entered.
    """
    if isinstance(roots, BaseExpr):
        roots = (roots,)
    return traversal.post_order(roots, _children_with_ops if include_ops else _children, stop)


def post_order_visit(expr: BaseExpr, fvisit: Callable[[BaseExpr], None]) -> None:
    """Call ``fvisit`` on every node of ``expr`` (operators included), children first."""
    for node in post_order(expr, include_ops=True):
        fvisit(node)


_DISPATCH = {
    Var: "visit_var", Constant: "visit_constant", Call: "visit_call", Tuple: "visit_tuple",
    TupleGetItem: "visit_tuple_get_item", Function: "visit_function",
    GlobalVar: "visit_global_var",
}


def _method(node: BaseExpr) -> str:
    for cls in type(node).__mro__:
        name = _DISPATCH.get(cls)
        if name is not None:
            return name
    return "visit_other"


class ExprVisitor:
    """Visit every node once, children first; override ``visit_<kind>`` methods."""

    def visit(self, expr: BaseExpr) -> None:
        """Visit ``expr`` and everything it refers to."""
        for node in post_order(expr):
            getattr(self, _method(node))(node)

    def visit_var(self, var: Var) -> None:
        """Called for each variable."""

    def visit_constant(self, const: Constant) -> None:
        """Called for each constant."""

    def visit_call(self, call: Call) -> None:
        """Called for each call."""

    def visit_tuple(self, tup: Tuple) -> None:
        """Called for each tuple."""

    def visit_tuple_get_item(self, item: TupleGetItem) -> None:
        """Called for each tuple projection."""

    def visit_function(self, func: Function) -> None:
        """Called for each (nested) function."""

    def visit_global_var(self, gvar: GlobalVar) -> None:
        """Called for each global variable."""

    def visit_other(self, node: BaseExpr) -> None:
        """Called for node kinds this visitor does not know."""


class ExprMutator:
    """Rebuild an expression bottom-up.

    Each ``visit_<kind>`` method gets the original node and its already rewritten children
    and returns the replacement. The defaults rebuild a node only when a child changed, so
    an unchanged graph comes back as the very same object (and sharing is kept).
    """

    def __init__(self) -> None:
        self.memo: dict[int, BaseExpr] = {}

    def visit(self, expr: BaseExpr) -> BaseExpr:
        """The rewritten ``expr``."""
        memo = self.memo
        for node in post_order(expr, stop=lambda n: id(n) in memo):
            if id(node) in memo:
                continue
            memo[id(node)] = self._rewrite(node)
        return memo[id(expr)]

    def _rewrite(self, node: BaseExpr) -> BaseExpr:
        memo = self.memo
        if isinstance(node, Call):
            op = node.op
            new_op = memo[id(op)] if isinstance(op, (Function, GlobalVar)) else op
            return self.visit_call(node, new_op, [memo[id(a)] for a in node.args])
        if isinstance(node, Tuple):
            return self.visit_tuple(node, [memo[id(f)] for f in node.fields])
        if isinstance(node, TupleGetItem):
            return self.visit_tuple_get_item(node, memo[id(node.tuple_value)])
        if isinstance(node, Function):
            return self.visit_function(node, [memo[id(p)] for p in node.params],
                                       memo[id(node.body)])
        if isinstance(node, Var):
            return self.visit_var(node)
        if isinstance(node, Constant):
            return self.visit_constant(node)
        if isinstance(node, GlobalVar):
            return self.visit_global_var(node)
        return node

    def visit_var(self, var: Var) -> BaseExpr:
        """Replacement of a variable (default: itself)."""
        return var

    def visit_constant(self, const: Constant) -> BaseExpr:
        """Replacement of a constant (default: itself)."""
        return const

    def visit_global_var(self, gvar: GlobalVar) -> BaseExpr:
        """Replacement of a global variable (default: itself)."""
        return gvar

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """Replacement of a call, given its rewritten callee and arguments."""
        if op is call.op and all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(op, args, call.attrs, span=call.span)

    def visit_tuple(self, tup: Tuple, fields: list[BaseExpr]) -> BaseExpr:
        """Replacement of a tuple, given its rewritten fields."""
        if all(a is b for a, b in zip(fields, tup.fields)):
            return tup
        return Tuple(fields, span=tup.span)

    def visit_tuple_get_item(self, item: TupleGetItem, tuple_value: BaseExpr) -> BaseExpr:
        """Replacement of a projection, given its rewritten tuple."""
        if tuple_value is item.tuple_value:
            return item
        if isinstance(tuple_value, Tuple):
            return tuple_value.fields[item.index]
        return TupleGetItem(tuple_value, item.index, span=item.span)

    def visit_function(self, func: Function, params: list[BaseExpr], body: BaseExpr,
                       ) -> BaseExpr:
        """Replacement of a function, given its rewritten parameters and body. Parameters
        replaced by non-variables are dropped (they have been bound)."""
        if body is func.body and all(a is b for a, b in zip(params, func.params)):
            return func
        new_params = [p for p in params if isinstance(p, Var)]
        return Function(new_params, body, func.ret_type, func.attrs, span=func.span)
