"""Windowed ``nn`` operators beyond the 2-D ones of nn.py: 3-D convolution and pools,
transposed convolutions, the positions of max-pool maxima and max unpooling.

Layouts are channels first: data ``(N, C, *spatial)``; convolution weights
``(O, C // groups, *kernel)``; transposed-convolution weights ``(C, O // groups, *kernel)``
(input channels first, as ONNX and PyTorch store them). Padding of an N-D window takes 1, N
or 2N values and is stored as 2N: every axis's start, then every axis's end
(``(front, top, left, back, bottom, right)`` in 3-D). A transposed convolution's padding
removes output positions instead of adding input ones, and ``output_padding`` adds output
positions at the end of each axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import reduce
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from passhost.ir.attrs import Attrs, attrs_class, bool_field, dtype_field, int_field, ints_field
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES, TensorType, Type, is_float_dtype
from passhost.relay.op.accumulate import acc_float, matmul_in_dtype
from passhost.relay.op.nn import (
    NUMERIC_DTYPES,
    _check_out_dtype,
    _padding_field,
    _window_ints_field,
    _window_out,
)
from passhost.relay.op.pool import _mean_of_sums, _sum_dtype, _tap_counts
from passhost.relay.op.registry import ArgTypes, OpPattern, define_op

__all__ = [
    "conv3d", "conv2d_transpose", "conv3d_transpose", "max_pool3d", "avg_pool3d",
    "max_pool_argmax", "max_unpool", "deformable_conv2d", "window_out_sizes",
    "conv_transpose_sizes",
    "Conv3DAttrs", "Conv2DTransposeAttrs", "Conv3DTransposeAttrs", "MaxPool3DAttrs",
    "AvgPool3DAttrs", "MaxPoolArgmaxAttrs", "MaxUnpoolAttrs", "DeformableConv2DAttrs",
]


# -- window geometry --------------------------------------------------------------------------
def window_out_sizes(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
               dilation: Sequence[int], padding: Sequence[int],
               ceil_mode: bool = False) -> tuple[int, ...]:
    """Output length of a sliding window along each spatial axis (0 or less: no fit)."""
    rank = len(spatial)
    return tuple(_window_out(spatial[i], kernel[i], strides[i], dilation[i], padding[i],
                             padding[rank + i], ceil_mode) for i in range(rank))


def _check_fits(args: ArgTypes, data: TensorType, out: Sequence[int], kernel: Sequence[int],
                dilation: Sequence[int], what: str) -> None:
    if min(out) < 1:
        span = "x".join(str(d * (k - 1) + 1) for k, d in zip(kernel, dilation))
        args.fail(0, f"padded spatial size at least the dilated {what} ({span})", data)


def _windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
             dilation: Sequence[int], padding: Sequence[int], out: Sequence[int],
             fill: Any, dtype: Any) -> np.ndarray:
    """Windows ``(N, C, *out, *kernel)`` over channels-first ``x`` padded with ``fill`` (as
    far as the last window reaches)."""
    rank = x.ndim - 2
    lo = padding[:rank]
    extent = [max(x.shape[2 + i] + padding[i] + padding[rank + i],
                  (out[i] - 1) * strides[i] + dilation[i] * (kernel[i] - 1) + 1)
              for i in range(rank)]
    xp = np.full((*x.shape[:2], *extent), fill, dtype=dtype)
    xp[(slice(None), slice(None),
        *(slice(lo[i], lo[i] + x.shape[2 + i]) for i in range(rank)))] = x
    st = xp.strides
    return as_strided(xp, shape=(*x.shape[:2], *out, *kernel),
                      strides=(st[0], st[1], *(st[2 + i] * strides[i] for i in range(rank)),
                               *(st[2 + i] * dilation[i] for i in range(rank))),
                      writeable=False)


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if is_float_dtype(dtype.name) else np.iinfo(dtype).min


# -- convolution ------------------------------------------------------------------------------
def _conv_valid(xp: np.ndarray, weight: np.ndarray, strides: Sequence[int],
                dilation: Sequence[int], groups: int) -> np.ndarray:
    """Unpadded channels-first convolution of ``xp`` with an ``(O, C // groups, *kernel)``
    weight, in the dtype of ``xp`` (im2col + batched matmul, one matmul per group)."""
    rank = xp.ndim - 2
    n, c = xp.shape[:2]
    o, kernel = weight.shape[0], weight.shape[2:]
    cg, og = c // groups, o // groups
    out = window_out_sizes(xp.shape[2:], kernel, strides, dilation, (0,) * (2 * rank))
    st = xp.strides
    cols = as_strided(xp, shape=(groups, n, *out, cg, *kernel),
                      strides=(cg * st[1], st[0], *(st[2 + i] * strides[i] for i in range(rank)),
                               st[1], *(st[2 + i] * dilation[i] for i in range(rank))),
                      writeable=False)
    positions, depth = math.prod(out), cg * math.prod(kernel)
    cols = cols.reshape(groups, n * positions, depth)
    wg = weight.astype(xp.dtype, copy=False).reshape(groups, og, depth).transpose(0, 2, 1)
    res = np.matmul(cols, wg).reshape(groups, n, positions, og)
    return np.ascontiguousarray(res.transpose(1, 0, 3, 2).reshape(n, o, *out))


def _pad_or_crop(x: np.ndarray, lo: Sequence[int], hi: Sequence[int]) -> np.ndarray:
    """``x`` with ``lo``/``hi`` zeros added before/after each spatial axis (negative: that
    many positions removed)."""
    xp = np.pad(x, ((0, 0), (0, 0), *((max(a, 0), max(b, 0)) for a, b in zip(lo, hi))))
    return xp[(slice(None), slice(None),
               *(slice(max(-a, 0), xp.shape[2 + i] - max(-b, 0))
                 for i, (a, b) in enumerate(zip(lo, hi))))]


def _check_channels(args: ArgTypes, attrs: Any, c: int, per_group: int, o: int,
                    data: TensorType, weight: TensorType, o_name: str) -> None:
    """Check ``c`` data channels split into groups of ``per_group`` and ``o`` output channels
    divide into the groups."""
    g = attrs.groups
    if c % g:
        args.fail(0, f"data whose {c} channels divide into groups={g}", data)
    if per_group * g != c:
        args.fail(1, f"a weight with {c // g} input channels per group (data has {c} channels, "
                  f"groups={g})", weight)
    if o % g:
        args.fail(1, f"a weight whose {o_name} divide into groups={g}", weight)
    if attrs.channels is not None and attrs.channels != o:
        args.fail_attr("channels", f"{o} (the weight's output channels)", attrs.channels)


def _check_kernel(args: ArgTypes, attrs: Any, kernel: tuple[int, ...],
                  weight: TensorType) -> None:
    if min(kernel) < 1:
        args.fail(1, "a weight with a non-empty kernel", weight)
    if attrs.kernel_size is not None and attrs.kernel_size != kernel:
        args.fail_attr("kernel_size", f"{kernel} (the weight's kernel size)", attrs.kernel_size)


def _conv_terms(weight: np.ndarray, per_group: int) -> int:
    """How many products one output of a convolution sums."""
    return per_group * math.prod(weight.shape[2:])


@attrs_class
class Conv3DAttrs(Attrs):
    """Attributes of ``nn.conv3d``."""

    strides: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    padding: tuple[int, ...] = _padding_field(3)
    dilation: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    groups: int = int_field(1, minimum=1)
    channels: int | None = int_field(None, minimum=0, optional=True)
    kernel_size: tuple[int, int, int] | None = _window_ints_field(3, None, minimum=1,
                                                                  optional=True)
    out_dtype: str = dtype_field("")


def _conv3d_rel(args: ArgTypes, attrs: Conv3DAttrs) -> Type:
    dtype = _check_out_dtype(args, attrs.out_dtype, 0, 1)
    data, weight = args.tensor(0, ndim=5), args.tensor(1, ndim=5)
    n, c, *spatial = data.shape
    o, i, *kernel = weight.shape
    _check_channels(args, attrs, c, i, o, data, weight, f"O={o} output channels")
    _check_kernel(args, attrs, tuple(kernel), weight)
    out = window_out_sizes(spatial, kernel, attrs.strides, attrs.dilation, attrs.padding)
    _check_fits(args, data, out, kernel, attrs.dilation, "kernel")
    return TensorType((n, o, *out), dtype)


def _conv3d(attrs: Conv3DAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    p = attrs.padding

    def run(d: np.ndarray, w: np.ndarray) -> np.ndarray:
        return _conv_valid(_pad_or_crop(d, p[:3], p[3:]), w, attrs.strides, attrs.dilation,
                           attrs.groups)

    return matmul_in_dtype(attrs.out_dtype or data.dtype.name, data, weight,
                           _conv_terms(weight, weight.shape[1]), run)


conv3d = define_op(
    "nn.conv3d", inputs=("data", "weight"), attrs=Conv3DAttrs, type_rel=_conv3d_rel,
    compute=_conv3d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="3-D convolution (grouped, dilated, strided, padded), NCDHW data and OIDHW "
                "weight.")


# -- transposed convolution -------------------------------------------------------------------
@attrs_class
class Conv2DTransposeAttrs(Attrs):
    """Attributes of ``nn.conv2d_transpose``."""

    strides: tuple[int, int] = _window_ints_field(2, (1, 1), minimum=1)
    padding: tuple[int, int, int, int] = _padding_field(2)
    output_padding: tuple[int, int] = _window_ints_field(2, (0, 0), minimum=0)
    dilation: tuple[int, int] = _window_ints_field(2, (1, 1), minimum=1)
    groups: int = int_field(1, minimum=1)
    channels: int | None = int_field(None, minimum=0, optional=True)
    kernel_size: tuple[int, int] | None = _window_ints_field(2, None, minimum=1, optional=True)
    out_dtype: str = dtype_field("")


@attrs_class
class Conv3DTransposeAttrs(Attrs):
    """Attributes of ``nn.conv3d_transpose``."""

    strides: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    padding: tuple[int, ...] = _padding_field(3)
    output_padding: tuple[int, int, int] = _window_ints_field(3, (0, 0, 0), minimum=0)
    dilation: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    groups: int = int_field(1, minimum=1)
    channels: int | None = int_field(None, minimum=0, optional=True)
    kernel_size: tuple[int, int, int] | None = _window_ints_field(3, None, minimum=1,
                                                                  optional=True)
    out_dtype: str = dtype_field("")


ConvTransposeAttrs = Conv2DTransposeAttrs | Conv3DTransposeAttrs


def conv_transpose_sizes(spatial: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                         dilation: Sequence[int], padding: Sequence[int],
                         output_padding: Sequence[int]) -> tuple[int, ...]:
    """The output spatial sizes of a transposed convolution (0 or less: padding removes
    every position)."""
    rank = len(spatial)
    return tuple((spatial[i] - 1) * strides[i] + dilation[i] * (kernel[i] - 1) + 1
                 - padding[i] - padding[rank + i] + output_padding[i] for i in range(rank))


def _conv_transpose_rel(rank: int) -> Callable[[ArgTypes, ConvTransposeAttrs], Type]:
    def rel(args: ArgTypes, attrs: ConvTransposeAttrs) -> Type:
        dtype = _check_out_dtype(args, attrs.out_dtype, 0, 1)
        data, weight = args.tensor(0, ndim=rank + 2), args.tensor(1, ndim=rank + 2)
        n, c, *spatial = data.shape
        wc, og, *kernel = weight.shape
        if wc != c:
            args.fail(1, f"a weight with {c} input channels first (data has {c} channels)",
                      weight)
        g = attrs.groups
        _check_channels(args, attrs, c, c // g, og * g, data, weight,
                        "output channels")
        _check_kernel(args, attrs, tuple(kernel), weight)
        out = conv_transpose_sizes(spatial, kernel, attrs.strides, attrs.dilation,
                                   attrs.padding, attrs.output_padding)
        if min(out) < 1:
            args.fail_attr("padding", f"less than the full output {tuple(out)} it crops",
                           attrs.padding)
        return TensorType((n, og * g, *out), dtype)

    return rel


def _conv_transpose(attrs: ConvTransposeAttrs, data: np.ndarray,
                    weight: np.ndarray) -> np.ndarray:
    """A transposed convolution as the convolution of the stride-dilated data (zeros between
    its positions) with the flipped weight."""
    rank, g = data.ndim - 2, attrs.groups
    c, og, *kernel = weight.shape
    reach = [d * (k - 1) for k, d in zip(kernel, attrs.dilation)]
    lo = [reach[i] - attrs.padding[i] for i in range(rank)]
    hi = [reach[i] - attrs.padding[rank + i] + attrs.output_padding[i] for i in range(rank)]

    def run(d: np.ndarray, w: np.ndarray) -> np.ndarray:
        up = np.zeros((*d.shape[:2], *((n - 1) * s + 1 for n, s in zip(d.shape[2:],
                                                                          attrs.strides))),
                      dtype=d.dtype)
        up[(slice(None), slice(None), *(slice(None, None, s) for s in attrs.strides))] = d
        flipped = w.reshape(g, c // g, og, *kernel).swapaxes(1, 2)
        flipped = flipped.reshape(g * og, c // g, *kernel)[
            (slice(None), slice(None), *(slice(None, None, -1),) * rank)]
        return _conv_valid(_pad_or_crop(up, lo, hi), flipped, (1,) * rank, attrs.dilation, g)

    return matmul_in_dtype(attrs.out_dtype or data.dtype.name, data, weight,
                           _conv_terms(weight, c // g), run)


conv2d_transpose = define_op(
    "nn.conv2d_transpose", inputs=("data", "weight"), attrs=Conv2DTransposeAttrs,
    type_rel=_conv_transpose_rel(2), compute=_conv_transpose,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="2-D transposed convolution (the gradient of conv2d by its data), NCHW data "
                "and IOHW weight; padding crops the output, output_padding extends its end.")

conv3d_transpose = define_op(
    "nn.conv3d_transpose", inputs=("data", "weight"), attrs=Conv3DTransposeAttrs,
    type_rel=_conv_transpose_rel(3), compute=_conv_transpose,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="3-D transposed convolution, NCDHW data and IODHW weight; padding crops the "
                "output, output_padding extends its end.")


# -- 3-D pooling ------------------------------------------------------------------------------
@attrs_class
class Pool3DAttrs(Attrs):
    """Attributes shared by the 3-D window pools."""

    pool_size: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    strides: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    dilation: tuple[int, int, int] = _window_ints_field(3, (1, 1, 1), minimum=1)
    padding: tuple[int, ...] = _padding_field(3)
    ceil_mode: bool = bool_field(False)


@attrs_class
class MaxPool3DAttrs(Pool3DAttrs):
    """Attributes of ``nn.max_pool3d``."""


@attrs_class
class AvgPool3DAttrs(Pool3DAttrs):
    """Attributes of ``nn.avg_pool3d``: the shared ones and whether padding counts."""

    count_include_pad: bool = bool_field(False)


def _pool_out(attrs: Any, spatial: Sequence[int]) -> tuple[int, ...]:
    return window_out_sizes(spatial, attrs.pool_size, attrs.strides, attrs.dilation, attrs.padding,
                      attrs.ceil_mode)


def _pool3d_rel(args: ArgTypes, attrs: Pool3DAttrs) -> Type:
    data = args.tensor(0, ndim=5, dtypes=NUMERIC_DTYPES)
    out = _pool_out(attrs, data.shape[2:])
    _check_fits(args, data, out, attrs.pool_size, attrs.dilation, "pool window")
    return TensorType((*data.shape[:2], *out), data.dtype)


def _pool_windows(attrs: Any, data: np.ndarray, fill: Any, dtype: Any) -> np.ndarray:
    return _windows(data, attrs.pool_size, attrs.strides, attrs.dilation, attrs.padding,
                    _pool_out(attrs, data.shape[2:]), fill, dtype)


def _kernel_axes(data: np.ndarray) -> tuple[int, ...]:
    return tuple(range(data.ndim, 2 * data.ndim - 2))


def _max_pool3d(attrs: MaxPool3DAttrs, data: np.ndarray) -> np.ndarray:
    win = _pool_windows(attrs, data, _lowest(data.dtype), data.dtype)
    return np.ascontiguousarray(win.max(axis=_kernel_axes(data)))


def _avg_pool3d(attrs: AvgPool3DAttrs, data: np.ndarray) -> np.ndarray:
    win = _pool_windows(attrs, data, 0, _sum_dtype(data.dtype))
    sums = win.sum(axis=_kernel_axes(data))
    rank, pad = data.ndim - 2, attrs.padding
    counts = []
    for i, (size, out) in enumerate(zip(data.shape[2:], sums.shape[2:])):
        lo, hi = (0, size + pad[i] + pad[rank + i]) if attrs.count_include_pad else \
            (pad[i], pad[i] + size)
        counts.append(_tap_counts(out, attrs.pool_size[i], attrs.strides[i],
                                  attrs.dilation[i], lo, hi))
    return _mean_of_sums(sums, reduce(np.multiply.outer, counts), data.dtype)


max_pool3d = define_op(
    "nn.max_pool3d", inputs=("data",), attrs=MaxPool3DAttrs, type_rel=_pool3d_rel,
    compute=_max_pool3d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="3-D max pooling of NCDHW data; padding never wins. ceil_mode drops a last "
                "window that would start in the end padding.")

avg_pool3d = define_op(
    "nn.avg_pool3d", inputs=("data",), attrs=AvgPool3DAttrs, type_rel=_pool3d_rel,
    compute=_avg_pool3d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="3-D average pooling of NCDHW data over valid taps (or the padded window with "
                "count_include_pad); integers round half away from zero.")


# -- nn.max_pool_argmax -----------------------------------------------------------------------
@attrs_class
class MaxPoolArgmaxAttrs(Attrs):
    """Attributes of ``nn.max_pool_argmax``: a max pool's window (one value per spatial axis,
    padding every start then every end) and the order of the flat positions."""

    pool_size: tuple[int, ...] = ints_field((1,))
    strides: tuple[int, ...] = ints_field((1,))
    dilation: tuple[int, ...] = ints_field((1,))
    padding: tuple[int, ...] = ints_field((0, 0))
    ceil_mode: bool = bool_field(False)
    column_major: bool = bool_field(False)


def _max_pool_argmax_rel(args: ArgTypes, attrs: MaxPoolArgmaxAttrs) -> Type:
    data = args.tensor(0, dtypes=NUMERIC_DTYPES)
    rank = data.ndim - 2
    if rank < 1:
        args.fail(0, "a tensor (N, C, *spatial) with at least one spatial axis", data)
    for name, size, minimum in (("pool_size", rank, 1), ("strides", rank, 1),
                                ("dilation", rank, 1), ("padding", 2 * rank, 0)):
        value = getattr(attrs, name)
        if len(value) != size or min(value) < minimum:
            args.fail_attr(name, f"{size} ints >= {minimum} (data has {rank} spatial axes)",
                           value)
    out = _pool_out(attrs, data.shape[2:])
    _check_fits(args, data, out, attrs.pool_size, attrs.dilation, "pool window")
    return TensorType((*data.shape[:2], *out), "int64")


def _max_pool_argmax(attrs: MaxPoolArgmaxAttrs, data: np.ndarray) -> np.ndarray:
    rank, spatial = data.ndim - 2, data.shape[2:]
    win = _pool_windows(attrs, data, _lowest(data.dtype), data.dtype)
    out = win.shape[2:2 + rank]
    # Input position of each (output, tap) pair along each axis, broadcast over the window.
    pos, valid = [], np.ones((1,) * (2 * rank), dtype=bool)
    for i in range(rank):
        shape = [1] * (2 * rank)
        shape[i], shape[rank + i] = out[i], attrs.pool_size[i]
        p = (np.arange(out[i])[:, None] * attrs.strides[i] - attrs.padding[i]
             + np.arange(attrs.pool_size[i])[None, :] * attrs.dilation[i]).reshape(shape)
        pos.append(p)
        valid = valid & (p >= 0) & (p < spatial[i])
    best = win.max(axis=_kernel_axes(data), keepdims=True)
    hit = ((win == best) & valid).reshape(*data.shape[:2], *out, -1)
    tap = np.unravel_index(hit.argmax(axis=-1), attrs.pool_size)
    order = range(rank) if attrs.column_major else reversed(range(rank))
    offset, step = np.zeros(hit.shape[:-1], dtype=np.int64), 1
    for i in order:
        at = (np.arange(out[i]) * attrs.strides[i] - attrs.padding[i]).reshape(
            [-1 if j == i else 1 for j in range(rank)])
        offset = offset + (at + tap[i] * attrs.dilation[i]) * step
        step *= spatial[i]
    planes = np.arange(data.shape[0] * data.shape[1], dtype=np.int64).reshape(
        *data.shape[:2], *(1,) * rank)
    flat = planes * math.prod(spatial) + offset
    return np.where(hit.any(axis=-1), flat, -1).astype(np.int64)


max_pool_argmax = define_op(
    "nn.max_pool_argmax", inputs=("data",), attrs=MaxPoolArgmaxAttrs,
    type_rel=_max_pool_argmax_rel, compute=_max_pool_argmax, pattern=OpPattern.OPAQUE,
    description="Where each window of a max pool over (N, C, *spatial) data takes its maximum "
                "(the first such tap): the flat position in the whole data, spatial axes "
                "row-major (or column-major); -1 for a window of padding only.")


# -- nn.max_unpool ----------------------------------------------------------------------------
@attrs_class
class MaxUnpoolAttrs(Attrs):
    """Attributes of ``nn.max_unpool``: the spatial shape the flat indices address and the
    spatial shape of the output (empty: the same)."""

    index_shape: tuple[int, ...] = ints_field((1,))
    out_shape: tuple[int, ...] = ints_field(())


def _max_unpool_rel(args: ArgTypes, attrs: MaxUnpoolAttrs) -> Type:
    data = args.tensor(0, dtypes=NUMERIC_DTYPES)
    rank = data.ndim - 2
    if rank < 1:
        args.fail(0, "a tensor (N, C, *spatial) with at least one spatial axis", data)
    indices = args.tensor(1, dtypes=INT_DTYPES)
    if indices.shape != data.shape:
        args.fail(1, f"integer indices of the data's shape {data.shape}", indices)
    if len(attrs.index_shape) != rank or min(attrs.index_shape) < 1:
        args.fail_attr("index_shape", f"{rank} positive ints (one per spatial axis)",
                       attrs.index_shape)
    out = attrs.out_shape or attrs.index_shape
    if len(out) != rank or any(o < i for o, i in zip(out, attrs.index_shape)):
        args.fail_attr("out_shape", f"{rank} ints, each at least index_shape "
                       f"{attrs.index_shape}", attrs.out_shape)
    return TensorType((*data.shape[:2], *out), data.dtype)


def _max_unpool(attrs: MaxUnpoolAttrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    n, c = data.shape[:2]
    flat = np.zeros(n * c * math.prod(attrs.index_shape), dtype=data.dtype)
    idx = indices.reshape(-1).astype(np.int64)
    keep = (idx >= 0) & (idx < flat.size)
    flat[idx[keep]] = data.reshape(-1)[keep]
    out = np.zeros((n, c, *(attrs.out_shape or attrs.index_shape)), dtype=data.dtype)
    out[(slice(None), slice(None), *(slice(0, s) for s in attrs.index_shape))] = flat.reshape(
        n, c, *attrs.index_shape)
    return out


max_unpool = define_op(
    "nn.max_unpool", inputs=("data", "indices"), attrs=MaxUnpoolAttrs,
    type_rel=_max_unpool_rel, compute=_max_unpool, pattern=OpPattern.OPAQUE,
    description="The inverse of a max pool: zeros of (N, C, *index_shape) with each data "
                "value at its flat index (indices outside are ignored), placed at the start of "
                "(N, C, *out_shape).")


# -- nn.deformable_conv2d ---------------------------------------------------------------------
@attrs_class
class DeformableConv2DAttrs(Attrs):
    """Attributes of ``nn.deformable_conv2d``."""

    strides: tuple[int, int] = _window_ints_field(2, (1, 1), minimum=1)
    padding: tuple[int, int, int, int] = _padding_field(2)
    dilation: tuple[int, int] = _window_ints_field(2, (1, 1), minimum=1)
    groups: int = int_field(1, minimum=1)
    deformable_groups: int = int_field(1, minimum=1)


def _deformable_conv2d_rel(args: ArgTypes, attrs: DeformableConv2DAttrs) -> Type:
    data = args.tensor(0, ndim=4, dtypes=ANY_FLOAT_DTYPES)
    weight = args.tensor(2, ndim=4, dtypes=(data.dtype,))
    n, c, h, w = data.shape
    o, i, kh, kw = weight.shape
    g, dg = attrs.groups, attrs.deformable_groups
    if c % g or i * g != c or o % g:
        args.fail(2, f"an (O, {c // g}, KH, KW) weight, O divisible by groups={g} (data has "
                  f"{c} channels)", weight)
    if c % dg:
        args.fail(0, f"data whose {c} channels divide into deformable_groups={dg}", data)
    if min(kh, kw) < 1:
        args.fail(2, "a weight with a non-empty kernel", weight)
    out = window_out_sizes((h, w), (kh, kw), attrs.strides, attrs.dilation, attrs.padding)
    _check_fits(args, data, out, (kh, kw), attrs.dilation, "kernel")
    for index, per_tap in ((1, 2), (3, 1)):
        want = (n, dg * kh * kw * per_tap, *out)
        args.tensor(index, dtypes=(data.dtype,))
        if args.tensor(index).shape != want:
            args.fail(index, f"a tensor of shape {want}", args.tensor(index))
    return TensorType((n, o, *out), data.dtype)


def _deformable_conv2d(attrs: DeformableConv2DAttrs, data: np.ndarray, offset: np.ndarray,
                       weight: np.ndarray, mask: np.ndarray) -> np.ndarray:
    acc = acc_float(data.dtype)
    n, c, h, w = data.shape
    o, cg, kh, kw = weight.shape
    g, dg = attrs.groups, attrs.deformable_groups
    oh, ow = offset.shape[2:]
    taps = kh * kw * oh * ow
    off = offset.astype(acc).reshape(n, dg, kh, kw, 2, oh, ow)
    # Sampling position of each (tap, output) pair: its place in the window plus the offset.
    ph = ((np.arange(oh) * attrs.strides[0] - attrs.padding[0])[None, :, None]
          + (np.arange(kh) * attrs.dilation[0])[:, None, None])[:, None] + off[:, :, :, :, 0]
    pw = ((np.arange(ow) * attrs.strides[1] - attrs.padding[1])[None, None, :]
          + (np.arange(kw) * attrs.dilation[1])[:, None, None])[None] + off[:, :, :, :, 1]
    h0, w0 = np.floor(ph), np.floor(pw)
    planes = data.astype(acc).reshape(n, dg, c // dg, h * w)
    samples = np.zeros((n, dg, c // dg, taps), dtype=acc)
    # Bilinear interpolation: each of the four neighbours, zero outside the data.
    for dy in (0, 1):
        for dx in (0, 1):
            y, x = h0 + dy, w0 + dx
            share = (1 - np.abs(ph - y)) * (1 - np.abs(pw - x))
            inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
            flat = (np.clip(y, 0, h - 1) * w + np.clip(x, 0, w - 1)).astype(np.intp)
            picked = np.take_along_axis(planes, flat.reshape(n, dg, 1, taps), axis=3)
            samples += picked * np.where(inside, share, 0).reshape(n, dg, 1, taps)
    samples *= mask.astype(acc).reshape(n, dg, 1, taps)
    cols = samples.reshape(n, g, cg * kh * kw, oh * ow)
    wg = weight.astype(acc).reshape(g, o // g, cg * kh * kw)
    out = np.einsum("gok,ngkp->ngop", wg, cols, optimize=True)
    return np.ascontiguousarray(out.reshape(n, o, oh, ow).astype(data.dtype))


deformable_conv2d = define_op(
    "nn.deformable_conv2d", inputs=("data", "offset", "weight", "mask"),
    attrs=DeformableConv2DAttrs, type_rel=_deformable_conv2d_rel, compute=_deformable_conv2d,
    pattern=OpPattern.OPAQUE,
    description="Deformable 2-D convolution (NCHW, OIHW): each kernel tap samples the data "
                "bilinearly (zero outside) at its place plus an offset (N, deformable_groups * "
                "KH * KW * 2, OH, OW) of (dy, dx) pairs, scaled by a mask (N, deformable_groups "
                "* KH * KW, OH, OW).")
