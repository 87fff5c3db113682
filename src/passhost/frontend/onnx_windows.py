"""Converters of the ONNX windowed network operators: Conv, ConvTranspose and pools in 1-D, 2-D
and 3-D."""

from __future__ import annotations

from passhost.frontend.onnx_registry import Entry

__all__ = ["CONVERTERS"]

#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {}
