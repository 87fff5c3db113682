"""Converters of the ONNX vision operators: GridSample and AffineGrid (spatial transformers,
deformable and DETR-style attention), RoiAlign, Col2Im and CenterCropPad.

Operands that decide an output's shape (AffineGrid's ``size``, Col2Im's ``image_shape`` and
``block_shape``, CenterCropPad's ``shape``) must be known while compiling.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import axis_index
from passhost.frontend.onnx_registry import Entry
from passhost.frontend.onnx_windows import node_window
from passhost.ir.types import ANY_FLOAT_DTYPES
from passhost.relay import nn
from passhost.relay.expr import const
from passhost.relay.op.image import PADDING_MODES

__all__ = ["CONVERTERS"]


def _choice(ctx: NodeContext, name: str, default: str, choices: Mapping[str, str]) -> str:
    """String attribute ``name`` (one of ``choices``) as passhost's name for it."""
    value = ctx.attr(name, default)
    if value not in choices:
        raise ctx.error(f"expected {name} {', '.join(choices)}, found {value!r}")
    return choices[value]


def _flag(ctx: NodeContext, name: str) -> bool:
    """Int attribute ``name``, 0 (the default) or 1, as a bool."""
    value = ctx.attr(name, 0)
    if value not in (0, 1):
        raise ctx.error(f"expected {name} 0 or 1, found {value!r}")
    return bool(value)


def _shape_ints(ctx: NodeContext, index: int, what: str) -> list[int]:
    """The integers of input ``index``, an output shape that must be known while importing."""
    return [int(v) for v in ctx.known(index, what, "it decides the output's shape").reshape(-1)]


# -- GridSample and AffineGrid ----------------------------------------------------------------
_GRID_MODES_16 = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
_GRID_MODES = {"linear": "linear", "nearest": "nearest", "cubic": "cubic"}


def _grid_sample_of(ctx: NodeContext, modes: Mapping[str, str], default: str) -> Value:
    return relay.grid_sample(
        ctx.input(0), ctx.input(1), method=_choice(ctx, "mode", default, modes),
        padding_mode=_choice(ctx, "padding_mode", "zeros", {m: m for m in PADDING_MODES}),
        align_corners=_flag(ctx, "align_corners"))


def _grid_sample_16(ctx: NodeContext) -> Value:
    """GridSample-16 becomes ``image.grid_sample`` of 4-D data (N, C, H, W): modes bilinear,
    nearest and bicubic, every padding mode."""
    if len(ctx.shape(0)) != 4:
        raise ctx.error(f"expected 4-D data (N, C, H, W), found shape {list(ctx.shape(0))}")
    return _grid_sample_of(ctx, _GRID_MODES_16, "bilinear")


def _grid_sample(ctx: NodeContext) -> Value:
    """GridSample becomes ``image.grid_sample`` of data with any number of spatial axes:
    modes linear, nearest and cubic (N-linear and N-cubic), every padding mode."""
    return _grid_sample_of(ctx, _GRID_MODES, "linear")


def _base_grid(spatial: list[int], align_corners: bool) -> np.ndarray:
    """The normalised positions (prod(spatial), rank + 1) of every output element, x (the
    last axis) first, then a 1 (homogeneous coordinates)."""
    def line(n: int) -> np.ndarray:
        if align_corners:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(n)
        return (2 * np.arange(n) + 1) / max(n, 1) - 1

    axes = np.meshgrid(*(line(n) for n in spatial), indexing="ij")
    return np.stack([*reversed(axes), np.ones(spatial)], axis=-1).reshape(-1, len(spatial) + 1)


@computed_in_float32
def _affine_grid(ctx: NodeContext) -> Value:
    """AffineGrid becomes a ``matmul`` of the constant positions of the output elements (in
    homogeneous coordinates) with ``theta`` transposed, 2-D or 3-D; ``size`` must be known
    while compiling. With align_corners, an axis of length 1 is at 0 (as PyTorch)."""
    size = _shape_ints(ctx, 1, "size")
    theta = ctx.tensor_type(0)
    rank = len(size) - 2
    if rank not in (2, 3) or min(size) < 0:
        raise ctx.error(f"expected size (N, C, H, W) or (N, C, D, H, W) of lengths >= 0, "
                        f"found {size}")
    want = (size[0], rank, rank + 1)
    if theta.dtype not in ANY_FLOAT_DTYPES:
        raise ctx.error(f"expected theta of dtype {', '.join(ANY_FLOAT_DTYPES)}, found "
                        f"{theta.dtype}")
    if tuple(theta.shape) != want:
        raise ctx.error(f"expected theta of shape {list(want)} for size {size}, found "
                        f"{list(theta.shape)}")
    base = _base_grid(size[2:], _flag(ctx, "align_corners")).astype(theta.dtype)
    grid = relay.matmul(const(base, theta.dtype), relay.transpose(ctx.input(0), axes=(0, 2, 1)))
    return relay.reshape(grid, newshape=(size[0], *size[2:], rank))


