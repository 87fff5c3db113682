"""passhost-opdiff: ``OpCountDiffer``, a pass instrument recording how each pass changed the
number of calls of each operator.

The instrument is imported on first use, so that loading the plugin (which imports this
package) stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OpCountDiffer", "count_ops", "op_delta"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from passhost_opdiff import instrument

        return getattr(instrument, name)
    raise AttributeError(f"module 'passhost_opdiff' has no attribute {name!r}")
