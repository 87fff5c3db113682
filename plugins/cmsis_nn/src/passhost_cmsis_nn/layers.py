"""Matched graph patterns read as CMSIS-NN calls: the acceptance checks and the parameters.

Each ``read_*`` function takes the root of a match (the last operator of the pattern) and
returns a :class:`Layer`: the CMSIS-NN function, which graph values feed which tensor
arguments, the constant arguments (weights in the library's layout, multipliers and shifts)
and the integer arguments, named as in :mod:`passhost_cmsis_nn.calls`. A pattern the
library cannot compute exactly raises :class:`Unsupported` with the reason. The pattern
table's checks call these functions on the graph, and the lowering calls them again on the
partitioned function, so what is accepted and what is emitted come from the same code.

All quantisation parameters come from :mod:`passhost.relay.op.fixed_point`, the functions
the ``qnn.*`` reference kernels use: the emitted constants are the reference's constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from attrs import field, frozen

from passhost.ir import TensorType
from passhost.relay import Call, Constant, Expr
from passhost.relay.op import Op
from passhost.relay.op import fixed_point as fp
from passhost_cmsis_nn import buffer_size
from passhost_cmsis_nn.calls import NULL
from passhost_cmsis_nn.features import Features

__all__ = [
    "ConstOf", "Layer", "Unsupported", "constant_of", "read_add", "read_avg_pool2d",
    "read_conv2d", "read_fully_connected", "read_max_pool2d", "read_mul", "read_softmax",
]

ConstOf = Callable[[Expr], "np.ndarray | None"]
"""Gives the constant value of an expression, or None when it is computed."""

ContextRule = Callable[[Features], int]


class Unsupported(ValueError):
    """A match the CMSIS-NN target does not take; the message says why."""


def constant_of(expr: Expr) -> np.ndarray | None:
    """The value of a Constant node, else None (the resolver for graphs)."""
    return expr.data if isinstance(expr, Constant) else None


def _no_context(_features: Features) -> int:
    return 0


@frozen
class Layer:
    """One CMSIS-NN call: ``api``; ``tensors`` (argument name -> the graph value feeding
    it); ``constants`` (argument name -> array); ``scalars`` (argument name -> int, tuple
    or ``"NULL"``); the output's type; and, for functions taking a ``cmsis_nn_context``,
    ``context(features)``: the scratch bytes the library needs on that processor."""

    api: str
    tensors: Mapping[str, Expr]
    constants: Mapping[str, np.ndarray]
    scalars: Mapping[str, Any]
    output_type: TensorType
    context: ContextRule | None = field(default=None)


# -- reading the graph --------------------------------------------------------------------------
def _op_name(expr: Expr) -> str | None:
    return expr.op.name if isinstance(expr, Call) and isinstance(expr.op, Op) else None


def _expect(expr: Expr, *names: str) -> Call:
    if _op_name(expr) not in names:
        raise Unsupported(f"expected a call of {' or '.join(names)}, found "
                          f"{_op_name(expr) or type(expr).__name__}")
    return expr  # type: ignore[return-value]


def _ttype(expr: Expr) -> TensorType:
    ty = expr.checked_type
    if not isinstance(ty, TensorType):
        raise Unsupported(f"expected a tensor, found {ty}")
    return ty


def _const(const_of: ConstOf, expr: Expr, what: str) -> np.ndarray:
    value = const_of(expr)
    if value is None:
        raise Unsupported(f"{what} is not a constant")
    return np.asarray(value)


def _scalar(const_of: ConstOf, expr: Expr, what: str) -> float:
    value = _const(const_of, expr, what)
    if value.size != 1:
        raise Unsupported(f"{what}: expected one value (per-tensor quantisation), found "
                          f"shape {list(value.shape)}")
    return value.reshape(()).item()


def _int32(value: Any, what: str) -> int:
    value = int(value)
    if not fp.INT32_MIN <= value <= fp.INT32_MAX:
        raise Unsupported(f"{what} {value} does not fit an int32")
    return value


def _dtype(expr: Expr, dtypes: tuple[str, ...], what: str) -> str:
    dtype = _ttype(expr).dtype
    if dtype not in dtypes:
        raise Unsupported(f"{what} is {dtype}, expected {' or '.join(dtypes)}")
    return dtype


def _activation(clip: Call | None, dtype: str) -> tuple[int, int]:
    """The clamp bounds: the clip's (on integers) within the dtype's range."""
    lo, hi = fp.dtype_range(dtype)
    if clip is None:
        return lo, hi
    a_min, a_max = clip.attrs.a_min, clip.attrs.a_max
    # Bounds beyond the dtype (infinities included) are brought just outside it first.
    new_lo = max(lo, math.ceil(min(max(a_min, lo - 1), hi + 1)))
    new_hi = min(hi, math.floor(min(max(a_max, lo - 1), hi + 1)))
    if new_lo > new_hi:
        raise Unsupported(f"the clip [{a_min}, {a_max}] leaves no {dtype} value")
    return new_lo, new_hi


def _split_clip(root: Expr) -> tuple[Call | None, Expr]:
    if _op_name(root) == "clip":
        return root, root.args[0]  # type: ignore[union-attr]
    return None, root


def _nhwc(call: Call, *layout_attrs: str) -> None:
    for name in layout_attrs:
        value = getattr(call.attrs, name)
        if value not in ("NHWC", ""):
            raise Unsupported(f"{call.op.name}: {name} is {value}, expected NHWC")


def _channel_axis(axis: int, ndim: int, what: str) -> None:
    if axis % ndim != ndim - 1:
        raise Unsupported(f"{what}: axis {axis} is not the channel axis (the last)")


# -- multiply-accumulate layers -----------------------------------------------------------------
def _requantize(req: Call, const_of: ConstOf, acc_scale: np.ndarray, channels: int,
                ) -> tuple[float, int]:
    """Check that ``req`` rescales the accumulator's own scale ``acc_scale`` (s_in * s_w, per
    output channel) with zero point 0 to int8; returns the output scale and zero point."""
    if req.attrs.out_dtype != "int8":
        raise Unsupported(f"qnn.requantize: out_dtype is {req.attrs.out_dtype}, expected int8")
    in_scale = _const(const_of, req.args[1], "the requantize input scale")
    if in_scale.size > 1:
        _channel_axis(req.attrs.axis, _ttype(req).ndim, "qnn.requantize")
    if int(_scalar(const_of, req.args[2], "the requantize input zero point")) != 0:
        raise Unsupported("qnn.requantize: the input zero point is not 0")
    expected = np.broadcast_to(acc_scale.astype(np.float64), (channels,))
    try:
        found = np.broadcast_to(in_scale.astype(np.float64).reshape(-1), (channels,))
    except ValueError:
        raise Unsupported(f"qnn.requantize: {in_scale.size} input scales for {channels} "
                          f"channels") from None
    if not np.array_equal(found, expected):
        raise Unsupported("qnn.requantize: the input scale is not the accumulator's scale "
                          "(input scale * weight scale)")
    out_scale = float(_scalar(const_of, req.args[3], "the requantize output scale"))
    out_zp = _int32(_scalar(const_of, req.args[4], "the requantize output zero point"),
                    "the output zero point")
    return out_scale, out_zp


def _multipliers(real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not np.all(np.isfinite(real) & (real > 0)):
        raise Unsupported(f"the effective scales {real} are not positive and finite")
    mult, shift = fp.quantize_multipliers(real)
    if int(shift.max()) > 31:
        raise Unsupported("an effective scale is 2^31 or more")
    return mult.astype(np.int32), shift.astype(np.int32)


def _bias(call: Call | None, const_of: ConstOf, channels: int) -> np.ndarray | None:
    """The int32 bias vector of an ``nn.bias_add`` or an ``add`` of a constant along the
    channel axis, or None."""
    if call is None:
        return None
    if call.op.name == "nn.bias_add":
        _channel_axis(call.attrs.axis, _ttype(call).ndim, "nn.bias_add")
    bias = _const(const_of, call.args[1], "the bias")
    if bias.dtype != np.int32:
        raise Unsupported(f"the bias is {bias.dtype}, expected int32")
    if bias.size != channels or (bias.ndim and bias.shape[-1] != channels):
        raise Unsupported(f"the bias has shape {list(bias.shape)}, expected one value per "
                          f"output channel ({channels})")
    return np.ascontiguousarray(bias.reshape(channels))


def _mac_chain(root: Expr, accumulate: str) -> tuple[Call | None, Call, Call | None, Call]:
    """``[clip] <- qnn.requantize <- [bias] <- accumulate`` from the root down."""
    clip, node = _split_clip(root)
    req = _expect(node, "qnn.requantize")
    node = req.args[0]
    bias = None
    if _op_name(node) in ("nn.bias_add", "add"):
        bias = node
        node = node.args[0]  # type: ignore[union-attr]
    return clip, req, bias, _expect(node, accumulate)


def _mac_quantisation(acc: Call, const_of: ConstOf, channels: int, what: str,
                      ) -> tuple[int, np.ndarray, np.ndarray]:
    """Input offset, input scale and weight scales (per channel) of ``qnn.conv2d`` or
    ``qnn.dense``, checking the dtypes and that the weight zero points are 0."""
    _dtype(acc.args[0], ("int8",), f"{what}: the input")
    _dtype(acc.args[1], ("int8",), f"{what}: the weight")
    if acc.attrs.out_dtype not in ("int32", ""):
        raise Unsupported(f"{what}: out_dtype is {acc.attrs.out_dtype}, expected int32")
    in_zp = _int32(_scalar(const_of, acc.args[2], "the input zero point"), "the input zero point")
    w_zp = _const(const_of, acc.args[3], "the weight zero point")
    if np.any(w_zp != 0):
        raise Unsupported(f"{what}: the kernel zero point is not 0")
    s_in = np.asarray(_scalar(const_of, acc.args[4], "the input scale"))
    s_w = _const(const_of, acc.args[5], "the weight scale").reshape(-1)
    if s_w.size not in (1, channels):
        raise Unsupported(f"{what}: {s_w.size} weight scales for {channels} channels")
    return -in_zp, s_in, np.broadcast_to(s_w, (channels,))


def _fused_pad(pad: Call, in_zp: int) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of an ``nn.pad`` of NHWC data with the input zero point."""
    attrs = pad.attrs
    if attrs.pad_mode != "constant" or attrs.pad_value != in_zp:
        raise Unsupported(f"nn.pad: pads with {attrs.pad_mode} {attrs.pad_value}, expected "
                          f"the constant input zero point {in_zp}")
    (n0, n1), (top, bottom), (left, right), (c0, c1) = attrs.pad_width
    if n0 or n1 or c0 or c1:
        raise Unsupported("nn.pad: pads the batch or channel axis")
    return top, left, bottom, right


