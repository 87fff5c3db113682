"""Converters of the quantised ONNX operators to ``qnn.*`` and integer arithmetic.

- QuantizeLinear -> ``qnn.quantize`` (halves to even, as ONNX); DequantizeLinear ->
  ``qnn.dequantize``; per tensor, per axis or per block (``take`` repeats each block's
  scale and zero point).
- QLinearConv -> ``qnn.conv2d`` (int32 sums, + B) and QLinearMatMul -> ``qnn.dense`` (a
  constant 2-D B) or an int32 ``matmul``, each requantised as ONNX does: the sums times
  ``x_scale * w_scale / y_scale`` (computed in the scales' type) in float64, plus the output
  zero point, rounded half to even and saturated.
- DynamicQuantizeLinear -> ``min``/``max`` of the input, the uint8 scale and zero point, and
  ``qnn.quantize``.
- MatMulInteger -> int32 ``matmul`` of the zero-point-shifted inputs; ConvInteger ->
  ``qnn.conv2d`` with int32 output.

Scales and zero points may be known while importing or computed; scales are float32,
float16 or bfloat16 (the float8, int4 and float4 types are not passhost dtypes).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from onnx import helper

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import axis_index, matmul_any_rank
from passhost.frontend.onnx_registry import Entry
from passhost.frontend.onnx_windows import conv2d_attrs
from passhost.relay import nn, qnn
from passhost.relay.expr import Expr, const
from passhost.relay.op.qnn import QUANTIZE_DTYPES

__all__ = ["CONVERTERS"]

#: The integer types of QLinearConv's and QLinearMatMul's tensors (ONNX allows no others).
_QLINEAR_DTYPES = ("int8", "uint8")
#: The types of scales passhost reads.
_SCALE_DTYPES = ("float32", "float16", "bfloat16")


def _check_dtype(ctx: NodeContext, what: str, dtype: str, allowed: tuple[str, ...]) -> str:
    if dtype not in allowed:
        raise ctx.error(f"expected {what} of type {', '.join(allowed)}, found {dtype}")
    return dtype


def _value(ctx: NodeContext, index: int, dtype: str) -> Expr:
    """Input ``index`` as a ``dtype`` expression (a constant when known)."""
    if ctx.is_known(index):
        return const(ctx.known(index), dtype)
    value = ctx.input(index)
    return value if ctx.dtype(index) == dtype else relay.cast(value, dtype=dtype)


def _scale(ctx: NodeContext, index: int, dtype: str = "float32") -> Expr:
    """Scale input ``index`` (float32, float16 or bfloat16) as a ``dtype`` expression."""
    _check_dtype(ctx, f"the scale (input {index})", ctx.dtype(index), _SCALE_DTYPES)
    return _value(ctx, index, dtype)


def _zero_point(ctx: NodeContext, index: int, dtype: str = "int32") -> Expr:
    """Zero point input ``index`` as a ``dtype`` expression; 0 when absent."""
    if not ctx.has_input(index):
        return const(np.zeros(()), dtype)
    return _value(ctx, index, dtype)


def _require_inputs(ctx: NodeContext, count: int) -> None:
    missing = [i for i in range(count) if not ctx.has_input(i)]
    if missing:
        raise ctx.error(f"expected inputs 0 to {count - 1}, found none for {missing}")


# -- QuantizeLinear / DequantizeLinear ----------------------------------------------------------
class _Layout(NamedTuple):
    """How a Quantize/DequantizeLinear node's scale applies to x: per tensor (axis -1), per
    axis, or per block of ``block`` elements along ``axis``."""

    axis: int
    block: int
    x_shape: tuple[int, ...]

    def broadcast(self, value: Expr, param_shape: tuple[int, ...]) -> Expr:
        """A scale or zero point shaped to broadcast against x element by element."""
        if self.block:
            n = self.x_shape[self.axis]
            blocks = const((np.arange(n) // self.block).astype(np.int32))
            return relay.take(value, blocks, axis=self.axis)
        if self.axis < 0:
            return relay.reshape(value, newshape=())
        shape = [1] * len(self.x_shape)
        shape[self.axis] = param_shape[0]
        return relay.reshape(value, newshape=tuple(shape))


def _layout(ctx: NodeContext) -> _Layout:
    """The layout of a Quantize/DequantizeLinear node's scale (input 1) and zero point."""
    x_shape = tuple(ctx.shape(0))
    s_shape = tuple(ctx.shape(1))
    if ctx.has_input(2) and tuple(ctx.shape(2)) != s_shape:
        raise ctx.error(f"expected the zero point of the scale's shape {list(s_shape)}, "
                        f"found {list(ctx.shape(2))}")
    block = int(ctx.attr("block_size", 0))
    if block < 0:
        raise ctx.error(f"expected a block_size of at least 0, found {block}")
    if block:
        axis = axis_index(ctx, int(ctx.attr("axis", 1)), len(x_shape))
        want = list(x_shape)
        want[axis] = math.ceil(x_shape[axis] / block)
        if list(s_shape) != want:
            raise ctx.error(f"expected a scale of shape {want} (block_size {block} along "
                            f"axis {axis} of x, shape {list(x_shape)}), found {list(s_shape)}")
        return _Layout(axis, block, x_shape)
    if math.prod(s_shape) == 1 and len(s_shape) <= 1:
        return _Layout(-1, 0, x_shape)
    if len(s_shape) == 1 and x_shape:
        axis = axis_index(ctx, int(ctx.attr("axis", 1)), len(x_shape))
        if s_shape[0] == x_shape[axis]:
            return _Layout(axis, 0, x_shape)
        raise ctx.error(f"expected a scale of {x_shape[axis]} values (axis {axis} of x, "
                        f"shape {list(x_shape)}), found shape {list(s_shape)}")
    raise ctx.error(f"expected a scalar or 1-D scale (or block_size > 0), found shape "
                    f"{list(s_shape)}")


