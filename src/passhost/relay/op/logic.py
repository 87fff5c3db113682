"""Logic, bitwise and the remaining comparison operators on tensors (``logical_*``,
``bitwise_*``, ``isnan``, ``isinf``, ...)."""

from __future__ import annotations

__all__: list[str] = []
