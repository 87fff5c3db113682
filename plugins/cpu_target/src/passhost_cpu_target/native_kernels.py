"""Kernels that run native code (:mod:`.native`): float32 convolution, depthwise
convolution, max pooling and dense layers, parallel over ``num-threads`` threads.

They follow the NumPy kernels' convention (outputs, inputs, then extras) and most apply an
epilogue while they write the output: ``out = clamp(acc + bias + residual, lo, hi)``, with
``bias`` (one value per output channel) and ``residual`` (shaped like ``out``) None when
absent, and ``bounds`` = ``[lo, hi]``. ``geometry`` is the int64 array of static sizes the
C function reads (see ``native/kernels.c``); planners build it once per call site.
"""

from __future__ import annotations

import numpy as np

from passhost_cpu_target.conv import weights_in_layout
from passhost_cpu_target.native import library
from passhost_cpu_target.native.library import address

__all__ = ["conv2d_nchw", "dense", "depthwise_conv2d", "max_pool2d_nchw"]


def _nullable(array: np.ndarray | None) -> int | None:
    return None if array is None else address(array)


def _check(status: int, kernel: str) -> None:
    if status != 0:
        raise MemoryError(f"native kernel {kernel}: out of memory for its work buffers")


def conv2d_nchw(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                bias: np.ndarray | None, residual: np.ndarray | None, cols: np.ndarray | None,
                wbuf: np.ndarray | None, geometry: np.ndarray, bounds: np.ndarray, *,
                kernel_layout: str) -> None:
    """Grouped NCHW convolution with an epilogue. ``cols`` is None or the packed-column
    scratch the library asks for; ``wbuf`` is None or a scratch for OIHW weights."""
    w = weights_in_layout(weight, wbuf, kernel_layout, "OIHW")
    _check(library().conv2d_nchw(address(data), address(w), address(out), _nullable(bias),
                                 _nullable(residual), _nullable(cols), address(geometry),
                                 address(bounds)), "conv2d_nchw")


def depthwise_conv2d(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                     bias: np.ndarray | None, residual: np.ndarray | None,
                     wbuf: np.ndarray | None, geometry: np.ndarray, bounds: np.ndarray, *,
                     data_layout: str, kernel_layout: str) -> None:
    """Depthwise convolution (NCHW or NHWC) with an epilogue; ``wbuf`` is None or a
    scratch for the weights as [C][KH][KW] (NCHW) or [KH][KW][C] (NHWC)."""
    lib = library()
    if data_layout == "NCHW":
        w = weights_in_layout(weight, wbuf, kernel_layout, "OIHW")
        _check(lib.depthwise_nchw(address(data), address(w), address(out), _nullable(bias),
                                  _nullable(residual), address(geometry), address(bounds)),
               "depthwise_nchw")
    else:
        w = weights_in_layout(weight, wbuf, kernel_layout, "HWOI")
        lib.depthwise_nhwc(address(data), address(w), address(out), _nullable(bias),
                           _nullable(residual), address(geometry), address(bounds))


def max_pool2d_nchw(out: np.ndarray, data: np.ndarray, geometry: np.ndarray) -> None:
    """NCHW max pooling (padding never wins; NaN propagates)."""
    _check(library().max_pool_nchw(address(data), address(out), address(geometry)),
           "max_pool_nchw")


def dense(out: np.ndarray, data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
          geometry: np.ndarray, bounds: np.ndarray) -> None:
    """``out = clamp(data @ weight.T + bias, lo, hi)`` (weight of shape (units, in))."""
    library().dense(address(data), address(weight), address(out), _nullable(bias),
                    address(geometry), address(bounds))
