"""Converters of the ONNX data movement: shapes and constants (Reshape, Transpose, Concat,
Flatten, (Un)Squeeze, Shape, Size, ConstantOfShape, EyeLike, Range, Split, Slice,
Pad), Expand, Tile, CumSum/CumProd, Trilu, OneHot,
DepthToSpace/SpaceToDepth, ReverseSequence and Einsum (gathers and scatters:
``onnx_gather``).

Shapes are static in passhost, so every operand that decides an output's shape (a target
shape, pads, starts and ends, split sizes, repeats, a depth, ...) must be known while
compiling: a constant, an initializer, or folded from them (for example from ``Shape``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from onnx import TensorProto, helper

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_einsum import EinsumError, einsum
from passhost.frontend.onnx_ops import axis_index
from passhost.frontend.onnx_registry import Entry
from passhost.ir.types import DTYPES, INT_DTYPES
from passhost.relay import nn
from passhost.relay.expr import Constant, Expr, const

__all__ = ["CONVERTERS", "exact", "one_of", "onnx_dtype"]


def onnx_dtype(ctx: NodeContext, code: int) -> str:
    """The passhost dtype of ONNX element type ``code`` (an error naming the node when
    passhost has no such dtype, e.g. bfloat16 or string)."""
    try:
        name = np.dtype(helper.tensor_dtype_to_np_dtype(int(code))).name
    except (KeyError, TypeError, ValueError):
        name = None
    if name not in DTYPES:
        label = TensorProto.DataType.Name(int(code)).lower() \
            if int(code) in TensorProto.DataType.values() else str(code)
        raise ctx.error(f"expected an element type passhost supports ({', '.join(DTYPES)}), "
                        f"found {label}")
    return name


def exact(value: object) -> Expr:
    """A constant of exactly ``value``'s dtype (``const`` alone narrows float64 and int64
    scalars)."""
    array = np.asarray(value)
    return const(array, dtype=array.dtype.name)


_SHAPE_DECIDING = "the output's shape depends on its values"


def _shape_input(ctx: NodeContext, index: int, what: str,
                 why: str = _SHAPE_DECIDING) -> list[int]:
    """The integers of input ``index``, which must be known while importing (``why``)."""
    return [int(v) for v in ctx.known(index, what, why).reshape(-1)]


def _ints_or_attr(ctx: NodeContext, index: int, attr: str, what: str) -> list[int] | None:
    """Integers from input ``index`` (known while compiling) or, when it is absent, from
    attribute ``attr`` (None if neither is given): ONNX moved axes and sizes to inputs."""
    if ctx.has_input(index):
        return _shape_input(ctx, index, what)
    return ctx.known_ints(index, attr)


def _scalar_input(ctx: NodeContext, index: int, what: str,
                  why: str = _SHAPE_DECIDING) -> np.generic:
    """The single value of input ``index``, which must be known while importing (``why``)."""
    value = ctx.known(index, what, why)
    if value.size != 1:
        raise ctx.error(f"expected {what} (input {index}) to be a scalar, found shape "
                        f"{list(value.shape)}")
    return value.reshape(-1)[0]


def one_of(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _distinct_axes(ctx: NodeContext, axes: Sequence[int], ndim: int, what: str) -> list[int]:
    out = [axis_index(ctx, a, ndim) for a in axes]
    if len(set(out)) != len(out):
        raise ctx.error(f"expected distinct {what}, found {list(axes)}")
    return out


def _scalar_expr(ctx: NodeContext, index: int) -> Expr:
    """Input ``index`` (one element) as a 0-D expression."""
    if ctx.is_known(index):
        value = ctx.known(index)
        if value.size != 1:
            raise ctx.error(f"expected input {index} to hold one value, found shape "
                            f"{list(value.shape)}")
        return exact(value.reshape(()))
    shape = ctx.shape(index)
    if math.prod(shape) != 1:
        raise ctx.error(f"expected input {index} to hold one value, found shape {list(shape)}")
    return relay.reshape(ctx.input(index), newshape=()) if shape else ctx.input(index)


# -- shapes and constants ------------------------------------------------------------------------
def _shape(ctx: NodeContext) -> Value:
    """Shape becomes a constant (shapes are static); ``start`` and ``end`` slice it as Python
    slicing does (negative values count from the end, out-of-range values are clamped)."""
    shape = np.asarray(ctx.shape(0), dtype="int64")
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    return shape[start:None if end is None else int(end)].copy()


def _size(ctx: NodeContext) -> Value:
    """Size becomes a constant: the element count of the static input shape (int64)."""
    return np.asarray(math.prod(ctx.shape(0)), dtype="int64")


def _constant_of_shape(ctx: NodeContext) -> Value:
    """ConstantOfShape becomes a constant; the shape must be known while compiling, and the
    fill value's type must be one passhost has (default: float32 zeros)."""
    shape = _shape_input(ctx, 0, "the shape")
    if any(d < 0 for d in shape):
        raise ctx.error(f"expected non-negative dimensions, found {shape}")
    value = ctx.attr("value")
    fill = np.zeros(1, "float32") if value is None else np.asarray(value).reshape(-1)
    if fill.size != 1:
        raise ctx.error(f"expected a one-element value, found {fill.size} elements")
    if fill.dtype.name not in DTYPES:
        raise ctx.error(f"expected a value of a dtype passhost supports, found {fill.dtype}")
    return np.full(tuple(shape), fill[0], dtype=fill.dtype)


