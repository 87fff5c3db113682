"""Converters of the ONNX recurrent layers: LSTM, GRU and RNN, unrolled over a known sequence
length."""

from __future__ import annotations

from passhost.frontend.onnx_registry import Entry

__all__ = ["CONVERTERS"]

#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {}