def read_conv2d(root: Expr, const_of: ConstOf = constant_of, fused_pad: bool = False,
                ) -> Layer:
    """``[nn.pad] -> qnn.conv2d -> [bias] -> qnn.requantize -> [clip]`` as
    ``arm_convolve_wrapper_s8`` or, one group per input channel, as
    ``arm_depthwise_conv_wrapper_s8``."""
    clip, req, bias_call, conv = _mac_chain(root, "qnn.conv2d")
    attrs = conv.attrs
    _nhwc(conv, "data_layout", "out_layout")
    data = conv.args[0]
    n, h, w, c = _ttype(data).shape
    weight = _const(const_of, conv.args[1], "the weight")
    hwio = weight.transpose(tuple(attrs.kernel_layout.index(d) for d in "HWIO"))
    kh, kw, ci, co = hwio.shape
    input_offset, s_in, s_w = _mac_quantisation(conv, const_of, co, "qnn.conv2d")
    if attrs.groups == 1:
        api, filt, ch_mult = "arm_convolve_wrapper_s8", hwio.transpose(3, 0, 1, 2), -1
    elif attrs.groups == c and ci == 1:
        api, filt, ch_mult = "arm_depthwise_conv_wrapper_s8", hwio.reshape(1, kh, kw, co), co // c
    else:
        raise Unsupported(f"qnn.conv2d: grouped convolution (groups={attrs.groups})")
    bias = _bias(bias_call, const_of, co)
    if ch_mult > 0 and bias is None:
        raise Unsupported("a depthwise convolution needs a bias")
    s_out, out_zp = _requantize(req, const_of, s_in * s_w.astype(np.float64), co)
    mult, shift = _multipliers(fp.conv_effective_scales(s_in, s_w, s_out))
    top, left, bottom, right = attrs.padding
    if fused_pad:
        pad = _expect(data, "nn.pad")
        data = pad.args[0]
        n, h, w, c = _ttype(data).shape
        pt, pl, pb, pr = _fused_pad(pad, -input_offset)
        top, left, bottom, right = top + pt, left + pl, bottom + pb, right + pr
        if bottom - top not in (0, 1) or right - left not in (0, 1):
            raise Unsupported(f"the fused pad makes the padding (top, left, bottom, right) "
                              f"{(top, left, bottom, right)}: CMSIS-NN pads the bottom and "
                              f"right by at most one more than the top and left")
    _dtype(data, ("int8",), "the input")
    out = _ttype(root)
    input_dims, output_dims = (n, h, w, c), tuple(out.shape)
    filter_dims = tuple(filt.shape)
    strides, dilation = tuple(attrs.strides), tuple(attrs.dilation)

    def context(features: Features) -> int:
        if ch_mult > 0:
            return buffer_size.depthwise_conv_wrapper_s8(
                input_dims=input_dims, filter_dims=filter_dims, output_dims=output_dims,
                dilation_hw=dilation, has_dsp=features.has_dsp, has_mve=features.has_mve)
        return buffer_size.convolve_wrapper_s8(
            input_dims=input_dims, filter_dims=filter_dims, stride_hw=strides,
            padding_hw=(top, left), dilation_hw=dilation, has_dsp=features.has_dsp,
            has_mve=features.has_mve)

    act = _activation(clip, "int8")
    constants = {"filter": np.ascontiguousarray(filt), "multiplier": mult, "shift": shift}
    if bias is not None:
        constants["bias"] = bias
    return Layer(api, {"input": data}, constants, {
        **({} if bias is not None else {"bias": NULL}),
        "input_offset": input_offset, "output_offset": out_zp,
        "stride": strides[::-1], "padding": (left, top), "dilation": dilation[::-1],
        "act_min": act[0], "act_max": act[1], "ch_mult": ch_mult,
        "input_dims": input_dims, "filter_dims": filter_dims, "bias_dims": (1, 1, 1, co),
        "output_dims": output_dims}, out, context)