def _eye_like(ctx: NodeContext) -> Value:
    """EyeLike becomes a constant of the 2-D input's shape: ones on diagonal ``k`` (k > 0:
    above the main one), in ``dtype`` (default: the input's)."""
    shape = ctx.shape(0)
    if len(shape) != 2:
        raise ctx.error(f"expected a 2-D input, found shape {list(shape)}")
    code = ctx.attr("dtype")
    dtype = ctx.dtype(0) if code is None else onnx_dtype(ctx, code)
    return np.eye(shape[0], shape[1], k=int(ctx.attr("k", 0)), dtype=dtype)


def _range_of(ctx: NodeContext, work: str | None) -> Value:
    """Range's values, computed as floats in ``work`` (None: float64) and rounded once."""
    start, limit, delta = (_scalar_input(ctx, i, name) for i, name in
                           enumerate(("start", "limit", "delta")))
    dtype = np.asarray(start).dtype
    if dtype.name not in DTYPES:
        raise ctx.error(f"expected start, limit and delta of a dtype passhost supports, "
                        f"found {dtype}")
    if delta == 0:
        raise ctx.error("expected a non-zero delta, found 0")
    if dtype.kind in "iu":
        s, lim, d = int(start), int(limit), int(delta)
        count = max(-((s - lim) // d), 0)
        return (s + np.arange(count, dtype=np.int64) * d).astype(dtype)
    count = max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    acc = np.dtype(work or np.float64)
    values = acc.type(start) + np.arange(count, dtype=acc) * acc.type(delta)
    return values.astype(dtype)


def _range(ctx: NodeContext) -> Value:
    """Range becomes a constant: start, limit and delta must be known while compiling (a
    computed one would make the output's length depend on data); float16 and bfloat16 are
    computed in float64 and rounded once."""
    return _range_of(ctx, None)


#: Range's stash types (the precision of float16 and bfloat16 ranges) passhost computes in.
_RANGE_STASH = {1: "float32", 11: "float64"}


def _range_27(ctx: NodeContext) -> Value:
    """Range becomes a constant: start, limit and delta must be known while compiling (a
    computed one would make the output's length depend on data); float16 and bfloat16 are
    computed in ``stash_type`` (1: float32, the default; 11: float64) and rounded once."""
    stash = int(ctx.attr("stash_type", 1))
    if stash not in _RANGE_STASH:
        raise ctx.error(f"expected stash_type 1 (float32) or 11 (float64), found {stash}")
    narrow = _scalar_input(ctx, 0, "start").dtype.name in ("float16", "bfloat16")
    return _range_of(ctx, _RANGE_STASH[stash] if narrow else None)


def _reshape(ctx: NodeContext) -> Value:
    """Reshape becomes reshape; the shape must be known while compiling. A 0 copies the
    input's dimension at that position, or is a literal 0 with ``allowzero=1``."""
    shape = ctx.shape(0)
    target = _shape_input(ctx, 1, "the shape")
    allow_zero = bool(ctx.attr("allowzero", 0))
    if allow_zero and 0 in target and -1 in target:
        raise ctx.error(f"expected no -1 with a 0 under allowzero=1, found {target}")
    out: list[int] = []
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            if i >= len(shape):
                raise ctx.error(f"expected 0 (copy a dimension) only at positions below the "
                                f"input's rank {len(shape)}, found {target}")
            d = shape[i]
        elif d < -1:
            raise ctx.error(f"expected dimensions >= -1, found {target}")
        out.append(d)
    if out.count(-1) > 1:
        raise ctx.error(f"expected at most one -1, found {target}")
    size, known = math.prod(shape), math.prod(d for d in out if d != -1)
    if -1 in out:
        if known == 0 or size % known:
            raise ctx.error(f"cannot infer the -1 in {target} for an input of shape "
                            f"{list(shape)}")
        out[out.index(-1)] = size // known
    if math.prod(out) != size:
        raise ctx.error(f"expected a shape of {size} elements (input shape {list(shape)}), "
                        f"found {target}")
    if 0 in out:
        return np.zeros(out, dtype=ctx.dtype(0))
    return relay.reshape(ctx.input(0), newshape=tuple(out))


def _transpose(ctx: NodeContext) -> Value:
    """Transpose becomes transpose (default ``perm``: the axes reversed)."""
    perm = ctx.attr("perm")
    ndim = len(ctx.shape(0))
    axes = tuple(range(ndim - 1, -1, -1)) if perm is None else tuple(int(p) for p in perm)
    return relay.transpose(ctx.input(0), axes=axes)


def _concat(ctx: NodeContext) -> Value:
    """Concat becomes concatenate along ``axis`` (negative counts from the end)."""
    inputs = [ctx.input(i) for i in range(ctx.num_inputs) if ctx.has_input(i)]
    return relay.concatenate(inputs, axis=int(ctx.required_attr("axis")))


def _flatten(ctx: NodeContext) -> Value:
    """Flatten becomes a reshape to 2-D: the axes before ``axis`` and those from it on."""
    shape = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise ctx.error(f"expected an axis in [{-len(shape)}, {len(shape)}], found {axis}")
    if axis < 0:
        axis += len(shape)
    flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    return relay.reshape(ctx.input(0), newshape=flat)


def _unsqueeze(ctx: NodeContext) -> Value:
    """Unsqueeze becomes a reshape inserting axes of length 1; the axes (attribute before
    version 13, input since) must be known while compiling."""
    shape = list(ctx.shape(0))
    axes = _ints_or_attr(ctx, 1, "axes", "the axes")
    if axes is None:
        raise ctx.error("expected axes (input 1 or attribute), found none")
    for axis in sorted(_distinct_axes(ctx, axes, len(shape) + len(axes), "axes")):
        shape.insert(axis, 1)
    return relay.reshape(ctx.input(0), newshape=tuple(shape))


def _squeeze(ctx: NodeContext) -> Value:
    """Squeeze becomes squeeze of the given axes (each of length 1), or of every axis of
    length 1 when none are given; the axes must be known while compiling."""
    axes = _ints_or_attr(ctx, 1, "axes", "the axes")
    ndim = len(ctx.shape(0))
    axis = None if axes is None else tuple(_distinct_axes(ctx, axes, ndim, "axes"))
    return relay.squeeze(ctx.input(0), axis=axis)


def _split_sizes(ctx: NodeContext, length: int, count: int) -> list[int]:
    sizes = _ints_or_attr(ctx, 1, "split", "the split sizes")
    parts = ctx.attr("num_outputs")
    if sizes is not None:
        if parts is not None:
            raise ctx.error("expected either split sizes or num_outputs, found both")
        if len(sizes) != count or sum(sizes) != length or min(sizes, default=0) < 0:
            raise ctx.error(f"expected {count} non-negative sizes summing to {length}, "
                            f"found {sizes}")
        return sizes
    if parts is not None:
        if int(parts) != count:
            raise ctx.error(f"expected num_outputs = {count} (the node's outputs), found "
                            f"{parts}")
        chunk = -(-length // count)
        return [max(min(chunk, length - i * chunk), 0) for i in range(count)]
    if length % count:
        raise ctx.error(f"expected an axis length divisible into {count} equal parts, found "
                        f"{length}")
    return [length // count] * count


def _split(ctx: NodeContext) -> Sequence[Value]:
    """Split becomes split along ``axis``: into the given sizes (attribute before version 13,
    input since; known while compiling), into ``num_outputs`` parts of ceil(n / parts)
    with a smaller last one (version 18), or into equal parts."""
    shape = ctx.shape(0)
    if not shape:
        raise ctx.error("expected an input of rank >= 1, found a scalar")
    axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
    count = len(ctx.node.output)
    sizes = _split_sizes(ctx, shape[axis], count)
    starts = [int(c) for c in np.cumsum([0, *sizes[:-1]])]
    # Only the non-empty parts are cut out; empty ones are empty constants.
    bounds = tuple(b for b, size in zip(starts, sizes) if size and b)
    whole = ctx.input(0)
    pieces = relay.split(whole, indices_or_sections=bounds, axis=axis) if bounds else None
    dtype = ctx.dtype(0)
    out: list[Value] = []
    for start, size in zip(starts, sizes):
        if size == 0:
            out.append(np.zeros((*shape[:axis], 0, *shape[axis + 1:]), dtype=dtype))
        else:
            out.append(whole if pieces is None else pieces[bounds.index(start) + 1 if start
                                                           else 0])
    return out


def _slice_v1(ctx: NodeContext) -> Value:
    """Slice (before version 10) becomes strided_slice; see version 10."""
    return _slice_of(ctx, ctx.attr("starts"), ctx.attr("ends"), ctx.attr("axes"), None)


def _slice_v10(ctx: NodeContext) -> Value:
    """Slice becomes strided_slice, as Python slicing (negative indices count from the end,
    out-of-range ones are clamped, negative steps walk backwards); starts, ends, axes and
    steps must be known while compiling."""
    def ints(index: int, what: str) -> list[int] | None:
        return _shape_input(ctx, index, what) if ctx.has_input(index) else None

    return _slice_of(ctx, ints(1, "the starts"), ints(2, "the ends"), ints(3, "the axes"),
                     ints(4, "the steps"))


def _slice_of(ctx: NodeContext, starts: Sequence[int] | None, ends: Sequence[int] | None,
              axes: Sequence[int] | None, steps: Sequence[int] | None) -> Value:
    shape = ctx.shape(0)
    if starts is None or ends is None:
        raise ctx.error("expected starts and ends, found none")
    n = len(starts)
    axes = _distinct_axes(ctx, list(range(n)) if axes is None else axes, len(shape), "axes")
    steps = [1] * n if steps is None else list(steps)
    if not len(ends) == len(axes) == len(steps) == n:
        raise ctx.error(f"expected as many ends, axes and steps as starts ({n}), found "
                        f"{len(ends)}, {len(axes)} and {len(steps)}")
    if 0 in steps:
        raise ctx.error(f"expected non-zero steps, found {steps}")

    def clamp(v: int, axis: int) -> int:
        return max(-shape[axis] - 1, min(int(v), shape[axis]))

    return relay.strided_slice(
        ctx.input(0), begin=tuple(clamp(s, a) for s, a in zip(starts, axes)),
        end=tuple(clamp(e, a) for e, a in zip(ends, axes)), strides=tuple(steps),
        axes=tuple(axes))


# -- pad -----------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "edge", "reflect")


def _pad_v2(ctx: NodeContext) -> Value:
    """Pad (before version 11) becomes nn.pad; see version 11 (``pads`` and ``value`` are
    attributes here)."""
    ndim = len(ctx.shape(0))
    pads = ctx.attr("pads")
    if pads is None:
        raise ctx.error("expected attribute 'pads', found none")
    value = exact(np.asarray(ctx.attr("value", 0.0), dtype=ctx.dtype(0)))
    return _pad_of(ctx, [int(p) for p in pads], list(range(ndim)), value, _PAD_MODES)


def _pad_v11(modes: Sequence[str]) -> Entry:
    def convert(ctx: NodeContext) -> Value:
        ndim = len(ctx.shape(0))
        pads = _shape_input(ctx, 1, "the pads")
        axes = _shape_input(ctx, 3, "the axes") if ctx.has_input(3) else list(range(ndim))
        value = _scalar_expr(ctx, 2) if ctx.has_input(2) else \
            exact(np.zeros((), ctx.dtype(0)))
        return _pad_of(ctx, pads, axes, value, modes)

    convert.__doc__ = (
        f"Pad becomes nn.pad in mode {one_of(modes)}, on every axis or on ``axes`` "
        "(version 18); pads and axes must be known while compiling. Negative pads crop. A "
        "computed constant value is filled in with a where over a constant mask.")
    return convert


def _pad_of(ctx: NodeContext, pads: Sequence[int], axes: Sequence[int], value: Expr,
            modes: Sequence[str]) -> Value:
    shape = ctx.shape(0)
    ndim = len(shape)
    axes = _distinct_axes(ctx, axes, ndim, "axes")
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"expected {2 * len(axes)} pads (2 per padded axis), found {list(pads)}")
    mode = ctx.attr("mode", "constant")
    if mode not in modes:
        raise ctx.error(f"expected mode {one_of(modes)}, found {mode!r}")
    width = [[0, 0] for _ in range(ndim)]
    for i, axis in enumerate(axes):
        width[axis] = [pads[i], pads[i + len(axes)]]
    data: Value = ctx.input(0)
    if any(min(w) < 0 for w in width):
        begin = tuple(max(-lo, 0) for lo, _ in width)
        end = tuple(n - max(-hi, 0) for n, (_, hi) in zip(shape, width))
        if any(b > e for b, e in zip(begin, end)):
            raise ctx.error(f"expected negative pads to crop at most the whole axis, found "
                            f"{list(pads)} for shape {list(shape)}")
        data = relay.strided_slice(data, begin=begin, end=end)
        shape = tuple(e - b for b, e in zip(begin, end))
    width = tuple((max(lo, 0), max(hi, 0)) for lo, hi in width)
    if not any(lo or hi for lo, hi in width):
        return data
    if mode != "constant":
        return nn.pad(data, pad_width=width, pad_mode=mode)
    if isinstance(value, Constant):
        return nn.pad(data, pad_width=width, pad_value=float(value.data))
    padded = np.pad(np.zeros(shape, bool), width, constant_values=True)
    return relay.where(exact(padded), value, nn.pad(data, pad_width=width))


# -- expanding and tiling ------------------------------------------------------------------------
def _expand(ctx: NodeContext) -> Value:
    """Expand becomes broadcast_to the input and target shapes broadcast together (ONNX's
    two-way broadcasting); the target shape must be known while compiling."""
    shape = ctx.shape(0)
    target = _shape_input(ctx, 1, "the shape")
    try:
        out = np.broadcast_shapes(tuple(shape), tuple(target))
    except ValueError:
        raise ctx.error(f"expected a shape that broadcasts with the input's {list(shape)}, "
                        f"found {target}") from None
    if out == tuple(shape):
        return ctx.input(0)
    return relay.broadcast_to(ctx.input(0), shape=out)


def _tile(ctx: NodeContext) -> Value:
    """Tile becomes tile; the repeats (one per axis, non-negative) must be known while
    compiling."""
    ndim = len(ctx.shape(0))
    repeats = _shape_input(ctx, 1, "the repeats")
    if len(repeats) != ndim or min(repeats, default=0) < 0:
        raise ctx.error(f"expected {ndim} non-negative repeats (one per axis), found {repeats}")
    return relay.tile(ctx.input(0), reps=tuple(repeats))


def _depth_to_space(ctx: NodeContext) -> Value:
    """DepthToSpace becomes reshape, transpose, reshape of the 4-D NCHW input, in mode DCR
    (depth-column-row, the default) or CRD (column-row-depth)."""
    n, c, h, w, b = _blocks(ctx)
    if c % (b * b):
        raise ctx.error(f"expected channels divisible by blocksize^2 = {b * b}, found {c}")
    mode = ctx.attr("mode", "DCR")
    if mode == "DCR":
        split, perm = (n, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        split, perm = (n, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3)
    else:
        raise ctx.error(f"expected mode DCR or CRD, found {mode!r}")
    x = relay.reshape(ctx.input(0), newshape=split)
    x = relay.transpose(x, axes=perm)
    return relay.reshape(x, newshape=(n, c // (b * b), h * b, w * b))


def _space_to_depth(ctx: NodeContext) -> Value:
    """SpaceToDepth becomes reshape, transpose, reshape of the 4-D NCHW input, in mode DCR
    (the default) or CRD (version 28)."""
    n, c, h, w, b = _blocks(ctx)
    if h % b or w % b:
        raise ctx.error(f"expected height and width divisible by blocksize {b}, found "
                        f"{h}x{w}")
    mode = ctx.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise ctx.error(f"expected mode DCR or CRD, found {mode!r}")
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    x = relay.reshape(ctx.input(0), newshape=(n, c, h // b, b, w // b, b))
    x = relay.transpose(x, axes=perm)
    return relay.reshape(x, newshape=(n, c * b * b, h // b, w // b))


def _blocks(ctx: NodeContext) -> tuple[int, int, int, int, int]:
    shape = ctx.shape(0)
    if len(shape) != 4:
        raise ctx.error(f"expected a 4-D NCHW input, found shape {list(shape)}")
    b = int(ctx.required_attr("blocksize"))
    if b < 1:
        raise ctx.error(f"expected a blocksize >= 1, found {b}")
    return (*shape, b)  # type: ignore[return-value]


# -- running sums, triangles ---------------------------------------------------------------------
def _cumulative(onnx_name: str, op_name: str) -> Entry:
    op = getattr(relay, op_name)

    def convert(ctx: NodeContext) -> Value:
        ndim = len(ctx.shape(0))
        if ndim == 0:
            raise ctx.error("expected an input of rank >= 1, found a scalar")
        axis = _scalar_input(ctx, 1, "the axis", f"passhost's {op_name} takes it as an "
                                                      f"attribute")
        axis = axis_index(ctx, int(axis), ndim)
        return op(ctx.input(0), axis=axis, exclusive=bool(ctx.attr("exclusive", 0)),
                  reverse=bool(ctx.attr("reverse", 0)))

    convert.__doc__ = (f"{onnx_name} becomes {op_name} along the axis (input 1), which must "
                       f"be known while compiling; ``exclusive`` and ``reverse`` are "
                       f"supported.")
    return convert


def _trilu(ctx: NodeContext) -> Value:
    """Trilu becomes trilu of the last two axes: the upper (``upper=1``, default) or lower
    triangle from diagonal k (k may be computed)."""
    if not ctx.has_input(1):
        k = exact(np.int64(0))
    elif ctx.tensor_type(1).dtype != "int64":
        raise ctx.error(f"expected an int64 k, found {ctx.tensor_type(1).dtype}")
    else:
        k = _scalar_expr(ctx, 1)
    return relay.trilu(ctx.input(0), k, upper=bool(ctx.attr("upper", 1)))


def _one_hot(ctx: NodeContext) -> Value:
    """OneHot becomes one_hot; the depth must be known while compiling, the values
    ([off, on]) may be computed. Negative indices count back from depth; indices outside
    [-depth, depth) give all-off rows; float indices are truncated toward zero."""
    depth = _scalar_input(ctx, 1, "the depth")
    if depth < 1:
        raise ctx.error(f"expected a depth >= 1, found {depth}")
    indices = ctx.input(0)
    if ctx.tensor_type(0).dtype not in INT_DTYPES:
        indices = relay.cast(indices, dtype="int64")
    if ctx.shape(2) != (2,):
        raise ctx.error(f"expected values [off, on] of shape [2], found {list(ctx.shape(2))}")
    if ctx.is_known(2):
        off, on = (exact(v) for v in ctx.known(2))
    else:
        off, on = (relay.take(ctx.input(2), exact(np.int64(i))) for i in (0, 1))
    return relay.one_hot(indices, on, off, depth=int(depth), axis=int(ctx.attr("axis", -1)))


def _reverse_sequence(ctx: NodeContext) -> Value:
    """ReverseSequence becomes reverse_sequence (``batch_axis`` and ``time_axis`` 0 or 1);
    a sequence length outside [0, time steps] is an error (while compiling when known, else
    when run)."""
    batch, time = int(ctx.attr("batch_axis", 1)), int(ctx.attr("time_axis", 0))
    if {batch, time} != {0, 1}:
        raise ctx.error(f"expected batch_axis and time_axis to be 0 and 1 in some order, found "
                        f"{batch} and {time}")
    if len(ctx.shape(0)) < 2:
        raise ctx.error(f"expected an input of rank >= 2, found shape {list(ctx.shape(0))}")
    if ctx.is_known(1):
        lengths = ctx.known(1)
        steps = ctx.shape(0)[time]
        if np.any(lengths < 0) or np.any(lengths > steps):
            raise ctx.error(f"expected sequence lengths in [0, {steps}], found "
                            f"{lengths.tolist()}")
    return relay.reverse_sequence(ctx.input(0), ctx.input(1), seq_axis=time, batch_axis=batch)


@computed_in_float32
def _einsum(ctx: NodeContext) -> Value:
    """Einsum becomes transposes, reshapes, sums, broadcast multiplies and matmul (diagonals
    as a reshape and a strided slice); any equation NumPy accepts, with ellipses."""
    equation = str(ctx.required_attr("equation"))
    indices = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    try:
        return einsum(equation, [ctx.input(i) for i in indices],
                      [ctx.shape(i) for i in indices])
    except EinsumError as err:
        raise ctx.error(f"equation {equation!r}: {err}") from None




#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Shape": _shape,
    "Size": _size,
    "ConstantOfShape": _constant_of_shape,
    "EyeLike": _eye_like,
    "Range": {11: _range, 27: _range_27},
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Flatten": _flatten,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Split": _split,
    "Slice": {1: _slice_v1, 10: _slice_v10},
    "Pad": {2: _pad_v2, 11: _pad_v11(_PAD_MODES), 19: _pad_v11((*_PAD_MODES, "wrap"))},
    "Expand": _expand,
    "Tile": _tile,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "CumSum": _cumulative("CumSum", "cumsum"),
    "CumProd": _cumulative("CumProd", "cumprod"),
    "Trilu": _trilu,
    "OneHot": _one_hot,
    "ReverseSequence": _reverse_sequence,
    "Einsum": _einsum,
}
