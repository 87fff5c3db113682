"""The two target hooks of the build flow, called through the plugin host.

Both hooks are ``firstresult``: the plugins are asked in turn (the last registered first)
and the first answer that is not None wins. The built-in plugin answers last, with the
target kind's own ``relay_to_tir`` / ``tir_to_runtime`` when it has them; so a plugin
either implements the hookspecs (returning None for targets that are not its own) or just
attaches the two functions to its :class:`~passhost.target.TargetKind`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from passhost.plugins.manager import get_host
from passhost.target.target import Target

if TYPE_CHECKING:
    from passhost.ir.module import IRModule


def _as_target(target: Target | str) -> Target:
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        return Target(target)
    raise TypeError(f"expected a Target or a target string, found "
                    f"{type(target).__name__} {target!r}")


def relay_to_tir(target: Target | str, mod: IRModule) -> IRModule | None:
    """Lower the graph functions ``mod`` holds for ``target`` to PrimFuncs: the module the
    first answering plugin returns, or None when no plugin (and not the kind) lowers it."""
    from passhost.ir.module import IRModule

    target = _as_target(target)
    out = get_host().pm.hook.passhost_relay_to_tir(target=target, mod=mod)
    if out is not None and not isinstance(out, IRModule):
        raise TypeError(f"relay_to_tir for target {str(target)!r} returned "
                        f"{type(out).__name__} {out!r}, expected an IRModule or None")
    return out


def tir_to_runtime(target: Target | str, mod: IRModule) -> Any:
    """Turn the PrimFuncs of ``target`` in ``mod`` into a runtime module: what the first
    answering plugin returns, or None when no plugin (and not the kind) handles it."""
    return get_host().pm.hook.passhost_tir_to_runtime(target=_as_target(target), mod=mod)
