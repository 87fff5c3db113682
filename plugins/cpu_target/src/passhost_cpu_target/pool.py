"""Fast 2-D pooling kernels (NCHW and NHWC): max and average pooling over strided tap
views, and global average pooling.

Window pools read a ``padded`` scratch when the windows reach outside the data: it is
allocated once filled with the padding value (the dtype's lowest value for max, zero for
average), and each call copies the data into its interior.
"""

from __future__ import annotations

import numpy as np

__all__ = ["avg_pool2d", "global_avg_pool2d", "max_pool2d", "tap_counts"]


def _source(data: np.ndarray, padded: np.ndarray | None, padding: tuple[int, int, int, int],
            layout: str) -> np.ndarray:
    """The data, copied into the interior of ``padded`` when there is one."""
    if padded is None:
        return data
    top, left = padding[0], padding[1]
    if layout == "NCHW":
        h, w = data.shape[2:]
        padded[:, :, top:top + h, left:left + w] = data
    else:
        h, w = data.shape[1:3]
        padded[:, top:top + h, left:left + w, :] = data
    return padded


def _tap_views(src: np.ndarray, out: np.ndarray, pool_size: tuple[int, int],
               strides: tuple[int, int], dilation: tuple[int, int], layout: str,
               ) -> list[np.ndarray]:
    """For each window tap, the view of ``src`` that tap reads for every output."""
    h_ax = 2 if layout == "NCHW" else 1
    oh, ow = out.shape[h_ax], out.shape[h_ax + 1]
    (kh, kw), (sh, sw), (dh, dw) = pool_size, strides, dilation
    views = []
    for i in range(kh):
        rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
        for j in range(kw):
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            views.append(src[:, :, rows, cols] if layout == "NCHW" else src[:, rows, cols, :])
    return views


def max_pool2d(out: np.ndarray, data: np.ndarray, padded: np.ndarray | None, *,
               pool_size: tuple[int, int], strides: tuple[int, int],
               dilation: tuple[int, int], padding: tuple[int, int, int, int],
               layout: str) -> None:
    """``out`` = the largest tap of each window (padding, the lowest value, never wins)."""
    first, *rest = _tap_views(_source(data, padded, padding, layout), out, pool_size,
                              strides, dilation, layout)
    np.copyto(out, first)
    for view in rest:
        np.maximum(out, view, out=out)


def avg_pool2d(out: np.ndarray, data: np.ndarray, padded: np.ndarray | None,
               divisor: np.ndarray, *, pool_size: tuple[int, int], strides: tuple[int, int],
               dilation: tuple[int, int], padding: tuple[int, int, int, int],
               layout: str) -> None:
    """``out`` = the sum of each window's taps divided by ``divisor`` (float64 counts per
    output position, broadcasting against ``out``)."""
    first, *rest = _tap_views(_source(data, padded, padding, layout), out, pool_size,
                              strides, dilation, layout)
    np.copyto(out, first)
    for view in rest:
        np.add(out, view, out=out)
    np.divide(out, divisor, out=out)


def tap_counts(out: int, k: int, stride: int, dilation: int, lo: int, hi: int) -> np.ndarray:
    """For each of ``out`` windows along a padded axis, how many of its ``k`` taps land in
    positions ``[lo, hi)``."""
    first = np.arange(out)[:, None] * stride
    positions = first + np.arange(k)[None, :] * dilation
    return np.count_nonzero((positions >= lo) & (positions < hi), axis=1)


def global_avg_pool2d(out: np.ndarray, data: np.ndarray, *, layout: str) -> None:
    """``out`` = the mean over the spatial axes (kept with length 1)."""
    axes = (2, 3) if layout == "NCHW" else (1, 2)
    np.sum(data, axis=axes, keepdims=True, out=out)
    np.divide(out, np.float64(data.shape[axes[0]] * data.shape[axes[1]]), out=out)
