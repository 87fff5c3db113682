"""TE computes of the elementwise quantised operators: ``qnn.quantize``, ``qnn.dequantize``,
``qnn.requantize``, ``qnn.add`` and ``qnn.mul``, bit for bit as their reference kernels.

The TFLite fixed-point arithmetic of :mod:`passhost.relay.op.fixed_point` is written as
int64 expressions: every product stays below 2^63 (int32 wrap-around is a conversion to
int32 and back, and only ever of values whose low 32 bits are what the C code keeps), and
``>>`` / ``&`` by a power of two are floor division and floor remainder.

Zero points (and the scales of quantize and dequantize) are read from their tensors at run
time. Requantize, add and mul derive integer multipliers from their scales when the loops
are built, so they need scales that are one-element constants (loop lowering passes those as
immediates); per-channel requantize scales, scales given at run time and scales the reference
rejects leave the call to its kernel. Run-time scales of quantize are not checked: the type
relation checks constant ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from passhost import te
from passhost.ir.types import TensorType
from passhost.relay.op import fixed_point as fp
from passhost.tir.expr import FloatImm, IntImm, Max, Min, PrimExpr, const

__all__ = ["dequantize_te", "qadd_te", "qmul_te", "quantize_te", "requantize_te"]

_I64 = "int64"


# -- parameters -------------------------------------------------------------------------------
def _immediate(tensor: te.Tensor) -> float | None:
    """The value of a one-element constant (a compute of an immediate), else None."""
    if isinstance(tensor.body, (IntImm, FloatImm)) and int(np.prod(tensor.shape)) == 1:
        return tensor.body.value
    return None


def _scales(*tensors: te.Tensor) -> list[float] | None:
    """The values of constant scalar scales, or None unless each is one and positive and
    finite (the reference rejects the others)."""
    values = [_immediate(t) for t in tensors]
    if any(v is None or not (np.isfinite(v) and v > 0) for v in values):
        return None
    return [float(v) for v in values]


def _param(tensor: te.Tensor, index: Sequence[Any], axis: int) -> PrimExpr:
    """The quantisation parameter for the element at ``index``: the tensor's only value, or
    its value for the element's channel along ``axis``."""
    if int(np.prod(tensor.shape)) == 1 or not index:
        return tensor[(0,) * tensor.ndim]
    return tensor[index[axis]]


def _axis(attrs: Any, ndim: int) -> int:
    return attrs.axis % ndim if ndim else 0


def _i64(x: PrimExpr) -> PrimExpr:
    return te.cast(x, _I64)


def _saturate(x: PrimExpr, dtype: str) -> PrimExpr:
    """The int64 ``x`` limited to ``dtype``'s range, as ``dtype``."""
    info = np.iinfo(dtype)
    return te.cast(Min(Max(x, int(info.min)), int(info.max)), dtype)


# -- fixed-point arithmetic on int64 expressions ----------------------------------------------
def wrap_int32(x: PrimExpr) -> PrimExpr:
    """The int64 ``x`` wrapped around to int32's range (two's complement), as int64."""
    return _i64(te.cast(x, "int32"))


def _srdhm(a: PrimExpr, b: int) -> PrimExpr:
    """``SaturatingRoundingDoublingHighMul(a, b)`` of int32-range ``a`` and constant ``b``."""
    high = (a * b + (1 << 30)) // (1 << 31)
    if b == fp.INT32_MIN:
        return te.if_then_else(a.equal(fp.INT32_MIN), const(fp.INT32_MAX, _I64), high)
    return high


def _rdbpot(x: PrimExpr, exponent: int) -> PrimExpr:
    """``RoundingDivideByPOT(x, exponent)``: ``x / 2^exponent`` rounded half away from 0.

    gemmlowp adds 1 to the floor quotient when the remainder exceeds ``2^(exponent-1) - 1``,
    plus 1 for negative ``x``; that is the floor of ``x + 2^(exponent-1) - (x < 0)`` over
    ``2^exponent``."""
    if exponent == 0:
        return x
    return (x + ((1 << (exponent - 1)) - _i64(x < 0))) // (1 << exponent)


def _mbqm(x: PrimExpr, multiplier: int, shift: int) -> PrimExpr:
    """``MultiplyByQuantizedMultiplier`` of int32-range ``x`` (double rounding)."""
    shifted = wrap_int32(x * (1 << max(shift, 0)))
    return _rdbpot(_srdhm(shifted, multiplier), max(-shift, 0))


# -- the operators ----------------------------------------------------------------------------
def _round_half_away(q: PrimExpr) -> PrimExpr:
    mag = te.fabs(q)
    low = te.floor(mag)
    return te.copysign(te.if_then_else(mag - low >= 0.5, low + 1, low), q)


