"""Quantised operators (``qnn.*``) with TFLite integer semantics.

The reference kernels reproduce the TFLite / TFLite Micro reference kernels bit for bit
(which CMSIS-NN matches): double-rounding fixed-point requantisation, the add/mul
multipliers, the int8 softmax. All parameter derivation lives in
:mod:`passhost.relay.op.fixed_point`.

Scales are float32 (or float64, so a frontend can pass an exact double product) and zero
points int32; each is a scalar or, where an operator allows per-channel quantisation, a 1-D
tensor whose length is the channel dimension (or 1). Type relations check dtypes and
shapes, and the values of constant parameters (positive scales, softmax's fixed output
quantisation); the kernels check the values they are given too, with the same
:class:`~passhost.errors.IRTypeError` naming operator and argument.
"""

from __future__ import annotations

import numpy as np

from passhost.errors import IRTypeError
from passhost.ir.attrs import Attrs, attrs_class, float_field, int_field, str_field
from passhost.ir.types import ANY_FLOAT_DTYPES, TensorType, Type
from passhost.relay.op import fixed_point as fp
from passhost.relay.op import qnn_te as qte
from passhost.relay.op.common import broadcast_shape, normalize_axis
from passhost.relay.op.nn import (
    Conv2DAttrs,
    DenseAttrs,
    conv2d_compute,
    conv2d_out_type,
    dense_compute,
    dense_out_type,
    matmul_in_dtype,
)
from passhost.relay.op.registry import ArgTypes, LayoutInfo, Op, OpPattern, define_op

__all__ = [
    "QUANTIZE_DTYPES", "QUANT_DTYPES", "ROUNDINGS",
    "quantize", "dequantize", "requantize", "conv2d", "dense", "add", "mul", "softmax",
    "QuantizeAttrs", "DequantizeAttrs", "RequantizeAttrs", "QnnSoftmaxAttrs",
]

QUANT_DTYPES = ("int8", "uint8", "int16")
#: The integer types ``qnn.quantize`` produces and ``qnn.dequantize`` reads (besides int32).
QUANTIZE_DTYPES = (*QUANT_DTYPES, "uint16")
#: How ``qnn.quantize`` rounds halves: away from zero (TFLite) or to even (ONNX).
ROUNDINGS = ("away", "even")
SCALE_DTYPES = ("float32", "float64")
ACC_DTYPES = ("int32", "int64")


# -- shared checks -----------------------------------------------------------------------------
def _param(args: ArgTypes, i: int, dtypes: tuple[str, ...], channels: int | None,
           where: str = "") -> TensorType:
    """Check quantisation parameter ``i``: a scalar (or 1-element) tensor of ``dtypes``, or
    when ``channels`` is given a 1-D tensor of that length."""
    ty = args.tensor(i)
    if ty.dtype not in dtypes:
        args.fail(i, f"a {' or '.join(dtypes)} scalar", ty)
    scalar = ty.ndim == 0 or ty.shape == (1,)
    if scalar or (channels is not None and ty.shape == (channels,)):
        return ty
    if channels is None:
        args.fail(i, f"a {' or '.join(dtypes)} scalar (per-tensor quantisation)", ty)
    args.fail(i, f"a {' or '.join(dtypes)} scalar or a 1-D tensor of length {channels} "
              f"({where})", ty)


def _scale(args: ArgTypes, i: int, channels: int | None = None, where: str = "") -> None:
    _param(args, i, SCALE_DTYPES, channels, where)
    value = args.constant(i)
    if value is not None:
        _scale_value(args.op.name, args.op.inputs[i], value)


def _zero_point(args: ArgTypes, i: int, channels: int | None = None, where: str = "") -> None:
    _param(args, i, ("int32",), channels, where)


def _channel_axis(args: ArgTypes, axis: int, data: TensorType) -> tuple[int | None, str]:
    """The per-channel length along attribute ``axis`` (None for scalar data)."""
    if data.ndim == 0:
        return None, ""
    ax = normalize_axis(args, "axis", axis, data.ndim)
    return data.shape[ax], f"data's axis {ax}"


def _bad_value(op: Op | str, argument: str, expected: str, found: object) -> IRTypeError:
    name = op if isinstance(op, str) else op.name
    return IRTypeError(f"{name}: argument '{argument}' expected {expected}, found {found}",
                       op=name, argument=argument, expected=expected, found=str(found))


