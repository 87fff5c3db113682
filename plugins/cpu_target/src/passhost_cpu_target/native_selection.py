"""Choosing a native kernel (:mod:`.native_kernels`) for one decoded kernel call and the
epilogue calls after it: float32 NCHW, (ungrouped) NHWC and channel-blocked (``NCHW16c``)
convolution, a 1x1 NCHW convolution after its pointwise predecessor (chained with the
depthwise convolution after it) or of its data scaled per channel (the ``multiply`` before
it), NCHW and NHWC depthwise convolution, NCHW, NHWC and channel-blocked max
pooling, dense layers (a matrix-vector kernel up to :data:`DENSE_MAX_ROWS` rows), and
matrix products (``nn.dense``, ``matmul``, ``nn.batch_matmul``, transposes read in place,
one per-channel bias and scale and a residual applied as the output is written); each
with the epilogue :func:`~passhost_cpu_target.epilogue.match_epilogue` finds, its clamp
and activation passed in ``bounds``.

:func:`native_plan` returns None when no native kernel fits; the caller then tries the
NumPy kernels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np
from attrs import frozen

from passhost.relay.op import Conv2DAttrs, channel_block
from passhost.runtime import KernelCall
from passhost.tir import Buffer
from passhost_cpu_target import native, native_kernels
from passhost_cpu_target.epilogue import Epilogue, match_epilogue, same_buffer
from passhost_cpu_target.selection import (
    Constant,
    KernelPlan,
    Scratch,
    call_buffers,
    same_out_dtype,
)

__all__ = ["DENSE_MAX_ROWS", "native_plan"]

#: Dense layers with more rows than this go to the matrix-product kernel (the dense kernel is
#: a matrix-vector product per row).
DENSE_MAX_ROWS = 8


def _constant(values: Sequence[float], dtype: str) -> Constant:
    array = np.array(values, dtype=dtype)
    array.flags.writeable = False
    return Constant(array)


def _bounds(epilogue: Epilogue) -> Constant:
    """The kernel's ``bounds``: the clamp, then the activation's code."""
    code = native_kernels.ACTIVATION_CODES[epilogue.activation]
    return _constant((epilogue.lo, epilogue.hi, code), "float32")


def _epilogue_parts(epilogue: Epilogue) -> tuple[tuple[Buffer | None, Buffer | None],
                                                 Constant]:
    return (epilogue.bias, epilogue.residual), _bounds(epilogue)


def _float32(call: KernelCall) -> bool:
    return all(b.dtype == "float32" for b in call_buffers(call)) and same_out_dtype(call)


def _weight_scratch(weight: Buffer, layout: str, wanted: str, natural: bool) -> Scratch | None:
    """A scratch for the weights in ``wanted`` layout, or None when they already are."""
    if natural:
        return None
    return Scratch(tuple(weight.shape[layout.index(d)] for d in wanted), weight.dtype)


def _channel_block(layout: str) -> int | None:
    """The channels per block of a channel-blocked data layout (``NCHW16c``: 16; ``NCHW``,
    blocks of one channel: 1), None for any other layout."""
    return 1 if layout == "NCHW" else channel_block(layout)


def _blocked_conv2d(call: KernelCall, following: Sequence[KernelCall],
                    num_threads: int) -> KernelPlan | None:
    """An ungrouped convolution into channel-blocked output (from NCHW or channel-blocked
    data), when the kernel takes its geometry (ph_conv2d_nchwc_prepared)."""
    attrs = cast(Conv2DAttrs, call.attrs)
    data, weight = cast(tuple[Buffer, Buffer], call.inputs)
    out = call.outputs[0]
    ib = _channel_block(attrs.data_layout)
    ob = _channel_block(attrs.out_layout or attrs.data_layout)
    if not _float32(call) or ib is None or ob is None or attrs.groups != 1:
        return None
    kl = attrs.kernel_layout
    o, c, kh, kw = (weight.shape[kl.index(d)] for d in "OIHW")
    n, _, h, w = data.shape[:4]
    values = (n, c, h, w, o, *out.shape[2:4], kh, kw, *attrs.strides, *attrs.dilation,
              *attrs.padding[:2], ib, ob, num_threads)
    geometry = _constant(values, "int64")
    lib = native.library()
    if lib is None or not lib.conv2d_nchwc_prepared(geometry.value.ctypes.data):
        return None
    epilogue = match_epilogue(out, following, (1, 4))
    operands, bounds = _epilogue_parts(epilogue)
    return KernelPlan(native_kernels.conv2d_nchwc,
                      (None, _weight_scratch(weight, kl, "OIHW", kl == "OIHW"), geometry,
                       bounds), {"kernel_layout": kl}, operands, epilogue.calls)


def _pointwise(call: KernelCall) -> bool:
    """Whether ``call`` is a 1x1, stride-1, unpadded, undilated, ungrouped NCHW float32
    convolution (OIHW weights) keeping the plane's size."""
    attrs = cast(Conv2DAttrs, call.attrs)
    data, weight = cast(tuple[Buffer, Buffer], call.inputs)
    return (_float32(call) and attrs.data_layout == "NCHW" and attrs.kernel_layout == "OIHW"
            and attrs.out_layout in ("", "NCHW") and attrs.groups == 1
            and tuple(weight.shape[2:]) == (1, 1) and tuple(attrs.strides) == (1, 1)
            and tuple(attrs.dilation) == (1, 1) and not any(attrs.padding)
            and tuple(call.outputs[0].shape[2:]) == tuple(data.shape[2:]))