def _type_name(ctx: NodeContext, code: int, attr: str) -> str:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(code)).name
    except (KeyError, TypeError, ValueError) as exc:
        raise ctx.error(f"expected {attr} to be a tensor element type, found {code}") from exc


def _quantized_dtype(ctx: NodeContext) -> str:
    """QuantizeLinear's output type: the zero point's, else ``output_dtype``, else uint8."""
    code = int(ctx.attr("output_dtype", 0))
    wanted = _type_name(ctx, code, "output_dtype") if code else None
    if ctx.has_input(2):
        found = ctx.dtype(2)
        if wanted is not None and found != wanted:
            raise ctx.error(f"expected a {wanted} zero point (output_dtype), found {found}")
        wanted = found
    dtype = wanted or "uint8"
    return _check_dtype(ctx, "the quantised output", dtype, QUANTIZE_DTYPES)


def _quantize_linear(ctx: NodeContext) -> Value:
    """ONNX QuantizeLinear becomes ``qnn.quantize`` with halves rounded to even, per tensor,
    per axis or per block; x / scale is computed in ``precision`` (default x's type). Not
    supported: the float8, int4, int2 and float4 output types."""
    x_dtype = _check_dtype(ctx, "x (input 0)", ctx.dtype(0), (*_SCALE_DTYPES, "int32"))
    out_dtype = _quantized_dtype(ctx)
    layout = _layout(ctx)
    code = ctx.attr("precision")
    precision = _type_name(ctx, int(code), "precision") if code else (
        "float32" if x_dtype == "int32" else x_dtype)
    _check_dtype(ctx, "precision", precision, _SCALE_DTYPES)
    x = ctx.input(0)
    if x_dtype != precision:
        x = relay.cast(x, dtype=precision)
    if precision == "float32" and not layout.block:
        return qnn.quantize(x, _scale(ctx, 1), _zero_point(ctx, 2), axis=layout.axis,
                            out_dtype=out_dtype, rounding="even")
    s_shape = tuple(ctx.shape(1))
    ratio = relay.divide(x, layout.broadcast(_scale(ctx, 1, precision), s_shape))
    if precision != "float32":
        ratio = relay.cast(ratio, dtype="float32")
    one = const(np.float32(1.0))
    if not layout.block:
        return qnn.quantize(ratio, one, _zero_point(ctx, 2), axis=layout.axis,
                            out_dtype=out_dtype, rounding="even")
    q = qnn.quantize(ratio, one, const(np.int32(0)), out_dtype="int32", rounding="even")
    if ctx.has_input(2):
        q = relay.add(q, layout.broadcast(_zero_point(ctx, 2), s_shape))
    info = np.iinfo(out_dtype)
    return relay.cast(relay.clip(q, a_min=float(info.min), a_max=float(info.max)),
                      dtype=out_dtype)