# -- RoiAlign -----------------------------------------------------------------------------------
def _roi_align_of(ctx: NodeContext, aligned: bool) -> Value:
    size = [int(ctx.attr(name, 1)) for name in ("output_height", "output_width")]
    if min(size) < 1:
        raise ctx.error(f"expected output_height and output_width >= 1, found {size}")
    ratio = int(ctx.attr("sampling_ratio", 0))
    if ratio < 0:
        raise ctx.error(f"expected sampling_ratio >= 0, found {ratio}")
    return relay.roi_align(
        ctx.input(0), ctx.input(1), ctx.input(2), output_size=tuple(size),
        spatial_scale=float(ctx.attr("spatial_scale", 1.0)), sampling_ratio=ratio,
        mode=_choice(ctx, "mode", "avg", {"avg": "avg", "max": "max"}), aligned=aligned)


def _roi_align_10(ctx: NodeContext) -> Value:
    """RoiAlign-10 becomes ``vision.roi_align`` without the half-element shift (boxes at
    least one element long), modes avg and max."""
    return _roi_align_of(ctx, aligned=False)


def _roi_align(ctx: NodeContext) -> Value:
    """RoiAlign becomes ``vision.roi_align``: modes avg and max, coordinate transformation
    modes half_pixel and output_half_pixel (no shift)."""
    mode = _choice(ctx, "coordinate_transformation_mode", "half_pixel",
                   {"half_pixel": "half_pixel", "output_half_pixel": "output_half_pixel"})
    return _roi_align_of(ctx, aligned=mode == "half_pixel")


# -- Col2Im and CenterCropPad -------------------------------------------------------------------
def _col2im(ctx: NodeContext) -> Value:
    """Col2Im becomes ``nn.col2im`` (any number of spatial axes, strides, dilations, pads);
    image_shape and block_shape must be known while compiling."""
    image = _shape_ints(ctx, 1, "image_shape")
    block = [int(v) for v in ctx.known(2, "block_shape", "it decides how the input's channels "
                                       "split").reshape(-1)]
    if len(ctx.shape(0)) != 3:
        raise ctx.error(f"expected 3-D input (N, C * prod(block_shape), L), found shape "
                        f"{list(ctx.shape(0))}")
    if not image or len(block) != len(image):
        raise ctx.error(f"expected image_shape and block_shape of one length >= 1, found "
                        f"{image} and {block}")
    window = node_window(ctx, block)
    return relay.col2im(ctx.input(0), image_shape=tuple(image), block_shape=tuple(block),
                        strides=window.strides, dilation=window.dilations,
                        padding=window.padding)


def _center_crop_pad(ctx: NodeContext) -> Value:
    """CenterCropPad becomes ``strided_slice`` (a centred crop, starting half an element to
    the left of centre when odd) and ``nn.pad`` with zeros (the odd element on the right) on
    ``axes``; shape must be known while compiling."""
    shape = ctx.shape(0)
    target = _shape_ints(ctx, 1, "shape")
    given = ctx.attr("axes")
    axes = list(range(len(shape))) if given is None else \
        [axis_index(ctx, int(a), len(shape)) for a in given]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"expected distinct axes, found {list(given)}")
    if len(target) != len(axes) or min(target, default=0) < 0:
        raise ctx.error(f"expected shape of {len(axes)} lengths >= 0 (one per axis), found "
                        f"{target}")
    begin, end = [0] * len(shape), list(shape)
    width = [(0, 0)] * len(shape)
    for axis, want in zip(axes, target):
        extra = want - shape[axis]
        if extra < 0:
            begin[axis] = -extra // 2
            end[axis] = begin[axis] + want
        else:
            width[axis] = (extra // 2, extra - extra // 2)
    data = ctx.input(0)
    if begin != [0] * len(shape) or end != list(shape):
        data = relay.strided_slice(data, begin=tuple(begin), end=tuple(end))
    if any(lo or hi for lo, hi in width):
        data = nn.pad(data, pad_width=tuple(width))
    return data


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "GridSample": {16: _grid_sample_16, 20: _grid_sample},
    "AffineGrid": _affine_grid,
    "RoiAlign": {10: _roi_align_10, 16: _roi_align},
    "Col2Im": _col2im,
    "CenterCropPad": _center_crop_pad,
}
