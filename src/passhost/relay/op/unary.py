"""Elementwise unary math: trigonometric and hyperbolic functions, rounding, sign, ..."""

from __future__ import annotations

__all__: list[str] = []