def read_fully_connected(root: Expr, const_of: ConstOf = constant_of,
                         fused_reshape: bool = False) -> Layer:
    """``[reshape] -> qnn.dense -> [bias] -> qnn.requantize -> [clip]`` as
    ``arm_fully_connected_s8`` (per-tensor quantisation)."""
    clip, req, bias_call, dense = _mac_chain(root, "qnn.dense")
    data = dense.args[0]
    weight = _const(const_of, dense.args[1], "the weight")
    units, depth = weight.shape
    input_offset, s_in, s_w = _mac_quantisation(dense, const_of, units, "qnn.dense")
    if np.unique(s_w).size != 1:
        raise Unsupported("qnn.dense: per-channel weight scales (arm_fully_connected_s8 "
                          "takes one multiplier)")
    batch = math.prod(_ttype(data).shape[:-1])
    if fused_reshape:
        data = _expect(data, "reshape").args[0]
    _dtype(data, ("int8",), "the input")
    bias = _bias(bias_call, const_of, units)
    s_out, out_zp = _requantize(req, const_of, s_in * s_w.astype(np.float64), units)
    mult, shift = fp.quantize_multiplier(fp.fc_effective_scale(s_in, s_w[0], s_out))
    if shift > 31:
        raise Unsupported("the effective scale is 2^31 or more")
    act = _activation(clip, "int8")
    constants = {"filter": np.ascontiguousarray(weight)}
    if bias is not None:
        constants["bias"] = bias
    return Layer("arm_fully_connected_s8", {"input": data}, constants, {
        **({} if bias is not None else {"bias": NULL}),
        "input_offset": input_offset, "filter_offset": 0, "output_offset": out_zp,
        "multiplier": mult, "shift": shift, "act_min": act[0], "act_max": act[1],
        "input_dims": (batch, 1, 1, depth), "filter_dims": (depth, 1, 1, units),
        "bias_dims": (1, 1, 1, units), "output_dims": (batch, 1, 1, units)},
        _ttype(root), _no_context)


