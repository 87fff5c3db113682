"""Region and block operators of vision models: pooling regions of interest
(``vision.roi_align``) and folding sliding blocks back into an image (``nn.col2im``).

``roi_align`` follows ONNX's RoiAlign (Mask R-CNN): a box ``(x1, y1, x2, y2)`` of ``rois``,
times ``spatial_scale`` (and shifted by -0.5 when ``aligned``), is cut into
``output_size`` bins; each bin samples a grid of ``sampling_ratio`` points per axis
(0: ``ceil(bin size)``, per box) at the centres of its cells, each point read bilinearly
from the image ``batch_indices`` names. A point more than one element outside the image
reads 0; one less than that reads the clamped edge. ``avg`` averages a bin's points; ``max``
takes the largest of a bin's weighted neighbour values (as onnxruntime). Without
``aligned``, boxes are at least one element long.

``col2im`` is the inverse of im2col (ONNX Col2Im, PyTorch's fold): input
``(N, C * prod(block), L)`` holds, for each of the ``L`` positions of a sliding block over
the padded image (row-major), the block's values (channel-major, then row-major in the
block); overlapping values are summed into ``(N, C, *image_shape)``.
"""

from __future__ import annotations

import math

import numpy as np

from passhost.ir.attrs import (
    Attrs,
    attrs_class,
    bool_field,
    float_field,
    int_field,
    ints_field,
    str_field,
)
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES, TensorType, Type
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.movement import IndexRangeError
from passhost.relay.op.nn import _pair_field
from passhost.relay.op.pool import _sum_dtype
from passhost.relay.op.registry import ArgTypes, OpPattern, define_op
from passhost.relay.op.windows import window_out_sizes

__all__ = ["Col2ImAttrs", "RoiAlignAttrs", "col2im", "roi_align"]


# -- vision.roi_align -------------------------------------------------------------------------
@attrs_class
class RoiAlignAttrs(Attrs):
    """Attributes of ``roi_align``: the output's (height, width), the scale from box
    coordinates to data coordinates, the sample points per bin axis (0: adaptive), the
    pooling and whether coordinates are shifted by half an element."""

    output_size: tuple[int, int] = _pair_field((1, 1), minimum=1)
    spatial_scale: float = float_field(1.0)
    sampling_ratio: int = int_field(0, minimum=0)
    mode: str = str_field("avg", choices=("avg", "max"))
    aligned: bool = bool_field(True)


def _roi_align_rel(args: ArgTypes, attrs_value: RoiAlignAttrs) -> Type:
    data = args.tensor(0, ndim=4, dtypes=ANY_FLOAT_DTYPES)
    rois = args.tensor(1, ndim=2, dtypes=(data.dtype,))
    if rois.shape[1] != 4:
        args.fail(1, "boxes (R, 4) of (x1, y1, x2, y2)", rois)
    indices = args.tensor(2, ndim=1, dtypes=("int32", "int64"))
    if indices.shape[0] != rois.shape[0]:
        args.fail(2, f"one batch index per box ({rois.shape[0]},)", indices)
    out = (rois.shape[0], data.shape[1], *attrs_value.output_size)
    if 0 in data.shape[2:] and math.prod(out):
        args.fail(0, "data with non-empty spatial axes to pool", data)
    return TensorType(out, data.dtype)


