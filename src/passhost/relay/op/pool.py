"""2-D pooling (``nn.max_pool2d``, ``nn.avg_pool2d``, ``nn.global_avg_pool2d``) over
``NCHW``, ``NHWC`` or channel-blocked ``NCHW{k}c`` data, and the helpers the other pools
share (tap counts, means of sums). nn.py offers them as ``relay.nn.*``.

Padding never wins a max; an average divides by the valid taps (or the padded window with
``count_include_pad``), integers rounding half away from zero. ``ceil_mode`` drops a last
window that would start in the right padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from passhost import te
from passhost.ir.attrs import Attrs, attrs_class, bool_field
from passhost.ir.types import TensorType, Type, is_float_dtype
from passhost.relay.op.accumulate import acc_float as _acc_float
from passhost.relay.op.layout import channel_block
from passhost.relay.op.nn import (
    NUMERIC_DTYPES,
    _data_dims,
    _data_layout_field,
    _from_nchw,
    _out_layout_field,
    _out_shape,
    _padding_field,
    _pair_field,
    _to_nchw,
    _window_out,
)
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, define_op
from passhost.relay.op.te_reduce import reduce_over, reduced_index, sum_dtype
from passhost.tir.expr import PrimExpr

__all__ = [
    "AvgPool2DAttrs", "GlobalPool2DAttrs", "MaxPool2DAttrs", "Pool2DAttrs", "avg_pool2d",
    "global_avg_pool2d", "max_pool2d",
]


# -- 2-D pooling -----------------------------------------------------------------------------
@attrs_class
class Pool2DAttrs(Attrs):
    """Attributes shared by the 2-D window pools."""

    pool_size: tuple[int, int] = _pair_field((1, 1), minimum=1)
    strides: tuple[int, int] = _pair_field((1, 1), minimum=1)
    dilation: tuple[int, int] = _pair_field((1, 1), minimum=1)
    padding: tuple[int, int, int, int] = _padding_field()
    layout: str = _data_layout_field("NCHW")
    out_layout: str = _out_layout_field()
    ceil_mode: bool = bool_field(False)


@attrs_class
class MaxPool2DAttrs(Pool2DAttrs):
    """Attributes of ``nn.max_pool2d``."""


@attrs_class
class AvgPool2DAttrs(Pool2DAttrs):
    """Attributes of ``nn.avg_pool2d``: the shared ones and whether padding counts."""

    count_include_pad: bool = bool_field(False)


def _pool_dims(attrs: Pool2DAttrs, h: int, w: int) -> tuple[int, int]:
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    pt, pl, pb, pr = attrs.padding
    return (_window_out(h, kh, sh, dh, pt, pb, attrs.ceil_mode),
            _window_out(w, kw, sw, dw, pl, pr, attrs.ceil_mode))


def _pool_rel(args: ArgTypes, attrs: Pool2DAttrs) -> Type:
    data, (n, c, h, w) = _data_dims(args, 0, attrs.layout, NUMERIC_DTYPES)
    oh, ow = _pool_dims(attrs, h, w)
    if oh < 1 or ow < 1:
        (kh, kw), (dh, dw) = attrs.pool_size, attrs.dilation
        args.fail(0, f"padded spatial size at least the dilated pool window "
                  f"({dh * (kh - 1) + 1}x{dw * (kw - 1) + 1})", data)
    return TensorType(_out_shape(args, attrs, "layout", n, c, oh, ow), data.dtype)


def _pool_windows(attrs: Pool2DAttrs, x: np.ndarray, fill: Any, dtype: Any,
                  ) -> tuple[np.ndarray, int, int]:
    """Windows ``(N, C, OH, OW, KH, KW)`` over NCHW ``x`` padded with ``fill``."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    pt, pl, pb, pr = attrs.padding
    oh, ow = _pool_dims(attrs, h, w)
    hp = max(h + pt + pb, (oh - 1) * sh + dh * (kh - 1) + 1)
    wp = max(w + pl + pr, (ow - 1) * sw + dw * (kw - 1) + 1)
    xp = np.full((n, c, hp, wp), fill, dtype=dtype)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    s = xp.strides
    win = as_strided(xp, shape=(n, c, oh, ow, kh, kw),
                     strides=(s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw),
                     writeable=False)
    return win, oh, ow


def _max_pool2d(attrs: MaxPool2DAttrs, data: np.ndarray) -> np.ndarray:
    x = _to_nchw(data, attrs.layout)
    lowest = -np.inf if is_float_dtype(data.dtype.name) else np.iinfo(data.dtype).min
    win, _, _ = _pool_windows(attrs, x, lowest, data.dtype)
    return _from_nchw(win.max(axis=(4, 5)), attrs.out_layout or attrs.layout)


def _tap_counts(out: int, k: int, stride: int, dil: int, lo: int, hi: int) -> np.ndarray:
    """For each output position, how many window taps fall in padded positions [lo, hi)."""
    taps = np.arange(out)[:, None] * stride + np.arange(k)[None, :] * dil
    return ((taps >= lo) & (taps < hi)).sum(axis=1)