def _pointwise_depthwise(call: KernelCall, following: Sequence[KernelCall],
                         num_threads: int) -> KernelPlan | None:
    """A pointwise convolution, its epilogue (bias, clamp, activation), then the depthwise
    convolution of its result with that one's epilogue, as one kernel
    (``ph_pointwise_depthwise``; FuseOps puts them in one group), or None."""
    if not _pointwise(call):
        return None
    mid = call.outputs[0]
    first = match_epilogue(mid, following, 1, residual=False)
    rest = following[first.calls:]
    if not rest or rest[0].name != "nn.conv2d":
        return None
    dw = rest[0]
    attrs, out = cast(Conv2DAttrs, dw.attrs), dw.outputs[0]
    data, weight = cast(tuple[Buffer, Buffer], dw.inputs)
    n, c, h, w = mid.shape
    if not (_float32(dw) and same_buffer(data, mid) and attrs.data_layout == "NCHW"
            and attrs.kernel_layout == "OIHW" and attrs.out_layout in ("", "NCHW")
            and attrs.groups == c == out.shape[1] and weight.shape[1] == 1):
        return None
    second = match_epilogue(out, rest[1:], 1)
    window = (h, w, *out.shape[2:], *weight.shape[2:], *attrs.strides, *attrs.dilation,
              *attrs.padding[:2])
    cin = cast(Buffer, call.inputs[0]).shape[1]
    geometry = _constant((*window, n, c, num_threads, cin), "int64")
    return KernelPlan(native_kernels.pointwise_depthwise,
                      (geometry, _bounds(first), _bounds(second)), {},
                      (first.bias, weight, second.bias, second.residual, out),
                      first.calls + 1 + second.calls)


def _scaled_pointwise(call: KernelCall, following: Sequence[KernelCall],
                      num_threads: int) -> KernelPlan | None:
    """A ``multiply`` scaling a pointwise convolution's data per image and channel, then the
    convolution with its epilogue, as one kernel (``ph_conv2d_nchw_scaled``; FuseOps puts
    them in one group), or None."""
    if not following or following[0].name != "nn.conv2d" or len(call.inputs) != 2 \
            or not all(isinstance(b, Buffer) and b.dtype == "float32"
                       for b in call_buffers(call)):
        return None
    conv, scaled = following[0], call.outputs[0]
    if not (_pointwise(conv) and same_buffer(cast(Buffer, conv.inputs[0]), scaled)):
        return None
    a, b = cast(tuple[Buffer, Buffer], call.inputs)
    scale = b if a.shape == scaled.shape else a
    n, c = scaled.shape[:2]
    if scale.shape not in ((1, c, 1, 1), (n, c, 1, 1)) or scale.shape == scaled.shape:
        return None
    epilogue = match_epilogue(conv.outputs[0], following[1:], 1)
    values = (*_conv2d_values(conv, num_threads), 0 if scale.shape[0] == 1 else c)
    geometry = _constant(values, "int64")
    size = native.library().conv2d_nchw_scaled_scratch(geometry.value.ctypes.data)
    return KernelPlan(native_kernels.conv2d_nchw_scaled,
                      (Scratch((size,), "float32") if size else None, None, geometry,
                       _bounds(epilogue)), {"kernel_layout": "OIHW"},
                      (conv.inputs[1], epilogue.bias, epilogue.residual, conv.outputs[0]),
                      1 + epilogue.calls)


def _conv2d_values(call: KernelCall, num_threads: int) -> tuple[int, ...]:
    """The geometry of ``ph_conv2d_nchw`` (and ``ph_conv2d_nhwc``) for a convolution."""
    attrs = cast(Conv2DAttrs, call.attrs)
    data, weight = cast(tuple[Buffer, Buffer], call.inputs)
    out, kl = call.outputs[0], attrs.kernel_layout
    o, kh, kw = (weight.shape[kl.index(d)] for d in "OHW")
    if attrs.data_layout == "NCHW":
        n, c, h, w = data.shape
        oh, ow = out.shape[2:]
    else:
        n, h, w, c = data.shape
        oh, ow = out.shape[1:3]
    return (n, c, h, w, o, oh, ow, kh, kw, *attrs.strides, *attrs.dilation,
            *attrs.padding[:2], attrs.groups, num_threads)


