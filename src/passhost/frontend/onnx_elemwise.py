"""Converters of the ONNX comparison and logic, bitwise operators, unary math and activations."""

from __future__ import annotations

from passhost.frontend.onnx_registry import Entry

__all__ = ["CONVERTERS"]

#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {}