# -- pools --------------------------------------------------------------------------------------
def _pool(pool: Call, data: Expr, root: Expr, clip: Call | None, api: str,
          context: Callable[[int, int, Features], int] | None) -> Layer:
    attrs = pool.attrs
    _nhwc(pool, "layout", "out_layout")
    if tuple(attrs.dilation) != (1, 1) or attrs.ceil_mode:
        raise Unsupported(f"{pool.op.name}: dilation or ceil_mode")
    dtype = _dtype(data, ("int8", "int16"), "the input")
    n, h, w, c = _ttype(data).shape
    if n != 1:
        raise Unsupported(f"{pool.op.name}: batch {n}, expected 1")
    out = _ttype(root)
    _, oh, ow, _ = out.shape
    (kh, kw), (sh, sw) = attrs.pool_size, attrs.strides
    top, left = attrs.padding[:2]
    for size, k, s, lo, count in ((h, kh, sh, top, oh), (w, kw, sw, left, ow)):
        if k <= lo or (count - 1) * s - lo >= size:
            raise Unsupported(f"{pool.op.name}: a window holds only padding")
    act = _activation(clip, dtype)

    def context_size(features: Features) -> int:
        return 0 if context is None else context(ow, c, features)

    bits = "s8" if dtype == "int8" else "s16"
    return Layer(f"{api}_{bits}", {"input": data}, {}, {
        "stride": (sw, sh), "padding": (left, top), "act_min": act[0], "act_max": act[1],
        "input_dims": (n, h, w, c), "filter_dims": (1, kh, kw, 1),
        "output_dims": tuple(out.shape)}, out, context_size)


