"""Quantised operators (``qnn.*``) with TFLite integer semantics."""

from __future__ import annotations

__all__: list[str] = []
