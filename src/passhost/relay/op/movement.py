"""Data movement: broadcasting, tiling, cumulative sums and products, triangular masks,
gathers and scatters along axes or by index tuples, one-hot encoding, sequence reversal.

Index conventions of the reference kernels:

* ``gather_elements``, ``gather_nd``, ``scatter_elements`` and ``scatter_nd`` read negative
  indices as counting from the end of their axis (``-1`` is the last element). An index
  outside ``[-n, n)`` raises :class:`IndexRangeError` when the kernel runs (these operators
  are OPAQUE: never fused with others). They have no TE compute: a loop nest could not
  raise that error, so they always run their kernels.
* ``one_hot`` reads a negative index ``i`` as ``i + depth``; an index outside
  ``[-depth, depth)`` gives a row of ``off_value`` (no error).
* ``reverse_sequence`` raises :class:`IndexRangeError` for a sequence length outside
  ``[0, n]`` (n: the length of the sequence axis); it too always runs its kernel.
* ``cumsum`` and ``cumprod`` compile to loops (a reduction per element) for axes of at
  most :data:`CUMULATIVE_TE_LIMIT` elements; longer ones keep the kernel.
* Scatters with ``reduction="none"`` and repeated indices keep one of the updates (which one
  is unspecified, as in ONNX); the reductions ``add``, ``mul``, ``max`` and ``min`` combine
  every update for an element with its original value.

Kernels return fresh arrays (never views of their inputs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from passhost import te
from passhost.errors import AttrError, PasshostError
from passhost.ir.attrs import Attrs, attrs_class, bool_field, int_field, ints_field, str_field
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES, TensorType, Type
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.registry import ArgTypes, OpPattern, TECompute, define_op
from passhost.relay.op.te_movement import load_index, zeros
from passhost.tir.expr import PrimExpr, Select, const

__all__ = [
    "IndexRangeError", "broadcast_to", "cumprod", "cumsum", "gather_elements", "gather_nd",
    "one_hot", "reverse_sequence", "scatter_elements", "scatter_nd", "tile", "trilu",
]

_INDEX_DTYPES = ("int32", "int64")
_NUMERIC = ANY_FLOAT_DTYPES + INT_DTYPES
_REDUCTIONS = ("none", "add", "mul", "max", "min")


class IndexRangeError(PasshostError, ValueError):
    """An index read by a gather, scatter or sequence kernel lies outside its axis."""


def _attr_error(name: str, expected: str, value: Any) -> AttrError:
    return AttrError(f"attribute '{name}': expected {expected}, found {value!r}")


def _in_range(op: str, what: str, idx: np.ndarray, n: int, axis: int) -> np.ndarray:
    """``idx`` (int64) with negative entries counted from the end of an axis of length
    ``n``; raises :class:`IndexRangeError` for entries outside ``[-n, n)``."""
    idx = idx.astype(np.int64)
    bad = (idx < -n) | (idx >= n)
    if np.any(bad):
        raise IndexRangeError(f"{op}: {what} {int(idx[bad].reshape(-1)[0])} is out of range "
                              f"[{-n}, {n}) for axis {axis} of length {n}")
    return np.where(idx < 0, idx + n, idx)


# -- broadcast_to -------------------------------------------------------------------------------
@attrs_class
class BroadcastToAttrs(Attrs):
    """Attributes of ``broadcast_to``: the result's shape."""

    shape: tuple[int, ...] = ints_field()

    def __attrs_post_init__(self) -> None:
        if any(d < 0 for d in self.shape):
            raise _attr_error("shape", "non-negative dimensions", self.shape)


def _broadcast_to_rel(args: ArgTypes, attrs_value: BroadcastToAttrs) -> Type:
    data = args.tensor(0)
    shape = attrs_value.shape
    if len(shape) < data.ndim:
        args.fail_attr("shape", f"at least {data.ndim} dimensions (the rank of {data})", shape)
    for k in range(1, data.ndim + 1):
        if data.shape[-k] not in (1, shape[-k]):
            args.fail_attr("shape", f"a shape {data} broadcasts to (NumPy rules)", shape)
    return TensorType(shape, data.dtype)


