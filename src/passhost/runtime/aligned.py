"""Arrays whose data starts on a cache-line boundary, so that native kernels' vector loads
and stores of whole rows never straddle two cache lines."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CACHE_LINE", "aligned_full"]

#: Bytes the data of an aligned array is aligned to (one cache line, one AVX-512 vector).
CACHE_LINE = 64


def aligned_full(shape: int | Sequence[int], fill: float | None, dtype: str | np.dtype,
                 ) -> np.ndarray:
    """A C-contiguous array of ``shape`` and ``dtype`` whose data address is a multiple of
    :data:`CACHE_LINE`, filled with ``fill`` (left uninitialised when None)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = max(count, 1) * dtype.itemsize
    raw = np.empty(nbytes + CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE
    array = raw[start:start + nbytes].view(dtype)[:count].reshape(shape)
    if fill is not None:
        array.fill(fill)
    return array
