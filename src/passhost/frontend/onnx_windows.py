"""Converters of the ONNX windowed network operators: Conv, ConvTranspose and pools in 1-D,
2-D and 3-D, global pools, MaxUnpool, DeformConv and CausalConvWithState.

2-D convolutions and pools become ``nn.conv2d``, ``nn.max_pool2d`` and ``nn.avg_pool2d`` (the
operators with fast cpu kernels); 1-D ones become the same 2-D operators over a unit height
axis; 3-D ones ``nn.conv3d``, ``nn.max_pool3d`` and ``nn.avg_pool3d``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Entry
from passhost.relay import nn
from passhost.relay.expr import Expr, const
from passhost.relay.op.windows import conv_transpose_sizes, window_out_sizes

__all__ = ["CONVERTERS", "Window", "conv2d_attrs", "node_window"]

_AUTO_PADS = ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER")


class Window(NamedTuple):
    """A window's geometry, one value per spatial axis (``padding``: every axis's start, then
    every axis's end)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    padding: tuple[int, ...]

    def with_unit_axis(self) -> Window:
        """The 2-D window of this 1-D one over a leading unit axis."""
        return Window((1, *self.kernel), (1, *self.strides), (1, *self.dilations),
                      (0, self.padding[0], 0, self.padding[1]))

    def clipped_to(self, spatial: Sequence[int]) -> Window:
        """With ceil_mode: this window with every undilated kernel longer than its padded
        axis cut to that axis. Such a window fits exactly once, from the start, and its taps
        past the padding read nothing (a max never takes them, an average never counts
        them), so the pool's result is the same, for a fraction of the work
        (transformers' EfficientNet pools a 320x320 window over 8x8 maps)."""
        rank = len(self.kernel)
        kernel = tuple(
            min(k, n + self.padding[i] + self.padding[rank + i]) if d == 1 else k
            for i, (k, n, d) in enumerate(zip(self.kernel, spatial, self.dilations)))
        return self._replace(kernel=kernel)

    def pool_attrs(self) -> dict[str, tuple[int, ...]]:
        """The window as the attributes of passhost's pools."""
        return {"pool_size": self.kernel, "strides": self.strides, "dilation": self.dilations,
                "padding": self.padding}


# -- attributes -----------------------------------------------------------------------------
def _spatial_rank(ctx: NodeContext, ranks: Sequence[int] = (1, 2, 3)) -> int:
    """How many spatial axes input 0 ``(N, C, *spatial)`` has: one of ``ranks``."""
    shape = ctx.shape(0)
    if len(shape) - 2 not in ranks:
        want = " or ".join(f"{r + 2}-D" for r in ranks)
        raise ctx.error(f"expected {want} data (N, C, *spatial), found shape {shape}")
    return len(shape) - 2


def _ints_attr(ctx: NodeContext, name: str, size: int, default: int,
               minimum: int) -> tuple[int, ...]:
    """Attribute ``name``: ``size`` ints of at least ``minimum`` (``default`` each if absent)."""
    value = ctx.attr(name)
    if value is None:
        return (default,) * size
    value = tuple(int(v) for v in value)
    if len(value) != size or any(v < minimum for v in value):
        raise ctx.error(f"expected {name} of {size} ints >= {minimum}, found {list(value)}")
    return value


def _kernel_shape(ctx: NodeContext, rank: int) -> tuple[int, ...]:
    """The required ``kernel_shape`` attribute of a pool."""
    if ctx.attr("kernel_shape") is None:
        raise ctx.error("expected attribute 'kernel_shape', found none")
    return _ints_attr(ctx, "kernel_shape", rank, 1, 1)


def _weight_kernel(ctx: NodeContext, index: int, rank: int) -> tuple[int, ...]:
    """The kernel shape of the weight at input ``index`` (checked against ``kernel_shape``)."""
    wshape = ctx.shape(index)
    if len(wshape) != rank + 2:
        raise ctx.error(f"expected a {rank + 2}-D weight (input {index}) for {rank}-D data "
                        f"windows, found shape {wshape}")
    kernel = tuple(wshape[2:])
    if ctx.attr("kernel_shape") is not None and _kernel_shape(ctx, rank) != kernel:
        raise ctx.error(f"expected kernel_shape {list(kernel)} (the weight's), found "
                        f"{list(ctx.attr('kernel_shape'))}")
    return kernel


def _group(ctx: NodeContext) -> int:
    group = int(ctx.attr("group", 1))
    if group < 1:
        raise ctx.error(f"expected group >= 1, found {group}")
    return group


