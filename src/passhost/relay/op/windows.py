"""Windowed ``nn`` operators beyond the 2-D ones of nn.py: 1-D and 3-D convolutions and pools,
transposed convolutions, Lp pooling."""

from __future__ import annotations

__all__: list[str] = []
