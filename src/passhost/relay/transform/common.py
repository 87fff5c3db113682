"""Helpers shared by the graph passes: which functions a pass rewrites, and how."""

from __future__ import annotations

from collections.abc import Callable

from passhost.ir.module import IRModule
from passhost.relay.expr import Function

__all__ = ["map_graph_functions", "optimisable"]


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