def _broadcast_to(attrs_value: BroadcastToAttrs, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, attrs_value.shape).copy()


def _broadcast_to_te(_attrs: BroadcastToAttrs, inputs: Sequence[te.Tensor],
                     out: TensorType) -> te.Tensor:
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "broadcast_to")
    return te.broadcast(lambda x: x, inputs[0], shape=out.shape, name="broadcast_to")


broadcast_to = define_op(
    "broadcast_to", inputs=("data",), type_rel=_broadcast_to_rel, compute=_broadcast_to,
    attrs=BroadcastToAttrs, pattern=OpPattern.BROADCAST,
    description="Broadcast to the given shape (NumPy rules: axes of length 1 repeat, new "
                "axes are added in front).", te_compute=_broadcast_to_te)


# -- tile ---------------------------------------------------------------------------------------
@attrs_class
class TileAttrs(Attrs):
    """Attributes of ``tile``: how many times to repeat each axis."""

    reps: tuple[int, ...] = ints_field()

    def __attrs_post_init__(self) -> None:
        if any(r < 0 for r in self.reps):
            raise _attr_error("reps", "non-negative repetitions", self.reps)


def _tile_rel(args: ArgTypes, attrs_value: TileAttrs) -> Type:
    data = args.tensor(0)
    reps = attrs_value.reps
    rank = max(data.ndim, len(reps))
    shape = (1,) * (rank - data.ndim) + data.shape
    reps = (1,) * (rank - len(reps)) + reps
    return TensorType(tuple(d * r for d, r in zip(shape, reps)), data.dtype)


def _tile(attrs_value: TileAttrs, x: np.ndarray) -> np.ndarray:
    return np.tile(x, attrs_value.reps)


def _tile_te(attrs_value: TileAttrs, inputs: Sequence[te.Tensor],
             out: TensorType) -> te.Tensor:
    x = inputs[0]
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "tile")
    lead = out.ndim - x.ndim
    reps = (1,) * (out.ndim - len(attrs_value.reps)) + attrs_value.reps

    def source(index: PrimExpr, dim: int, rep: int) -> PrimExpr:
        if dim == 1:
            return const(0, te.INDEX_DTYPE)
        return index if rep == 1 else index % dim

    return te.compute(out.shape, lambda *i: x[tuple(
        source(i[lead + d], dim, reps[lead + d]) for d, dim in enumerate(x.shape))],
        name="tile")


tile = define_op(
    "tile", inputs=("data",), type_rel=_tile_rel, compute=_tile, attrs=TileAttrs,
    pattern=OpPattern.INJECTIVE,
    description="Repeat the whole tensor reps[i] times along axis i (NumPy tile: the shorter "
                "of rank and len(reps) is padded with leading ones).", te_compute=_tile_te)


# -- cumsum / cumprod ---------------------------------------------------------------------------
@attrs_class
class CumulativeAttrs(Attrs):
    """Attributes of ``cumsum`` and ``cumprod``: the axis; whether each element is left out
    of its own result (``exclusive``); whether to run from the end (``reverse``)."""

    axis: int = int_field(0)
    exclusive: bool = bool_field(False)
    reverse: bool = bool_field(False)


def _cumulative_rel(args: ArgTypes, attrs_value: CumulativeAttrs) -> Type:
    data = args.tensor(0, dtypes=_NUMERIC)
    if data.ndim == 0:
        args.fail(0, "a tensor of rank >= 1", data)
    normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    return data


def _cumulative(ufunc: np.ufunc, identity: int) -> Any:
    def compute(attrs_value: CumulativeAttrs, x: np.ndarray) -> np.ndarray:
        axis = attrs_value.axis % x.ndim
        acc = acc_float(x.dtype)
        y = (np.flip(x, axis) if attrs_value.reverse else x).astype(acc, copy=False)
        with np.errstate(all="ignore"):
            out = ufunc.accumulate(y, axis=axis, dtype=acc)
        if attrs_value.exclusive:
            lead_shape = list(out.shape)
            lead_shape[axis] = 1
            lead = np.full(lead_shape, identity, dtype=out.dtype)
            out = np.concatenate([lead, out], axis=axis)
            out = np.delete(out, -1, axis=axis)
        if attrs_value.reverse:
            out = np.flip(out, axis)
        return np.ascontiguousarray(out, dtype=x.dtype)

    return compute