def _dequantize_linear(ctx: NodeContext) -> Value:
    """ONNX DequantizeLinear becomes ``qnn.dequantize`` (per tensor or per axis), or
    (x - zero_point) * scale in float32 per block; the result has the scale's type or
    ``output_dtype``. Not supported: the float8, int4, int2 and float4 input types."""
    x_dtype = _check_dtype(ctx, "x (input 0)", ctx.dtype(0), (*QUANTIZE_DTYPES, "int32"))
    if ctx.has_input(2) and ctx.dtype(2) != x_dtype:
        raise ctx.error(f"expected a {x_dtype} zero point (x's type), found "
                        f"{ctx.dtype(2)}")
    layout = _layout(ctx)
    scale_dtype = _check_dtype(ctx, "the scale (input 1)", ctx.dtype(1), _SCALE_DTYPES)
    code = int(ctx.attr("output_dtype", 0))
    out_dtype = _type_name(ctx, code, "output_dtype") if code else scale_dtype
    _check_dtype(ctx, "output_dtype", out_dtype, _SCALE_DTYPES)
    if layout.block:
        s_shape = tuple(ctx.shape(1))
        centred = relay.cast(ctx.input(0), dtype="float32")
        if ctx.has_input(2):
            zp = layout.broadcast(_zero_point(ctx, 2, "float32"), s_shape)
            centred = relay.subtract(centred, zp)
        y = relay.multiply(centred, layout.broadcast(_scale(ctx, 1), s_shape))
    else:
        y = qnn.dequantize(ctx.input(0), _scale(ctx, 1), _zero_point(ctx, 2), axis=layout.axis)
    return y if out_dtype == "float32" else relay.cast(y, dtype=out_dtype)


# -- QLinearConv / QLinearMatMul ----------------------------------------------------------------
def _output_dtype(ctx: NodeContext) -> str:
    """The output type of QLinearConv and QLinearMatMul: y_zero_point's (input 7)."""
    return _check_dtype(ctx, "y_zero_point", ctx.dtype(7), _QLINEAR_DTYPES)


def _requantize(ctx: NodeContext, acc: Expr, multiplier: Expr) -> Expr:
    """int32 sums ``acc`` as ONNX requantises them: float64(acc) * multiplier +
    y_zero_point, rounded half to even, saturated to y_zero_point's type."""
    real = relay.multiply(relay.cast(acc, dtype="float64"),
                          relay.cast(multiplier, dtype="float64"))
    real = relay.add(real, _zero_point(ctx, 7, "float64"))
    return qnn.quantize(real, const(np.float32(1.0)), const(np.int32(0)),
                        out_dtype=_output_dtype(ctx), rounding="even")


def _multiplier(ctx: NodeContext, a: int, b: int, dtype: str) -> Expr:
    """``scale(a) * scale(b) / y_scale`` in ``dtype`` (ONNX computes it in the scales' type)."""
    return relay.divide(relay.multiply(_scale(ctx, a, dtype), _scale(ctx, b, dtype)),
                        _scale(ctx, 6, dtype))


def _per_channel(ctx: NodeContext, index: int, channels: int, where: str) -> None:
    shape = tuple(ctx.shape(index))
    if math.prod(shape) != 1 and shape != (channels,):
        raise ctx.error(f"expected input {index} ({ctx.node.input[index]!r}) to be a scalar "
                        f"or a 1-D tensor of {channels} values ({where}), found shape "
                        f"{list(shape)}")


def _scalar_param(ctx: NodeContext, index: int) -> None:
    if ctx.has_input(index) and math.prod(ctx.shape(index)) != 1:
        raise ctx.error(f"expected input {index} ({ctx.node.input[index]!r}) to be a scalar, "
                        f"found shape {list(ctx.shape(index))}")


def _flat(value: Expr, shape: tuple[int, ...]) -> Expr:
    """A scalar-like (one value) parameter as shape (); a per-channel one as is."""
    return relay.reshape(value, newshape=()) if math.prod(shape) == 1 else value