def _conv2d(call: KernelCall, following: Sequence[KernelCall],
            num_threads: int) -> KernelPlan | None:
    attrs = call.attrs
    data, weight = call.inputs
    out = call.outputs[0]
    layout, kl = attrs.data_layout, attrs.kernel_layout
    if attrs.out_layout not in ("", layout) or layout not in ("NCHW", "NHWC"):
        return _blocked_conv2d(call, following, num_threads)
    if not _float32(call):
        return None
    chained = _pointwise_depthwise(call, following, num_threads)
    if chained is not None:
        return chained
    o, kh, kw = (weight.shape[kl.index(d)] for d in "OHW")
    if layout == "NCHW":
        n, c, h, w = data.shape
        oh, ow = out.shape[2:]
    else:
        n, h, w, c = data.shape
        oh, ow = out.shape[1:3]
    g = attrs.groups
    window = (h, w, oh, ow, kh, kw, *attrs.strides, *attrs.dilation, *attrs.padding[:2])
    depthwise = g > 1 and g == c == o
    channel_axis = 1 if layout == "NCHW" else 3
    if depthwise:
        epilogue = match_epilogue(out, following, channel_axis)
        operands, bounds = _epilogue_parts(epilogue)
        wanted = "OIHW" if layout == "NCHW" else "HWOI"
        natural = kl.replace("I", "") == wanted.replace("I", "")
        geometry = _constant((*window, n, c, num_threads), "int64")
        kernel = (native_kernels.depthwise_conv2d_nchw if layout == "NCHW"
                  else native_kernels.depthwise_conv2d_nhwc)
        return KernelPlan(kernel,
                          (_weight_scratch(weight, kl, wanted, natural), geometry, bounds),
                          {"kernel_layout": kl}, operands, epilogue.calls)
    if layout == "NCHW" and h == w == oh == ow == kh == kw == 1 and g == 1 and kl[0] == "O":
        # a 1x1 convolution of a 1x1 plane (a squeeze-and-excitation gate's) is the dense
        # layer data [n, c] x weights [o, c] (O outermost: OIHW's memory); as a convolution
        # its one column filled a vector of 32
        return _dense_plan(out, following, n, c, o, num_threads)
    if layout == "NHWC" and g != 1:
        return None
    epilogue = match_epilogue(out, following, channel_axis)
    operands, bounds = _epilogue_parts(epilogue)
    geometry = _constant(_conv2d_values(call, num_threads), "int64")
    kernel = native_kernels.conv2d_nchw if layout == "NCHW" else native_kernels.conv2d_nhwc
    size = getattr(native.library(), f"{kernel.symbol}_scratch")(geometry.value.ctypes.data)
    cols = Scratch((size,), "float32") if size else None
    wanted = native_kernels.CONV2D_WEIGHT_LAYOUTS[layout]
    return KernelPlan(kernel, (cols, _weight_scratch(weight, kl, wanted, kl == wanted),
                               geometry, bounds), {"kernel_layout": kl}, operands,
                      epilogue.calls)


def _max_pool2d(call: KernelCall, following: Sequence[KernelCall],
                num_threads: int) -> KernelPlan | None:
    attrs, data, out = call.attrs, call.inputs[0], call.outputs[0]
    layout = attrs.layout
    block = _channel_block(layout)
    if not (all(b.dtype == "float32" for b in call_buffers(call))
            and (layout == "NHWC" or block) and attrs.out_layout in ("", layout)):
        return None
    window = (*attrs.pool_size, *attrs.strides, *attrs.dilation, *attrs.padding[:2])
    shape = data.shape
    if layout == "NHWC" or (block or 1) > 1:
        # a channel-blocked tensor is N * C / k images of k channels in NHWC
        n, h, w, c = (shape[0], *shape[1:4]) if layout == "NHWC" else (
            shape[0] * shape[1], *shape[2:5])
        geometry = (h, w, *out.shape[-3:-1], *window, n, c, num_threads)
        return KernelPlan(native_kernels.max_pool2d_nhwc, (_constant(geometry, "int64"),))
    n, c, h, w = shape
    geometry = (h, w, *out.shape[2:], *window, n * c, num_threads)
    return KernelPlan(native_kernels.max_pool2d_nchw, (_constant(geometry, "int64"),))


@frozen
class _Operand:
    """How a matrix product reads one operand: batch stride (0: broadcast), row and
    column strides, in elements."""

    batch: int
    row: int
    col: int


def _matrix(rows: int, cols: int, transposed: bool, batched: bool) -> _Operand:
    """A C-contiguous operand of ``rows x cols`` matrices, stored transposed or not."""
    stride = (1, rows) if transposed else (cols, 1)
    return _Operand(rows * cols if batched else 0, *stride)


