"""passhost-broken-passes: three deliberately broken passes, the test bed of passhost's
debugging tools (docs/debugging.md). Never use them to compile anything.

- ``ExpandSoftmax`` raises :class:`BrokenPassError` on every ``nn.softmax``;
- ``RoundConstants`` silently rounds every floating-point constant;
- ``CountOperators`` works until ``FuseOps`` has run, then raises ``AttributeError``.

The passes are imported on first use, so that loading the plugin stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BrokenPassError", "CountOperators", "ExpandSoftmax", "RoundConstants"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from passhost_broken_passes import passes

        return getattr(passes, name)
    raise AttributeError(f"module 'passhost_broken_passes' has no attribute {name!r}")