def _mean_of_sums(sums: np.ndarray, counts: np.ndarray | int, dtype: np.dtype) -> np.ndarray:
    """Sums divided by counts: plain for floats, rounded half away from zero for ints."""
    counts = np.maximum(counts, 1)
    if is_float_dtype(dtype.name):
        return (sums / counts).astype(dtype, copy=False)
    q = (np.abs(sums) + counts // 2) // counts
    return np.where(sums < 0, -q, q).astype(dtype)


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    return _acc_float(dtype) if is_float_dtype(dtype.name) else np.dtype(np.int64)


def _avg_pool2d(attrs: AvgPool2DAttrs, data: np.ndarray) -> np.ndarray:
    x = _to_nchw(data, attrs.layout)
    h, w = x.shape[2:]
    win, oh, ow = _pool_windows(attrs, x, 0, _sum_dtype(data.dtype))
    sums = win.sum(axis=(4, 5))
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    pt, pl, pb, pr = attrs.padding
    if attrs.count_include_pad:
        ch = _tap_counts(oh, kh, sh, dh, 0, h + pt + pb)
        cw = _tap_counts(ow, kw, sw, dw, 0, w + pl + pr)
    else:
        ch = _tap_counts(oh, kh, sh, dh, pt, pt + h)
        cw = _tap_counts(ow, kw, sw, dw, pl, pl + w)
    out = _mean_of_sums(sums, ch[:, None] * cw[None, :], data.dtype)
    return _from_nchw(out, attrs.out_layout or attrs.layout)


max_pool2d = define_op(
    "nn.max_pool2d", inputs=("data",), attrs=MaxPool2DAttrs, type_rel=_pool_rel,
    compute=_max_pool2d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    layout=LayoutInfo(layout_attrs=("layout", "out_layout")),
    description="2-D max pooling; padding never wins. ceil_mode drops a last window that "
                "would start in the right padding.")

avg_pool2d = define_op(
    "nn.avg_pool2d", inputs=("data",), attrs=AvgPool2DAttrs, type_rel=_pool_rel,
    compute=_avg_pool2d, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    layout=LayoutInfo(layout_attrs=("layout", "out_layout")),
    description="2-D average pooling over valid taps (or the padded window with "
                "count_include_pad); integers round half away from zero.")


# -- nn.global_avg_pool2d --------------------------------------------------------------------
@attrs_class
class GlobalPool2DAttrs(Attrs):
    """Attributes of 2-D global pooling."""

    layout: str = _data_layout_field("NCHW")
    out_layout: str = _out_layout_field()


def _global_pool_rel(args: ArgTypes, attrs: GlobalPool2DAttrs) -> Type:
    data, (n, c, _, _) = _data_dims(args, 0, attrs.layout, NUMERIC_DTYPES)
    return TensorType(_out_shape(args, attrs, "layout", n, c, 1, 1), data.dtype)


def _global_avg_pool2d(attrs: GlobalPool2DAttrs, data: np.ndarray) -> np.ndarray:
    x = _to_nchw(data, attrs.layout)
    sums = x.sum(axis=(2, 3), keepdims=True, dtype=_sum_dtype(data.dtype))
    out = _mean_of_sums(sums, x.shape[2] * x.shape[3], data.dtype)
    return _from_nchw(out, attrs.out_layout or attrs.layout)


def _global_avg_pool2d_te(attrs: GlobalPool2DAttrs, inputs: Sequence[te.Tensor],
                          out: Type) -> te.Tensor:
    assert isinstance(out, TensorType)
    (data,) = inputs
    layout, out_layout = attrs.layout, attrs.out_layout or attrs.layout
    spatial = (1, 2) if layout == "NHWC" else (2, 3)
    acc = sum_dtype(data.dtype)
    total = reduce_over(data.shape, spatial, False, lambda i: te.cast(data[i], acc), te.sum,
                        "global_avg_pool2d_sum")
    count = max(data.shape[spatial[0]] * data.shape[spatial[1]], 1)

    def element(*i: PrimExpr) -> PrimExpr:
        if out_layout == layout:
            value = total[reduced_index(i, spatial)]
        else:  # the sums of the output's channel, by their (N, C) or (N, C / k, k) index
            index = (i[0], *_channel_index(_channel_of(i, out_layout), layout))
            value = total[index]
        if is_float_dtype(data.dtype):
            return te.cast(value / count, out.dtype)
        return te.cast(_round_half_away(value, count), out.dtype)

    return te.compute(out.shape, element, name="global_avg_pool2d")


def _channel_of(index: Sequence[PrimExpr], layout: str) -> PrimExpr:
    """The channel of the element at ``index`` of a tensor in 2-D data layout ``layout``."""
    block = channel_block(layout)
    return index[1] * block + index[4] if block else index[layout.index("C")]


def _channel_index(c: PrimExpr, layout: str) -> tuple[PrimExpr, ...]:
    """Channel ``c``'s index along the channel axes of ``layout``: (c,), or (c / k, c % k) for
    ``NCHW{k}c``."""
    block = channel_block(layout)
    return (c // block, c % block) if block else (c,)


def _round_half_away(total: PrimExpr, count: int) -> PrimExpr:
    """The uint64 ``total`` (an int64 sum, wrapped) divided by ``count``, rounded half away
    from zero, as a wrapped uint64: the quotient of magnitudes, then the sign."""
    negative = te.cast(total, "int64") < 0
    magnitude = te.if_then_else(negative, 0 - total, total)
    quotient = (magnitude + count // 2) / count
    return te.if_then_else(negative, 0 - quotient, quotient)


global_avg_pool2d = define_op(
    "nn.global_avg_pool2d", inputs=("data",), attrs=GlobalPool2DAttrs,
    type_rel=_global_pool_rel, compute=_global_avg_pool2d,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE, te_compute=_global_avg_pool2d_te,
    layout=LayoutInfo(layout_attrs=("layout", "out_layout")),
    description="Mean over the spatial dims, which are kept as 1.")
