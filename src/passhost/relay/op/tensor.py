"""Elementwise and broadcasting tensor operators (math, comparisons, selection, casts)."""

from __future__ import annotations

import numpy as np

from passhost.relay.op.common import broadcast_rel
from passhost.relay.op.registry import OpPattern, define_op

__all__ = ["add"]


def _add(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.add(a, b, dtype=a.dtype)


add = define_op(
    "add", inputs=("lhs", "rhs"), type_rel=broadcast_rel, compute=_add,
    pattern=OpPattern.BROADCAST, description="Elementwise sum, NumPy broadcasting.")