def _qlinear_conv(ctx: NodeContext) -> Value:
    """ONNX QLinearConv (2-D) becomes ``qnn.conv2d`` with int32 sums (+ B) requantised as
    ONNX does (float64 product with x_scale * w_scale / y_scale, halves to even); weights
    per tensor or per output channel."""
    _require_inputs(ctx, 8)
    _check_dtype(ctx, "x", ctx.dtype(0), _QLINEAR_DTYPES)
    w_dtype = _check_dtype(ctx, "w", ctx.dtype(3), _QLINEAR_DTYPES)
    attrs = conv2d_attrs(ctx, weight_index=3)
    channels = int(attrs["channels"])  # type: ignore[call-overload]
    for index in (1, 2, 6, 7):
        _scalar_param(ctx, index)
    where = "the weight's output channels"
    for index in (4, 5):
        _per_channel(ctx, index, channels, where)
    if ctx.dtype(5) != w_dtype:
        raise ctx.error(f"expected a {w_dtype} w_zero_point (w's type), found "
                        f"{ctx.dtype(5)}")
    scales = [_flat(_scale(ctx, i), tuple(ctx.shape(i))) for i in (1, 4)]
    zero_points = [_flat(_zero_point(ctx, i), tuple(ctx.shape(i))) for i in (2, 5)]
    acc = qnn.conv2d(ctx.input(0), ctx.input(3), *zero_points, *scales, out_dtype="int32",
                     **attrs)
    if ctx.has_input(8):
        _check_dtype(ctx, "the bias B", ctx.dtype(8), ("int32",))
        acc = nn.bias_add(acc, ctx.input(8), axis=1)
    multiplier = _multiplier(ctx, 1, 4, "float32")
    if math.prod(ctx.shape(4)) != 1:
        multiplier = relay.reshape(multiplier, newshape=(1, channels, 1, 1))
    return _requantize(ctx, acc, multiplier)


def _centred(ctx: NodeContext, index: int, zp_index: int) -> Expr:
    """Integer input ``index`` minus its zero point (broadcast), in int32."""
    value = relay.cast(ctx.input(index), dtype="int32")
    if not ctx.has_input(zp_index):
        return value
    return relay.subtract(value, _zero_point(ctx, zp_index))


def _qlinear_matmul(ctx: NodeContext) -> Value:
    """ONNX QLinearMatMul becomes ``qnn.dense`` (a constant 2-D B) or an int32 ``matmul`` of
    the zero-point-shifted inputs, requantised as ONNX does (float64 product with
    a_scale * b_scale / y_scale computed in the scales' type, halves to even); B per tensor
    or per column."""
    _require_inputs(ctx, 8)
    a_dtype = _check_dtype(ctx, "a", ctx.dtype(0), _QLINEAR_DTYPES)
    b_dtype = _check_dtype(ctx, "b", ctx.dtype(3), _QLINEAR_DTYPES)
    for index, want in ((2, a_dtype), (5, b_dtype)):
        if ctx.dtype(index) != want:
            raise ctx.error(f"expected a {want} zero point (input {index}), found "
                            f"{ctx.dtype(index)}")
    scale_dtypes = {ctx.dtype(i) for i in (1, 4, 6)}
    if len(scale_dtypes) != 1:
        raise ctx.error(f"expected a_scale, b_scale and y_scale of one type, found "
                        f"{sorted(scale_dtypes)}")
    a_shape, b_shape = tuple(ctx.shape(0)), tuple(ctx.shape(3))
    for index in (1, 2, 6, 7):
        _scalar_param(ctx, index)
    multiplier = _multiplier(ctx, 1, 4, scale_dtypes.pop())
    if ctx.is_known(3) and len(b_shape) == 2 and all(
            math.prod(ctx.shape(i)) == 1 or tuple(ctx.shape(i)) == b_shape[1:] for i in (4, 5)):
        weight = const(np.ascontiguousarray(ctx.known(3).T))
        a = ctx.input(0) if len(a_shape) > 1 else relay.reshape(ctx.input(0),
                                                                 newshape=(1, a_shape[0]))
        acc = qnn.dense(a, weight, _flat(_zero_point(ctx, 2), ctx.shape(2)),
                        _flat(_zero_point(ctx, 5), ctx.shape(5)),
                        _flat(_scale(ctx, 1), ctx.shape(1)), _flat(_scale(ctx, 4), ctx.shape(4)),
                        out_dtype="int32")
        if len(a_shape) == 1:
            acc = relay.reshape(acc, newshape=(b_shape[1],))
    else:
        acc = matmul_any_rank(_centred(ctx, 0, 2), _centred(ctx, 3, 5), a_shape, b_shape)
    return _requantize(ctx, acc, multiplier)


