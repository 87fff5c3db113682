"""Image operators: resizing (nearest, linear, cubic)."""

from __future__ import annotations

__all__: list[str] = []
