"""The loaded native kernel library: typed ctypes entry points, and the data addresses of
NumPy arrays looked up cheaply (generated code passes the same arrays on every run)."""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

__all__ = ["NativeLibrary", "address"]

_P = ctypes.c_void_p
#: Entry point name -> (argument count, all pointers; return type).
_SIGNATURES: dict[str, tuple[int, Any]] = {
    "ph_conv2d_nchw": (8, ctypes.c_int),
    "ph_conv2d_nchw_scratch": (1, ctypes.c_int64),
    "ph_conv2d_nchw_prepared": (1, ctypes.c_int64),
    "ph_conv2d_nchw_prepare": (3, ctypes.c_int),
    "ph_conv2d_nhwc": (8, ctypes.c_int),
    "ph_conv2d_nhwc_scratch": (1, ctypes.c_int64),
    "ph_conv2d_nhwc_prepared": (1, ctypes.c_int64),
    "ph_conv2d_nhwc_prepare": (3, ctypes.c_int),
    "ph_conv2d_nchwc": (8, ctypes.c_int),
    "ph_conv2d_nchwc_scratch": (1, ctypes.c_int64),
    "ph_conv2d_nchwc_prepared": (1, ctypes.c_int64),
    "ph_conv2d_nchwc_prepare": (3, ctypes.c_int),
    "ph_conv2d_nchw_scaled": (9, ctypes.c_int),
    "ph_conv2d_nchw_scaled_scratch": (1, ctypes.c_int64),
    "ph_depthwise_nchw": (7, ctypes.c_int),
    "ph_depthwise_nhwc": (7, None),
    "ph_pointwise_depthwise": (10, ctypes.c_int),
    "ph_pointwise_depthwise_prepared": (1, ctypes.c_int64),
    "ph_pointwise_depthwise_prepare": (3, ctypes.c_int),
    "ph_max_pool_nchw": (3, ctypes.c_int),
    "ph_max_pool_nhwc": (3, None),
    "ph_dense": (7, None),
    "ph_dense_packed": (1, ctypes.c_int64),
    "ph_dense_pack": (3, None),
    "ph_matmul": (10, ctypes.c_int),
    "ph_matmul_packed": (1, ctypes.c_int64),
    "ph_matmul_pack_b": (3, None),
}

#: Bound on the address cache; it is emptied when it grows past this many arrays.
_CACHE_LIMIT = 4096
_addresses: dict[int, tuple[weakref.ref, int]] = {}


class NativeLibrary:
    """The kernel library's entry points (names without the ``ph_`` prefix), each taking
    data addresses (ints, or None for NULL)."""

    def __init__(self, cdll: ctypes.CDLL) -> None:
        self.cdll = cdll
        for name, (count, restype) in _SIGNATURES.items():
            function = getattr(cdll, name)
            function.argtypes = [_P] * count
            function.restype = restype
            setattr(self, name.removeprefix("ph_"), function)

    def __getattr__(self, name: str) -> Any:
        """Only reached for a name that is not an entry point (they are set above)."""
        raise AttributeError(f"the kernel library has no entry point ph_{name}")


def address(array: np.ndarray) -> int:
    """The data address of the C-contiguous ``array``, cached per array object while it
    lives (the cache holds weak references only)."""
    entry = _addresses.get(id(array))
    if entry is not None and entry[0]() is array:
        return entry[1]
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        found = (f"{array.dtype.name}{list(array.shape)} (not C-contiguous)"
                 if isinstance(array, np.ndarray) else type(array).__name__)
        raise TypeError(f"native argument: expected a C-contiguous array, found {found}")
    if len(_addresses) >= _CACHE_LIMIT:
        _addresses.clear()
    value = array.ctypes.data
    _addresses[id(array)] = (weakref.ref(array), value)
    return value
