"""Helpers that generated code calls for TIR scalar semantics Python lacks: C-style
integer division, dtype conversion, and buffers viewing another buffer's memory."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["buffer_view", "convert", "truncdiv", "truncmod"]


def truncdiv(a: Any, b: Any) -> Any:
    """Integer division rounding toward zero (C's ``/``): the floor quotient, one more
    where the signs differ and a remainder is left (no magnitude is taken: the smallest
    value of a NumPy integer dtype has none in that dtype)."""
    q = a // b
    return q + 1 if (a % b != 0) and ((a < 0) != (b < 0)) else q


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
