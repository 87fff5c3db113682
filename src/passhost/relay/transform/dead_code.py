"""DeadCodeElimination: drop the module functions that ``main`` cannot reach.

Graph functions have no let bindings, so everything inside a function is live; the dead code
of a module is whole functions. The contract is simple: ``main`` is the one entry point. A
function is kept when ``main`` reaches it through GlobalVar references (a call ``@f(...)`` or
``@f`` used as a value, in nested functions too); every other function, graph function or
PrimFunc, is removed, whatever attributes (``global_symbol`` included) it carries. PrimFuncs
hold no GlobalVars (TIR calls out only by extern name), so they reach nothing further.
A module without ``main`` is returned unchanged, and so is a module with nothing to remove.
"""

from __future__ import annotations

from passhost.ir.expr import BaseFunc, GlobalVar
from passhost.ir.module import IRModule
from passhost.relay.expr import Function
from passhost.relay.visitor import post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["DeadCodeElimination", "reachable_functions"]


@module_pass(opt_level=1, name="DeadCodeElimination")
class DeadCodeElimination:
    """Remove the module functions not reachable from ``main``."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """``mod`` without its unreachable functions (``mod`` itself if there are none)."""
        if "main" not in mod:
            return mod
        live = reachable_functions(mod, "main")
        if len(live) == len(mod):
            return mod
        return IRModule({mod.get_global_var(name): mod[name] for name in mod if name in live},
                        attrs=mod.attrs)


def reachable_functions(mod: IRModule, entry: str) -> set[str]:
    """The names of the module functions reachable from function ``entry`` (included)."""
    live = {entry}
    pending = [entry]
    while pending:
        for name in _referenced_globals(mod[pending.pop()]):
            if name in mod and name not in live:
                live.add(name)
                pending.append(name)
    return live


def _referenced_globals(func: BaseFunc) -> list[str]:
    """The names of the GlobalVars ``func`` refers to (none for a PrimFunc)."""
    if not isinstance(func, Function):
        return []
    return [n.name_hint for n in post_order(func) if isinstance(n, GlobalVar)]
