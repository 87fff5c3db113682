"""The ``broken`` plugin: registers the passes ``ExpandSoftmax``, ``RoundConstants`` and
``CountOperators``.

The host imports this module when it loads plugins, so it imports nothing heavy: the
passes' module is imported by the factories, when a pass is first created.
"""

from __future__ import annotations

from typing import Any

from passhost import hookimpl
from passhost.plugins import INT, OptionSpec, PassSpec


def _factory(name: str) -> Any:
    def create(**options: Any) -> Any:
        from passhost_broken_passes import passes

        return getattr(passes, name)(**options)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"A new {name} pass."
    return create


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The three broken passes."""
    return [
        PassSpec("ExpandSoftmax", _factory("ExpandSoftmax"), 0,
                 summary="broken on purpose: raises on every nn.softmax"),
        PassSpec("RoundConstants", _factory("RoundConstants"), 0,
                 summary="broken on purpose: silently rounds floating-point constants",
                 options=[OptionSpec("decimals", INT, 2, "decimal places kept")]),
        PassSpec("CountOperators", _factory("CountOperators"), 0,
                 summary="broken on purpose: raises AttributeError once FuseOps has run"),
    ]
