"""Helpers that generated code calls for TIR scalar semantics Python lacks: C-style
integer division, dtype conversion, the intrinsics NumPy has no ufunc for (``erf``,
``sigmoid``, ``rsqrt``), and buffers viewing another buffer's memory."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from passhost.relay.op.tensor import erf_float64, stable_sigmoid

__all__ = ["buffer_view", "convert", "erf", "rsqrt", "sigmoid", "truncdiv", "truncmod"]


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


def erf(x: Any) -> Any:
    """The error function of a float scalar, in its dtype (as the ``erf`` operator's
    reference kernel computes it)."""
    value = np.asarray(x)
    return erf_float64(value).astype(value.dtype)[()]


def sigmoid(x: Any) -> Any:
    """The logistic function of a float scalar, in its dtype (as the ``sigmoid`` operator's
    reference kernel computes it)."""
    with np.errstate(all="ignore"):
        return stable_sigmoid(np.asarray(x))[()]


def rsqrt(x: Any) -> Any:
    """``1 / sqrt(x)`` of a float scalar, in its dtype."""
    with np.errstate(all="ignore"):
        return np.reciprocal(np.sqrt(x))


def buffer_view(base: np.ndarray, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The first elements of the contiguous array ``base``, read as a ``dtype`` array of
    ``shape`` (shares ``base``'s memory)."""
    flat = base.reshape(-1).view(dtype)
    return flat[:math.prod(shape)].reshape(shape)
