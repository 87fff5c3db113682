"""Choosing a fast kernel for one decoded kernel call, from its operator, attributes and
the static shapes and dtypes of its buffers.

:func:`select_kernel` returns a :class:`KernelPlan` (the kernel, the scratch arrays and
constants the generated module allocates once for it, and its keyword attributes), or
None when no fast kernel is known to agree with the operator's reference kernel for this
call; the code generator then calls the reference kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np
from attrs import field, frozen

from passhost.runtime import COPY, KernelCall
from passhost.tir import Buffer
from passhost_cpu_target import conv, kernels, pool

__all__ = ["BLAS_KERNELS", "Constant", "KernelPlan", "Scratch", "call_buffers", "same_out_dtype",
           "select_kernel"]

_FLOATS = ("float32", "float64")
_NUMERIC = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
            "uint16", "uint32", "uint64")
_ALL_FLOATS = ("float16", "float32", "float64")


@frozen
class Scratch:
    """A scratch array the generated module allocates once, filled with ``fill``.

    Calls asking for equal Scratch values share one array. ``keep`` describes what a
    kernel relies on staying in the array between calls (e.g. the padding it never
    writes: the geometry that decides which elements it writes); None when the kernel
    writes everything it reads on every call.
    """

    shape: tuple[int, ...]
    dtype: str
    fill: float = 0
    keep: Hashable = None


@frozen
class Constant:
    """A read-only array computed when the code is generated (e.g. pooling divisors)."""

    value: np.ndarray = field(eq=False)


@frozen
class KernelPlan:
    """A fast kernel for one call: ``kernel(outputs..., inputs..., operands..., extras...,
    **options)`` where each operand is a Buffer of a later call the kernel does the work of
    (or None), and each extra a Scratch, a Constant or None. ``absorbs`` is how many of the
    calls right after this one the kernel does the work of (they are not emitted)."""

    kernel: Callable[..., None]
    extras: tuple[Scratch | Constant | None, ...] = ()
    options: Mapping[str, Any] = field(factory=dict)
    operands: tuple[Buffer | None, ...] = ()
    absorbs: int = 0


Planner = Callable[[KernelCall], "KernelPlan | None"]


def call_buffers(call: KernelCall) -> list[Buffer]:
    """The buffers of ``call``: outputs, then inputs (tuple inputs flattened)."""
    flat = list(call.outputs)
    for item in call.inputs:
        flat.extend(item if isinstance(item, tuple) else (item,))
    return flat


def _one_dtype(call: KernelCall, allowed: tuple[str, ...]) -> bool:
    """Whether every buffer of ``call`` has one dtype, among ``allowed``."""
    dtypes = {b.dtype for b in call_buffers(call)}
    return len(dtypes) == 1 and dtypes.pop() in allowed


def _simple(kernel: Callable[..., None], allowed: tuple[str, ...]) -> Planner:
    """A planner calling ``kernel`` on buffers of one dtype among ``allowed``."""

    def plan(call: KernelCall) -> KernelPlan | None:
        return KernelPlan(kernel) if _one_dtype(call, allowed) else None

    return plan


def _always(kernel: Callable[..., None]) -> Planner:
    """A planner calling ``kernel`` whatever the dtypes."""

    def plan(call: KernelCall) -> KernelPlan | None:
        return KernelPlan(kernel)

    return plan


def _sigmoid(call: KernelCall) -> KernelPlan | None:
    if not _one_dtype(call, _ALL_FLOATS):
        return None
    out = call.outputs[0]
    return KernelPlan(kernels.sigmoid, (Scratch(out.shape, "bool"), Scratch(out.shape,
                                                                             out.dtype)))


def _silu(call: KernelCall) -> KernelPlan | None:
    # float16 is computed in float32 and rounded once by the reference: no fast kernel
    if not _one_dtype(call, _FLOATS):
        return None
    out = call.outputs[0]
    return KernelPlan(kernels.silu, (Scratch(out.shape, "bool"),
                                     Scratch((2, *out.shape), out.dtype)))


def _clip(call: KernelCall) -> KernelPlan | None:
    if not _one_dtype(call, _ALL_FLOATS):
        return None
    return KernelPlan(kernels.clip, options={"a_min": call.attrs.a_min,
                                             "a_max": call.attrs.a_max})


def _bias_add(call: KernelCall) -> KernelPlan | None:
    if not _one_dtype(call, _NUMERIC):
        return None
    data = call.inputs[0]
    axis = call.attrs.axis % data.ndim
    shape = tuple(d if i == axis else 1 for i, d in enumerate(data.shape))
    return KernelPlan(kernels.bias_add, options={"shape": shape})


def same_out_dtype(call: KernelCall) -> bool:
    """Whether ``call`` has one float dtype and an ``out_dtype`` attribute naming it (or
    empty)."""
    out_dtype = call.attrs.out_dtype
    return _one_dtype(call, _FLOATS) and out_dtype in ("", call.outputs[0].dtype)


def _dense(call: KernelCall) -> KernelPlan | None:
    return KernelPlan(kernels.dense) if same_out_dtype(call) else None


def _matmul(call: KernelCall) -> KernelPlan | None:
    return KernelPlan(kernels.matmul) if same_out_dtype(call) else None


def _batch_matmul(call: KernelCall) -> KernelPlan | None:
    if not same_out_dtype(call):
        return None
    return KernelPlan(kernels.batch_matmul, options={"transpose_a": call.attrs.transpose_a,
                                                     "transpose_b": call.attrs.transpose_b})


def _softmax(call: KernelCall) -> KernelPlan | None:
    if not _one_dtype(call, _FLOATS):
        return None
    out = call.outputs[0]
    axis = call.attrs.axis % out.ndim
    reduced = tuple(1 if i == axis else d for i, d in enumerate(out.shape))
    return KernelPlan(kernels.softmax, (Scratch(reduced, out.dtype), Scratch(reduced,
                                                                             out.dtype)),
                      {"axis": axis})


def _transpose(call: KernelCall) -> KernelPlan | None:
    ndim = call.inputs[0].ndim
    axes = call.attrs.axes
    perm = tuple(range(ndim))[::-1] if axes is None else tuple(a % ndim for a in axes)
    return KernelPlan(kernels.transpose, options={"axes": perm})


def _layout_transform(call: KernelCall) -> KernelPlan | None:
    src, dst = call.attrs.src_layout, call.attrs.dst_layout
    if sorted(src) != sorted(dst):  # split layouts (NCHW16c): the reference kernel
        return None
    return KernelPlan(kernels.transpose, options={"axes": tuple(src.index(c) for c in dst)})


def _concatenate(call: KernelCall) -> KernelPlan | None:
    return KernelPlan(kernels.concatenate,
                      options={"axis": call.attrs.axis % call.outputs[0].ndim})


def _reduction(kernel: Callable[..., None], allowed: tuple[str, ...],
               mean: bool = False) -> Planner:
    """A planner for a reduction over the axes the attributes name (all of them when none
    are named; the others with ``exclude``)."""

    def plan(call: KernelCall) -> KernelPlan | None:
        if not _one_dtype(call, allowed):
            return None
        attrs, data = call.attrs, call.inputs[0]
        named = {a % data.ndim for a in attrs.axis or ()}
        if not named:
            axes = tuple(range(data.ndim))
        elif attrs.exclude:
            axes = tuple(i for i in range(data.ndim) if i not in named)
        else:
            axes = tuple(sorted(named))
        options: dict[str, Any] = {
            "axes": axes, "shape": tuple(1 if i in axes else d for i, d in enumerate(data.shape))}
        if mean:
            options["count"] = math.prod(data.shape[a] for a in axes)
        return KernelPlan(kernel, options=options)

    return plan


def _window_layouts(call: KernelCall, layout: str) -> bool:
    """Whether a window kernel's layouts are the NCHW or NHWC these kernels take (the
    channel-blocked ones go to the native kernels or the reference)."""
    return layout in ("NCHW", "NHWC") and call.attrs.out_layout in ("", layout)


def _spatial(shape: tuple[int, ...], layout: str) -> tuple[int, int]:
    return (shape[2], shape[3]) if layout == "NCHW" else (shape[1], shape[2])


def _conv2d(call: KernelCall) -> KernelPlan | None:
    attrs = call.attrs
    data, weight = call.inputs
    layout = attrs.data_layout
    if not (same_out_dtype(call) and _window_layouts(call, layout)):
        return None
    out = call.outputs[0]
    kl = attrs.kernel_layout
    o, kh, kw = (weight.shape[kl.index(d)] for d in "OHW")
    c = data.shape[1] if layout == "NCHW" else data.shape[3]
    g = attrs.groups
    common = {"strides": attrs.strides, "padding": attrs.padding, "dilation": attrs.dilation,
              "data_layout": layout, "kernel_layout": kl}
    if g > 1 and g == c == o:
        return KernelPlan(conv.conv2d_depthwise, (Scratch(out.shape, out.dtype),), common)
    wanted = conv.natural_kernel_layout(layout)
    wbuf = None if kl == wanted else Scratch(tuple(weight.shape[kl.index(d)] for d in wanted),
                                             weight.dtype)
    direct = (kh, kw) == (1, 1) and attrs.strides == (1, 1) and not any(attrs.padding)
    cols = None
    if not direct:
        n, oh, ow = out.shape[0], *_spatial(out.shape, layout)
        shape = (n, c // g, kh, kw, oh, ow) if layout == "NCHW" else (n, oh, ow, kh, kw, c // g)
        cols = Scratch(shape, data.dtype, keep=("conv2d_gemm", layout, data.shape,
                                                 attrs.strides, attrs.padding, attrs.dilation))
    return KernelPlan(conv.conv2d_gemm, (cols, wbuf), {**common, "groups": g})


def _pool_common(call: KernelCall, fill: float) -> tuple[Scratch | None, dict[str, Any]]:
    """The padded scratch (or None when every window is inside the data) and the options
    shared by the window pools."""
    attrs, data, out = call.attrs, call.inputs[0], call.outputs[0]
    layout = attrs.layout
    (h, w), (oh, ow) = _spatial(data.shape, layout), _spatial(out.shape, layout)
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    pt, pl, pb, pr = attrs.padding
    hp = max(h + pt + pb, (oh - 1) * sh + dh * (kh - 1) + 1)
    wp = max(w + pl + pr, (ow - 1) * sw + dw * (kw - 1) + 1)
    padded = None
    if (hp, wp) != (h, w) or any(attrs.padding):
        n, c = data.shape[0], data.shape[1] if layout == "NCHW" else data.shape[3]
        shape = (n, c, hp, wp) if layout == "NCHW" else (n, hp, wp, c)
        padded = Scratch(shape, data.dtype, fill, keep=("pool2d", layout, data.shape,
                                                            attrs.padding))
    options = {"pool_size": attrs.pool_size, "strides": attrs.strides,
               "dilation": attrs.dilation, "padding": attrs.padding, "layout": layout}
    return padded, options


def _max_pool2d(call: KernelCall) -> KernelPlan | None:
    if not (_one_dtype(call, _NUMERIC) and _window_layouts(call, call.attrs.layout)):
        return None
    dtype = np.dtype(call.outputs[0].dtype)
    lowest = -np.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)
    padded, options = _pool_common(call, lowest)
    return KernelPlan(pool.max_pool2d, (padded,), options)


def _avg_pool2d(call: KernelCall) -> KernelPlan | None:
    attrs = call.attrs
    if not (_one_dtype(call, _FLOATS) and _window_layouts(call, attrs.layout)):
        return None
    padded, options = _pool_common(call, 0)
    data, out = call.inputs[0], call.outputs[0]
    (h, w), (oh, ow) = _spatial(data.shape, attrs.layout), _spatial(out.shape, attrs.layout)
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    pt, pl, pb, pr = attrs.padding
    if attrs.count_include_pad:
        rows = pool.tap_counts(oh, kh, sh, dh, 0, h + pt + pb)
        cols = pool.tap_counts(ow, kw, sw, dw, 0, w + pl + pr)
    else:
        rows = pool.tap_counts(oh, kh, sh, dh, pt, pt + h)
        cols = pool.tap_counts(ow, kw, sw, dw, pl, pl + w)
    divisor = np.maximum(rows[:, None] * cols[None, :], 1).astype(np.float64)
    if attrs.layout == "NHWC":
        divisor = divisor[:, :, None]
    divisor.flags.writeable = False
    return KernelPlan(pool.avg_pool2d, (padded, Constant(divisor)), options)


def _global_avg_pool2d(call: KernelCall) -> KernelPlan | None:
    layout = call.attrs.layout
    if not (_one_dtype(call, _FLOATS) and _window_layouts(call, layout)):
        return None
    return KernelPlan(pool.global_avg_pool2d, options={"layout": layout})


_PLANNERS: dict[str, Planner] = {
    COPY: _always(kernels.copy),
    "add": _simple(kernels.add, _NUMERIC),
    "subtract": _simple(kernels.subtract, _NUMERIC),
    "multiply": _simple(kernels.multiply, _NUMERIC),
    "maximum": _simple(kernels.maximum, _NUMERIC),
    "minimum": _simple(kernels.minimum, _NUMERIC),
    "divide": _simple(kernels.divide, _ALL_FLOATS),
    "power": _simple(kernels.power, _ALL_FLOATS),
    "nn.relu": _simple(kernels.relu, _NUMERIC),
    "exp": _simple(kernels.exp, _ALL_FLOATS),
    "log": _simple(kernels.log, _ALL_FLOATS),
    "sqrt": _simple(kernels.sqrt, _ALL_FLOATS),
    "rsqrt": _simple(kernels.rsqrt, _ALL_FLOATS),
    "tanh": _simple(kernels.tanh, _ALL_FLOATS),
    "negative": _simple(kernels.negative, _NUMERIC),
    "abs": _simple(kernels.abs_, _NUMERIC),
    "sigmoid": _sigmoid,
    "nn.silu": _silu,
    "clip": _clip,
    "cast": _always(kernels.cast),
    "nn.bias_add": _bias_add,
    "nn.dense": _dense,
    "matmul": _matmul,
    "nn.batch_matmul": _batch_matmul,
    "nn.softmax": _softmax,
    "sum": _reduction(kernels.reduce_sum, _FLOATS),
    "mean": _reduction(kernels.reduce_mean, _FLOATS, mean=True),
    "max": _reduction(kernels.reduce_max, _NUMERIC),
    "min": _reduction(kernels.reduce_min, _NUMERIC),
    "reshape": _always(kernels.copy_reshaped),
    "nn.batch_flatten": _always(kernels.copy_reshaped),
    "squeeze": _always(kernels.copy_reshaped),
    "expand_dims": _always(kernels.copy_reshaped),
    "transpose": _transpose,
    "layout_transform": _layout_transform,
    "concatenate": _concatenate,
    "nn.conv2d": _conv2d,
    "nn.max_pool2d": _max_pool2d,
    "nn.avg_pool2d": _avg_pool2d,
    "nn.global_avg_pool2d": _global_avg_pool2d,
}


#: Kernels that call BLAS (a module using them limits BLAS threads around each run).
BLAS_KERNELS = frozenset({kernels.dense, kernels.matmul, kernels.batch_matmul, conv.conv2d_gemm})


def select_kernel(call: KernelCall) -> KernelPlan | None:
    """The fast kernel for ``call``, or None to call the operator's reference kernel."""
    planner = _PLANNERS.get(call.name)
    return None if planner is None else planner(call)