def _auto_pad(ctx: NodeContext) -> str:
    auto = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto not in _AUTO_PADS:
        raise ctx.error(f"expected auto_pad NOTSET, VALID, SAME_UPPER or SAME_LOWER, found "
                        f"{auto!r}")
    return auto


def node_window(ctx: NodeContext, kernel: Sequence[int]) -> Window:
    """The window of a Conv-like or pool node over input 0: ``strides``, ``dilations`` and the
    padding from ``pads`` or ``auto_pad`` (SAME_UPPER puts an odd padding's extra at the end,
    SAME_LOWER at the start)."""
    rank, spatial = len(kernel), ctx.shape(0)[2:]
    strides = _ints_attr(ctx, "strides", rank, 1, 1)
    dilations = _ints_attr(ctx, "dilations", rank, 1, 1)
    auto = _auto_pad(ctx)
    if auto == "NOTSET":
        padding = _ints_attr(ctx, "pads", 2 * rank, 0, 0)
    elif auto == "VALID":
        padding = (0,) * (2 * rank)
    else:
        lo, hi = [], []
        for n, k, s, d in zip(spatial, kernel, strides, dilations):
            total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
            small, big = total // 2, total - total // 2
            lo.append(small if auto == "SAME_UPPER" else big)
            hi.append(big if auto == "SAME_UPPER" else small)
        padding = (*lo, *hi)
    return Window(tuple(kernel), strides, dilations, padding)


def conv2d_attrs(ctx: NodeContext, weight_index: int = 1) -> dict[str, object]:
    """The 2-D convolution attributes (``strides``, ``padding``, ``dilation``, ``groups``,
    ``channels``, ``kernel_size``) of a Conv-like node whose data is input 0 and whose OIHW
    weight is input ``weight_index``."""
    _spatial_rank(ctx, (2,))
    win = node_window(ctx, _weight_kernel(ctx, weight_index, 2))
    return {"strides": win.strides, "padding": win.padding, "dilation": win.dilations,
            "groups": _group(ctx), "channels": ctx.shape(weight_index)[0],
            "kernel_size": win.kernel}


# -- emitting windows of any rank -------------------------------------------------------------
def _conv_any_rank(data: Expr, weight: Expr, win: Window, groups: int, channels: int) -> Expr:
    """``data`` convolved with an ``(O, C // groups, *kernel)`` weight over ``win``."""
    if len(win.kernel) == 1:
        out = _conv_any_rank(relay.expand_dims(data, axis=2), relay.expand_dims(weight, axis=2),
                             win.with_unit_axis(), groups, channels)
        return relay.squeeze(out, axis=(2,))
    op = nn.conv3d if len(win.kernel) == 3 else nn.conv2d
    return op(data, weight, strides=win.strides, padding=win.padding, dilation=win.dilations,
              groups=groups, channels=channels, kernel_size=win.kernel)


def _pool_any_rank(data: Expr, win: Window, op2d: Callable[..., Expr],
                   op3d: Callable[..., Expr], **extra: object) -> Expr:
    """A pool of ``data`` over ``win`` (``extra``: the pool's own attributes)."""
    if len(win.kernel) == 1:
        out = _pool_any_rank(relay.expand_dims(data, axis=2), win.with_unit_axis(), op2d, op3d,
                             **extra)
        return relay.squeeze(out, axis=(2,))
    op = op3d if len(win.kernel) == 3 else op2d
    return op(data, **win.pool_attrs(), **extra)


def _with_bias(ctx: NodeContext, out: Expr, index: int) -> Expr:
    return nn.bias_add(out, ctx.input(index), axis=1) if ctx.has_input(index) else out


# -- Conv and ConvTranspose -----------------------------------------------------------------
def _conv(ctx: NodeContext) -> Value:
    """Conv becomes nn.conv2d (1-D: over a unit height axis) or nn.conv3d, plus nn.bias_add
    with a bias; every attribute is supported."""
    rank = _spatial_rank(ctx)
    win = node_window(ctx, _weight_kernel(ctx, 1, rank))
    out = _conv_any_rank(ctx.input(0), ctx.input(1), win, _group(ctx), ctx.shape(1)[0])
    return _with_bias(ctx, out, 2)