def _matmul_plan(call: KernelCall, following: Sequence[KernelCall], num_threads: int,
                 batch: int, m: int, n: int, k: int, a: _Operand, b: _Operand,
                 ) -> KernelPlan:
    """The native matrix product of ``call`` with its epilogue (a residual broadcast over
    the batch only when the batch is not folded into the rows)."""
    out = call.outputs[0]
    epilogue = match_epilogue(out, following, out.ndim - 1, scale=True,
                              batch_residual=m == out.shape[-2], gate=True)
    residual = epilogue.residual
    residual_stride = 0 if residual is None or residual.shape != out.shape else m * n
    geometry = _constant((batch, m, n, k, a.batch, a.row, a.col, b.batch, b.row, b.col, 0,
                          num_threads, residual_stride), "int64")
    return KernelPlan(native_kernels.matmul, (geometry, _bounds(epilogue)), {},
                      (epilogue.bias, epilogue.scale, epilogue.residual, epilogue.gate),
                      epilogue.calls)


def _matmul(call: KernelCall, following: Sequence[KernelCall],
            num_threads: int) -> KernelPlan | None:
    """``matmul`` (NumPy's broadcasting of leading dimensions) where one operand's batch is
    the output's and the other's is the same or broadcast whole."""
    a, b = call.inputs
    out = call.outputs[0]
    if not _float32(call):
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    items = math.prod(out.shape[:-2])
    a_items, b_items = math.prod(a.shape[:-2]), math.prod(b.shape[:-2])
    if b_items == 1:  # b broadcast: the batch folds into a's rows
        return _matmul_plan(call, following, num_threads, 1, a_items * m, n, k,
                            _matrix(m, k, False, False), _matrix(k, n, False, False))
    if a_items not in (1, items) or b_items != items:
        return None
    return _matmul_plan(call, following, num_threads, items, m, n, k,
                        _matrix(m, k, False, a_items > 1), _matrix(k, n, False, True))


def _batch_matmul(call: KernelCall, following: Sequence[KernelCall],
                  num_threads: int) -> KernelPlan | None:
    """``nn.batch_matmul`` with its transposes read in place."""
    x, y = call.inputs
    out = call.outputs[0]
    if not _float32(call):
        return None
    items, m, n = out.shape
    ta, tb = call.attrs.transpose_a, call.attrs.transpose_b
    k = x.shape[1] if ta else x.shape[2]
    a = _matrix(m, k, ta, x.shape[0] > 1)
    b = _matrix(k, n, tb, y.shape[0] > 1)
    if not b.batch and not ta:  # y broadcast: the batch folds into x's rows
        return _matmul_plan(call, following, num_threads, 1, x.shape[0] * m, n, k,
                            _matrix(m, k, False, False), b)
    return _matmul_plan(call, following, num_threads, items, m, n, k, a, b)


def _dense(call: KernelCall, following: Sequence[KernelCall],
           num_threads: int) -> KernelPlan | None:
    data, weight = call.inputs
    out = call.outputs[0]
    if not _float32(call):
        return None
    rows, k = math.prod(data.shape[:-1]), data.shape[-1]
    if data.ndim != 2 or rows > DENSE_MAX_ROWS:
        return _matmul_plan(call, following, num_threads, 1, rows, weight.shape[0], k,
                            _matrix(rows, k, False, False),
                            _matrix(k, weight.shape[0], True, False))
    return _dense_plan(out, following, data.shape[0], data.shape[1], weight.shape[0],
                       num_threads)


def _dense_plan(out: Buffer, following: Sequence[KernelCall], rows: int, k: int, units: int,
                num_threads: int) -> KernelPlan:
    """The matrix-vector kernel for ``rows`` rows of ``k`` inputs and ``units`` outputs
    (weights [units, k]), with its epilogue (no residual)."""
    epilogue = match_epilogue(out, following, 1, residual=False)
    operands, bounds = _epilogue_parts(epilogue)
    geometry = _constant((rows, k, units, num_threads), "int64")
    return KernelPlan(native_kernels.dense, (geometry, bounds), {}, operands[:1],
                      epilogue.calls)


_PLANNERS = {"nn.conv2d": _conv2d, "nn.max_pool2d": _max_pool2d, "nn.dense": _dense,
             "matmul": _matmul, "nn.batch_matmul": _batch_matmul,
             "multiply": _scaled_pointwise}


def native_plan(call: KernelCall, following: Sequence[KernelCall],
                num_threads: int) -> KernelPlan | None:
    """The native kernel for ``call`` (absorbing an epilogue from the calls ``following``
    it), or None. ``num_threads`` is the target's thread count (0: all cores)."""
    planner = _PLANNERS.get(call.name)
    return None if planner is None else planner(call, following, num_threads)
