"""Layouts with split axes and the ``layout_transform`` operator.

A layout names a tensor's axes in order: primal axes are upper-case letters, and a primal
axis may also be split by a factor, its inner part a subordinate axis written as the factor
and the lower-case letter (TVM's notation: ``NCHW16c`` is N, C / 16, H, W, then 16
consecutive channels; ``OIHW16i16o`` splits two axes). ``layout_transform`` moves a tensor
between two layouts of the same primal axes, permuted (``NCHW`` <-> ``NHWC``, ``OIHW`` <->
``HWIO``) and split or not: a split axis's extent must be a multiple of its factor (no
padding), and a source layout's subordinate axes must have their factors as extents. The
kernel returns a fresh array.

Convolutions and pools take 2-D data in ``NCHW``, ``NHWC`` or the channel-blocked ``NCHW{k}c``
(:func:`is_data_layout`, :func:`channel_block`); :func:`transform_array` moves their NumPy
arrays between layouts.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from passhost import te
from passhost.errors import AttrError
from passhost.ir.attrs import Attrs, attrs_class, str_field
from passhost.ir.types import TensorType, Type
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, define_op
from passhost.relay.op.te_movement import permute_te
from passhost.tir.expr import PrimExpr

__all__ = [
    "LayoutTransformAttrs", "can_transform", "channel_block", "is_data_layout", "layout_axes",
    "layout_transform", "primal_extents", "transform_array", "transform_attrs",
]


def _attr_error(name: str, expected: str, value: Any) -> AttrError:
    return AttrError(f"attribute '{name}': expected {expected}, found {value!r}")


def layout_axes(layout: str) -> list[tuple[str, int]] | None:
    """The axes of ``layout`` in order, each (primal letter, factor): factor 0 for a primal
    axis (an upper-case letter), the split factor for a subordinate one (a number and the
    primal axis's lower-case letter: ``NCHW16c`` is N, C / 16, H, W, then 16 of C); None when
    it is malformed (an axis twice, a subordinate axis without its primal one, a factor of
    0, any other character)."""
    axes: list[tuple[str, int]] = []
    digits = ""
    for char in layout:
        if char.isascii() and char.isdigit():
            digits += char
        elif char.isascii() and char.isalpha() and char.isupper() != bool(digits):
            axes.append((char.upper(), int(digits) if digits else 0))
            if digits and axes[-1][1] == 0:
                return None
            digits = ""
        else:
            return None
    primal = [letter for letter, factor in axes if not factor]
    split = [letter for letter, factor in axes if factor]
    if (digits or not axes or len(set(primal)) != len(primal) or len(set(split)) != len(split)
            or not set(split) <= set(primal)):
        return None
    return axes


@cache
def channel_block(layout: str) -> int | None:
    """k for the channel-blocked data layout ``NCHW{k}c`` (k a positive integer written
    without a leading zero: ``NCHW16c`` is 16); None for any other layout."""
    axes = layout_axes(layout)
    factor = axes[-1][1] if axes else 0
    return factor if factor and layout == f"NCHW{factor}c" else None


def is_data_layout(layout: object) -> bool:
    """True for the 2-D data layouts of convolutions and pools: ``NCHW``, ``NHWC`` and the
    channel-blocked ``NCHW{k}c``."""
    return isinstance(layout, str) and (layout in ("NCHW", "NHWC")
                                        or channel_block(layout) is not None)


def primal_extents(shape: Sequence[int], layout: str) -> dict[str, int]:
    """Each primal axis's whole extent in a tensor of ``shape`` in (valid) ``layout``."""
    axes = layout_axes(layout)
    assert axes is not None and len(axes) == len(shape), (layout, shape)
    return _extents(axes, shape)


def can_transform(shape: Sequence[int], src: str, dst: str) -> bool:
    """True when ``layout_transform`` moves a tensor of ``shape`` in layout ``src`` to ``dst``
    (a layout of the same primal axes): each axis ``dst`` splits is a multiple of its factor."""
    dst_axes = layout_axes(dst)
    assert dst_axes is not None, dst
    return _indivisible(dst_axes, primal_extents(shape, src)) is None


def transform_array(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``x`` moved from layout ``src`` to ``dst`` (``layout_transform``'s kernel: a fresh
    array)."""
    return _layout_transform(transform_attrs(src, dst), x)


@attrs_class
class LayoutTransformAttrs(Attrs):
    """Attributes of ``layout_transform``: source and destination layouts, of the same
    primal axis letters, each axis optionally split (``NCHW16c``)."""

    src_layout: str = str_field()
    dst_layout: str = str_field()

    def __attrs_post_init__(self) -> None:
        primal = []
        for name in ("src_layout", "dst_layout"):
            axes = layout_axes(getattr(self, name))
            if axes is None:
                raise _attr_error(name, "a layout of distinct upper-case axis letters, each "
                                  "optionally split by a factor and its lower-case letter "
                                  "such as 'NCHW16c'", getattr(self, name))
            primal.append(sorted(letter for letter, factor in axes if not factor))
        if primal[0] != primal[1]:
            raise _attr_error("dst_layout", "a layout of src_layout "
                              f"{self.src_layout!r}'s primal axes", self.dst_layout)


def _axes(attrs_value: LayoutTransformAttrs) -> tuple[list[tuple[str, int]],
                                                       list[tuple[str, int]]]:
    """The source and destination layouts' axes (validated by the attributes)."""
    src, dst = layout_axes(attrs_value.src_layout), layout_axes(attrs_value.dst_layout)
    assert src is not None and dst is not None
    return src, dst


def _is_split(attrs_value: LayoutTransformAttrs) -> bool:
    return any(factor for axes in _axes(attrs_value) for _, factor in axes)


def _layout_perm(attrs_value: LayoutTransformAttrs) -> list[int]:
    """The permutation of an unsplit transform: output axis k is input axis perm[k]."""
    return [attrs_value.src_layout.index(c) for c in attrs_value.dst_layout]


def _extents(src: list[tuple[str, int]], shape: Sequence[int]) -> dict[str, int]:
    """Each primal axis's whole extent in a tensor of ``shape`` in layout ``src``."""
    extent: dict[str, int] = {}
    for (letter, _), dim in zip(src, shape):
        extent[letter] = extent.get(letter, 1) * dim
    return extent


def _indivisible(dst: list[tuple[str, int]], extent: dict[str, int]) -> tuple[str, int] | None:
    """The first axis (letter, factor) ``dst`` splits whose ``extent`` is not a multiple of its
    factor, or None."""
    return next(((letter, factor) for letter, factor in dst
                 if factor and extent[letter] % factor), None)


@cache
def transform_attrs(src: str, dst: str) -> LayoutTransformAttrs:
    """The (shared) attributes of a ``layout_transform`` from ``src`` to ``dst``."""
    return LayoutTransformAttrs(src_layout=src, dst_layout=dst)


def _split_shape(dst: list[tuple[str, int]], extent: dict[str, int]) -> tuple[int, ...]:
    """The shape in layout ``dst`` of primal axes of ``extent`` (each split one's extent a
    multiple of its factor)."""
    factor = {letter: f for letter, f in dst if f}
    return tuple(f if f else extent[letter] // factor.get(letter, 1) for letter, f in dst)


def _layout_transform_rel(args: ArgTypes, attrs_value: LayoutTransformAttrs) -> Type:
    src, dst = _axes(attrs_value)
    data = args.tensor(0)
    if data.ndim != len(src):
        args.fail(0, f"a {len(src)}-D tensor (src_layout {attrs_value.src_layout})", data)
    if not _is_split(attrs_value):
        return TensorType(tuple(data.shape[p] for p in _layout_perm(attrs_value)), data.dtype)
    for k, ((letter, factor), dim) in enumerate(zip(src, data.shape)):
        if factor and dim != factor:
            args.fail(0, f"axis {k} of {factor} (src_layout {attrs_value.src_layout}'s "
                      f"{factor}{letter.lower()})", data)
    extent = _extents(src, data.shape)
    bad = _indivisible(dst, extent)
    if bad is not None:
        letter, factor = bad
        args.fail(0, f"a multiple of {factor} along axis {letter} (dst_layout "
                  f"{attrs_value.dst_layout}), {extent[letter]} in all", data)
    return TensorType(_split_shape(dst, extent), data.dtype)


def _pieces(axes: list[tuple[str, int]], letter: str) -> list[tuple[str, int]]:
    """The axes of primal axis ``letter`` in ``axes``, outer (the primal one) first."""
    return sorted((axis for axis in axes if axis[0] == letter), key=lambda axis: axis[1] != 0)


def _layout_transform(attrs_value: LayoutTransformAttrs, x: np.ndarray) -> np.ndarray:
    if not _is_split(attrs_value):
        return np.transpose(x, _layout_perm(attrs_value)).copy()
    src, dst = _axes(attrs_value)
    # the primal axes in dst's order, each whole (its src axes side by side, outer first) ...
    order = [letter for letter, factor in dst if not factor]
    extent = _extents(src, x.shape)
    gather = [src.index(axis) for letter in order for axis in _pieces(src, letter)]
    primal = np.transpose(x, gather).reshape([extent[letter] for letter in order])
    # ... then split as dst splits them, and its axes put in dst's order
    pieces = [axis for letter in order for axis in _pieces(dst, letter)]
    split = primal.reshape(_split_shape(pieces, extent))
    return np.transpose(split, [pieces.index(axis) for axis in dst]).copy()


def _layout_transform_te(attrs_value: LayoutTransformAttrs, inputs: Sequence[te.Tensor],
                         out: Type) -> te.Tensor:
    assert isinstance(out, TensorType)
    if not _is_split(attrs_value):
        return permute_te(inputs[0], _layout_perm(attrs_value), "layout_transform")
    src, dst = _axes(attrs_value)
    x, src_factor = inputs[0], {letter: f for letter, f in src if f}
    dst_factor = {letter: f for letter, f in dst if f}

    def element(*i: PrimExpr) -> PrimExpr:
        coord: dict[str, PrimExpr] = {}  # each primal axis's index: outer * factor + inner
        for (letter, factor), index in zip(dst, i):
            part = index if factor else index * dst_factor.get(letter, 1)
            coord[letter] = coord[letter] + part if letter in coord else part
        return x[tuple(coord[letter] % factor if factor
                       else coord[letter] // src_factor[letter] if letter in src_factor
                       else coord[letter] for letter, factor in src)]

    return te.compute(out.shape, element, name="layout_transform")


layout_transform = define_op(
    "layout_transform", inputs=("data",), type_rel=_layout_transform_rel,
    compute=_layout_transform, attrs=LayoutTransformAttrs, pattern=OpPattern.INJECTIVE,
    layout=LayoutInfo(layout_attrs=("src_layout", "dst_layout")),
    description="Move a tensor from src_layout to dst_layout (NCHW to NHWC, NCHW to NCHW16c).",
    te_compute=_layout_transform_te)