def _transpose_padding(ctx: NodeContext, spatial: Sequence[int], kernel: Sequence[int],
                       strides: Sequence[int], dilations: Sequence[int],
                       output_padding: tuple[int, ...]) -> tuple[tuple[int, ...],
                                                                 tuple[int, ...]]:
    """The cropping ``padding`` and ``output_padding`` of a ConvTranspose node, from
    ``output_shape``, ``auto_pad`` or ``pads``."""
    rank = len(spatial)
    auto = _auto_pad(ctx)
    target = ctx.attr("output_shape")
    if target is not None:
        target = [int(t) for t in target]
        if len(target) != rank:
            raise ctx.error(f"expected output_shape of {rank} ints (the spatial axes), found "
                            f"{target}")
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [n * s for n, s in zip(spatial, strides)]
    elif auto == "VALID":
        return (0,) * (2 * rank), output_padding
    else:
        return _ints_attr(ctx, "pads", 2 * rank, 0, 0), output_padding
    full = conv_transpose_sizes(spatial, kernel, strides, dilations, (0,) * (2 * rank),
                                output_padding)
    lo, hi, extra = [], [], []
    for size, want in zip(full, target):
        crop = max(size - want, 0)
        lo.append(crop // 2 if auto == "SAME_UPPER" else crop - crop // 2)
        hi.append(crop - lo[-1])
        extra.append(max(want - size, 0))
    return (*lo, *hi), tuple(p + e for p, e in zip(output_padding, extra))


def _conv_transpose_any_rank(data: Expr, weight: Expr, win: Window,
                            output_padding: tuple[int, ...], groups: int, channels: int) -> Expr:
    """The transposed convolution of ``data`` with a ``(C, O // groups, *kernel)`` weight."""
    if len(win.kernel) == 1:
        out = _conv_transpose_any_rank(
            relay.expand_dims(data, axis=2), relay.expand_dims(weight, axis=2),
            win.with_unit_axis(), (0, *output_padding), groups, channels)
        return relay.squeeze(out, axis=(2,))
    op = nn.conv3d_transpose if len(win.kernel) == 3 else nn.conv2d_transpose
    return op(data, weight, strides=win.strides, padding=win.padding,
              output_padding=output_padding, dilation=win.dilations, groups=groups,
              channels=channels, kernel_size=win.kernel)


def _conv_transpose(ctx: NodeContext) -> Value:
    """ConvTranspose becomes nn.conv2d_transpose (1-D: over a unit height axis) or
    nn.conv3d_transpose, plus nn.bias_add with a bias; every attribute is supported. Padding
    from output_shape or auto_pad crops an odd excess's extra position at the end for
    SAME_UPPER, at the start otherwise; an output larger than the full one (output_shape, or
    SAME with a kernel smaller than the stride) gets zeros at the end of each axis."""
    rank = _spatial_rank(ctx)
    kernel = _weight_kernel(ctx, 1, rank)
    group = _group(ctx)
    strides = _ints_attr(ctx, "strides", rank, 1, 1)
    dilations = _ints_attr(ctx, "dilations", rank, 1, 1)
    output_padding = _ints_attr(ctx, "output_padding", rank, 0, 0)
    padding, output_padding = _transpose_padding(ctx, ctx.shape(0)[2:], kernel, strides,
                                                 dilations, output_padding)
    win = Window(kernel, strides, dilations, padding)
    out = _conv_transpose_any_rank(ctx.input(0), ctx.input(1), win, output_padding, group,
                                   ctx.shape(1)[1] * group)
    return _with_bias(ctx, out, 2)


# -- pools ----------------------------------------------------------------------------------
def _max_pool(ctx: NodeContext) -> Value | Sequence[Value]:
    """MaxPool becomes nn.max_pool2d (1-D: over a unit height axis) or nn.max_pool3d; its
    optional Indices output becomes nn.max_pool_argmax (storage_order chooses row- or
    column-major positions)."""
    rank = _spatial_rank(ctx)
    win = node_window(ctx, _kernel_shape(ctx, rank))
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    if ceil_mode:
        win = win.clipped_to(ctx.shape(0)[2:])
    order = int(ctx.attr("storage_order", 0))
    if order not in (0, 1):
        raise ctx.error(f"expected storage_order 0 or 1, found {order}")
    values = _pool_any_rank(ctx.input(0), win, nn.max_pool2d, nn.max_pool3d,
                            ceil_mode=ceil_mode)
    if len(ctx.node.output) < 2 or not ctx.node.output[1]:
        return values
    indices = nn.max_pool_argmax(ctx.input(0), **win.pool_attrs(), ceil_mode=ceil_mode,
                                 column_major=bool(order))
    return [values, indices]


def _avg_pool(ctx: NodeContext) -> Value:
    """AveragePool becomes nn.avg_pool2d (1-D: over a unit height axis) or nn.avg_pool3d;
    every attribute is supported."""
    rank = _spatial_rank(ctx)
    win = node_window(ctx, _kernel_shape(ctx, rank))
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    if ceil_mode:
        win = win.clipped_to(ctx.shape(0)[2:])
    return _pool_any_rank(ctx.input(0), win, nn.avg_pool2d, nn.avg_pool3d,
                          ceil_mode=ceil_mode,
                          count_include_pad=bool(ctx.attr("count_include_pad", 0)))


def _lp_exponent(ctx: NodeContext) -> float:
    p = float(ctx.attr("p", 2))
    if p <= 0:
        raise ctx.error(f"expected p > 0, found {p}")
    return p


def _abs_power(x: Expr, p: float, dtype: str) -> Expr:
    """``|x| ** p``."""
    if p == 2:
        return relay.multiply(x, x)
    return relay.abs(x) if p == 1 else relay.power(relay.abs(x), const(p, dtype))


def _root(x: Expr, p: float, dtype: str) -> Expr:
    """``x ** (1 / p)``."""
    if p == 2:
        return relay.sqrt(x)
    return x if p == 1 else relay.power(x, const(1.0 / p, dtype))


@computed_in_float32
def _lp_pool(ctx: NodeContext) -> Value:
    """LpPool becomes ``sum(|x| ** p) ** (1 / p)`` over each window: the sums are a depthwise
    nn.conv2d (1-D: over a unit height axis) or nn.conv3d with a kernel of ones."""
    rank = _spatial_rank(ctx)
    win = node_window(ctx, _kernel_shape(ctx, rank))
    spatial = ctx.shape(0)[2:]
    if ctx.attr("ceil_mode", 0):
        # Zeros add nothing to the sums: pad the ends far enough for the ceil-mode windows.
        out = window_out_sizes(spatial, win.kernel, win.strides, win.dilations, win.padding,
                               ceil_mode=True)
        hi = tuple(max(win.padding[rank + i], (o - 1) * s + d * (k - 1) + 1 - n - lo)
                   for i, (o, s, d, k, n, lo) in enumerate(
                       zip(out, win.strides, win.dilations, win.kernel, spatial, win.padding)))
        win = win._replace(padding=(*win.padding[:rank], *hi))
    p, dtype, channels = _lp_exponent(ctx), ctx.dtype(0), ctx.shape(0)[1]
    ones = const(np.ones((channels, 1, *win.kernel), dtype=dtype))
    sums = _conv_any_rank(_abs_power(ctx.input(0), p, dtype), ones, win, channels, channels)
    return _root(sums, p, dtype)


def _spatial_axes(ctx: NodeContext) -> tuple[int, ...]:
    ndim = len(ctx.shape(0))
    if ndim < 3:
        raise ctx.error(f"expected data (N, C, *spatial) with at least one spatial axis, "
                        f"found shape {ctx.shape(0)}")
    return tuple(range(2, ndim))


def _global_avg_pool(ctx: NodeContext) -> Value:
    """GlobalAveragePool becomes nn.global_avg_pool2d on 2-D data and a mean over the spatial
    axes (kept as 1) otherwise."""
    axes = _spatial_axes(ctx)
    if len(axes) == 2:
        return nn.global_avg_pool2d(ctx.input(0))
    return relay.mean(ctx.input(0), axis=axes, keepdims=True)


def _global_max_pool(ctx: NodeContext) -> Value:
    """GlobalMaxPool becomes a max over the spatial axes (kept as 1)."""
    return relay.max(ctx.input(0), axis=_spatial_axes(ctx), keepdims=True)


@computed_in_float32
def _global_lp_pool(ctx: NodeContext) -> Value:
    """GlobalLpPool becomes ``sum(|x| ** p) ** (1 / p)`` over the spatial axes (kept as 1)."""
    axes, p, dtype = _spatial_axes(ctx), _lp_exponent(ctx), ctx.dtype(0)
    return _root(relay.sum(_abs_power(ctx.input(0), p, dtype), axis=axes, keepdims=True), p,
                 dtype)


def _max_unpool(ctx: NodeContext) -> Value:
    """MaxUnpool becomes nn.max_unpool: the indices address the unpooled shape that
    kernel_shape, strides and pads give; a larger output_shape (known while compiling) adds
    zeros at the end of each spatial axis."""
    rank = _spatial_rank(ctx)
    kernel = _kernel_shape(ctx, rank)
    strides = _ints_attr(ctx, "strides", rank, 1, 1)
    pads = _ints_attr(ctx, "pads", 2 * rank, 0, 0)
    shape = ctx.shape(0)
    unpooled = tuple((n - 1) * s - pads[i] - pads[rank + i] + k
                     for i, (n, s, k) in enumerate(zip(shape[2:], strides, kernel)))
    if min(unpooled) < 1:
        raise ctx.error(f"expected pads smaller than the unpooled shape, found pads "
                        f"{list(pads)} for unpooled shape {list(unpooled)}")
    out = unpooled
    if ctx.has_input(2):
        target = tuple(int(d) for d in ctx.known(2).reshape(-1))
        if (len(target) != rank + 2 or target[:2] != shape[:2]
                or any(t < u for t, u in zip(target[2:], unpooled))):
            raise ctx.error(f"expected output_shape ({shape[0]}, {shape[1]}, ...) of "
                            f"{rank + 2} ints, each spatial one at least {list(unpooled)}, "
                            f"found {list(target)}")
        out = target[2:]
    return nn.max_unpool(ctx.input(0), ctx.input(1), index_shape=unpooled, out_shape=out)


# -- DeformConv ----------------------------------------------------------------------------
def _deform_conv(ctx: NodeContext) -> Value:
    """DeformConv becomes nn.deformable_conv2d (a mask of ones without one), plus nn.bias_add
    with a bias; 2-D data only."""
    _spatial_rank(ctx, (2,))
    win = node_window(ctx, _weight_kernel(ctx, 1, 2))
    groups = int(ctx.attr("offset_group", 1))
    if groups < 1:
        raise ctx.error(f"expected offset_group >= 1, found {groups}")
    if ctx.has_input(4):
        mask: Expr = ctx.input(4)
    else:
        n, _, oh, ow = ctx.shape(2)
        mask = const(np.ones((n, groups * math.prod(win.kernel), oh, ow), dtype=ctx.dtype(0)))
    out = nn.deformable_conv2d(ctx.input(0), ctx.input(2), ctx.input(1), mask,
                               strides=win.strides, padding=win.padding,
                               dilation=win.dilations, groups=_group(ctx),
                               deformable_groups=groups)
    return _with_bias(ctx, out, 3)


# -- CausalConvWithState --------------------------------------------------------------------
@computed_in_float32
def _causal_conv_with_state(ctx: NodeContext) -> Sequence[Value]:
    """CausalConvWithState becomes a concatenation of the past state (zeros without one) and
    the input, a depthwise nn.conv2d over a unit height axis, nn.bias_add with a bias and
    x * sigmoid(x) for activation silu or swish; the present state is a slice of the
    concatenation."""
    shape = ctx.shape(0)
    if len(shape) != 3:
        raise ctx.error(f"expected 3-D input (batch, channels, length), found shape {shape}")
    batch, channels, length = shape
    wshape = ctx.shape(1)
    if len(wshape) != 3 or tuple(wshape[:2]) != (channels, 1) or wshape[2] < 1:
        raise ctx.error(f"expected a ({channels}, 1, k) weight, found shape {wshape}")
    k, dtype = wshape[2], ctx.dtype(0)
    activation = ctx.attr("activation", "none")
    if activation not in ("none", "silu", "swish"):
        raise ctx.error(f"expected activation none, silu or swish, found {activation!r}")
    state_shape = (batch, channels, k - 1)
    if ctx.has_input(3):
        if ctx.shape(3) != state_shape:
            raise ctx.error(f"expected past_state of shape {state_shape}, found "
                            f"{ctx.shape(3)}")
        past: Expr = ctx.input(3)
    else:
        past = const(np.zeros(state_shape, dtype=dtype))
    padded = relay.concatenate([past, ctx.input(0)], axis=2) if k > 1 else ctx.input(0)
    win = Window((k,), (1,), (1,), (0, 0))
    out = _with_bias(ctx, _conv_any_rank(padded, ctx.input(1), win, channels, channels), 2)
    if activation != "none":
        wide = relay.cast(out, dtype="float32") if dtype == "float16" else out
        out = relay.multiply(wide, relay.sigmoid(wide))
        out = relay.cast(out, dtype=dtype) if dtype == "float16" else out
    present = relay.strided_slice(padded, begin=(length,), end=(length + k - 1,), axes=(2,))
    return [out, present]


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _max_pool,
    "AveragePool": _avg_pool,
    "LpPool": _lp_pool,
    "GlobalAveragePool": _global_avg_pool,
    "GlobalMaxPool": _global_max_pool,
    "GlobalLpPool": _global_lp_pool,
    "MaxUnpool": _max_unpool,
    "CausalConvWithState": _causal_conv_with_state,
    "DeformConv": _deform_conv,
}