def _avgpool_context(dtype: str) -> Callable[[int, int, Features], int]:
    rule = buffer_size.avgpool_s8 if dtype == "int8" else buffer_size.avgpool_s16

    def size(out_w: int, channels: int, features: Features) -> int:
        return rule(output_width=out_w, channels=channels, has_dsp=features.has_dsp,
                    has_mve=features.has_mve)

    return size


def read_avg_pool2d(root: Expr, const_of: ConstOf = constant_of) -> Layer:
    """``cast(int32) -> nn.avg_pool2d -> cast -> [clip]`` as ``arm_avgpool_s8/_s16``."""
    clip, node = _split_clip(root)
    narrow = _expect(node, "cast")
    pool = _expect(narrow.args[0], "nn.avg_pool2d")
    if pool.attrs.count_include_pad:
        raise Unsupported("nn.avg_pool2d: count_include_pad")
    wide = _expect(pool.args[0], "cast")
    data = wide.args[0]
    dtype = _dtype(data, ("int8", "int16"), "the input")
    if wide.attrs.dtype != "int32" or narrow.attrs.dtype != dtype:
        raise Unsupported(f"the casts around nn.avg_pool2d go {dtype} -> {wide.attrs.dtype} "
                          f"-> {narrow.attrs.dtype}, expected {dtype} -> int32 -> {dtype}")
    return _pool(pool, data, root, clip, "arm_avgpool", _avgpool_context(dtype))


def read_max_pool2d(root: Expr, const_of: ConstOf = constant_of) -> Layer:
    """``nn.max_pool2d -> [clip]`` as ``arm_max_pool_s8/_s16``."""
    clip, node = _split_clip(root)
    pool = _expect(node, "nn.max_pool2d")
    return _pool(pool, pool.args[0], root, clip, "arm_max_pool", None)


# -- elementwise --------------------------------------------------------------------------------
def _binary(root: Expr, const_of: ConstOf, op: str,
            ) -> tuple[Call, str, dict[str, Expr], dict[str, np.ndarray], list[float],
                       list[int], tuple[int, int]]:
    clip, node = _split_clip(root)
    call = _expect(node, op)
    out = _ttype(root)
    dtype = _dtype(call.args[0], ("int8", "int16"), f"{op}: the first input")
    if _dtype(call.args[1], ("int8", "int16"), f"{op}: the second input") != dtype:
        raise Unsupported(f"{op}: the inputs have different dtypes")
    operands = call.args[:2]
    if all(const_of(x) is not None for x in operands):
        raise Unsupported(f"{op}: both inputs are constants")
    tensors: dict[str, Expr] = {}
    constants: dict[str, np.ndarray] = {}
    for name, x in zip(("input_1", "input_2"), operands):
        value = const_of(x)
        if tuple(_ttype(x).shape) == tuple(out.shape):
            tensors[name] = x
        elif value is not None:
            constants[name] = np.ascontiguousarray(np.broadcast_to(value, out.shape))
        else:
            raise Unsupported(f"{op}: broadcasting a computed input "
                              f"{list(_ttype(x).shape)} to {list(out.shape)}")
    names = ("lhs scale", "lhs zero point", "rhs scale", "rhs zero point", "output scale",
             "output zero point")
    values = [_scalar(const_of, a, n) for a, n in zip(call.args[2:], names)]
    scales = [float(v) for v in values[0::2]]
    zps = [_int32(v, n) for v, n in zip(values[1::2], names[1::2])]
    if dtype == "int16" and any(zps):
        raise Unsupported(f"{op}: int16 with a zero point other than 0")
    return call, dtype, tensors, constants, scales, zps, _activation(clip, dtype)


