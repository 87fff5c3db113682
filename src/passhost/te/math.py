"""Scalar helpers of the tensor-expression layer: the reducers, casts, selection, the
largest and smallest values of a dtype, and the math intrinsics.

Each intrinsic (``exp``, ``erf``, ``sigmoid``, ...) builds a TIR ``Call`` of ``tir.<name>``
with its operand's dtype; code generators give them their meaning. The bit intrinsics take
integers: ``bitwise_and``/``bitwise_or``/``bitwise_xor`` combine two's complement bits;
``shift_left(a, n)`` and ``shift_right(a, n)`` need ``0 <= n <`` the bit width,
``shift_right`` is arithmetic on signed integers, and ``shift_left`` is applied to unsigned
integers only (moving bits into a sign bit is undefined in C).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from passhost.errors import IRTypeError
from passhost.ir.types import ANY_FLOAT_DTYPES, FLOAT_DTYPES
from passhost.te.tensor import Reducer
from passhost.tir import expr as tir
from passhost.tir.expr import PrimExpr, const, convert
from passhost.tir.intrinsics import INTRINSICS, intrinsic_call

__all__ = [
    "INTRINSIC_NAMES", "cast", "fill", "if_then_else", "max_value", "min_value", "prod",
    "propagating_max", "propagating_min", "sum", "te_max", "te_min",
]


def max_value(dtype: str) -> PrimExpr:
    """The largest value of ``dtype`` (``inf`` for floats)."""
    if dtype in FLOAT_DTYPES:
        return const(float("inf"), dtype)
    if dtype == "bool":
        return const(True, "bool")
    return const(int(np.iinfo(dtype).max), dtype)


def min_value(dtype: str) -> PrimExpr:
    """The smallest value of ``dtype`` (``-inf`` for floats)."""
    if dtype in FLOAT_DTYPES:
        return const(float("-inf"), dtype)
    if dtype == "bool":
        return const(False, "bool")
    return const(int(np.iinfo(dtype).min), dtype)


def _zero(dtype: str) -> PrimExpr:
    return const(0, dtype)


def _one(dtype: str) -> PrimExpr:
    return const(1, dtype)


#: Sum, product, maximum and minimum reductions (``te.sum(a[i, k], axis=k)``).
sum = Reducer("sum", lambda acc, x: acc + x, _zero)
prod = Reducer("prod", lambda acc, x: acc * x, _one)
te_max = Reducer("max", lambda acc, x: tir.Max(acc, x), min_value)
te_min = Reducer("min", lambda acc, x: tir.Min(acc, x), max_value)


_Combine = Callable[[PrimExpr, PrimExpr], PrimExpr]


def _propagating(pick: type[tir.BinaryOp], beats: _Combine) -> _Combine:
    """A combine taking ``x`` when it is NaN or ``beats(x, acc)``: a NaN, once met, stays
    (``acc`` NaN beats nothing and is never replaced). Integers use ``pick``."""

    def combine(acc: PrimExpr, x: PrimExpr) -> PrimExpr:
        if x.dtype not in ANY_FLOAT_DTYPES:
            return pick(acc, x)
        return tir.Select(intrinsic("isnan", x) | beats(x, acc), x, acc)

    return combine


#: Maximum and minimum reductions whose result is NaN when an element is NaN (NumPy's
#: ``max`` and ``min``), without relying on how ``tir.Max`` / ``tir.Min`` treat NaN.
propagating_max = Reducer("propagating_max", _propagating(tir.Max, lambda x, acc: x > acc),
                          min_value)
propagating_min = Reducer("propagating_min", _propagating(tir.Min, lambda x, acc: x < acc),
                          max_value)


def fill(value: Any, dtype: str) -> PrimExpr:
    """The scalar ``value`` converted to ``dtype`` as NumPy's ``astype`` converts it (a
    bfloat16 immediate is a float32 one cast, exactly)."""
    with np.errstate(all="ignore"):
        scalar = np.asarray(value).astype(dtype)[()]
    if dtype == "bfloat16":
        return cast(const(float(scalar), "float32"), dtype)
    if scalar.dtype.kind == "f":
        return const(float(scalar), dtype)
    if scalar.dtype.kind == "b":
        return const(bool(scalar), dtype)
    return const(int(scalar), dtype)


def cast(value: Any, dtype: str) -> PrimExpr:
    """``value`` converted to ``dtype``."""
    return convert(value).astype(dtype)


def if_then_else(condition: Any, true_value: Any, false_value: Any) -> PrimExpr:
    """``true_value`` where ``condition`` holds, else ``false_value``."""
    return tir.Select(condition, true_value, false_value)


#: The math intrinsics ``te.<name>`` builds calls of (``tir.<name>``, passhost.tir.intrinsics).
INTRINSIC_NAMES = tuple(name.removeprefix("tir.") for name in INTRINSICS)


def intrinsic(name: str, *args: Any) -> PrimExpr:
    """A call of the math intrinsic ``tir.<name>`` on ``args``, checked (Python numbers take
    the first expression operand's dtype)."""
    if name not in INTRINSIC_NAMES:
        raise IRTypeError(f"unknown intrinsic {name!r}; the intrinsics are "
                          f"{', '.join(INTRINSIC_NAMES)}")
    return intrinsic_call(f"tir.{name}", *args)
