"""Choosing a native kernel (:mod:`.native_kernels`) for one decoded kernel call and the
epilogue calls after it: float32 NCHW convolution, NCHW and NHWC depthwise convolution,
NCHW max pooling, and dense layers of at most :data:`DENSE_MAX_ROWS` rows.

:func:`native_plan` returns None when no native kernel fits; the caller then tries the
NumPy kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost.backend.kernel_call import KernelCall
from passhost.tir.function import Buffer
from passhost_cpu_target import native, native_kernels
from passhost_cpu_target.epilogue import Epilogue, match_epilogue
from passhost_cpu_target.selection import (
    Constant,
    KernelPlan,
    Scratch,
    call_buffers,
    same_out_dtype,
)

__all__ = ["DENSE_MAX_ROWS", "native_plan"]

#: Dense layers with more rows than this go to BLAS (the native kernel is a matrix-vector
#: product per row).
DENSE_MAX_ROWS = 8


def _constant(values: Sequence[float], dtype: str) -> Constant:
    array = np.array(values, dtype=dtype)
    array.flags.writeable = False
    return Constant(array)


def _epilogue_parts(epilogue: Epilogue) -> tuple[tuple[Buffer | None, Buffer | None],
                                                 Constant]:
    return (epilogue.bias, epilogue.residual), _constant((epilogue.lo, epilogue.hi), "float32")


def _float32(call: KernelCall) -> bool:
    return all(b.dtype == "float32" for b in call_buffers(call)) and same_out_dtype(call)


def _weight_scratch(weight: Buffer, layout: str, wanted: str, natural: bool) -> Scratch | None:
    """A scratch for the weights in ``wanted`` layout, or None when they already are."""
    if natural:
        return None
    return Scratch(tuple(weight.shape[layout.index(d)] for d in wanted), weight.dtype)


def _conv2d(call: KernelCall, following: Sequence[KernelCall],
            num_threads: int) -> KernelPlan | None:
    attrs = call.attrs
    data, weight = call.inputs
    out = call.outputs[0]
    layout, kl = attrs.data_layout, attrs.kernel_layout
    if not _float32(call) or attrs.out_layout not in ("", layout) or layout not in ("NCHW",
                                                                                     "NHWC"):
        return None
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
        return KernelPlan(native_kernels.depthwise_conv2d,
                          (_weight_scratch(weight, kl, wanted, natural), geometry, bounds),
                          {"data_layout": layout, "kernel_layout": kl}, operands,
                          epilogue.calls)
    if layout != "NCHW":
        return None
    epilogue = match_epilogue(out, following, channel_axis)
    operands, bounds = _epilogue_parts(epilogue)
    values = (n, c, h, w, o, oh, ow, kh, kw, *attrs.strides, *attrs.dilation,
              *attrs.padding[:2], g, num_threads)
    geometry = _constant(values, "int64")
    size = native.library().conv2d_nchw_scratch(geometry.value.ctypes.data)
    cols = Scratch((size,), "float32") if size else None
    return KernelPlan(native_kernels.conv2d_nchw,
                      (cols, _weight_scratch(weight, kl, "OIHW", kl == "OIHW"), geometry,
                       bounds), {"kernel_layout": kl}, operands, epilogue.calls)


def _max_pool2d(call: KernelCall, following: Sequence[KernelCall],
                num_threads: int) -> KernelPlan | None:
    attrs, data, out = call.attrs, call.inputs[0], call.outputs[0]
    if not (all(b.dtype == "float32" for b in call_buffers(call)) and attrs.layout == "NCHW"
            and attrs.out_layout in ("", "NCHW")):
        return None
    n, c, h, w = data.shape
    oh, ow = out.shape[2:]
    geometry = (h, w, oh, ow, *attrs.pool_size, *attrs.strides, *attrs.dilation,
                *attrs.padding[:2], n * c, num_threads)
    return KernelPlan(native_kernels.max_pool2d_nchw, (_constant(geometry, "int64"),))


def _dense(call: KernelCall, following: Sequence[KernelCall],
           num_threads: int) -> KernelPlan | None:
    data, weight = call.inputs
    out = call.outputs[0]
    if not _float32(call) or data.ndim != 2 or data.shape[0] > DENSE_MAX_ROWS:
        return None
    epilogue = match_epilogue(out, following, 1, residual=False)
    operands, bounds = _epilogue_parts(epilogue)
    geometry = _constant((data.shape[0], data.shape[1], weight.shape[0], num_threads), "int64")
    return KernelPlan(native_kernels.dense, (geometry, bounds), {}, operands[:1],
                      epilogue.calls)


_PLANNERS = {"nn.conv2d": _conv2d, "nn.max_pool2d": _max_pool2d, "nn.dense": _dense}


def native_plan(call: KernelCall, following: Sequence[KernelCall],
                num_threads: int) -> KernelPlan | None:
    """The native kernel for ``call`` (absorbing an epilogue from the calls ``following``
    it), or None. ``num_threads`` is the target's thread count (0: all cores)."""
    planner = _PLANNERS.get(call.name)
    return None if planner is None else planner(call, following, num_threads)
