"""The checks of a plugin's hook names that the host makes when it registers a plugin and
that :func:`passhost.testing.check_plugin` makes too: one statement of each rule.

pluggy registers only functions marked with ``passhost.hookimpl``, and refuses a marked
function only when it names no hook at all; these checks also catch a ``passhost_*``
function left unmarked (pluggy would ignore it silently) and give close matches for a
misspelled hook name.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from passhost.errors import close_matches
from passhost.plugins.hookspecs import ALL_HOOKS

__all__ = ["HOOK_NAMES", "unknown_hook", "unmarked_functions"]

#: The name of every passhost hook.
HOOK_NAMES: frozenset[str] = frozenset(
    name for group in ALL_HOOKS for name in vars(group) if name.startswith("passhost_"))

#: What pluggy's marker sets on an implementation (``<project>_impl``).
_MARKER = "passhost_impl"


def _did_you_mean(name: str) -> str:
    matches = close_matches(name, HOOK_NAMES)
    return f"; did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""


def unknown_hook(name: str) -> str:
    """Why the marked function ``name`` is refused: it is not a passhost hook (with close
    matches among the hook names)."""
    return f"{name} is not a passhost hook{_did_you_mean(name)}"


def unmarked_functions(plugin: Any) -> list[str]:
    """One problem per ``passhost_*`` function or method of ``plugin`` that is not marked
    with ``passhost.hookimpl`` (the host would ignore it)."""
    problems = []
    for attr in sorted(dir(plugin)):
        if not attr.startswith("passhost_") or attr == _MARKER:
            continue
        value = inspect.getattr_static(plugin, attr, None)
        function = getattr(value, "__func__", value)  # staticmethod, classmethod
        if not isinstance(function, (types.FunctionType, types.MethodType)):
            continue
        if getattr(function, _MARKER, None) is None:
            hint = "" if attr in HOOK_NAMES else _did_you_mean(attr)
            problems.append(f"{attr} is not marked with @passhost.hookimpl, so the host "
                            f"ignores it{hint}")
    return problems
