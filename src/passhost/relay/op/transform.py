"""Shape and data-movement operators (reshape, transpose, concatenate, ...).

Semantics follow TVM's Relay operators of the same names:

* ``reshape``: in ``newshape`` 0 copies the input dimension at the same position and -1
  (at most once) is inferred from the element count (TVM's -2, -3 and -4 are not supported).
* ``split``: an int is a number of equal sections; a tuple holds the strictly increasing
  indices at which to cut (each in ``(0, length)``), giving ``len(indices) + 1`` pieces.
* ``strided_slice``: each sliced axis is sliced as a Python ``slice(begin, end, stride)``:
  negative indices count from the end, ``begin`` and ``end`` are clamped to the axis, and a
  negative stride walks backwards. Without ``axes`` the first ``len(begin)`` axes are sliced;
  a missing ``end`` slices to the end (in the stride's direction) and missing strides are 1.
  ``slice_mode="size"`` reads ``end`` as sizes (-1: to the end) and ignores ``strides``.
* ``take``: ``mode="clip"`` clamps indices into ``[0, n - 1]`` (so -1 becomes 0), ``"wrap"``
  takes them modulo ``n``; ``"fast"`` assumes they are in range (the reference kernel wraps).

Kernels return fresh arrays (never views of their inputs).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from attrs import field

from passhost import te
from passhost.errors import AttrError
from passhost.ir.attrs import Attrs, attrs_class, int_field, ints_field, str_field
from passhost.ir.types import TensorType, TupleType, Type
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.registry import ArgTypes, OpPattern, define_op
from passhost.relay.op.te_movement import clamp, load_index, permute_te, reshape_te, zeros
from passhost.tir.expr import Max, Min, PrimExpr, Select, const

__all__ = [
    "concatenate", "expand_dims", "reshape", "split", "squeeze",
    "strided_slice", "take", "transpose",
]


def _attr_error(name: str, expected: str, value: Any) -> AttrError:
    return AttrError(f"attribute '{name}': expected {expected}, found {value!r}")


def _prod(dims: tuple[int, ...] | list[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _distinct_axes(args: ArgTypes, attr: str, axes: tuple[int, ...], ndim: int) -> list[int]:
    out = [normalize_axis(args, attr, a, ndim) for a in axes]
    if len(set(out)) != len(out):
        args.fail_attr(attr, "distinct axes", axes)
    return out


# -- reshape ------------------------------------------------------------------------------------
@attrs_class
class ReshapeAttrs(Attrs):
    """Attributes of ``reshape``: the new shape, with 0 (copy) and -1 (infer) allowed."""

    newshape: tuple[int, ...] = ints_field(expand=1)

    def __attrs_post_init__(self) -> None:
        if any(d < -1 for d in self.newshape) or self.newshape.count(-1) > 1:
            raise _attr_error("newshape", "a tuple of ints >= 0 with at most one -1",
                              self.newshape)


def _reshape_rel(args: ArgTypes, attrs_value: ReshapeAttrs) -> Type:
    data = args.tensor(0)
    newshape = attrs_value.newshape
    out: list[int] = []
    infer = None
    for i, d in enumerate(newshape):
        if d == 0:
            if i >= data.ndim:
                args.fail_attr("newshape", f"0 (copy a dimension) only at positions below the "
                               f"input's rank {data.ndim}", newshape)
            out.append(data.shape[i])
        elif d == -1:
            infer = i
            out.append(1)
        else:
            out.append(d)
    known = _prod(out)
    if infer is not None:
        if known == 0 or data.size % known:
            args.fail_attr("newshape", f"a shape of {data.size} elements (as {data})", newshape)
        out[infer] = data.size // known
    if _prod(out) != data.size:
        args.fail_attr("newshape", f"a shape of {data.size} elements (as {data})", newshape)
    return TensorType(tuple(out), data.dtype)


def _reshape(attrs_value: ReshapeAttrs, x: np.ndarray) -> np.ndarray:
    shape = []
    for i, d in enumerate(attrs_value.newshape):
        shape.append(x.shape[i] if d == 0 else d)
    return np.reshape(x, shape).copy()


def _reshape_te(_attrs: ReshapeAttrs, inputs: Sequence[te.Tensor],
                out: TensorType) -> te.Tensor:
    return reshape_te(inputs[0], out.shape, "reshape")


reshape = define_op(
    "reshape", inputs=("data",), type_rel=_reshape_rel, compute=_reshape, attrs=ReshapeAttrs,
    pattern=OpPattern.INJECTIVE,
    description="Reshape (row-major); in newshape 0 copies a dimension, -1 is inferred.",
    te_compute=_reshape_te)


# -- transpose ----------------------------------------------------------------------------------
@attrs_class
class TransposeAttrs(Attrs):
    """Attributes of ``transpose``: the axis permutation (None reverses the axes)."""

    axes: tuple[int, ...] | None = ints_field(None, optional=True)


def _perm(args: ArgTypes, attrs_value: TransposeAttrs, ndim: int) -> list[int]:
    if attrs_value.axes is None:
        return list(range(ndim))[::-1]
    if len(attrs_value.axes) != ndim:
        args.fail_attr("axes", f"a permutation of {ndim} axes", attrs_value.axes)
    return _distinct_axes(args, "axes", attrs_value.axes, ndim)


def _transpose_rel(args: ArgTypes, attrs_value: TransposeAttrs) -> Type:
    data = args.tensor(0)
    perm = _perm(args, attrs_value, data.ndim)
    return TensorType(tuple(data.shape[p] for p in perm), data.dtype)


def _transpose(attrs_value: TransposeAttrs, x: np.ndarray) -> np.ndarray:
    axes = None if attrs_value.axes is None else [a % x.ndim for a in attrs_value.axes]
    return np.transpose(x, axes).copy()


def _transpose_te(attrs_value: TransposeAttrs, inputs: Sequence[te.Tensor],
                  _out: TensorType) -> te.Tensor:
    x = inputs[0]
    if attrs_value.axes is None:
        perm = list(range(x.ndim))[::-1]
    else:
        perm = [a % x.ndim for a in attrs_value.axes]
    return permute_te(x, perm, "transpose")


transpose = define_op(
    "transpose", inputs=("data",), type_rel=_transpose_rel, compute=_transpose,
    attrs=TransposeAttrs, pattern=OpPattern.INJECTIVE,
    description="Permute the axes (output axis i is input axis axes[i]).",
    te_compute=_transpose_te)


# -- squeeze / expand_dims ----------------------------------------------------------------------
@attrs_class
class SqueezeAttrs(Attrs):
    """Attributes of ``squeeze``: the axes to remove (None: every axis of length 1)."""

    axis: tuple[int, ...] | None = ints_field(None, optional=True, expand=1)


def _squeeze_axes(args: ArgTypes, attrs_value: SqueezeAttrs, data: TensorType) -> list[int]:
    if attrs_value.axis is None:
        return [i for i, d in enumerate(data.shape) if d == 1]
    axes = _distinct_axes(args, "axis", attrs_value.axis, data.ndim)
    for a in axes:
        if data.shape[a] != 1:
            args.fail_attr("axis", f"axes of length 1 in {data}", attrs_value.axis)
    return axes


def _squeeze_rel(args: ArgTypes, attrs_value: SqueezeAttrs) -> Type:
    data = args.tensor(0)
    axes = _squeeze_axes(args, attrs_value, data)
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in axes), data.dtype)


def _squeeze(attrs_value: SqueezeAttrs, x: np.ndarray) -> np.ndarray:
    if attrs_value.axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = tuple(a % x.ndim for a in attrs_value.axis)
    return np.squeeze(x, axis=axes).copy()


def _squeeze_te(_attrs: SqueezeAttrs, inputs: Sequence[te.Tensor],
                out: TensorType) -> te.Tensor:
    return reshape_te(inputs[0], out.shape, "squeeze")


squeeze = define_op(
    "squeeze", inputs=("data",), type_rel=_squeeze_rel, compute=_squeeze, attrs=SqueezeAttrs,
    pattern=OpPattern.INJECTIVE, description="Remove axes of length 1.",
    te_compute=_squeeze_te)


@attrs_class
class ExpandDimsAttrs(Attrs):
    """Attributes of ``expand_dims``: where to insert ``num_newaxis`` axes of length 1."""

    axis: int = int_field()
    num_newaxis: int = int_field(1, minimum=0)


def _expand_position(args: ArgTypes, axis: int, ndim: int) -> int:
    if not -ndim - 1 <= axis <= ndim:
        args.fail_attr("axis", f"an axis in [{-ndim - 1}, {ndim}]", axis)
    return axis + ndim + 1 if axis < 0 else axis


def _expand_dims_rel(args: ArgTypes, attrs_value: ExpandDimsAttrs) -> Type:
    data = args.tensor(0)
    pos = _expand_position(args, attrs_value.axis, data.ndim)
    shape = (*data.shape[:pos], *(1,) * attrs_value.num_newaxis, *data.shape[pos:])
    return TensorType(shape, data.dtype)


def _expand_dims(attrs_value: ExpandDimsAttrs, x: np.ndarray) -> np.ndarray:
    axis = attrs_value.axis
    pos = axis + x.ndim + 1 if axis < 0 else axis
    shape = (*x.shape[:pos], *(1,) * attrs_value.num_newaxis, *x.shape[pos:])
    return np.reshape(x, shape).copy()


def _expand_dims_te(_attrs: ExpandDimsAttrs, inputs: Sequence[te.Tensor],
                    out: TensorType) -> te.Tensor:
    return reshape_te(inputs[0], out.shape, "expand_dims")


expand_dims = define_op(
    "expand_dims", inputs=("data",), type_rel=_expand_dims_rel, compute=_expand_dims,
    attrs=ExpandDimsAttrs, pattern=OpPattern.BROADCAST,
    description="Insert num_newaxis axes of length 1 at position axis.",
    te_compute=_expand_dims_te)


# -- concatenate / split ------------------------------------------------------------------------
@attrs_class
class ConcatenateAttrs(Attrs):
    """Attributes of ``concatenate``: the axis to join along."""

    axis: int = int_field(0)


def _concatenate_rel(args: ArgTypes, attrs_value: ConcatenateAttrs) -> Type:
    fields = args.tensors(0)
    if not fields:
        args.fail(0, "a non-empty tuple of tensors", args[0])
    first = fields[0]
    if first.ndim == 0:
        args.fail(0, "tensors of rank >= 1", args[0])
    axis = normalize_axis(args, "axis", attrs_value.axis, first.ndim)
    total = 0
    for j, ty in enumerate(fields):
        if ty.dtype != first.dtype:
            args.fail(0, f"field {j} of dtype {first.dtype} (as field 0)", ty)
        if ty.ndim != first.ndim:
            args.fail(0, f"field {j} of rank {first.ndim} (as field 0, {first})", ty)
        for k in range(first.ndim):
            if k != axis and ty.shape[k] != first.shape[k]:
                args.fail(0, f"field {j} with dimension {k} = {first.shape[k]} (as field 0, "
                             f"{first}; only axis {axis} may differ)", ty)
        total += ty.shape[axis]
    shape = (*first.shape[:axis], total, *first.shape[axis + 1:])
    return TensorType(shape, first.dtype)


def _concatenate(attrs_value: ConcatenateAttrs, arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.concatenate(arrays, axis=attrs_value.axis)


def _concatenate_te(attrs_value: ConcatenateAttrs, inputs: Sequence[Sequence[te.Tensor]],
                    out: TensorType) -> te.Tensor:
    fields = inputs[0]
    axis = attrs_value.axis % out.ndim
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "concatenate")
    # The fields with elements along the axis, each with its first position in the result.
    parts: list[tuple[te.Tensor, int]] = []
    offset = 0
    for x in fields:
        if x.shape[axis]:
            parts.append((x, offset))
        offset += x.shape[axis]

    def element(*i: PrimExpr) -> PrimExpr:
        # Every field is loaded at an index clamped into its own range (both sides of a
        # select are evaluated), and a balanced tree of selects keeps the field the
        # position lies in: groups of neighbouring fields (first position, value) are
        # joined in pairs, comparing with the second group's first position.
        groups: list[tuple[int, PrimExpr]] = []
        for n, (x, start) in enumerate(parts):
            at = i[axis] - start if start else i[axis]
            if n:
                at = Max(at, const(0, te.INDEX_DTYPE))
            if n < len(parts) - 1:
                at = Min(at, const(x.shape[axis] - 1, te.INDEX_DTYPE))
            groups.append((start, x[(*i[:axis], at, *i[axis + 1:])]))
        while len(groups) > 1:
            pairs = zip(groups[::2], groups[1::2])
            joined = [(a, Select(i[axis] < b, left, right)) for (a, left), (b, right) in pairs]
            groups = joined + groups[len(joined) * 2:]
        return groups[0][1]

    return te.compute(out.shape, element, name="concatenate")


concatenate = define_op(
    "concatenate", inputs=("data",), type_rel=_concatenate_rel, compute=_concatenate,
    attrs=ConcatenateAttrs, pattern=OpPattern.INJECTIVE, tuple_inputs=("data",),
    description="Join a tuple of tensors along an axis.", te_compute=_concatenate_te)


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _sections_convert(v: Any) -> Any:
    if _is_int(v):
        return int(v)
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(int(x) if _is_int(x) else x for x in v)
    return v


def _sections_validate(_inst: Any, attribute: Any, v: Any) -> None:
    if _is_int(v) and v >= 1:
        return
    if (isinstance(v, tuple) and all(_is_int(x) for x in v) and all(x > 0 for x in v)
            and all(a < b for a, b in itertools.pairwise(v))):
        return
    raise _attr_error(attribute.name, "a number of sections >= 1 or a strictly increasing "
                      "tuple of positive split indices", v)


@attrs_class
class SplitAttrs(Attrs):
    """Attributes of ``split``: a number of equal sections or the split indices; the axis."""

    indices_or_sections: int | tuple[int, ...] = field(
        default=None, converter=_sections_convert, validator=_sections_validate)
    axis: int = int_field(0)


def _split_bounds(args: ArgTypes, attrs_value: SplitAttrs, data: TensorType,
                  ) -> tuple[int, list[tuple[int, int]]]:
    if data.ndim == 0:
        args.fail(0, "a tensor of rank >= 1", data)
    axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    n = data.shape[axis]
    ios = attrs_value.indices_or_sections
    if isinstance(ios, int):
        if n % ios:
            args.fail_attr("indices_or_sections",
                           f"a number of sections dividing {n} (axis {axis} of {data})", ios)
        step = n // ios
        return axis, [(i * step, (i + 1) * step) for i in range(ios)]
    if ios and ios[-1] >= n:
        args.fail_attr("indices_or_sections",
                       f"split indices below {n} (axis {axis} of {data})", ios)
    cuts = [0, *ios, n]
    return axis, [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]


def _split_rel(args: ArgTypes, attrs_value: SplitAttrs) -> Type:
    data = args.tensor(0)
    axis, bounds = _split_bounds(args, attrs_value, data)
    pieces = []
    for lo, hi in bounds:
        shape = (*data.shape[:axis], hi - lo, *data.shape[axis + 1:])
        pieces.append(TensorType(shape, data.dtype))
    return TupleType(pieces)


def _split(attrs_value: SplitAttrs, x: np.ndarray) -> tuple[np.ndarray, ...]:
    axis = attrs_value.axis % x.ndim
    ios = attrs_value.indices_or_sections
    n = x.shape[axis]
    if isinstance(ios, int):
        cuts = [i * (n // ios) for i in range(ios + 1)]
    else:
        cuts = [0, *ios, n]
    out = []
    for lo, hi in itertools.pairwise(cuts):
        index = [slice(None)] * x.ndim
        index[axis] = slice(lo, hi)
        out.append(x[tuple(index)].copy())
    return tuple(out)


def _split_te(attrs_value: SplitAttrs, inputs: Sequence[te.Tensor],
              out: TupleType) -> tuple[te.Tensor, ...]:
    x = inputs[0]
    axis = attrs_value.axis % x.ndim
    pieces = []
    start = 0
    for n, piece in enumerate(out.fields):
        name = f"split_{n}"
        if math.prod(piece.shape) == 0:
            pieces.append(zeros(piece.shape, piece.dtype, name))
        else:
            pieces.append(te.compute(
                piece.shape, lambda *i, s=start: x[(*i[:axis], i[axis] + s, *i[axis + 1:])],
                name=name))
        start += piece.shape[axis]
    return tuple(pieces)


split = define_op(
    "split", inputs=("data",), type_rel=_split_rel, compute=_split, attrs=SplitAttrs,
    pattern=OpPattern.INJECTIVE,
    description="Cut a tensor along an axis into equal sections or at given indices "
                "(a tuple of tensors).", te_compute=_split_te)


# -- strided_slice ------------------------------------------------------------------------------
@attrs_class
class StridedSliceAttrs(Attrs):
    """Attributes of ``strided_slice``: per sliced axis begin, end and stride; the axes
    sliced (None: the first ``len(begin)``); ``slice_mode`` "end" or "size"."""

    begin: tuple[int, ...] = ints_field()
    end: tuple[int, ...] = ints_field()
    strides: tuple[int, ...] | None = ints_field(None, optional=True)
    axes: tuple[int, ...] | None = ints_field(None, optional=True)
    slice_mode: str = str_field("end", choices=("end", "size"))

    def __attrs_post_init__(self) -> None:
        if self.strides is not None and 0 in self.strides:
            raise _attr_error("strides", "non-zero strides", self.strides)


def _slices(args: ArgTypes | None, attrs_value: StridedSliceAttrs,
            shape: tuple[int, ...]) -> tuple[slice, ...]:
    """The Python slice of every axis (``args`` given: check the attrs against the shape)."""
    ndim = len(shape)
    begin, end = attrs_value.begin, attrs_value.end
    strides = attrs_value.strides or ()
    if attrs_value.axes is None:
        if args is not None and len(begin) > ndim:
            args.fail_attr("begin", f"at most {ndim} values (the rank of the input)", begin)
        axes = list(range(len(begin)))
    else:
        if args is not None:
            axes = _distinct_axes(args, "axes", attrs_value.axes, ndim)
            if len(begin) != len(axes):
                args.fail_attr("begin", f"{len(axes)} values (one per axis in axes)", begin)
        else:
            axes = [a % ndim for a in attrs_value.axes]
    k = len(axes)
    if args is not None:
        if len(end) > k:
            args.fail_attr("end", f"at most {k} values (as begin)", end)
        if len(strides) > k:
            args.fail_attr("strides", f"at most {k} values (as begin)", strides)
    out = [slice(None)] * ndim
    size_mode = attrs_value.slice_mode == "size"
    for i, axis in enumerate(axes):
        b = begin[i]
        if size_mode:
            n = shape[axis]
            start = slice(b, None).indices(n)[0]
            size = end[i] if i < len(end) else -1
            stop = n if size < 0 else min(start + size, n)
            out[axis] = slice(start, stop, 1)
        else:
            s = strides[i] if i < len(strides) else 1
            e = end[i] if i < len(end) else None
            out[axis] = slice(b, e, s)
    return tuple(out)


def _strided_slice_rel(args: ArgTypes, attrs_value: StridedSliceAttrs) -> Type:
    data = args.tensor(0)
    slices = _slices(args, attrs_value, data.shape)
    shape = tuple(len(range(*s.indices(n))) for s, n in zip(slices, data.shape))
    return TensorType(shape, data.dtype)


def _strided_slice(attrs_value: StridedSliceAttrs, x: np.ndarray) -> np.ndarray:
    return x[_slices(None, attrs_value, x.shape)].copy()


def _strided_slice_te(attrs_value: StridedSliceAttrs, inputs: Sequence[te.Tensor],
                      out: TensorType) -> te.Tensor:
    x = inputs[0]
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "strided_slice")
    # The first element and the step of each axis, as the reference's slices give them.
    ranges = [range(*s.indices(n)) for s, n in zip(_slices(None, attrs_value, x.shape),
                                                    x.shape)]

    def element(*i: PrimExpr) -> PrimExpr:
        return x[tuple(index if (r.start, r.step) == (0, 1) else r.start + index * r.step
                       for index, r in zip(i, ranges))]

    return te.compute(out.shape, element, name="strided_slice")


strided_slice = define_op(
    "strided_slice", inputs=("data",), type_rel=_strided_slice_rel, compute=_strided_slice,
    attrs=StridedSliceAttrs, pattern=OpPattern.INJECTIVE,
    description="Slice axes with begin, end and stride, as Python slicing.",
    te_compute=_strided_slice_te)


# -- take ---------------------------------------------------------------------------------------
@attrs_class
class TakeAttrs(Attrs):
    """Attributes of ``take``: the axis (None: the flattened input) and the index mode."""

    axis: int | None = int_field(None, optional=True)
    mode: str = str_field("clip", choices=("clip", "wrap", "fast"))


def _take_rel(args: ArgTypes, attrs_value: TakeAttrs) -> Type:
    data = args.tensor(0)
    indices = args.tensor(1, dtypes=("int32", "int64"))
    if attrs_value.axis is None:
        n, shape = data.size, indices.shape
    else:
        if data.ndim == 0:
            args.fail(0, "a tensor of rank >= 1 (take has an axis)", data)
        axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
        n = data.shape[axis]
        shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1:])
    if n == 0 and indices.size:
        args.fail(0, "a tensor with elements to take", data)
    return TensorType(shape, data.dtype)


def _take(attrs_value: TakeAttrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    axis = attrs_value.axis
    n = data.size if axis is None else data.shape[axis]
    idx = indices.astype(np.int64)
    if n > 0:
        idx = np.clip(idx, 0, n - 1) if attrs_value.mode == "clip" else np.mod(idx, n)
    return np.asarray(np.take(data, idx, axis=axis), dtype=data.dtype)


def _take_te(attrs_value: TakeAttrs, inputs: Sequence[te.Tensor],
             out: TensorType) -> te.Tensor:
    data, indices = inputs
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "take")
    axis = attrs_value.axis
    n = math.prod(data.shape) if axis is None else data.shape[axis]

    def position(at: Sequence[PrimExpr]) -> PrimExpr:
        # The reference's index modes; "fast" wraps as "wrap" does.
        index = load_index(indices, at)
        return clamp(index, 0, n - 1) if attrs_value.mode == "clip" else index % n

    if axis is None:
        return te.compute(out.shape, lambda *i: data[te.unflatten_index(position(i),
                                                                         data.shape)],
                          name="take")
    axis %= data.ndim
    depth = indices.ndim

    def element(*i: PrimExpr) -> PrimExpr:
        at = position(i[axis:axis + depth])
        return data[(*i[:axis], at, *i[axis + depth:])]

    return te.compute(out.shape, element, name="take")


take = define_op(
    "take", inputs=("data", "indices"), type_rel=_take_rel, compute=_take, attrs=TakeAttrs,
    pattern=OpPattern.INJECTIVE,
    description="Gather elements along an axis (or of the flattened tensor) at indices.",
    te_compute=_take_te)


