"""Kernels that run native code (:mod:`.native`): float32 convolution, depthwise
convolution, max pooling and dense layers, parallel over ``num-threads`` threads.

They follow the NumPy kernels' convention (outputs, inputs, then extras) and most apply an
epilogue while they write the output: ``out = clamp(acc + bias + residual, lo, hi)``, with
``bias`` (one value per output channel) and ``residual`` (shaped like ``out``) None when
absent, and ``bounds`` = ``[lo, hi]``. ``geometry`` is the int64 array of static sizes the
C function reads (see ``native/kernels.c``); planners build it once per call site.
"""

from __future__ import annotations

import weakref

import numpy as np

from passhost.runtime.aligned import aligned_full
from passhost_cpu_target.conv import weights_in_layout
from passhost_cpu_target.native import library
from passhost_cpu_target.native.library import address

__all__ = ["conv2d_nchw", "dense", "depthwise_conv2d", "max_pool2d_nchw",
           "prepared_conv2d_weights"]

#: (id of a read-only weight array, geometry bytes) -> a weak reference to the array (whose
#: death removes the entry) and the array's prepared form.
_prepared: dict[tuple[int, bytes], tuple[weakref.ref, np.ndarray]] = {}


def _nullable(array: np.ndarray | None) -> int | None:
    return None if array is None else address(array)


def _check(status: int, kernel: str) -> None:
    if status != 0:
        raise MemoryError(f"native kernel {kernel}: out of memory for its work buffers")


def prepared_conv2d_weights(weight: np.ndarray, wbuf: np.ndarray | None,
                            geometry: np.ndarray, kernel_layout: str) -> np.ndarray:
    """``weight`` in the convolution kernel's own form (packed panels, or transformed for
    Winograd). A read-only array (an executor's parameters are) is prepared once per
    geometry and kept while the array lives; a writeable one may change between calls and
    is prepared on every call."""
    key = (id(weight), geometry.tobytes())
    entry = _prepared.get(key)
    if entry is not None and entry[0]() is weight:
        return entry[1]
    lib = library()
    prepared = aligned_full(lib.conv2d_nchw_prepared(address(geometry)), None, "float32")
    w = weights_in_layout(weight, wbuf, kernel_layout, "OIHW")
    _check(lib.conv2d_nchw_prepare(address(w), address(prepared), address(geometry)),
           "conv2d_nchw_prepare")
    if not weight.flags.writeable:
        _prepared[key] = (weakref.ref(weight, lambda _, key=key: _prepared.pop(key, None)),
                          prepared)
    return prepared


def conv2d_nchw(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                bias: np.ndarray | None, residual: np.ndarray | None, cols: np.ndarray | None,
                wbuf: np.ndarray | None, geometry: np.ndarray, bounds: np.ndarray, *,
                kernel_layout: str) -> None:
    """Grouped NCHW convolution with an epilogue. ``cols`` is None or the packed-column
    scratch the library asks for; ``wbuf`` is None or a scratch for OIHW weights. The
    weights are used as :func:`prepared_conv2d_weights` gives them."""
    prepared = prepared_conv2d_weights(weight, wbuf, geometry, kernel_layout)
    _check(library().conv2d_nchw(address(data), address(prepared), address(out),
                                 _nullable(bias), _nullable(residual), _nullable(cols),
                                 address(geometry), address(bounds)), "conv2d_nchw")


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