def read_add(root: Expr, const_of: ConstOf = constant_of) -> Layer:
    """``qnn.add -> [clip]`` as ``arm_elementwise_add_s8/_s16``."""
    _, dtype, tensors, constants, (s1, s2, so), (z1, z2, zo), act = _binary(
        root, const_of, "qnn.add")
    p = fp.add_params(s1, s2, so, dtype)
    if max(p.lhs_shift, p.rhs_shift, p.output_shift) > 31:
        raise Unsupported("qnn.add: a multiplier is 2^31 or more")
    out = _ttype(root)
    bits = "s8" if dtype == "int8" else "s16"
    return Layer(f"arm_elementwise_add_{bits}", tensors, constants, {
        "input_1_offset": -z1, "input_1_mult": p.lhs_multiplier, "input_1_shift": p.lhs_shift,
        "input_2_offset": -z2, "input_2_mult": p.rhs_multiplier, "input_2_shift": p.rhs_shift,
        "left_shift": p.left_shift, "out_offset": zo, "out_mult": p.output_multiplier,
        "out_shift": p.output_shift, "act_min": act[0], "act_max": act[1],
        "block_size": math.prod(out.shape)}, out)


def read_mul(root: Expr, const_of: ConstOf = constant_of) -> Layer:
    """``qnn.mul -> [clip]`` as ``arm_elementwise_mul_s8/_s16``."""
    _, dtype, tensors, constants, (s1, s2, so), (z1, z2, zo), act = _binary(
        root, const_of, "qnn.mul")
    mult, shift = fp.quantize_multiplier(fp.mul_effective_scale(s1, s2, so))
    if shift > 31:
        raise Unsupported("qnn.mul: the effective scale is 2^31 or more")
    out = _ttype(root)
    bits = "s8" if dtype == "int8" else "s16"
    return Layer(f"arm_elementwise_mul_{bits}", tensors, constants, {
        "input_1_offset": -z1, "input_2_offset": -z2, "out_offset": zo, "out_mult": mult,
        "out_shift": shift, "act_min": act[0], "act_max": act[1],
        "block_size": math.prod(out.shape)}, out)


def read_softmax(root: Expr, const_of: ConstOf = constant_of) -> Layer:
    """``qnn.softmax`` (int8, output quantisation (1/256, -128)) as ``arm_softmax_s8``."""
    call = _expect(root, "qnn.softmax")
    data = call.args[0]
    _dtype(data, ("int8",), "the input")
    out_scale = _scalar(const_of, call.args[3], "the output scale")
    out_zp = _scalar(const_of, call.args[4], "the output zero point")
    if np.float32(out_scale) != np.float32(fp.SOFTMAX_INT8_OUTPUT_SCALE) or \
            out_zp != fp.SOFTMAX_INT8_OUTPUT_ZERO_POINT:
        raise Unsupported(f"qnn.softmax: the output quantisation is ({out_scale}, {out_zp}), "
                          f"expected (1/256, -128)")
    s_in = float(_scalar(const_of, call.args[1], "the input scale"))
    try:
        params = fp.softmax_params(s_in, call.attrs.beta)
    except ValueError as err:
        raise Unsupported(f"qnn.softmax: {err}") from None
    shape = _ttype(data).shape
    return Layer("arm_softmax_s8", {"input": data}, {}, {
        "num_rows": math.prod(shape[:-1]), "row_size": shape[-1], "mult": params.multiplier,
        "shift": params.shift, "diff_min": params.diff_min}, _ttype(root))
