"""The dtypes reference kernels compute in: float16 and bfloat16 are widened to float32 (and
the result rounded once, as ONNX's reference computes them), sums of products run exactly or
in an accurate float dtype.

Kept apart from the operator modules so that every one of them (``tensor`` included, which
``nn`` imports indirectly) can use these helpers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost.ir.types import is_float_dtype

__all__ = ["acc_float", "matmul_in_dtype"]

_NARROW_FLOATS = ("float16", "bfloat16")


def acc_float(dtype: np.dtype) -> np.dtype:
    """Dtype to compute kernels of ``dtype`` in: float16 and bfloat16 are widened to float32,
    every other dtype computes as itself."""
    return np.dtype(np.float32) if np.dtype(dtype).name in _NARROW_FLOATS else np.dtype(dtype)


def matmul_in_dtype(out_dtype: str, a: np.ndarray, b: np.ndarray, depth: int,
                    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """Run the sum-of-products ``fn(a, b)`` (``depth`` terms per output) in an exact or
    accurate dtype and return the result as ``out_dtype`` (integers wrap like the target)."""
    out = np.dtype(out_dtype)
    if is_float_dtype(out.name):
        wide = out == np.float64 or np.float64 in (a.dtype, b.dtype)
        acc = np.dtype(np.float64 if wide else np.float32)
        res = fn(a.astype(acc, copy=False), b.astype(acc, copy=False))
        return res.astype(out, copy=False)
    if is_float_dtype(a.dtype.name):
        a = a.astype(np.int64)
    if is_float_dtype(b.dtype.name):
        b = b.astype(np.int64)
    bound = depth * _max_abs(a) * _max_abs(b)
    if bound < 2**53:  # float64 sums of these products are exact (and use BLAS)
        res = fn(a.astype(np.float64), b.astype(np.float64))
        return res.astype(np.int64).astype(out, copy=False)
    res = fn(a.astype(np.int64, copy=False), b.astype(np.int64, copy=False))
    return res.astype(out, copy=False)


def _max_abs(x: np.ndarray) -> int:
    if x.size == 0:
        return 0
    return max(abs(int(x.min())), abs(int(x.max())))
