"""bfloat16 in converters that compose several graph operators.

ONNX's reference computes a bfloat16 operator in float32 and rounds its result to bfloat16
once. A graph operator does so by itself (its kernel widens bfloat16), but a composition of
several would round after every step: ``exp(x) - 1`` in bfloat16 loses every digit of a small
``x``. :func:`computed_in_float32` makes a converter build its composition on float32 copies
of its bfloat16 inputs and round each floating-point output back to bfloat16 once.
"""

from __future__ import annotations

import functools

import numpy as np

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Converter
from passhost.ir.types import TensorType
from passhost.relay.expr import Expr

__all__ = ["computed_in_float32"]

_BF16 = "bfloat16"
_F32 = "float32"
#: What the documentation of a converter computed in float32 says about bfloat16.
_NOTE = "bfloat16 is computed in float32 and rounded once."


def _widen(expr: Expr) -> Expr:
    ty = expr.checked_type
    if isinstance(ty, TensorType) and ty.dtype == _BF16:
        return relay.cast(expr, dtype=_F32)
    return expr


def _widen_array(value: np.ndarray) -> np.ndarray:
    return value.astype(_F32) if value.dtype.name == _BF16 else value


def _narrow(value: Value) -> Value:
    if isinstance(value, np.ndarray):
        return value.astype(_BF16) if value.dtype.name == _F32 else value
    if not isinstance(value, Expr):
        return value
    ty = value.checked_type
    if isinstance(ty, TensorType) and ty.dtype == _F32:
        return relay.cast(value, dtype=_BF16)
    return value


def computed_in_float32(convert: Converter) -> Converter:
    """``convert``, which composes graph operators into outputs of input 0's dtype: when
    input 0 is bfloat16 it runs on float32 copies of the bfloat16 inputs, and each float32
    output is rounded to bfloat16 once (other inputs and outputs are left as they are)."""

    @functools.wraps(convert)
    def wrapped(ctx: NodeContext) -> Value | list[Value]:
        if ctx.dtype(0) != _BF16:
            return convert(ctx)
        result = convert(ctx.mapped(_widen, _widen_array))
        if isinstance(result, (list, tuple)):
            return [_narrow(v) for v in result]
        return _narrow(result)

    first, *rest = (convert.__doc__ or "").strip().split("\n\n")
    wrapped.__doc__ = "\n\n".join([f"{first} {_NOTE}".lstrip(), *rest])
    return wrapped
