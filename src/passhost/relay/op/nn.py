"""Neural-network operators (``nn.*``): convolution, dense, batch matmul, bias add, relu,
pad, batch flatten and dropout, with the attribute fields and layout helpers the other ``nn``
modules share (activations, normalisations, pools and windows live in modules of their own
and are offered as ``relay.nn.*`` too).

Layouts: 2-D convolutions and pools accept ``NCHW``, ``NHWC`` and channel-blocked ``NCHW{k}c``
data (``NCHW16c``: N, C / 16, H, W, then 16 consecutive channels), the output layout possibly
another one; convolution weights ``OIHW``, ``HWIO``, ``OHWI`` or ``HWOI``. A grouped
convolution splits the ``C`` input channels into ``groups`` groups; its weight's ``I``
dimension is ``C // groups`` (depthwise: ``groups == C`` and ``I == 1``) and output channel
``o`` belongs to group ``o // (O // groups)``.

Padding of 2-D windows takes 1, 2 or 4 values and is stored as four:
``(top, left, bottom, right)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from attrs import field
from numpy.lib.stride_tricks import as_strided

from passhost import te
from passhost.errors import AttrError
from passhost.ir.attrs import (
    Attrs,
    attrs_class,
    bool_field,
    dtype_field,
    float_field,
    int_field,
    ints_field,
    nested_ints_field,
    str_field,
)
from passhost.ir.types import (
    ANY_FLOAT_DTYPES,
    INT_DTYPES,
    TensorType,
    Type,
)
from passhost.relay.op.accumulate import matmul_in_dtype
from passhost.relay.op.common import identity_rel, normalize_axis
from passhost.relay.op.elemwise_te import (
    np_maximum,
    unary_compute,
    widen,
)
from passhost.relay.op.layout import channel_block, is_data_layout, transform_array
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, define_op
from passhost.relay.op.te_movement import absolute, reshape_te, zeros
from passhost.relay.op.tensor import add_expr
from passhost.tir.expr import And, Max, Min, PrimExpr, Select, const

__all__ = [
    "relu",
    "conv2d", "dense", "batch_matmul", "bias_add", "pad", "batch_flatten", "dropout",
    "Conv2DAttrs", "DenseAttrs", "BatchMatmulAttrs", "BiasAddAttrs", "PadAttrs", "DropoutAttrs",
    "conv2d_out_type", "conv2d_compute", "dense_out_type", "dense_compute",
    "matmul_in_dtype",
]

KERNEL_LAYOUTS = ("OIHW", "HWIO", "OHWI", "HWOI")
NUMERIC_DTYPES = ANY_FLOAT_DTYPES + INT_DTYPES


# -- attribute fields -----------------------------------------------------------------------
def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _attr_error(name: str, expected: str, value: Any) -> AttrError:
    return AttrError(f"attribute '{name}': expected {expected}, found {value!r}")


def _window_ints_field(rank: int, default: tuple[int, ...] | None, *, minimum: int,
                       optional: bool = False):
    """``rank`` ints, one per window axis (a bare int or 1-tuple is repeated), each at least
    ``minimum``."""
    f = ints_field(default, lengths={rank}, expand=rank, optional=optional)

    @f.validator
    def _check(_inst: Any, attribute: Any, value: Any) -> None:
        if value is not None and min(value) < minimum:
            raise _attr_error(attribute.name, f"a tuple of {rank} ints >= {minimum}", value)

    return f


def _pair_field(default: tuple[int, int] | None, *, minimum: int, optional: bool = False):
    """A pair of ints (a bare int or 1-tuple is repeated), each at least ``minimum``."""
    return _window_ints_field(2, default, minimum=minimum, optional=optional)


def _padding_field(rank: int = 2):
    """Window padding: 1, ``rank`` or ``2 * rank`` non-negative ints, stored as ``2 * rank``:
    every axis's start, then every axis's end ((top, left, bottom, right) in 2-D)."""
    if rank == 2:
        expected = ("1, 2 or 4 non-negative ints "
                    "((p), (top/bottom, left/right) or (top, left, bottom, right))")
    else:
        expected = (f"1, {rank} or {2 * rank} non-negative ints ((p), one per axis, or every "
                    f"axis's start then every axis's end)")

    def convert(v: Any) -> Any:
        if _is_int(v):
            v = (v,)
        if isinstance(v, (list, tuple, np.ndarray)):
            v = tuple(int(x) if _is_int(x) else x for x in v)
            if len(v) == 1:
                v = v * (2 * rank)
            elif len(v) == rank:
                v = v + v
        return v

    def check(_inst: Any, attribute: Any, v: Any) -> None:
        if not (isinstance(v, tuple) and len(v) == 2 * rank
                and all(_is_int(x) and x >= 0 for x in v)):
            raise _attr_error(attribute.name, expected, v)

    return field(default=(0,) * (2 * rank), converter=convert, validator=check)


def _data_layout_field(default: str, *, allow_empty: bool = False):
    """A 2-D data layout: ``NCHW``, ``NHWC`` or ``NCHW{k}c`` (or ``""`` when allowed)."""
    expected = "'NCHW', 'NHWC' or 'NCHW{k}c' (k >= 1 channels per block, such as 'NCHW16c')"
    if allow_empty:
        expected = "'' (the data layout), " + expected

    def check(_inst: Any, attribute: Any, value: Any) -> None:
        if not (is_data_layout(value) or (allow_empty and value == "")):
            raise _attr_error(attribute.name, expected, value)

    return field(default=default, validator=check)


def _out_layout_field():
    return _data_layout_field("", allow_empty=True)


# -- layout helpers -------------------------------------------------------------------------
def _nchw_dims(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    if layout == "NHWC":
        return shape[0], shape[3], shape[1], shape[2]
    return shape[0], shape[1] * (channel_block(layout) or 1), shape[2], shape[3]


def _shape_in_layout(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, ...]:
    if layout == "NHWC":
        return (n, h, w, c)
    block = channel_block(layout)
    return (n, c // block, h, w, block) if block else (n, c, h, w)


def _to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "NHWC":
        return x.transpose(0, 3, 1, 2)
    return transform_array(x, layout, "NCHW") if channel_block(layout) else x


def _from_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    if channel_block(layout):
        return transform_array(x, "NCHW", layout)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1) if layout == "NHWC" else x)


def _data_dims(args: ArgTypes, i: int, layout: str, dtypes: Sequence[str] | None = None,
               ) -> tuple[TensorType, tuple[int, int, int, int]]:
    """Argument ``i`` checked as 2-D data in ``layout`` (5-D for ``NCHW{k}c``, whose last axis
    is k), and its (N, C, H, W)."""
    block = channel_block(layout)
    data = args.tensor(i, ndim=5 if block else 4, dtypes=dtypes)
    if block and data.shape[4] != block:
        args.fail(i, f"{layout} data whose last axis is {block}", data)
    return data, _nchw_dims(data.shape, layout)


def _out_shape(args: ArgTypes, attrs: Any, data_attr: str, n: int, c: int, h: int,
               w: int) -> tuple[int, ...]:
    """The shape of output (N, C, H, W) in ``attrs.out_layout``, else in the data layout
    ``data_attr``; a channel-blocked one must divide C."""
    name = "out_layout" if attrs.out_layout else data_attr
    layout = getattr(attrs, name)
    block = channel_block(layout)
    if block and c % block:
        args.fail_attr(name, f"a layout whose blocks of {block} channels divide the {c} "
                       "output channels", layout)
    return _shape_in_layout(n, c, h, w, layout)


# Position of O, I, H, W in each kernel layout.
_KERNEL_AXES = {layout: tuple(layout.index(d) for d in "OIHW") for layout in KERNEL_LAYOUTS}


def _window_out(size: int, k: int, stride: int, dil: int, lo: int, hi: int,
                ceil_mode: bool = False) -> int:
    """Output length of a sliding window (0 or less when the window does not fit)."""
    span = size + lo + hi - (dil * (k - 1) + 1)
    if not ceil_mode:
        return span // stride + 1 if span >= 0 else 0
    # Rounding up, a window longer than the padded input still fits once when it starts
    # within it (ONNX and onnxruntime; transformers' EfficientNet pools so).
    out = max(-(-span // stride) + 1, 0)
    if (out - 1) * stride >= size + lo:  # the last window would start in the right padding
        out -= 1
    return out


def _check_out_dtype(args: ArgTypes, out_dtype: str, a: int, b: int) -> str:
    """Result dtype of a sum-of-products op: ``out_dtype``, or the common input dtype."""
    ta, tb = args.tensor(a), args.tensor(b)
    for i, t in ((a, ta), (b, tb)):
        if t.dtype == "bool":
            args.fail(i, "a numeric tensor", t)
    if out_dtype == "bool":
        args.fail_attr("out_dtype", "a numeric dtype", out_dtype)
    if out_dtype:
        return out_dtype
    return args.same_dtype(a, b)


# -- nn.relu ---------------------------------------------------------------------------------
def _relu(_attrs: object, x: np.ndarray) -> np.ndarray:
    return np.asarray(np.maximum(x, np.zeros((), dtype=x.dtype)))


relu = define_op(
    "nn.relu", inputs=("data",), type_rel=identity_rel, compute=_relu,
    pattern=OpPattern.ELEMWISE, description="max(x, 0), elementwise.",
    te_compute=unary_compute(lambda x: np_maximum(x, const(0, x.dtype)), "relu"))


# -- nn.conv2d -------------------------------------------------------------------------------
@attrs_class
class Conv2DAttrs(Attrs):
    """Attributes of 2-D convolution (``nn.conv2d`` and ``qnn.conv2d``)."""

    strides: tuple[int, int] = _pair_field((1, 1), minimum=1)
    padding: tuple[int, int, int, int] = _padding_field()
    dilation: tuple[int, int] = _pair_field((1, 1), minimum=1)
    groups: int = int_field(1, minimum=1)
    channels: int | None = int_field(None, minimum=0, optional=True)
    kernel_size: tuple[int, int] | None = _pair_field(None, minimum=1, optional=True)
    data_layout: str = _data_layout_field("NCHW")
    kernel_layout: str = str_field("OIHW", choices=KERNEL_LAYOUTS)
    out_layout: str = _out_layout_field()
    out_dtype: str = dtype_field("")


def conv2d_out_type(args: ArgTypes, attrs: Conv2DAttrs, data_index: int = 0,
                    weight_index: int = 1) -> tuple[int, ...]:
    """The output shape of a 2-D convolution, after checking data, weight and attributes."""
    data, (n, c, h, w) = _data_dims(args, data_index, attrs.data_layout)
    weight = args.tensor(weight_index, ndim=4)
    o_ax, i_ax, h_ax, w_ax = _KERNEL_AXES[attrs.kernel_layout]
    o, i = weight.shape[o_ax], weight.shape[i_ax]
    kh, kw = weight.shape[h_ax], weight.shape[w_ax]
    g = attrs.groups
    if c % g:
        args.fail(data_index, f"{attrs.data_layout} data whose {c} channels divide into "
                  f"groups={g}", data)
    if i * g != c:
        args.fail(weight_index, f"a {attrs.kernel_layout} weight with I={c // g} input channels "
                  f"(data has {c} channels, groups={g})", weight)
    if o % g:
        args.fail(weight_index, f"a {attrs.kernel_layout} weight whose O={o} output channels "
                  f"divide into groups={g}", weight)
    if kh < 1 or kw < 1:
        args.fail(weight_index, f"a {attrs.kernel_layout} weight with a non-empty kernel", weight)
    if attrs.channels is not None and attrs.channels != o:
        args.fail_attr("channels", f"{o} (the weight's output channels)", attrs.channels)
    if attrs.kernel_size is not None and attrs.kernel_size != (kh, kw):
        args.fail_attr("kernel_size", f"{(kh, kw)} (the weight's kernel size)",
                       attrs.kernel_size)
    pt, pl, pb, pr = attrs.padding
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    oh = _window_out(h, kh, sh, dh, pt, pb)
    ow = _window_out(w, kw, sw, dw, pl, pr)
    if oh < 1 or ow < 1:
        args.fail(data_index, f"padded spatial size at least the dilated kernel "
                  f"({dh * (kh - 1) + 1}x{dw * (kw - 1) + 1})", data)
    return _out_shape(args, attrs, "data_layout", n, o, oh, ow)


def _conv2d_rel(args: ArgTypes, attrs: Conv2DAttrs) -> Type:
    dtype = _check_out_dtype(args, attrs.out_dtype, 0, 1)
    return TensorType(conv2d_out_type(args, attrs), dtype)


def conv2d_compute(attrs: Conv2DAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """2-D convolution computed in the dtype of ``data`` (im2col + batched matmul); the
    result is in ``attrs.out_layout`` (or the data layout)."""
    dtype = data.dtype
    x = _to_nchw(data, attrs.data_layout).transpose(0, 2, 3, 1)  # NHWC (a view when it is)
    wt = weight.astype(dtype, copy=False).transpose(
        tuple(attrs.kernel_layout.index(d) for d in "HWIO"))  # HWIO view
    n, h, w, c = x.shape
    kh, kw, ci, co = wt.shape
    g = attrs.groups
    og = co // g
    pt, pl, pb, pr = attrs.padding
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    oh = _window_out(h, kh, sh, dh, pt, pb)
    ow = _window_out(w, kw, sw, dw, pl, pr)
    xp = np.zeros((n, h + pt + pb, w + pl + pr, c), dtype=dtype)
    xp[:, pt:pt + h, pl:pl + w, :] = x
    s0, s1, s2, s3 = xp.strides
    # (group, n, oh, ow, kh, kw, ci) windows of the padded data, gathered into rows.
    cols = as_strided(xp, shape=(g, n, oh, ow, kh, kw, ci),
                      strides=(ci * s3, s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3),
                      writeable=False)
    cols = cols.reshape(g, n * oh * ow, kh * kw * ci)
    wg = wt.reshape(kh, kw, ci, g, og).transpose(3, 0, 1, 2, 4).reshape(g, kh * kw * ci, og)
    if g == 1:
        out = cols[0] @ wg[0]
    else:
        out = np.matmul(cols, wg).transpose(1, 0, 2)
    out = out.reshape(n, oh, ow, co).transpose(0, 3, 1, 2)
    return _from_nchw(out, attrs.out_layout or attrs.data_layout)


def _conv2d(attrs: Conv2DAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    out_dtype = attrs.out_dtype or data.dtype.name
    h_ax, w_ax = attrs.kernel_layout.index("H"), attrs.kernel_layout.index("W")
    i_ax = attrs.kernel_layout.index("I")
    depth = weight.shape[h_ax] * weight.shape[w_ax] * weight.shape[i_ax]
    return matmul_in_dtype(out_dtype, data, weight, depth,
                           lambda d, w: conv2d_compute(attrs, d, w))


conv2d = define_op(
    "nn.conv2d", inputs=("data", "weight"), attrs=Conv2DAttrs, type_rel=_conv2d_rel,
    compute=_conv2d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    layout=LayoutInfo(layout_attrs=("data_layout", "kernel_layout", "out_layout")),
    description="2-D convolution (grouped, dilated, strided, padded), NCHW, NHWC or "
                "NCHW{k}c.")


# -- nn.dense --------------------------------------------------------------------------------
@attrs_class
class DenseAttrs(Attrs):
    """Attributes of ``nn.dense`` (and ``qnn.dense``)."""

    units: int | None = int_field(None, minimum=0, optional=True)
    out_dtype: str = dtype_field("")


def dense_out_type(args: ArgTypes, attrs: DenseAttrs, data_index: int = 0,
                   weight_index: int = 1) -> tuple[int, ...]:
    """The output shape of a dense layer (data ``(..., in)``, weight ``(units, in)``)."""
    data = args.tensor(data_index)
    if data.ndim < 1:
        args.fail(data_index, "a tensor of rank at least 1", data)
    weight = args.tensor(weight_index, ndim=2)
    units, k = weight.shape
    if k != data.shape[-1]:
        args.fail(weight_index, f"a (units, {data.shape[-1]}) weight (data's last dim is "
                  f"{data.shape[-1]})", weight)
    if attrs.units is not None and attrs.units != units:
        args.fail_attr("units", f"{units} (the weight's first dim)", attrs.units)
    return (*data.shape[:-1], units)


def _dense_rel(args: ArgTypes, attrs: DenseAttrs) -> Type:
    dtype = _check_out_dtype(args, attrs.out_dtype, 0, 1)
    return TensorType(dense_out_type(args, attrs), dtype)


def dense_compute(_attrs: DenseAttrs | None, data: np.ndarray,
                  weight: np.ndarray) -> np.ndarray:
    """``data @ weight.T`` computed in the dtype of ``data``."""
    return np.matmul(data, weight.astype(data.dtype, copy=False).T)


def _dense(attrs: DenseAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    out_dtype = attrs.out_dtype or data.dtype.name
    return matmul_in_dtype(out_dtype, data, weight, weight.shape[1],
                           lambda d, w: dense_compute(attrs, d, w))


dense = define_op(
    "nn.dense", inputs=("data", "weight"), attrs=DenseAttrs, type_rel=_dense_rel,
    compute=_dense, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="Fully connected layer: data @ weight.T, weight of shape (units, in).")


# -- nn.batch_matmul -------------------------------------------------------------------------
@attrs_class
class BatchMatmulAttrs(Attrs):
    """Attributes of ``nn.batch_matmul``."""

    out_dtype: str = dtype_field("")
    transpose_a: bool = bool_field(False)
    transpose_b: bool = bool_field(True)


def _batch_matmul_rel(args: ArgTypes, attrs: BatchMatmulAttrs) -> Type:
    dtype = _check_out_dtype(args, attrs.out_dtype, 0, 1)
    x = args.tensor(0, ndim=3)
    y = args.tensor(1, ndim=3)
    b1, m, k1 = (x.shape[0], x.shape[2], x.shape[1]) if attrs.transpose_a else x.shape
    b2, k2, n = (y.shape[0], y.shape[2], y.shape[1]) if attrs.transpose_b else y.shape
    if k1 != k2:
        want = f"(batch, N, {k1})" if attrs.transpose_b else f"(batch, {k1}, N)"
        args.fail(1, f"a {want} tensor (x's reduction dim is {k1})", y)
    if b1 != b2 and 1 not in (b1, b2):
        args.fail(1, f"batch size {b1} or 1 (as x)", y)
    return TensorType((b2 if b1 == 1 else b1, m, n), dtype)


def _batch_matmul(attrs: BatchMatmulAttrs, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    a = x.transpose(0, 2, 1) if attrs.transpose_a else x
    b = y.transpose(0, 2, 1) if attrs.transpose_b else y
    out_dtype = attrs.out_dtype or x.dtype.name
    return matmul_in_dtype(out_dtype, a, b, a.shape[2], np.matmul)


batch_matmul = define_op(
    "nn.batch_matmul", inputs=("x", "y"), attrs=BatchMatmulAttrs, type_rel=_batch_matmul_rel,
    compute=_batch_matmul, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="Batched matrix product of 3-D tensors (y transposed by default); "
                "batch dims of 1 broadcast.")


# -- nn.bias_add -----------------------------------------------------------------------------
@attrs_class
class BiasAddAttrs(Attrs):
    """Attributes of ``nn.bias_add``."""

    axis: int = int_field(1)


def _channel_vector(args: ArgTypes, i: int, length: int, dtype: str, axis: int) -> None:
    ty = args.tensor(i)
    if ty.shape != (length,) or ty.dtype != dtype:
        args.fail(i, f"a 1-D {dtype} tensor of length {length} (data's axis {axis})", ty)


def _bias_add_rel(args: ArgTypes, attrs: BiasAddAttrs) -> Type:
    data = args.tensor(0)
    axis = normalize_axis(args, "axis", attrs.axis, data.ndim)
    _channel_vector(args, 1, data.shape[axis], data.dtype, axis)
    return data


def _along(vec: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """``vec`` reshaped to broadcast along ``axis`` of an ``ndim``-D tensor."""
    shape = [1] * ndim
    shape[axis] = vec.shape[0]
    return vec.reshape(shape)


def _bias_add(attrs: BiasAddAttrs, data: np.ndarray, bias: np.ndarray) -> np.ndarray:
    axis = attrs.axis % data.ndim
    return np.add(data, _along(bias, axis, data.ndim), dtype=data.dtype)


def _bias_add_te(attrs: BiasAddAttrs, inputs: Sequence[te.Tensor],
                 out: TensorType) -> te.Tensor:
    data, bias = inputs
    axis = attrs.axis % data.ndim
    return te.compute(data.shape, lambda *i: te.cast(
        add_expr(widen(data[i]), widen(bias[i[axis]])), out.dtype), name="bias_add")


bias_add = define_op(
    "nn.bias_add", inputs=("data", "bias"), attrs=BiasAddAttrs, type_rel=_bias_add_rel,
    compute=_bias_add, pattern=OpPattern.BROADCAST, layout=LayoutInfo(axis_attrs=("axis",)),
    description="Add a 1-D bias along axis `axis` of data.", te_compute=_bias_add_te)


# -- nn.pad ----------------------------------------------------------------------------------
def _pad_width_field():
    f = nested_ints_field(((0, 0),))

    @f.validator
    def _check(_inst: Any, attribute: Any, value: Any) -> None:
        if not all(len(row) == 2 and min(row) >= 0 for row in value):
            raise _attr_error(attribute.name, "(before, after) pairs of non-negative ints",
                              value)

    return f


@attrs_class
class PadAttrs(Attrs):
    """Attributes of ``nn.pad``."""

    pad_width: tuple[tuple[int, int], ...] = _pad_width_field()
    pad_value: float = float_field(0.0)
    pad_mode: str = str_field("constant", choices=("constant", "edge", "reflect", "wrap"))


def _pad_rel(args: ArgTypes, attrs: PadAttrs) -> Type:
    data = args.tensor(0)
    if len(attrs.pad_width) != data.ndim:
        args.fail_attr("pad_width", f"{data.ndim} (before, after) pairs (one per axis of "
                       f"{data})", attrs.pad_width)
    shape = []
    for axis, (size, (lo, hi)) in enumerate(zip(data.shape, attrs.pad_width)):
        if attrs.pad_mode == "reflect" and max(lo, hi) > size - 1:
            args.fail_attr("pad_width", f"reflect padding below {size} on axis {axis}",
                           attrs.pad_width)
        if attrs.pad_mode in ("edge", "wrap") and size == 0 and max(lo, hi) > 0:
            args.fail_attr("pad_width", f"no {attrs.pad_mode} padding of empty axis {axis}",
                           attrs.pad_width)
        shape.append(size + lo + hi)
    return TensorType(shape, data.dtype)


def _pad(attrs: PadAttrs, data: np.ndarray) -> np.ndarray:
    if not attrs.pad_width:  # a scalar: nothing to pad (np.pad rejects an empty width)
        return data.copy()
    if attrs.pad_mode == "constant":
        value = np.asarray(attrs.pad_value).astype(data.dtype)
        return np.pad(data, attrs.pad_width, mode="constant", constant_values=value)
    return np.pad(data, attrs.pad_width, mode=attrs.pad_mode)


def _pad_source(i: PrimExpr, n: int, lo: int, hi: int, mode: str) -> PrimExpr:
    """The index into an axis of length ``n`` padded by ``(lo, hi)`` that output index
    ``i`` reads (for ``constant`` clamped into the axis: the select discards it)."""
    j = i - lo if lo else i
    if not lo and not hi:
        return j
    if mode == "reflect":
        last = const(n - 1, te.INDEX_DTYPE)
        return last - absolute(last - absolute(j))  # mirrored at 0 and at n - 1
    if mode == "wrap":
        return j % n
    if hi:
        j = Min(j, const(n - 1, te.INDEX_DTYPE))
    return Max(j, const(0, te.INDEX_DTYPE)) if lo else j


def _pad_te(attrs: PadAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    x = inputs[0]
    value = te.fill(attrs.pad_value, out.dtype)
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "pad")
    if math.prod(x.shape) == 0:  # constant padding of an empty tensor
        return te.compute(out.shape, lambda *_: value, name="pad")
    mode = attrs.pad_mode

    def element(*i: PrimExpr) -> PrimExpr:
        load = x[tuple(_pad_source(index, n, lo, hi, mode)
                       for index, n, (lo, hi) in zip(i, x.shape, attrs.pad_width))]
        if mode != "constant":
            return load
        inside: PrimExpr | None = None
        for index, n, (lo, hi) in zip(i, x.shape, attrs.pad_width):
            bounds = ([index >= lo] if lo else []) + ([index < lo + n] if hi else [])
            for cond in bounds:
                inside = cond if inside is None else And(inside, cond)
        return load if inside is None else Select(inside, load, value)

    return te.compute(out.shape, element, name="pad")


pad = define_op(
    "nn.pad", inputs=("data",), attrs=PadAttrs, type_rel=_pad_rel, compute=_pad,
    pattern=OpPattern.INJECTIVE, te_compute=_pad_te,
    description="Pad each axis by (before, after): with a constant, the edge value, a "
                "reflection (edge excluded) or the values from the other end (wrap, as if the "
                "axis repeated).")


# -- nn.batch_flatten ------------------------------------------------------------------------
def _batch_flatten_rel(args: ArgTypes, _attrs: object) -> Type:
    data = args.tensor(0)
    if data.ndim < 1:
        args.fail(0, "a tensor of rank at least 1", data)
    rest = 1
    for d in data.shape[1:]:
        rest *= d
    return TensorType((data.shape[0], rest), data.dtype)


def _batch_flatten(_attrs: object, data: np.ndarray) -> np.ndarray:
    rest = 1
    for d in data.shape[1:]:
        rest *= d
    return data.reshape(data.shape[0], rest)


def _batch_flatten_te(_attrs: object, inputs: Sequence[te.Tensor],
                      out: TensorType) -> te.Tensor:
    return reshape_te(inputs[0], out.shape, "batch_flatten")


batch_flatten = define_op(
    "nn.batch_flatten", inputs=("data",), type_rel=_batch_flatten_rel,
    compute=_batch_flatten, pattern=OpPattern.INJECTIVE, te_compute=_batch_flatten_te,
    description="Flatten every axis but the first: (N, ...) -> (N, prod(...)).")


# -- nn.dropout ------------------------------------------------------------------------------
@attrs_class
class DropoutAttrs(Attrs):
    """Attributes of ``nn.dropout``."""

    rate: float = float_field(0.5)

    @rate.validator
    def _check_rate(self, attribute: Any, value: float) -> None:
        if not 0.0 <= value < 1.0:
            raise _attr_error(attribute.name, "a number in [0, 1)", value)


def _dropout(_attrs: DropoutAttrs, data: np.ndarray) -> np.ndarray:
    return data


def _dropout_te(_attrs: DropoutAttrs, inputs: Sequence[te.Tensor],
                _out: TensorType) -> te.Tensor:
    x = inputs[0]
    return te.compute(x.shape, lambda *i: x[i], name="dropout")


dropout = define_op(
    "nn.dropout", inputs=("data",), attrs=DropoutAttrs, type_rel=identity_rel,
    compute=_dropout, pattern=OpPattern.OPAQUE, te_compute=_dropout_te,
    description="Dropout; the identity at inference.")


# Operators of the nn namespace declared in modules of their own, so that ``relay.nn`` offers
# them too (imported last: those modules may use the helpers above).
from passhost.relay.op.activation import *  # noqa: E402, F403
from passhost.relay.op.norm import *  # noqa: E402, F403
from passhost.relay.op.pool import *  # noqa: E402, F403
from passhost.relay.op.windows import *  # noqa: E402, F403