def _scale_value(op: str, argument: str, value: np.ndarray) -> np.ndarray:
    """A scale's values as float64, checked to be positive and finite."""
    arr = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise _bad_value(op, argument, "positive finite scales", arr)
    return arr


def _along(value: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A scalar or 1-D quantisation parameter shaped to broadcast along ``axis``."""
    arr = np.asarray(value)
    if arr.ndim == 0 or arr.size == 1 or ndim == 0:
        return arr.reshape(())
    shape = [1] * ndim
    shape[axis] = arr.shape[0]
    return arr.reshape(shape)


def _scalar(value: np.ndarray) -> np.ndarray:
    return np.asarray(value).reshape(())


def _saturate(x: np.ndarray, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    return np.asarray(np.clip(x, lo, hi)).astype(dtype)


# -- qnn.quantize ------------------------------------------------------------------------------
@attrs_class
class QuantizeAttrs(Attrs):
    """Attributes of ``qnn.quantize``."""

    axis: int = int_field(-1)
    out_dtype: str = str_field("int8", choices=(*QUANTIZE_DTYPES, "int32"))
    rounding: str = str_field("away", choices=ROUNDINGS)


def _quantize_rel(args: ArgTypes, attrs: QuantizeAttrs) -> Type:
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    channels, where = _channel_axis(args, attrs.axis, data)
    _scale(args, 1, channels, where)
    _zero_point(args, 2, channels, where)
    return TensorType(data.shape, attrs.out_dtype)


def _quantize(attrs: QuantizeAttrs, data: np.ndarray, scale: np.ndarray,
              zero_point: np.ndarray) -> np.ndarray:
    _scale_value("qnn.quantize", "output_scale", scale)
    axis = attrs.axis % data.ndim if data.ndim else 0
    real = np.float64 if data.dtype == np.float64 else np.float32
    s = _along(scale, axis, data.ndim).astype(real)
    round_half = fp.round_half_away if attrs.rounding == "away" else np.rint
    with np.errstate(invalid="ignore", over="ignore"):
        q = round_half(data.astype(real) / s)
    # C's float -> int32 conversion is undefined out of range; saturate (NaN quantises to 0).
    q = np.clip(np.nan_to_num(q.astype(np.float64), nan=0.0), fp.INT32_MIN, fp.INT32_MAX)
    out = q.astype(np.int64) + _along(zero_point, axis, data.ndim).astype(np.int64)
    return _saturate(out, attrs.out_dtype)


quantize = define_op(
    "qnn.quantize", inputs=("data", "output_scale", "output_zero_point"), attrs=QuantizeAttrs,
    type_rel=_quantize_rel, compute=_quantize, pattern=OpPattern.ELEMWISE,
    layout=LayoutInfo(axis_attrs=("axis",)), te_compute=qte.quantize_te,
    description="Float to integer (TFLite AffineQuantize): "
                "clamp(round(float32(x) / float32(scale)) + zero_point), halves rounded "
                "`away` from zero (TFLite) or to `even` (ONNX); float64 data divides in "
                "float64.")


# -- qnn.dequantize ----------------------------------------------------------------------------
@attrs_class
class DequantizeAttrs(Attrs):
    """Attributes of ``qnn.dequantize``."""

    axis: int = int_field(-1)


def _dequantize_rel(args: ArgTypes, attrs: DequantizeAttrs) -> Type:
    data = args.tensor(0, dtypes=(*QUANTIZE_DTYPES, "int32"))
    channels, where = _channel_axis(args, attrs.axis, data)
    _scale(args, 1, channels, where)
    _zero_point(args, 2, channels, where)
    return TensorType(data.shape, "float32")


def _dequantize(attrs: DequantizeAttrs, data: np.ndarray, scale: np.ndarray,
                zero_point: np.ndarray) -> np.ndarray:
    axis = attrs.axis % data.ndim if data.ndim else 0
    s = _along(scale, axis, data.ndim).astype(np.float64)
    centred = data.astype(np.int64) - _along(zero_point, axis, data.ndim).astype(np.int64)
    return np.asarray(s * centred).astype(np.float32)


dequantize = define_op(
    "qnn.dequantize", inputs=("data", "input_scale", "input_zero_point"),
    attrs=DequantizeAttrs, type_rel=_dequantize_rel, compute=_dequantize,
    pattern=OpPattern.ELEMWISE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=qte.dequantize_te,
    description="Integer to float32: float32(double(scale) * (q - zero_point)).")


# -- qnn.requantize ----------------------------------------------------------------------------
@attrs_class
class RequantizeAttrs(Attrs):
    """Attributes of ``qnn.requantize``."""

    axis: int = int_field(-1)
    out_dtype: str = str_field("int8", choices=(*QUANT_DTYPES, "int32"))


def _requantize_rel(args: ArgTypes, attrs: RequantizeAttrs) -> Type:
    data = args.tensor(0, dtypes=(*QUANT_DTYPES, "int32"))
    channels, where = _channel_axis(args, attrs.axis, data)
    for i in range(1, 5):
        (_scale if i % 2 else _zero_point)(args, i, channels, where)
    return TensorType(data.shape, attrs.out_dtype)


def _multipliers(op: str, argument: str, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mult, shift = fp.quantize_multipliers(real)
    if shift.size and int(shift.max()) > 31:
        raise _bad_value(op, argument, "an effective multiplier below 2^31", real)
    return mult.astype(np.int64), shift.astype(np.int64)


def _requantize(attrs: RequantizeAttrs, data: np.ndarray, in_scale: np.ndarray,
                in_zp: np.ndarray, out_scale: np.ndarray, out_zp: np.ndarray) -> np.ndarray:
    nd = data.ndim
    axis = attrs.axis % nd if nd else 0
    op = "qnn.requantize"
    real = fp.requantize_effective_scales(
        _along(_scale_value(op, "input_scale", in_scale), axis, nd),
        _along(_scale_value(op, "output_scale", out_scale), axis, nd))
    mult, shift = _multipliers(op, "input_scale", real)
    x = fp.wrap_int32(data.astype(np.int64) - _along(in_zp, axis, nd).astype(np.int64))
    y = fp.multiply_by_quantized_multiplier(x, mult, shift)
    return _saturate(y + _along(out_zp, axis, nd).astype(np.int64), attrs.out_dtype)


requantize = define_op(
    "qnn.requantize",
    inputs=("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point"),
    attrs=RequantizeAttrs, type_rel=_requantize_rel, compute=_requantize,
    pattern=OpPattern.ELEMWISE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=qte.requantize_te,
    description="Integer to integer with new quantisation: clamp(MultiplyByQuantizedMultiplier"
                "(x - in_zp, QuantizeMultiplier(in_scale / out_scale)) + out_zp), per channel "
                "along `axis`.")


# -- qnn.conv2d / qnn.dense --------------------------------------------------------------------
def _acc_dtype(args: ArgTypes, out_dtype: str) -> str:
    dtype = out_dtype or "int32"
    if dtype not in ACC_DTYPES:
        args.fail_attr("out_dtype", " or ".join(ACC_DTYPES), out_dtype)
    return dtype


def _matmul_params(args: ArgTypes, channels: int, where: str) -> None:
    """Check ``input_zero_point, kernel_zero_point, input_scale, kernel_scale`` (args 2-5)."""
    _zero_point(args, 2)
    _zero_point(args, 3, channels, where)
    _scale(args, 4)
    _scale(args, 5, channels, where)


def _qconv2d_rel(args: ArgTypes, attrs: Conv2DAttrs) -> Type:
    args.tensor(0, dtypes=QUANT_DTYPES)
    weight = args.tensor(1, dtypes=QUANT_DTYPES)
    dtype = _acc_dtype(args, attrs.out_dtype)
    shape = conv2d_out_type(args, attrs)
    o_axis = attrs.kernel_layout.index("O")
    _matmul_params(args, weight.shape[o_axis],
                   f"the weight's output channels, axis {o_axis} of {attrs.kernel_layout}")
    return TensorType(shape, dtype)


def _qconv2d(attrs: Conv2DAttrs, data: np.ndarray, weight: np.ndarray, in_zp: np.ndarray,
             w_zp: np.ndarray, _in_scale: np.ndarray, _w_scale: np.ndarray) -> np.ndarray:
    o_axis = attrs.kernel_layout.index("O")
    x = data.astype(np.int64) - _scalar(in_zp).astype(np.int64)
    w = weight.astype(np.int64) - _along(w_zp, o_axis, 4).astype(np.int64)
    layout = attrs.kernel_layout
    depth = weight.shape[layout.index("H")] * weight.shape[layout.index("W")] \
        * weight.shape[layout.index("I")]
    # conv2d_compute zero-pads the shifted data, so padding taps contribute 0 (the zero point).
    return matmul_in_dtype(attrs.out_dtype or "int32", x, w, depth,
                           lambda d, k: conv2d_compute(attrs, d, k))


conv2d = define_op(
    "qnn.conv2d",
    inputs=("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
            "kernel_scale"),
    attrs=Conv2DAttrs, type_rel=_qconv2d_rel, compute=_qconv2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    layout=LayoutInfo(layout_attrs=("data_layout", "kernel_layout", "out_layout")),
    description="Quantised 2-D convolution: int32 sums of (x - in_zp) * (w - w_zp) over "
                "in-bounds taps (padding acts as the zero point); out_dtype defaults to int32.")


def _qdense_rel(args: ArgTypes, attrs: DenseAttrs) -> Type:
    args.tensor(0, dtypes=QUANT_DTYPES)
    args.tensor(1, dtypes=QUANT_DTYPES)
    dtype = _acc_dtype(args, attrs.out_dtype)
    shape = dense_out_type(args, attrs)
    _matmul_params(args, shape[-1], "the weight's units, axis 0")
    return TensorType(shape, dtype)


def _qdense(attrs: DenseAttrs, data: np.ndarray, weight: np.ndarray, in_zp: np.ndarray,
            w_zp: np.ndarray, _in_scale: np.ndarray, _w_scale: np.ndarray) -> np.ndarray:
    x = data.astype(np.int64) - _scalar(in_zp).astype(np.int64)
    w = weight.astype(np.int64) - _along(w_zp, 0, 2).astype(np.int64)
    return matmul_in_dtype(attrs.out_dtype or "int32", x, w, weight.shape[1],
                           lambda d, k: dense_compute(attrs, d, k))


dense = define_op(
    "qnn.dense",
    inputs=("data", "weight", "input_zero_point", "kernel_zero_point", "input_scale",
            "kernel_scale"),
    attrs=DenseAttrs, type_rel=_qdense_rel, compute=_qdense,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="Quantised fully connected layer: int32 sums of (x - in_zp) * (w - w_zp), "
                "weight (units, in); out_dtype defaults to int32.")


# -- qnn.add / qnn.mul -------------------------------------------------------------------------
_BINARY_INPUTS = ("lhs", "rhs", "lhs_scale", "lhs_zero_point", "rhs_scale", "rhs_zero_point",
                  "output_scale", "output_zero_point")


def _binary_rel(args: ArgTypes, _attrs: object) -> Type:
    args.tensor(0, dtypes=QUANT_DTYPES)
    dtype = args.same_dtype(0, 1)
    shape = broadcast_shape(args, 0, 1)
    for i in range(2, 8):
        (_scale if i % 2 == 0 else _zero_point)(args, i)
    return TensorType(shape, dtype)


def _binary_values(op: str, scales: tuple[np.ndarray, ...], zps: tuple[np.ndarray, ...],
                   ) -> tuple[list[float], list[int]]:
    names = ("lhs_scale", "rhs_scale", "output_scale")
    s = [float(_scale_value(op, n, _scalar(v))) for n, v in zip(names, scales)]
    return s, [int(_scalar(z)) for z in zps]


def _qadd(_attrs: object, lhs: np.ndarray, rhs: np.ndarray, lhs_scale: np.ndarray,
          lhs_zp: np.ndarray, rhs_scale: np.ndarray, rhs_zp: np.ndarray,
          out_scale: np.ndarray, out_zp: np.ndarray) -> np.ndarray:
    dtype = lhs.dtype.name
    (s1, s2, so), (z1, z2, zo) = _binary_values(
        "qnn.add", (lhs_scale, rhs_scale, out_scale), (lhs_zp, rhs_zp, out_zp))
    p = fp.add_params(s1, s2, so, dtype)
    if max(p.lhs_shift, p.rhs_shift, p.output_shift) > 31:
        raise _bad_value("qnn.add", "output_scale", "an output multiplier below 2^31", so)
    return _saturate(fp.quantized_add(lhs, rhs, -z1, -z2, p, zo), dtype)


def _qmul(_attrs: object, lhs: np.ndarray, rhs: np.ndarray, lhs_scale: np.ndarray,
          lhs_zp: np.ndarray, rhs_scale: np.ndarray, rhs_zp: np.ndarray,
          out_scale: np.ndarray, out_zp: np.ndarray) -> np.ndarray:
    dtype = lhs.dtype.name
    (s1, s2, so), (z1, z2, zo) = _binary_values(
        "qnn.mul", (lhs_scale, rhs_scale, out_scale), (lhs_zp, rhs_zp, out_zp))
    mult, shift = fp.quantize_multiplier(fp.mul_effective_scale(s1, s2, so))
    if shift > 31:
        raise _bad_value("qnn.mul", "output_scale", "an effective multiplier below 2^31", so)
    return _saturate(fp.quantized_mul(lhs, rhs, -z1, -z2, mult, shift, zo), dtype)


add = define_op(
    "qnn.add", inputs=_BINARY_INPUTS, type_rel=_binary_rel, compute=_qadd,
    pattern=OpPattern.BROADCAST, te_compute=qte.qadd_te,
    description="Quantised elementwise sum with broadcasting (TFLite add: left_shift 20, "
                "15 for int16; per-tensor quantisation).")

mul = define_op(
    "qnn.mul", inputs=_BINARY_INPUTS, type_rel=_binary_rel, compute=_qmul,
    pattern=OpPattern.BROADCAST, te_compute=qte.qmul_te,
    description="Quantised elementwise product with broadcasting (TFLite mul: one multiplier "
                "s1*s2/s_out; per-tensor quantisation).")


# -- qnn.softmax -------------------------------------------------------------------------------
@attrs_class
class QnnSoftmaxAttrs(Attrs):
    """Attributes of ``qnn.softmax``."""

    axis: int = int_field(-1)
    beta: float = float_field(1.0)


def _qsoftmax_rel(args: ArgTypes, attrs: QnnSoftmaxAttrs) -> Type:
    data = args.tensor(0, dtypes=("int8",))
    if data.ndim == 0:
        args.fail(0, "an int8 tensor of rank at least 1", data)
    axis = normalize_axis(args, "axis", attrs.axis, data.ndim)
    if axis != data.ndim - 1:
        args.fail_attr("axis", f"the last axis ({data.ndim - 1} or -1)", attrs.axis)
    for i in range(1, 5):
        (_scale if i % 2 else _zero_point)(args, i)
    out_scale, out_zp = args.constant(3), args.constant(4)
    if out_scale is not None and out_zp is not None:
        _check_softmax_output(float(_scalar(out_scale)), int(_scalar(out_zp)))
    return data


def _check_softmax_output(output_scale: float, output_zero_point: int) -> None:
    if not fp.is_softmax_int8_output_scale(output_scale):
        raise _bad_value("qnn.softmax", "output_scale", "1/256 (0.00390625)", output_scale)
    if int(output_zero_point) != fp.SOFTMAX_INT8_OUTPUT_ZERO_POINT:
        raise _bad_value("qnn.softmax", "output_zero_point", "-128", output_zero_point)


def _qsoftmax(attrs: QnnSoftmaxAttrs, data: np.ndarray, in_scale: np.ndarray,
              _in_zp: np.ndarray, out_scale: np.ndarray, out_zp: np.ndarray) -> np.ndarray:
    _check_softmax_output(float(_scalar(out_scale)), int(_scalar(out_zp)))
    s = float(_scale_value("qnn.softmax", "input_scale", _scalar(in_scale)))
    try:
        params = fp.softmax_params(s, attrs.beta)
    except ValueError as err:
        raise _bad_value("qnn.softmax", "input_scale", "beta * input_scale above 2^-26",
                         s) from err
    return fp.softmax_int8(data, params)


softmax = define_op(
    "qnn.softmax",
    inputs=("data", "input_scale", "input_zero_point", "output_scale", "output_zero_point"),
    attrs=QnnSoftmaxAttrs, type_rel=_qsoftmax_rel, compute=_qsoftmax,
    pattern=OpPattern.OPAQUE,
    description="TFLite int8 softmax over the last axis; output scale 1/256, zero point -128.")