#: The longest axis a cumulative sum or product is lowered to loops for: each element is a
#: reduction over the whole axis (quadratic work), so longer axes keep the kernel.
CUMULATIVE_TE_LIMIT = 64


def _cumulative_dtype(dtype: str) -> str:
    """The dtype the running sums and products are computed in: the reference's for floats,
    the unsigned one of the same width for signed integers (wrapping without overflow)."""
    if dtype.startswith("int"):
        return "u" + dtype
    return acc_float(np.dtype(dtype)).name


def _cumulative_te(combine: str) -> TECompute:
    def te_compute(attrs_value: CumulativeAttrs, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor | None:
        x = inputs[0]
        axis = attrs_value.axis % x.ndim
        n = x.shape[axis]
        if n > CUMULATIVE_TE_LIMIT:
            return None
        if math.prod(out.shape) == 0:
            return zeros(out.shape, out.dtype, combine)
        acc = _cumulative_dtype(out.dtype)
        exclusive, reverse = attrs_value.exclusive, attrs_value.reverse
        # A running sum starts from -0.0, which keeps the sign of a first term -0.0 as the
        # reference's accumulation does (the empty sum of an exclusive one is +0.0, below).
        reducer = te.prod if combine == "cumprod" else te.Reducer(
            "sum", lambda a, v: a + v, lambda d: te.fill(-0.0, d))

        def element(*i: PrimExpr) -> Any:
            k = te.reduce_axis(n, "k")
            # The terms in the reference's order: from the end when reversed.
            j = n - 1 - k.var if reverse else k.var
            here = i[axis]
            if reverse:
                keep = j > here if exclusive else j >= here
            else:
                keep = j < here if exclusive else j <= here
            term = te.cast(x[(*i[:axis], j, *i[axis + 1:])], acc)
            return reducer(term, axis=k, where=keep)

        running = te.compute(out.shape, element, name=f"{combine}_{acc}")
        empty_at = n - 1 if reverse else 0
        fix_empty = combine == "cumsum" and exclusive and acc.startswith("float")
        if acc == out.dtype and not fix_empty:
            return running

        def result(*i: PrimExpr) -> PrimExpr:
            value = te.cast(running[i], out.dtype)
            if fix_empty:
                return Select(i[axis].equal(empty_at), te.fill(0, out.dtype), value)
            return value

        return te.compute(out.shape, result, name=combine)

    return te_compute


cumsum = define_op(
    "cumsum", inputs=("data",), type_rel=_cumulative_rel, compute=_cumulative(np.add, 0),
    attrs=CumulativeAttrs, pattern=OpPattern.OPAQUE,
    description="Running sum along an axis (exclusive: without the element itself; reverse: "
                "from the end). Integers wrap around.", te_compute=_cumulative_te("cumsum"))
cumprod = define_op(
    "cumprod", inputs=("data",), type_rel=_cumulative_rel,
    compute=_cumulative(np.multiply, 1), attrs=CumulativeAttrs, pattern=OpPattern.OPAQUE,
    description="Running product along an axis (exclusive: without the element itself; "
                "reverse: from the end). Integers wrap around.",
    te_compute=_cumulative_te("cumprod"))


# -- trilu --------------------------------------------------------------------------------------
@attrs_class
class TriluAttrs(Attrs):
    """Attributes of ``trilu``: keep the upper (True) or the lower triangle."""

    upper: bool = bool_field(True)


def _trilu_rel(args: ArgTypes, _attrs: TriluAttrs) -> Type:
    data = args.tensor(0)
    if data.ndim < 2:
        args.fail(0, "a tensor of rank >= 2 (matrices in the last two axes)", data)
    args.tensor(1, ndim=0, dtypes=_INDEX_DTYPES)
    return data


def _trilu(attrs_value: TriluAttrs, x: np.ndarray, k: np.ndarray) -> np.ndarray:
    rows, cols = x.shape[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    k = int(k)
    keep = offset >= k if attrs_value.upper else offset <= k
    return np.where(keep, x, np.zeros((), x.dtype))


def _trilu_te(attrs_value: TriluAttrs, inputs: Sequence[te.Tensor],
              out: TensorType) -> te.Tensor:
    x, k = inputs
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "trilu")

    def element(*i: PrimExpr) -> PrimExpr:
        offset = i[-1] - i[-2]  # column minus row
        diagonal = load_index(k, ())
        keep = offset >= diagonal if attrs_value.upper else offset <= diagonal
        return Select(keep, x[i], te.fill(0, out.dtype))

    return te.compute(out.shape, element, name="trilu")


trilu = define_op(
    "trilu", inputs=("data", "k"), type_rel=_trilu_rel, compute=_trilu, attrs=TriluAttrs,
    pattern=OpPattern.INJECTIVE, te_compute=_trilu_te,
    description="Zero every element below (upper) or above (lower) diagonal k of the "
                "matrices in the last two axes; k is a 0-D integer tensor (k > 0: above the "
                "main diagonal).")


# -- gather_elements ----------------------------------------------------------------------------
@attrs_class
class AxisAttrs(Attrs):
    """Attributes of ``gather_elements``: the axis the indices select along."""

    axis: int = int_field(0)


def _elements_shape_check(args: ArgTypes, data: TensorType, index: int, axis: int) -> None:
    """Argument ``index`` has data's rank and, off ``axis``, no longer axes than data."""
    ty = args.tensor(index)
    if ty.ndim != data.ndim:
        args.fail(index, f"a tensor of rank {data.ndim} (as data, {data})", ty)
    for d in range(data.ndim):
        if d != axis and ty.shape[d] > data.shape[d]:
            args.fail(index, f"axis {d} of length at most {data.shape[d]} (as data, {data})",
                      ty)


def _gather_elements_rel(args: ArgTypes, attrs_value: AxisAttrs) -> Type:
    data = args.tensor(0)
    if data.ndim == 0:
        args.fail(0, "a tensor of rank >= 1", data)
    axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    indices = args.tensor(1, dtypes=_INDEX_DTYPES)
    _elements_shape_check(args, data, 1, axis)
    if data.shape[axis] == 0 and indices.size:
        args.fail(0, f"a tensor with elements along axis {axis}", data)
    return TensorType(indices.shape, data.dtype)


def _element_index(op: str, data_shape: tuple[int, ...], indices: np.ndarray,
                   axis: int) -> tuple[np.ndarray, ...]:
    """The full index tuple that puts ``indices`` along ``axis`` of data."""
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = _in_range(op, "index", indices, data_shape[axis], axis)
    return tuple(grid)


def _gather_elements(attrs_value: AxisAttrs, data: np.ndarray,
                     indices: np.ndarray) -> np.ndarray:
    axis = attrs_value.axis % data.ndim
    return data[_element_index("gather_elements", data.shape, indices, axis)]


gather_elements = define_op(
    "gather_elements", inputs=("data", "indices"), type_rel=_gather_elements_rel,
    compute=_gather_elements, attrs=AxisAttrs, pattern=OpPattern.OPAQUE,
    description="out[i][j][k] = data[indices[i][j][k]][j][k] for axis 0 (and likewise for "
                "other axes); the output has the shape of indices. Negative indices count "
                "from the end; out-of-range ones are an error when the kernel runs.")


# -- gather_nd ----------------------------------------------------------------------------------
@attrs_class
class GatherNDAttrs(Attrs):
    """Attributes of ``gather_nd``: how many leading axes data and indices share as batch."""

    batch_dims: int = int_field(0, minimum=0)


def _nd_depth(args: ArgTypes, data: TensorType, indices: TensorType, batch: int) -> int:
    """The length k of the index tuples (the last axis of indices), checked."""
    if indices.ndim < 1:
        args.fail(1, "a tensor of rank >= 1 (index tuples in the last axis)", indices)
    if batch >= min(data.ndim, indices.ndim):
        args.fail_attr("batch_dims", f"fewer than the ranks of data ({data.ndim}) and "
                       f"indices ({indices.ndim})", batch)
    if data.shape[:batch] != indices.shape[:batch]:
        args.fail(1, f"leading {batch} batch axes {data.shape[:batch]} (as data, {data})",
                  indices)
    k = indices.shape[-1]
    if not 1 <= k <= data.ndim - batch:
        args.fail(1, f"index tuples of 1 to {data.ndim - batch} values (the rank of data "
                  f"after {batch} batch axes) in the last axis", indices)
    for d in range(batch, batch + k):
        if data.shape[d] == 0 and indices.size:
            args.fail(0, f"a tensor with elements along axis {d}", data)
    return k


def _gather_nd_rel(args: ArgTypes, attrs_value: GatherNDAttrs) -> Type:
    data = args.tensor(0)
    indices = args.tensor(1, dtypes=_INDEX_DTYPES)
    k = _nd_depth(args, data, indices, attrs_value.batch_dims)
    shape = (*indices.shape[:-1], *data.shape[attrs_value.batch_dims + k:])
    return TensorType(shape, data.dtype)


def _count(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _nd_index(op: str, shape: tuple[int, ...], indices: np.ndarray,
              batch: int) -> tuple[np.ndarray, ...]:
    """The advanced index into data (batch axes flattened to one) of every index tuple:
    arrays of shape (B, M) for B batch entries of M tuples each."""
    k = indices.shape[-1]
    nbatch = _count(shape[:batch])
    tuples = indices.reshape(nbatch, _count(indices.shape[batch:-1]), k)
    index = [np.arange(nbatch)[:, None]]
    for j in range(k):
        index.append(_in_range(op, "index", tuples[..., j], shape[batch + j], batch + j))
    return tuple(index)


def _gather_nd(attrs_value: GatherNDAttrs, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    batch = attrs_value.batch_dims
    k = indices.shape[-1]
    flat = data.reshape((_count(data.shape[:batch]), *data.shape[batch:]))
    picked = flat[_nd_index("gather_nd", data.shape, indices, batch)]
    return picked.reshape((*indices.shape[:-1], *data.shape[batch + k:]))


gather_nd = define_op(
    "gather_nd", inputs=("data", "indices"), type_rel=_gather_nd_rel, compute=_gather_nd,
    attrs=GatherNDAttrs, pattern=OpPattern.OPAQUE,
    description="Gather the slices of data addressed by the index tuples in the last axis of "
                "indices (after batch_dims shared leading axes), as ONNX GatherND. Negative "
                "indices count from the end; out-of-range ones are an error when the kernel "
                "runs.")


# -- scatter_elements / scatter_nd --------------------------------------------------------------
@attrs_class
class ScatterElementsAttrs(Attrs):
    """Attributes of ``scatter_elements``: the axis and how updates combine with data."""

    axis: int = int_field(0)
    reduction: str = str_field("none", choices=_REDUCTIONS)


@attrs_class
class ScatterNDAttrs(Attrs):
    """Attributes of ``scatter_nd``: how updates combine with data."""

    reduction: str = str_field("none", choices=_REDUCTIONS)


def _scatter_dtype_check(args: ArgTypes, reduction: str) -> TensorType:
    data = args.tensor(0)
    args.tensor(1, dtypes=_INDEX_DTYPES)
    args.same_dtype(0, 2)
    if reduction != "none" and data.dtype == "bool":
        args.fail(0, f"a numeric tensor (reduction {reduction!r})", data)
    return data


def _scatter_elements_rel(args: ArgTypes, attrs_value: ScatterElementsAttrs) -> Type:
    data = _scatter_dtype_check(args, attrs_value.reduction)
    if data.ndim == 0:
        args.fail(0, "a tensor of rank >= 1", data)
    axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    indices, updates = args.tensor(1), args.tensor(2)
    if updates.shape != indices.shape:
        args.fail(2, f"a tensor of the shape of indices, {indices}", updates)
    _elements_shape_check(args, data, 1, axis)
    if data.shape[axis] == 0 and indices.size:
        args.fail(0, f"a tensor with elements along axis {axis}", data)
    return data


_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_into(data: np.ndarray, index: tuple[np.ndarray, ...], updates: np.ndarray,
                  reduction: str) -> np.ndarray:
    out = data.copy()
    if reduction == "none":
        out[index] = updates
    else:
        with np.errstate(all="ignore"):
            _UFUNCS[reduction].at(out, index, updates)
    return out


def _scatter_elements(attrs_value: ScatterElementsAttrs, data: np.ndarray, indices: np.ndarray,
                      updates: np.ndarray) -> np.ndarray:
    axis = attrs_value.axis % data.ndim
    index = _element_index("scatter_elements", data.shape, indices, axis)
    return _scatter_into(data, index, updates, attrs_value.reduction)


scatter_elements = define_op(
    "scatter_elements", inputs=("data", "indices", "updates"),
    type_rel=_scatter_elements_rel, compute=_scatter_elements, attrs=ScatterElementsAttrs,
    pattern=OpPattern.OPAQUE,
    description="A copy of data with out[indices[i][j]][j] = updates[i][j] for axis 0 (and "
                "likewise for other axes), or combined with the reduction add, mul, max or "
                "min. Negative indices count from the end; out-of-range ones are an error when "
                "the kernel runs.")


def _scatter_nd_rel(args: ArgTypes, attrs_value: ScatterNDAttrs) -> Type:
    data = _scatter_dtype_check(args, attrs_value.reduction)
    indices, updates = args.tensor(1), args.tensor(2)
    k = _nd_depth(args, data, indices, 0)
    want = (*indices.shape[:-1], *data.shape[k:])
    if updates.shape != want:
        args.fail(2, f"a tensor of shape {want} (indices.shape[:-1] + data.shape[{k}:])",
                  updates)
    return data


def _scatter_nd(attrs_value: ScatterNDAttrs, data: np.ndarray, indices: np.ndarray,
                updates: np.ndarray) -> np.ndarray:
    k = indices.shape[-1]
    index = _nd_index("scatter_nd", data.shape, indices, 0)[1:]
    flat_updates = updates.reshape((_count(indices.shape[:-1]), *data.shape[k:]))
    return _scatter_into(data, tuple(i[0] for i in index), flat_updates, attrs_value.reduction)


scatter_nd = define_op(
    "scatter_nd", inputs=("data", "indices", "updates"), type_rel=_scatter_nd_rel,
    compute=_scatter_nd, attrs=ScatterNDAttrs, pattern=OpPattern.OPAQUE,
    description="A copy of data with the slices addressed by the index tuples in the last "
                "axis of indices replaced by (or combined with the reduction add, mul, max or "
                "min with) updates, as ONNX ScatterND. Negative indices count from the end; "
                "out-of-range ones are an error when the kernel runs.")


# -- one_hot ------------------------------------------------------------------------------------
@attrs_class
class OneHotAttrs(Attrs):
    """Attributes of ``one_hot``: the length of the new axis and where it goes."""

    depth: int = int_field(minimum=1)
    axis: int = int_field(-1)


def _one_hot_rel(args: ArgTypes, attrs_value: OneHotAttrs) -> Type:
    indices = args.tensor(0, dtypes=INT_DTYPES)
    args.tensor(1, ndim=0)
    args.tensor(2, ndim=0)
    dtype = args.same_dtype(1, 2)
    rank = indices.ndim
    axis = attrs_value.axis
    if not -rank - 1 <= axis <= rank:
        args.fail_attr("axis", f"an axis in [{-rank - 1}, {rank}]", axis)
    pos = axis % (rank + 1)
    return TensorType((*indices.shape[:pos], attrs_value.depth, *indices.shape[pos:]), dtype)


def _one_hot(attrs_value: OneHotAttrs, indices: np.ndarray, on: np.ndarray,
             off: np.ndarray) -> np.ndarray:
    depth = attrs_value.depth
    pos = attrs_value.axis % (indices.ndim + 1)
    idx = indices.astype(np.int64)
    idx = np.expand_dims(np.where(idx < 0, idx + depth, idx), pos)
    positions = np.arange(depth).reshape((depth,) + (1,) * (indices.ndim - pos))
    return np.where(idx == positions, on, off).astype(on.dtype)


def _one_hot_te(attrs_value: OneHotAttrs, inputs: Sequence[te.Tensor],
                out: TensorType) -> te.Tensor:
    indices, on, off = inputs
    depth = attrs_value.depth
    pos = attrs_value.axis % (indices.ndim + 1)
    if math.prod(out.shape) == 0:
        return zeros(out.shape, out.dtype, "one_hot")

    def element(*i: PrimExpr) -> PrimExpr:
        index = load_index(indices, (*i[:pos], *i[pos + 1:]))
        # position p is hot for the index p, or p - depth counted from the end (compared,
        # never added to, so that no index overflows).
        p = i[pos]
        hot = index.equal(p) | index.equal(p - depth)
        return Select(hot, on[()], off[()])

    return te.compute(out.shape, element, name="one_hot")


one_hot = define_op(
    "one_hot", inputs=("indices", "on_value", "off_value"), type_rel=_one_hot_rel,
    compute=_one_hot, attrs=OneHotAttrs, pattern=OpPattern.INJECTIVE, te_compute=_one_hot_te,
    description="Insert an axis of length depth at axis: on_value where its position equals "
                "the index (negative indices count back from depth), off_value elsewhere and "
                "for indices outside [-depth, depth).")


# -- reverse_sequence ---------------------------------------------------------------------------
@attrs_class
class ReverseSequenceAttrs(Attrs):
    """Attributes of ``reverse_sequence``: the sequence (time) axis and the batch axis."""

    seq_axis: int = int_field(1)
    batch_axis: int = int_field(0)


def _reverse_axes(args: ArgTypes | None, attrs_value: ReverseSequenceAttrs,
                  ndim: int) -> tuple[int, int]:
    if args is None:
        return attrs_value.seq_axis % ndim, attrs_value.batch_axis % ndim
    seq = normalize_axis(args, "seq_axis", attrs_value.seq_axis, ndim)
    batch = normalize_axis(args, "batch_axis", attrs_value.batch_axis, ndim)
    if seq == batch:
        args.fail_attr("batch_axis", f"an axis other than seq_axis ({seq})",
                       attrs_value.batch_axis)
    return seq, batch


def _reverse_sequence_rel(args: ArgTypes, attrs_value: ReverseSequenceAttrs) -> Type:
    data = args.tensor(0)
    if data.ndim < 2:
        args.fail(0, "a tensor of rank >= 2 (a batch axis and a sequence axis)", data)
    _, batch = _reverse_axes(args, attrs_value, data.ndim)
    lengths = args.tensor(1, ndim=1, dtypes=_INDEX_DTYPES)
    if lengths.shape[0] != data.shape[batch]:
        args.fail(1, f"one length per batch entry ({data.shape[batch]}, axis {batch} of "
                  f"{data})", lengths)
    return data


def _reverse_sequence(attrs_value: ReverseSequenceAttrs, data: np.ndarray,
                      lengths: np.ndarray) -> np.ndarray:
    seq, batch = _reverse_axes(None, attrs_value, data.ndim)
    steps = data.shape[seq]
    lens = lengths.astype(np.int64)
    bad = (lens < 0) | (lens > steps)
    if np.any(bad):
        raise IndexRangeError(f"reverse_sequence: sequence length {int(lens[bad][0])} is out "
                              f"of range [0, {steps}] (axis {seq})")
    t = np.arange(steps)[None, :]
    source = np.where(t < lens[:, None], lens[:, None] - 1 - t, t)  # (batch, steps)
    shape = [1] * data.ndim
    shape[batch], shape[seq] = data.shape[batch], steps
    order = (0, 1) if batch < seq else (1, 0)
    source = source.transpose(order).reshape(shape)
    return np.take_along_axis(data, np.broadcast_to(source, data.shape), axis=seq)


reverse_sequence = define_op(
    "reverse_sequence", inputs=("data", "seq_lengths"), type_rel=_reverse_sequence_rel,
    compute=_reverse_sequence, attrs=ReverseSequenceAttrs, pattern=OpPattern.OPAQUE,
    description="For each batch entry b, reverse the first seq_lengths[b] elements along "
                "seq_axis and keep the rest; a length outside [0, n] is an error when the "
                "kernel runs.")
