"""Converters from TFLite builtin operators to passhost graph operators.

Each converter takes an :class:`OpContext` and returns the expression of the operator's
output. Data stays NHWC. float32 operators become ``nn.*`` and tensor operators; int8
operators become ``qnn.*`` operators carrying the tensors' scales and zero points, in the
shapes a quantised-kernel target matches::

    [nn.pad] -> qnn.conv2d -> [nn.bias_add] -> qnn.requantize -> [clip]
    qnn.dense -> [nn.bias_add] -> qnn.requantize -> [clip]
    cast -> nn.avg_pool2d -> cast -> [clip]          nn.max_pool2d -> [clip]
    qnn.add / qnn.mul -> [clip]                       qnn.softmax

The requantize input scale is the exact float64 product ``s_in * s_w`` (per output channel
for convolutions): TFLite Micro's convolutions and fully connected layers
(``GetQuantizedConvolutionMultipler``) multiply the two float32 scales in double, so
``qnn.requantize``'s ``(double)in_scale / (double)out_scale`` gives TFLite's multipliers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from passhost import relay
from passhost.frontend.tflite_context import OpContext
from passhost.relay import nn, qnn
from passhost.relay.expr import Expr, const

Converter = Callable[[OpContext], Expr]

__all__ = ["CONVERTERS", "Converter"]


# -- shared pieces -------------------------------------------------------------------------------
def _same_kind_output(ctx: OpContext, quantized: bool) -> None:
    ctx.expect_dtype(ctx.output(), "int8" if quantized else "float32", "the output")


def _bias(ctx: OpContext, acc: Expr, quantized: bool, channels: int, axis: int) -> Expr:
    """``nn.bias_add`` of optional input 2 (int32 for int8 operators)."""
    if not ctx.has_input(2):
        return acc
    bias = ctx.tensor(2)
    ctx.expect_dtype(bias, "int32" if quantized else "float32", "the bias")
    if bias.shape != (channels,):
        raise ctx.error(f"the bias, {bias.where}: expected shape [{channels}], found "
                        f"{list(bias.shape)}")
    return nn.bias_add(acc, ctx.input(2), axis=axis)


def _weight_quantization(ctx: OpContext, index: int, axis: int,
                         zero_point_free: bool) -> tuple[np.ndarray, np.ndarray]:
    """Scales and zero points of int8 weight input ``index`` (per-channel along ``axis``)."""
    w = ctx.tensor(index)
    ctx.expect_dtype(w, "int8", "the weight")
    q = ctx.quantization(w, channels_axis=axis)
    if zero_point_free and np.any(q.zero_point != 0):
        raise ctx.error(f"the weight, {w.where}: expected zero points 0 (TFLite's int8 "
                        f"convolutions assume symmetric weights), found "
                        f"{q.zero_point.tolist()}")
    return q.scale, q.zero_point.astype("int32")


def _vector_or_scalar(values: np.ndarray) -> np.ndarray:
    return values.reshape(()) if values.size == 1 else values


def _requantize(ctx: OpContext, acc: Expr, in_scale: float, w_scale: np.ndarray,
                axis: int) -> Expr:
    """``qnn.requantize`` of an int32 accumulator to the int8 output, then the activation.
    Its input scale is ``(double)s_in * (double)s_w[c]``, exact in float64 (the product of
    two float32 significands fits in 48 bits)."""
    product = _vector_or_scalar(np.float64(in_scale) * w_scale.astype(np.float64))
    out_scale, out_zp = ctx.scale_zero_point(ctx.output())
    out = qnn.requantize(acc, const(product, "float64"), const(0, "int32"), out_scale, out_zp,
                         axis=axis, out_dtype="int8")
    return ctx.activation(out)


# -- convolutions --------------------------------------------------------------------------------
def _window_conv(ctx: OpContext, weight: Expr, kernel_layout: str, groups: int,
                 channels: int, kernel: tuple[int, int], o_axis: int) -> Expr:
    """Convolution over NHWC input 0 with ``weight`` (already in ``kernel_layout``)."""
    _, h, w, _ = ctx.rank(0, 4)
    strides = (ctx.int_option("StrideH", 1), ctx.int_option("StrideW", 1))
    dilation = (ctx.int_option("DilationHFactor", 1, 1), ctx.int_option("DilationWFactor", 1, 1))
    attrs = dict(strides=strides, padding=ctx.window((h, w), kernel, strides, dilation),
                 dilation=dilation, groups=groups, channels=channels, kernel_size=kernel,
                 data_layout="NHWC", kernel_layout=kernel_layout)
    quantized = ctx.quantized
    _same_kind_output(ctx, quantized)
    if not quantized:
        ctx.expect_dtype(ctx.tensor(1), "float32", "the weight")
        out = nn.conv2d(ctx.input(0), weight, **attrs)
        return ctx.activation(_bias(ctx, out, False, channels, axis=3))
    in_scale, in_zp = ctx.per_tensor(ctx.tensor(0))
    w_scale, w_zp = _weight_quantization(ctx, 1, o_axis, zero_point_free=True)
    acc = qnn.conv2d(ctx.input(0), weight, const(in_zp, "int32"),
                     const(_vector_or_scalar(w_zp)), const(np.float32(in_scale)),
                     const(_vector_or_scalar(w_scale)), out_dtype="int32", **attrs)
    acc = _bias(ctx, acc, True, channels, axis=3)
    return _requantize(ctx, acc, in_scale, w_scale, axis=3)


def _conv_2d(ctx: OpContext) -> Expr:
    _, _, _, c = ctx.rank(0, 4)
    o, kh, kw, i = ctx.rank(1, 4)
    if i < 1 or c % i:
        raise ctx.error(f"the weight, {ctx.tensor(1).where}: expected an OHWI weight whose "
                        f"I={i} divides the input's {c} channels")
    return _window_conv(ctx, ctx.input(1), "OHWI", c // i, o, (kh, kw), o_axis=0)


def _depthwise_conv_2d(ctx: OpContext) -> Expr:
    _, _, _, c = ctx.rank(0, 4)
    one, kh, kw, o = ctx.rank(1, 4)
    if one != 1 or o % c:
        raise ctx.error(f"the weight, {ctx.tensor(1).where}: expected shape [1, KH, KW, "
                        f"{c}*M], found {list(ctx.tensor(1).shape)}")
    multiplier = ctx.option("DepthMultiplier", 0)
    if multiplier not in (0, o // c):
        raise ctx.error(f"expected DepthMultiplier {o // c} (weight channels {o} / input "
                        f"channels {c}) or 0, found {multiplier!r}")
    # (1, KH, KW, C*M) -> (KH, KW, 1, C*M): the same data read as HWIO, one group per channel.
    weight = ctx.param(1, (kh, kw, 1, o))
    return _window_conv(ctx, weight, "HWIO", c, o, (kh, kw), o_axis=3)


def _fully_connected(ctx: OpContext) -> Expr:
    units, depth = ctx.rank(1, 2)
    shape = ctx.tensor(0).shape
    if ctx.option("WeightsFormat", 0) != 0:
        raise ctx.error(f"expected WeightsFormat DEFAULT (0), found "
                        f"{ctx.option('WeightsFormat')!r} (shuffled weights)")
    size = math.prod(shape)
    if ctx.option("KeepNumDims", False):
        if not shape or shape[-1] != depth:
            raise ctx.error(f"keep_num_dims: expected an input whose last dimension is the "
                            f"weight's {depth}, found shape {list(shape)}")
        data = ctx.input(0)
    else:
        if size % depth:
            raise ctx.error(f"expected an input whose size ({size}) is a multiple of the "
                            f"weight's depth {depth}, found shape {list(shape)}")
        data = ctx.input(0)
        if shape != (size // depth, depth):
            data = relay.reshape(data, newshape=(size // depth, depth))
    quantized = ctx.quantized
    _same_kind_output(ctx, quantized)
    if not quantized:
        ctx.expect_dtype(ctx.tensor(1), "float32", "the weight")
        out = nn.dense(data, ctx.input(1), units=units)
        return ctx.activation(_bias(ctx, out, False, units, axis=-1))
    in_scale, in_zp = ctx.per_tensor(ctx.tensor(0))
    w_scale, w_zp = _weight_quantization(ctx, 1, 0, zero_point_free=False)
    if w_scale.size > 1:
        raise ctx.error(f"the weight, {ctx.tensor(1).where}: per-channel fully connected "
                        f"weights are not supported; expected one scale, found "
                        f"{w_scale.size}")
    acc = qnn.dense(data, ctx.input(1), const(in_zp, "int32"), const(int(w_zp[0]), "int32"),
                    const(np.float32(in_scale)), const(w_scale[0]), units=units,
                    out_dtype="int32")
    acc = _bias(ctx, acc, True, units, axis=-1)
    return _requantize(ctx, acc, in_scale, w_scale, axis=-1)


# -- pools ---------------------------------------------------------------------------------------
def _pool(ctx: OpContext, average: bool) -> Expr:
    _, h, w, _ = ctx.rank(0, 4)
    kernel = (ctx.int_option("FilterHeight", 1), ctx.int_option("FilterWidth", 1))
    strides = (ctx.int_option("StrideH", 1), ctx.int_option("StrideW", 1))
    attrs = dict(pool_size=kernel, strides=strides, layout="NHWC",
                 padding=ctx.window((h, w), kernel, strides, (1, 1)))
    quantized = ctx.quantized
    _same_kind_output(ctx, quantized)
    data = ctx.input(0)
    if quantized:
        x, out = ctx.tensor(0), ctx.output()
        if ctx.per_tensor(x) != ctx.per_tensor(out):
            raise ctx.error(f"expected the output quantisation {ctx.per_tensor(out)} (scale, "
                            f"zero point) to equal the input's {ctx.per_tensor(x)}: TFLite's "
                            f"int8 pools do not rescale")
    if not average:
        return ctx.activation(nn.max_pool2d(data, **attrs))
    if not quantized:
        return ctx.activation(nn.avg_pool2d(data, count_include_pad=False, **attrs))
    wide = nn.avg_pool2d(relay.cast(data, dtype="int32"), count_include_pad=False, **attrs)
    return ctx.activation(relay.cast(wide, dtype="int8"))


def _average_pool_2d(ctx: OpContext) -> Expr:
    return _pool(ctx, average=True)


def _max_pool_2d(ctx: OpContext) -> Expr:
    return _pool(ctx, average=False)


# -- elementwise ---------------------------------------------------------------------------------
def _binary(float_op: Callable[[Expr, Expr], Expr],
            quantized_op: Callable[..., Expr]) -> Converter:
    def convert(ctx: OpContext) -> Expr:
        quantized = ctx.quantized
        ctx.expect_dtype(ctx.tensor(1), "int8" if quantized else "float32", "input 1")
        _same_kind_output(ctx, quantized)
        a, b = ctx.input(0), ctx.input(1)
        if not quantized:
            return ctx.activation(float_op(a, b))
        params = [p for t in (ctx.tensor(0), ctx.tensor(1), ctx.output())
                  for p in ctx.scale_zero_point(t)]
        return ctx.activation(quantized_op(a, b, *params))
    return convert


def _softmax(ctx: OpContext) -> Expr:
    beta = ctx.option("Beta", 0.0)
    if not isinstance(beta, float) or not beta > 0:
        raise ctx.error(f"expected a positive Beta option, found {beta!r}")
    if not ctx.tensor(0).shape:
        raise ctx.error(f"expected an input of rank at least 1, found a scalar "
                        f"{ctx.tensor(0).where}")
    quantized = ctx.quantized
    _same_kind_output(ctx, quantized)
    if quantized:
        in_scale, in_zp = ctx.scale_zero_point(ctx.tensor(0))
        out_scale, out_zp = ctx.scale_zero_point(ctx.output())
        return qnn.softmax(ctx.input(0), in_scale, in_zp, out_scale, out_zp, axis=-1,
                           beta=beta)
    data = ctx.input(0)
    if beta != 1.0:
        data = relay.multiply(data, const(np.float32(beta)))
    return nn.softmax(data, axis=-1)


# -- shapes, padding and quantisation ------------------------------------------------------------
def _reshape(ctx: OpContext) -> Expr:
    # The shape input if constant, else the new_shape option, else the declared output
    # shape (which is what TFLite Micro uses).
    if ctx.has_input(1) and ctx.tensor(1).data is not None:
        dims = [int(d) for d in ctx.constant(1).reshape(-1)]
    elif "NewShape" in ctx.op.options:
        dims = [int(d) for d in ctx.option("NewShape")]
    else:
        dims = list(ctx.output().shape)
    size = math.prod(ctx.tensor(0).shape)
    known = math.prod(d for d in dims if d != -1)
    if dims.count(-1) > 1 or any(d < -1 for d in dims) or \
            (-1 in dims and (known == 0 or size % known)) or \
            (-1 not in dims and known != size):
        raise ctx.error(f"cannot reshape {list(ctx.tensor(0).shape)} ({size} elements) to "
                        f"{dims}")
    if -1 in dims:
        dims[dims.index(-1)] = size // known
    return relay.reshape(ctx.input(0), newshape=tuple(dims))


def _pad(ctx: OpContext) -> Expr:
    ndim = len(ctx.tensor(0).shape)
    widths = ctx.constant(1)
    if widths.shape != (ndim, 2) or np.any(widths < 0):
        raise ctx.error(f"expected non-negative paddings of shape [{ndim}, 2], found "
                        f"{widths.tolist()}")
    quantized = ctx.quantized
    _same_kind_output(ctx, quantized)
    # int8 pads with the output's zero point: the quantised value of 0.0.
    value = float(ctx.per_tensor(ctx.output())[1]) if quantized else 0.0
    return nn.pad(ctx.input(0), pad_width=tuple((int(lo), int(hi)) for lo, hi in widths),
                  pad_value=value)


def _quantize(ctx: OpContext) -> Expr:
    x, out = ctx.tensor(0), ctx.output()
    ctx.expect_dtype(out, "int8", "the output")
    if x.dtype == "int8":
        in_scale, in_zp = ctx.scale_zero_point(x)
        out_scale, out_zp = ctx.scale_zero_point(out)
        return qnn.requantize(ctx.input(0), in_scale, in_zp, out_scale, out_zp,
                              out_dtype="int8")
    ctx.expect_dtype(x, "float32", "input 0")
    return qnn.quantize(ctx.input(0), *ctx.scale_zero_point(out), out_dtype="int8")


def _dequantize(ctx: OpContext) -> Expr:
    x = ctx.tensor(0)
    ctx.expect_dtype(x, "int8", "input 0")
    ctx.expect_dtype(ctx.output(), "float32", "the output")
    return qnn.dequantize(ctx.input(0), *ctx.scale_zero_point(x))


#: The converter of each supported TFLite builtin operator.
CONVERTERS: dict[str, Converter] = {
    "CONV_2D": _conv_2d,
    "DEPTHWISE_CONV_2D": _depthwise_conv_2d,
    "FULLY_CONNECTED": _fully_connected,
    "AVERAGE_POOL_2D": _average_pool_2d,
    "MAX_POOL_2D": _max_pool_2d,
    "ADD": _binary(relay.add, qnn.add),
    "MUL": _binary(relay.multiply, qnn.mul),
    "SOFTMAX": _softmax,
    "RESHAPE": _reshape,
    "PAD": _pad,
    "QUANTIZE": _quantize,
    "DEQUANTIZE": _dequantize,
}
