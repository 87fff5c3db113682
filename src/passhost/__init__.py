"""passhost: a pass infrastructure for tensor-program compilers.

Importing this package is cheap and loads no plugins; subpackages (``passhost.relay``,
``passhost.transform``, ``passhost.plugins``, ...) are imported on demand.
``passhost.hookimpl`` marks a plugin's hook implementations.
"""

from __future__ import annotations

from passhost._version import __version__

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> object:
    if name == "hookimpl":
        from passhost.plugins.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'passhost' has no attribute {name!r}")
