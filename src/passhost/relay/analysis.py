"""Analyses of graph expressions: free variables, traversal helpers."""

from __future__ import annotations

from passhost.ir.expr import BaseExpr
from passhost.relay.expr import Function, Var
from passhost.relay.visitor import post_order, post_order_visit

__all__ = ["free_vars", "post_order_visit"]


def free_vars(expr: BaseExpr) -> list[Var]:
    """Variables used in ``expr`` and not bound by a function inside it, in post order."""
    order = post_order(expr)
    bound: set[int] = set()
    for node in order:
        if isinstance(node, Function):
            bound.update(id(p) for p in node.params)
    return [n for n in order if isinstance(n, Var) and id(n) not in bound]
