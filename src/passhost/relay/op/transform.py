"""Shape and data-movement operators (reshape, transpose, concatenate, ...)."""

from __future__ import annotations

__all__: list[str] = []
