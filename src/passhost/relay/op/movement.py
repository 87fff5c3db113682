"""Data movement: broadcasting, tiling, ranges, cumulative sums, gathers and scatters, ..."""

from __future__ import annotations

__all__: list[str] = []
