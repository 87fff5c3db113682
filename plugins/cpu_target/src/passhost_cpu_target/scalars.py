"""Helpers that generated code calls for TIR scalar semantics Python lacks: C-style
integer division, dtype conversion, the intrinsics NumPy has no ufunc for (``erf``,
``sigmoid``, ``rsqrt``), and buffers viewing another buffer's memory."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["buffer_view", "convert", "truncdiv", "truncmod"]


def truncdiv(a: Any, b: Any) -> Any:
    """Integer division rounding toward zero (C's ``/``), in the operands' dtype (wrapping
    around; exact for Python integers)."""
    q = abs(int(a)) // abs(int(b))
    q = q if (a < 0) == (b < 0) else -q
    if isinstance(a, int) and isinstance(b, int):
        return q
    return np.asarray(q).astype(np.result_type(a, b))[()]


def truncmod(a: Any, b: Any) -> Any:
    """The remainder of :func:`truncdiv`, with the sign of ``a`` (C's ``%``)."""
    return a - truncdiv(a, b) * b


def convert(value: Any, dtype: str) -> Any:
    """``value`` as a scalar of ``dtype``, converted as NumPy ``astype`` converts."""
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)[()]


def buffer_view(base: np.ndarray, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The first elements of the contiguous array ``base``, read as a ``dtype`` array of
    ``shape`` (shares ``base``'s memory)."""
    flat = base.reshape(-1).view(dtype)
    return flat[:math.prod(shape)].reshape(shape)
