"""Fast float 2-D convolution kernels (NCHW and NHWC data, any kernel layout).

* :func:`conv2d_gemm`: im2col into a preallocated ``cols`` scratch and one BLAS matrix
  product per group and batch item (``np.matmul(..., out=...)``). ``cols`` is zero when it
  is allocated and the padded taps are never written, so padding costs nothing per call.
  A 1x1, stride-1, unpadded convolution passes ``cols=None`` and multiplies the data
  directly.
* :func:`conv2d_depthwise`: ``groups == channels == output channels``, as a sum of
  shifted multiply-adds over the kernel taps.

Weights in another layout than the one the data layout wants (OIHW for NCHW, HWIO for
NHWC) are transposed into a preallocated ``wbuf`` scratch on each call.
"""

from __future__ import annotations

import numpy as np

from passhost_cpu_target.windows import axis_taps

__all__ = ["conv2d_depthwise", "conv2d_gemm", "natural_kernel_layout", "weights_in_layout"]


def natural_kernel_layout(data_layout: str) -> str:
    """The kernel layout the GEMM kernel reads directly for ``data_layout``."""
    return "OIHW" if data_layout == "NCHW" else "HWIO"


def weights_in_layout(weight: np.ndarray, wbuf: np.ndarray | None, kernel_layout: str,
                      wanted: str) -> np.ndarray:
    """``weight`` in the ``wanted`` layout (copied into ``wbuf`` when it is not already)."""
    if wbuf is None:
        return weight
    np.copyto(wbuf, weight.transpose(tuple(kernel_layout.index(d) for d in wanted)))
    return wbuf


def _taps(data_shape: tuple[int, ...], out_shape: tuple[int, ...], kernel: tuple[int, int],
          layout: str, strides: tuple[int, int], padding: tuple[int, int, int, int],
          dilation: tuple[int, int]) -> tuple[tuple, tuple]:
    h_ax, w_ax = (2, 3) if layout == "NCHW" else (1, 2)
    return (axis_taps(data_shape[h_ax], out_shape[h_ax], kernel[0], strides[0], dilation[0],
                      padding[0]),
            axis_taps(data_shape[w_ax], out_shape[w_ax], kernel[1], strides[1], dilation[1],
                      padding[1]))


def _im2col_nchw(cols: np.ndarray, x: np.ndarray, taps_y: tuple, taps_x: tuple) -> None:
    """``cols[n, c, i, j, oy, ox]`` = the input tap (i, j) of output (oy, ox), channel c."""
    for i, ty in enumerate(taps_y):
        if ty is None:
            continue
        oy, iy = ty
        for j, tx in enumerate(taps_x):
            if tx is not None:
                ox, ix = tx
                cols[:, :, i, j, oy, ox] = x[:, :, iy, ix]


def _im2col_nhwc(cols: np.ndarray, x: np.ndarray, taps_y: tuple, taps_x: tuple) -> None:
    """``cols[n, oy, ox, i, j, c]`` = the input tap (i, j) of output (oy, ox), channel c:
    the NCHW routine on transposed views of the same memory."""
    _im2col_nchw(cols.transpose(0, 5, 3, 4, 1, 2), x.transpose(0, 3, 1, 2), taps_y, taps_x)


def conv2d_gemm(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                cols: np.ndarray | None, wbuf: np.ndarray | None, *,
                strides: tuple[int, int], padding: tuple[int, int, int, int],
                dilation: tuple[int, int], groups: int, data_layout: str,
                kernel_layout: str) -> None:
    """Grouped convolution by im2col and matrix products. ``cols`` is a zeroed scratch of
    shape (N, C/groups, KH, KW, OH, OW) for NCHW or (N, OH, OW, KH, KW, C/groups) for NHWC,
    or None for a 1x1 stride-1 unpadded convolution; ``wbuf`` is None or a scratch for the
    weights in :func:`natural_kernel_layout`."""
    wanted = natural_kernel_layout(data_layout)
    w = weights_in_layout(weight, wbuf, kernel_layout, wanted)
    kh, kw = (w.shape[2], w.shape[3]) if data_layout == "NCHW" else (w.shape[0], w.shape[1])
    taps_y, taps_x = _taps(data.shape, out.shape, (kh, kw), data_layout, strides, padding,
                           dilation)
    if data_layout == "NCHW":
        _gemm_nchw(out, data, w, cols, taps_y, taps_x, groups)
    else:
        _gemm_nhwc(out, data, w, cols, taps_y, taps_x, groups)


def _gemm_nchw(out: np.ndarray, x: np.ndarray, w: np.ndarray, cols: np.ndarray | None,
               taps_y: tuple, taps_x: tuple, groups: int) -> None:
    n, c, h, wd = x.shape
    _, o, oh, ow = out.shape
    cg, og = c // groups, o // groups
    wmat = w.reshape(o, -1)
    omat = out.reshape(n, o, oh * ow)
    for g in range(groups):
        xg = x[:, g * cg:(g + 1) * cg]
        if cols is None:
            src = xg.reshape(n, cg, h * wd)
        else:
            _im2col_nchw(cols, xg, taps_y, taps_x)
            src = cols.reshape(n, -1, oh * ow)
        rows = slice(g * og, (g + 1) * og)
        for b in range(n):
            np.matmul(wmat[rows], src[b], out=omat[b, rows])


def _gemm_nhwc(out: np.ndarray, x: np.ndarray, w: np.ndarray, cols: np.ndarray | None,
               taps_y: tuple, taps_x: tuple, groups: int) -> None:
    n, h, wd, c = x.shape
    _, oh, ow, o = out.shape
    cg, og = c // groups, o // groups
    wmat = w.reshape(-1, o)
    omat = out.reshape(n * oh * ow, o)
    for g in range(groups):
        chans = slice(g * cg, (g + 1) * cg)
        if cols is None:
            src = x.reshape(n * h * wd, c)[:, chans]
        else:
            _im2col_nhwc(cols, x[..., chans], taps_y, taps_x)
            src = cols.reshape(n * oh * ow, -1)
        outs = slice(g * og, (g + 1) * og)
        np.matmul(src, wmat[:, outs], out=omat[:, outs])


def conv2d_depthwise(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                     product: np.ndarray, *, strides: tuple[int, int],
                     padding: tuple[int, int, int, int], dilation: tuple[int, int],
                     data_layout: str, kernel_layout: str) -> None:
    """Depthwise convolution (each channel with its own 2-D kernel): ``out`` is the sum
    over kernel taps of the shifted data times the tap's per-channel weight; ``product``
    is a scratch shaped like ``out``."""
    oihw = weight.transpose(tuple(kernel_layout.index(d) for d in "OIHW"))
    c, _, kh, kw = oihw.shape
    taps_y, taps_x = _taps(data.shape, out.shape, (kh, kw), data_layout, strides, padding,
                           dilation)
    nchw = data_layout == "NCHW"
    out.fill(0)
    for i, ty in enumerate(taps_y):
        if ty is None:
            continue
        oy, iy = ty
        for j, tx in enumerate(taps_x):
            if tx is None:
                continue
            ox, ix = tx
            if nchw:
                scale = oihw[:, 0, i, j].reshape(c, 1, 1)
                dst, src, tmp = out[:, :, oy, ox], data[:, :, iy, ix], product[:, :, oy, ox]
            else:
                scale = oihw[:, 0, i, j]
                dst, src, tmp = out[:, oy, ox, :], data[:, iy, ix, :], product[:, oy, ox, :]
            np.multiply(src, scale, out=tmp)
            np.add(dst, tmp, out=dst)