def _roi_axis(coord: np.ndarray, sampled: np.ndarray, n: int,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear reading along one axis of length ``n`` at ``coord``: the low and high
    indices and their weights (0 for points not ``sampled`` or more than one element out)."""
    keep = sampled & (coord >= -1.0) & (coord <= n)
    coord = np.maximum(coord, 0)
    low = np.minimum(np.nan_to_num(np.floor(coord)), n - 1).astype(np.intp)
    high = np.minimum(low + 1, n - 1)
    frac = np.where(low >= n - 1, 0, coord - low).astype(coord.dtype)
    low, high = np.where(keep, low, 0), np.where(keep, high, 0)
    return low, high, np.where(keep, 1 - frac, 0), np.where(keep, frac, 0)


def _roi_points(attrs_value: RoiAlignAttrs, start: np.ndarray, length: np.ndarray,
                bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Along one axis of boxes starting at ``start`` and ``length`` long: the sample
    coordinates (R, bins, G), which of them are sampled (fewer than G in a box with an
    adaptive grid) and each box's sample count."""
    bin_size = length / length.dtype.type(bins)
    if attrs_value.sampling_ratio:
        count = np.full(length.shape, attrs_value.sampling_ratio, np.int64)
    else:
        count = np.maximum(np.nan_to_num(np.ceil(bin_size), posinf=0.0), 0).astype(np.int64)
    g = np.arange(max(int(count.max(initial=0)), 1))
    # Written in the order onnxruntime computes it, for the same float32 roundings.
    within = (g[None, None, :] + 0.5).astype(bin_size.dtype) * bin_size[:, None, None] \
        / np.maximum(count, 1).astype(bin_size.dtype)[:, None, None]
    part = np.arange(bins, dtype=bin_size.dtype)[None, :, None]
    coord = start[:, None, None] + part * bin_size[:, None, None] + within
    return coord, g[None, None, :] < count[:, None, None], count


def _roi_align(attrs_value: RoiAlignAttrs, data: np.ndarray, rois: np.ndarray,
               batch_indices: np.ndarray) -> np.ndarray:
    n, c, h, w = data.shape
    oh, ow = attrs_value.output_size
    out_shape = (rois.shape[0], c, oh, ow)
    if math.prod(out_shape) == 0:
        return np.zeros(out_shape, data.dtype)
    batch = batch_indices.astype(np.int64)
    bad = (batch < 0) | (batch >= n)
    if bad.any():
        raise IndexRangeError(f"vision.roi_align: batch index {int(batch[bad][0])} is out of "
                              f"range [0, {n})")
    acc = acc_float(data.dtype)
    shift = 0.5 if attrs_value.aligned else 0.0
    box = rois.astype(acc) * acc.type(attrs_value.spatial_scale) - acc.type(shift)
    sizes = box[:, 2:] - box[:, :2]
    if not attrs_value.aligned:
        sizes = np.maximum(sizes, 1)
    ys, y_sampled, y_count = _roi_points(attrs_value, box[:, 1], sizes[:, 1], oh)
    xs, x_sampled, x_count = _roi_points(attrs_value, box[:, 0], sizes[:, 0], ow)
    y_axis = _roi_axis(ys, y_sampled, h)
    x_axis = _roi_axis(xs, x_sampled, w)
    image = data.astype(acc)
    count = (y_count * x_count)[:, None, None, None]
    if attrs_value.mode == "max":
        out = _roi_max(image, batch, y_axis, x_axis, y_sampled, x_sampled)
        out = np.where(count > 0, out, 0)
    else:
        out = _roi_avg(image, batch, y_axis, x_axis) / np.maximum(count, 1).astype(acc)
    return np.ascontiguousarray(out.astype(data.dtype))


def _axis_matrix(axis: tuple[np.ndarray, ...], n: int) -> np.ndarray:
    """The (R, bins, n) weights of the input elements summed over a bin's sample points."""
    low, high, w_low, w_high = axis
    r, bins, _ = low.shape
    out = np.zeros((r, bins, n), w_low.dtype)
    box, part = np.indices(low.shape[:2], sparse=True)
    np.add.at(out, (box[..., None], part[..., None], low), w_low)
    np.add.at(out, (box[..., None], part[..., None], high), w_high)
    return out


def _roi_avg(image: np.ndarray, batch: np.ndarray, y_axis: tuple[np.ndarray, ...],
             x_axis: tuple[np.ndarray, ...]) -> np.ndarray:
    """The sums of every bin's bilinear samples (R, C, OH, OW): separable per axis."""
    wy = _axis_matrix(y_axis, image.shape[2])
    wx = _axis_matrix(x_axis, image.shape[3])
    out = np.empty((batch.shape[0], image.shape[1], wy.shape[1], wx.shape[1]), image.dtype)
    for b in np.unique(batch):
        sel = batch == b
        rows = np.tensordot(wy[sel], image[b], axes=([2], [1])).transpose(0, 2, 1, 3)
        out[sel] = np.matmul(rows, wx[sel].transpose(0, 2, 1)[:, None])
    return out


def _roi_max(image: np.ndarray, batch: np.ndarray, y_axis: tuple[np.ndarray, ...],
             x_axis: tuple[np.ndarray, ...], y_sampled: np.ndarray,
             x_sampled: np.ndarray) -> np.ndarray:
    """The largest weighted neighbour value over every bin's sample points (-inf for a
    bin without points), one sample position of the grids at a time."""
    (y_lo, y_hi, wy_lo, wy_hi), (x_lo, x_hi, wx_lo, wx_hi) = y_axis, x_axis
    r, c = batch.shape[0], image.shape[1]
    out = np.full((r, y_lo.shape[1], x_lo.shape[1], c), -np.inf, image.dtype)
    for gy in range(y_lo.shape[2]):
        for gx in range(x_lo.shape[2]):
            best = None
            for yi, wy in ((y_lo, wy_lo), (y_hi, wy_hi)):
                for xi, wx in ((x_lo, wx_lo), (x_hi, wx_hi)):
                    v = image[batch[:, None, None], :, yi[:, :, None, gy], xi[:, None, :, gx]]
                    v = v * (wy[:, :, None, gy] * wx[:, None, :, gx])[..., None]
                    best = v if best is None else np.maximum(best, v)
            sampled = y_sampled[:, 0, gy][:, None, None, None] & \
                x_sampled[:, 0, gx][:, None, None, None]
            out = np.where(sampled, np.maximum(out, best), out)
    return out.transpose(0, 3, 1, 2)


roi_align = define_op(
    "vision.roi_align", inputs=("data", "rois", "batch_indices"), attrs=RoiAlignAttrs,
    type_rel=_roi_align_rel, compute=_roi_align, pattern=OpPattern.OPAQUE,
    description="Pool each box (x1, y1, x2, y2) of rois (R, 4) over the NCHW image its batch "
                "index names into (R, C, *output_size) bins (ONNX RoiAlign, Mask R-CNN): the "
                "average or maximum of bilinear samples on a regular grid in each bin.")


# -- nn.col2im --------------------------------------------------------------------------------
@attrs_class
class Col2ImAttrs(Attrs):
    """Attributes of ``nn.col2im``: the image's spatial shape, the block's, and the sliding
    block's strides, dilation and padding (every axis's start, then every axis's end; empty:
    strides and dilation 1, no padding)."""

    image_shape: tuple[int, ...] = ints_field((1,))
    block_shape: tuple[int, ...] = ints_field((1,))
    strides: tuple[int, ...] = ints_field(())
    dilation: tuple[int, ...] = ints_field(())
    padding: tuple[int, ...] = ints_field(())


def _col2im_window(attrs_value: Col2ImAttrs,
                   ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Strides, dilation and padding, defaults filled in."""
    rank = len(attrs_value.image_shape)
    return (attrs_value.strides or (1,) * rank, attrs_value.dilation or (1,) * rank,
            attrs_value.padding or (0,) * (2 * rank))


def _col2im_rel(args: ArgTypes, attrs_value: Col2ImAttrs) -> Type:
    data = args.tensor(0, ndim=3, dtypes=(*ANY_FLOAT_DTYPES, *INT_DTYPES))
    image, block = attrs_value.image_shape, attrs_value.block_shape
    rank = len(image)
    if rank < 1 or min(image) < 1:
        args.fail_attr("image_shape", "at least one spatial length, each >= 1", image)
    strides, dilation, padding = _col2im_window(attrs_value)
    for name, value, size, minimum in (("block_shape", block, rank, 1),
                                       ("strides", strides, rank, 1),
                                       ("dilation", dilation, rank, 1),
                                       ("padding", padding, 2 * rank, 0)):
        if len(value) != size or min(value) < minimum:
            args.fail_attr(name, f"{size} ints >= {minimum} (image_shape has {rank} axes)",
                           value)
    blocks = window_out_sizes(image, block, strides, dilation, padding)
    if min(blocks) < 1:
        args.fail_attr("block_shape", f"a dilated block within the padded image {image}",
                       block)
    k = math.prod(block)
    n, ck, length = data.shape
    if ck % k or length != math.prod(blocks):
        args.fail(0, f"(N, C * {k}, {math.prod(blocks)}): blocks of {k} values at each of "
                  f"{'x'.join(map(str, blocks))} positions", data)
    return TensorType((n, ck // k, *image), data.dtype)


def _col2im(attrs_value: Col2ImAttrs, data: np.ndarray) -> np.ndarray:
    image, block = attrs_value.image_shape, attrs_value.block_shape
    strides, dilation, padding = _col2im_window(attrs_value)
    rank = len(image)
    blocks = window_out_sizes(image, block, strides, dilation, padding)
    n, ck, _ = data.shape
    c = ck // math.prod(block)
    cols = data.reshape(n, c, *block, *blocks)
    lo = padding[:rank]
    padded = np.zeros((n, c, *(image[i] + lo[i] + padding[rank + i] for i in range(rank))),
                      _sum_dtype(data.dtype))
    # One strided slice of the padded image per position in the block.
    for tap in np.ndindex(*block):
        place = tuple(slice(t * d, t * d + (m - 1) * s + 1, s)
                      for t, d, m, s in zip(tap, dilation, blocks, strides))
        padded[(slice(None), slice(None), *place)] += cols[(slice(None), slice(None), *tap)]
    crop = tuple(slice(lo[i], lo[i] + image[i]) for i in range(rank))
    return np.ascontiguousarray(padded[(slice(None), slice(None), *crop)].astype(data.dtype))


col2im = define_op(
    "nn.col2im", inputs=("data",), attrs=Col2ImAttrs, type_rel=_col2im_rel,
    compute=_col2im, pattern=OpPattern.OPAQUE,
    description="Fold sliding blocks (N, C * prod(block_shape), L) back into an image (N, C, "
                "*image_shape), summing overlaps (ONNX Col2Im, PyTorch fold): the inverse of "
                "im2col, with strides, dilation and padding.")
