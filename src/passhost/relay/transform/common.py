"""Helpers shared by the graph passes: which functions a pass rewrites, and how."""

from __future__ import annotations

from collections.abc import Callable

from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.relay.expr import Function
from passhost.relay.op.transform import expand_dims

__all__ = ["along_axis", "map_graph_functions", "optimisable"]


def optimisable(func: object) -> bool:
    """True for graph functions the standard passes rewrite: not owned by an external
    target (``Compiler``), not marked ``SkipOptimization``, not already ``Primitive``."""
    if not isinstance(func, Function):
        return False
    attrs = func.attrs
    return not (attrs.get("Compiler") or attrs.get("SkipOptimization")
                or attrs.get("Primitive"))


def map_graph_functions(mod: IRModule, rewrite: Callable[[Function], Function]) -> IRModule:
    """``mod`` with ``rewrite`` applied to each optimisable graph function; ``mod`` itself
    when no function changed (for module passes that do more than a function pass can)."""
    changed = {}
    for gvar, func in mod.functions.items():
        if optimisable(func):
            new = rewrite(func)
            if new is not func:
                changed[gvar] = new
    return mod.with_functions(changed) if changed else mod


def along_axis(vec: BaseExpr, axis: int, ndim: int) -> BaseExpr:
    """The 1-D ``vec`` reshaped with ``expand_dims`` to broadcast along ``axis`` of an
    ``ndim``-D tensor (as is when ``axis`` is the last axis)."""
    trailing = ndim - 1 - axis
    return expand_dims(vec, axis=1, num_newaxis=trailing) if trailing else vec
