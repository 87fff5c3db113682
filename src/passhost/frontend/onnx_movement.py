"""Converters of the ONNX data movement: Expand, Tile, Range, CumSum, Trilu, gathers and
scatters, OneHot, DepthToSpace/SpaceToDepth, Size, CastLike, EyeLike, Einsum."""

from __future__ import annotations

from passhost.frontend.onnx_registry import Entry

__all__ = ["CONVERTERS"]

#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {}
