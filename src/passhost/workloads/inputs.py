"""Random inputs of given tensor types, the same for the same seed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost.ir.types import TensorType, Type, is_float_dtype
from passhost.relay.expr import Function

__all__ = ["random_arrays", "random_inputs"]


def random_arrays(types: Sequence[Type], seed: int = 0) -> list[np.ndarray]:
    """Random arrays of the given tensor types: floats in [-2, 2), ints within [-5, 5]
    (clipped to the dtype), bools at random."""
    rng = np.random.default_rng(seed)
    out = []
    for ty in types:
        assert isinstance(ty, TensorType), f"expected tensor types, found {ty}"
        if is_float_dtype(ty.dtype):
            arr = rng.uniform(-2, 2, size=ty.shape).astype(ty.dtype)
        elif ty.dtype == "bool":
            arr = rng.integers(0, 2, size=ty.shape).astype(bool)
        else:
            info = np.iinfo(ty.dtype)
            lo, hi = max(-5, int(info.min)), min(5, int(info.max))
            arr = rng.integers(lo, hi + 1, size=ty.shape).astype(ty.dtype)
        out.append(arr)
    return out


def random_inputs(func: Function, seed: int = 0) -> list[np.ndarray]:
    """Random arrays for the parameters of graph function ``func`` (:func:`random_arrays`
    of their types)."""
    return random_arrays([p.checked_type for p in func.params], seed)
