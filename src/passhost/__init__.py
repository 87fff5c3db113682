"""passhost: a pass infrastructure for tensor-program compilers.

Importing this package is cheap and loads no plugins; subpackages (``passhost.relay``,
``passhost.transform``, ``passhost.plugins``, ...) are imported on demand.
``passhost.hookimpl`` marks a plugin's hook implementations; ``passhost.build`` compiles a
module for a target (docs/targets.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from passhost._version import __version__

if TYPE_CHECKING:  # what the lazy attributes below are, for type checkers
    from passhost.backend.build import build
    from passhost.plugins.hookspecs import hookimpl

__all__ = ["__version__", "build", "hookimpl"]


def __getattr__(name: str) -> object:
    """``hookimpl`` and ``build``, imported on first use (keeps ``import passhost`` cheap)."""
    if name == "hookimpl":
        from passhost.plugins.hookspecs import hookimpl

        return hookimpl
    if name == "build":
        from passhost.backend.build import build

        return build
    raise AttributeError(f"module 'passhost' has no attribute {name!r}")