# -- DynamicQuantizeLinear / MatMulInteger / ConvInteger ----------------------------------------
def _dynamic_quantize_linear(ctx: NodeContext) -> list[Value]:
    """ONNX DynamicQuantizeLinear becomes ``min``/``max`` of x (widened to include 0), the
    uint8 scale (max - min) / 255 (1 where that is 0, as onnxruntime for all zeros) and zero
    point, and ``qnn.quantize`` (halves to even)."""
    _check_dtype(ctx, "x (input 0)", ctx.dtype(0), ("float32",))
    x = ctx.input(0)
    zero = const(np.float32(0.0))
    high = relay.maximum(relay.max(x), zero)
    low = relay.minimum(relay.min(x), zero)
    spread = relay.subtract(high, low)
    # A spread of 0, or one so small that the scale underflows, gives the scale 1.
    scale = relay.divide(spread, const(np.float32(255.0)))
    scale = relay.where(relay.equal(scale, zero), const(np.float32(1.0)), scale)
    start = relay.clip(relay.negative(relay.divide(low, scale)), a_min=0.0, a_max=255.0)
    zero_point = qnn.quantize(start, const(np.float32(1.0)), const(np.int32(0)),
                              out_dtype="uint8", rounding="even")
    y = qnn.quantize(x, scale, relay.cast(zero_point, dtype="int32"), out_dtype="uint8",
                     rounding="even")
    return [y, scale, zero_point]


def _integer_zero_point(ctx: NodeContext, index: int, data_index: int, where: str) -> None:
    if ctx.has_input(index) and ctx.dtype(index) != ctx.dtype(data_index):
        raise ctx.error(f"expected the {where} zero point (input {index}) of input "
                        f"{data_index}'s type {ctx.dtype(data_index)}, found "
                        f"{ctx.dtype(index)}")


def _matmul_integer(ctx: NodeContext) -> Value:
    """ONNX MatMulInteger becomes an int32 ``matmul`` of the zero-point-shifted inputs; A's
    zero point is a scalar or one per row, B's a scalar or one per column."""
    for index, name in ((0, "A"), (1, "B")):
        _check_dtype(ctx, name, ctx.dtype(index), _QLINEAR_DTYPES)
    a_shape, b_shape = tuple(ctx.shape(0)), tuple(ctx.shape(1))
    _integer_zero_point(ctx, 2, 0, "A's")
    _integer_zero_point(ctx, 3, 1, "B's")
    a = relay.cast(ctx.input(0), dtype="int32")
    if ctx.has_input(2):
        zp = _zero_point(ctx, 2)
        zp_shape = tuple(ctx.shape(2))
        rows = a_shape[-2] if len(a_shape) >= 2 else None
        if math.prod(zp_shape) == 1:
            zp = relay.reshape(zp, newshape=())
        elif len(zp_shape) == 1 and zp_shape[0] == rows:
            zp = relay.reshape(zp, newshape=(rows, 1))
        else:
            raise ctx.error(f"expected a_zero_point to be a scalar or one value per row of "
                            f"A (shape {list(a_shape)}), found shape {list(zp_shape)}")
        a = relay.subtract(a, zp)
    b = relay.cast(ctx.input(1), dtype="int32")
    if ctx.has_input(3):
        zp_shape = tuple(ctx.shape(3))
        if math.prod(zp_shape) != 1 and zp_shape != b_shape[-1:]:
            raise ctx.error(f"expected b_zero_point to be a scalar or one value per column of "
                            f"B (shape {list(b_shape)}), found shape {list(zp_shape)}")
        b = relay.subtract(b, _flat(_zero_point(ctx, 3), zp_shape))
    return matmul_any_rank(a, b, a_shape, b_shape)


def _conv_integer(ctx: NodeContext) -> Value:
    """ONNX ConvInteger (2-D) becomes ``qnn.conv2d`` with int32 output; x's zero point is a
    scalar, w's a scalar or one per output channel."""
    _check_dtype(ctx, "x", ctx.dtype(0), _QLINEAR_DTYPES)
    _check_dtype(ctx, "w", ctx.dtype(1), _QLINEAR_DTYPES)
    _integer_zero_point(ctx, 2, 0, "x's")
    _integer_zero_point(ctx, 3, 1, "w's")
    attrs = conv2d_attrs(ctx, weight_index=1)
    _scalar_param(ctx, 2)
    x_zp = _flat(_zero_point(ctx, 2), tuple(ctx.shape(2))) if ctx.has_input(2) \
        else _zero_point(ctx, 2)
    w_zp = _zero_point(ctx, 3)
    if ctx.has_input(3):
        _per_channel(ctx, 3, int(attrs["channels"]),  # type: ignore[call-overload]
                     "the weight's output channels")
        w_zp = _flat(w_zp, tuple(ctx.shape(3)))
    one = const(np.float32(1.0))
    return qnn.conv2d(ctx.input(0), ctx.input(1), x_zp, w_zp, one, one, out_dtype="int32",
                      **attrs)


#: The converter of each supported quantised ONNX operator type.
CONVERTERS: dict[str, Entry] = {
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
    "DynamicQuantizeLinear": _dynamic_quantize_linear,
    "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer,
}