def quantize_te(attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    """``qnn.quantize``: round(x / scale) in float32 (float64 data: float64), NaN as 0,
    limited to int32, plus the zero point, saturated."""
    data, scale, zero_point = inputs
    axis = _axis(attrs, data.ndim)
    real = "float64" if data.dtype == "float64" else "float32"
    rounding = _round_half_away if attrs.rounding == "away" else te.round

    def element(*i: Any) -> PrimExpr:
        q = te.cast(rounding(te.cast(data[i], real) / te.cast(_param(scale, i, axis), real)),
                    "float64")
        # Limited to int32 (the limits taken only where q is no NaN), NaN as 0.
        q = te.if_then_else(te.isnan(q), 0.0, Max(Min(q, float(fp.INT32_MAX)),
                                                  float(fp.INT32_MIN)))
        return _saturate(_i64(q) + _i64(_param(zero_point, i, axis)), out.dtype)

    return te.compute(data.shape, element, name="quantize")


def dequantize_te(attrs: Any, inputs: Sequence[te.Tensor], _out: TensorType) -> te.Tensor:
    """``qnn.dequantize``: float32(float64(scale) * (q - zero_point))."""
    data, scale, zero_point = inputs
    axis = _axis(attrs, data.ndim)

    def element(*i: Any) -> PrimExpr:
        centred = _i64(data[i]) - _i64(_param(zero_point, i, axis))
        return te.cast(te.cast(_param(scale, i, axis), "float64") * te.cast(centred, "float64"),
                       "float32")

    return te.compute(data.shape, element, name="dequantize")


def requantize_te(attrs: Any, inputs: Sequence[te.Tensor],
                  out: TensorType) -> te.Tensor | None:
    """``qnn.requantize`` with constant scalar scales: MultiplyByQuantizedMultiplier of
    ``x - in_zp`` by ``in_scale / out_scale``, plus ``out_zp``, saturated."""
    data, in_scale, in_zp, out_scale, out_zp = inputs
    scales = _scales(in_scale, out_scale)
    if scales is None:
        return None
    mult, shift = fp.quantize_multiplier(float(fp.requantize_effective_scales(*scales)))
    if shift > 31:
        return None
    axis = _axis(attrs, data.ndim)

    def element(*i: Any) -> PrimExpr:
        x = wrap_int32(_i64(data[i]) - _i64(_param(in_zp, i, axis)))
        return _saturate(_mbqm(x, mult, shift) + _i64(_param(out_zp, i, axis)), out.dtype)

    return te.compute(data.shape, element, name="requantize")


def _binary(inputs: Sequence[te.Tensor], out: TensorType, name: str, fn: Any) -> te.Tensor:
    """The broadcast compute of ``fn(lhs + lhs_offset, rhs + rhs_offset)`` (int64, the
    offsets being the negated zero points) plus the output zero point, saturated."""
    lhs, rhs, _, lhs_zp, _, rhs_zp, _, out_zp = inputs

    def element(*i: Any) -> PrimExpr:
        a = _i64(lhs[te.broadcast_indices(i, lhs.shape)]) - _i64(lhs_zp[(0,) * lhs_zp.ndim])
        b = _i64(rhs[te.broadcast_indices(i, rhs.shape)]) - _i64(rhs_zp[(0,) * rhs_zp.ndim])
        total = wrap_int32(fn(a, b) + _i64(out_zp[(0,) * out_zp.ndim]))
        return _saturate(total, out.dtype)

    return te.compute(out.shape, element, name=name)


def qadd_te(_attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor | None:
    """``qnn.add`` with constant scales (TFLite's integer add)."""
    scales = _scales(inputs[2], inputs[4], inputs[6])
    if scales is None:
        return None
    p = fp.add_params(*scales, out.dtype)
    if max(p.lhs_shift, p.rhs_shift, p.output_shift) > 31:
        return None

    def add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        a = _mbqm(wrap_int32(a * (1 << p.left_shift)), p.lhs_multiplier, p.lhs_shift)
        b = _mbqm(wrap_int32(b * (1 << p.left_shift)), p.rhs_multiplier, p.rhs_shift)
        return _mbqm(wrap_int32(a + b), p.output_multiplier, p.output_shift)

    return _binary(inputs, out, "qnn_add", add)


def qmul_te(_attrs: Any, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor | None:
    """``qnn.mul`` with constant scales (TFLite's integer multiply)."""
    scales = _scales(inputs[2], inputs[4], inputs[6])
    if scales is None:
        return None
    mult, shift = fp.quantize_multiplier(fp.mul_effective_scale(*scales))
    if shift > 31:
        return None

    def mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        # Only the product's low 32 bits count: wrapping the factors first keeps it in int64.
        return _mbqm(wrap_int32(wrap_int32(a) * wrap_int32(b)), mult, shift)

    return _binary(inputs, out, "qnn_mul", mul)
