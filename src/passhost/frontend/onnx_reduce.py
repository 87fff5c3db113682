"""Converters of the ONNX variadic operators (Min, Max, Sum, Mean), reductions, ArgMax/ArgMin
and TopK.

Every reduction (ReduceSum, ReduceMean, ...) shares one handling of its axes: they are the
``axes`` attribute or, from the operator version that moved them (ReduceSum 13, the others
18), the ``axes`` input, which must be known while compiling (the output shape depends on
it). Without axes every axis is reduced, or none with ``noop_with_empty_axes=1`` (then each
element is a set of its own: ReduceL1 gives ``abs(x)``, ReduceSumSquare ``x * x``, as ONNX
and onnxruntime do). Shapes are static, so a reduction over an empty set (a reduced axis of
length 0) is folded to a constant of the reduction's identity: 0 for sums and norms (and,
as in onnxruntime, for ReduceMean), 1 for ReduceProd, minus infinity (the dtype's minimum
for integers, False for bool) for ReduceMax, ReduceLogSum and ReduceLogSumExp, plus infinity
(the dtype's maximum, True) for ReduceMin.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import axis_index
from passhost.frontend.onnx_registry import Entry
from passhost.ir.types import is_float_dtype
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS"]

#: Builds a reduction of ``x`` (of dtype ``dtype``) over sorted, distinct ``axes``; with no
#: axes each element is reduced alone.
_Build = Callable[[Expr, tuple[int, ...], bool, str], Expr]
#: The value of a reduction over an empty set, for a NumPy dtype.
_Identity = Callable[[np.dtype], object]


# -- variadic element-wise operators -------------------------------------------------------------
def _fold_inputs(ctx: NodeContext, op: Callable[[Expr, Expr], Expr]) -> Expr:
    """``op`` applied left to right over every input (broadcasting as NumPy)."""
    if ctx.num_inputs == 0:
        raise ctx.error("expected at least one input, found none")
    out = ctx.input(0)
    for i in range(1, ctx.num_inputs):
        out = op(out, ctx.input(i))
    return out


def _max(ctx: NodeContext) -> Value:
    """Max becomes a chain of ``maximum`` over its inputs (any number, broadcast together;
    floats and integers; NaN propagates)."""
    return _fold_inputs(ctx, relay.maximum)


def _min(ctx: NodeContext) -> Value:
    """Min becomes a chain of ``minimum`` over its inputs (any number, broadcast together;
    floats and integers; NaN propagates)."""
    return _fold_inputs(ctx, relay.minimum)


@computed_in_float32
def _sum(ctx: NodeContext) -> Value:
    """Sum becomes a chain of ``add`` over its inputs (any number, broadcast together)."""
    return _fold_inputs(ctx, relay.add)


@computed_in_float32
def _mean(ctx: NodeContext) -> Value:
    """Mean becomes a chain of ``add`` over its inputs (any number, broadcast together)
    divided by their count."""
    total = _fold_inputs(ctx, relay.add)
    if ctx.num_inputs == 1:
        return total
    return relay.divide(total, const(ctx.num_inputs, ctx.dtype(0)))


# -- reductions ----------------------------------------------------------------------------------
def _reduced_axes(ctx: NodeContext, ndim: int) -> tuple[int, ...]:
    """The sorted axes a Reduce* node reduces (``()``: none, by ``noop_with_empty_axes``)."""
    axes = ctx.known_ints(1, "axes")
    if not axes:
        return () if ctx.attr("noop_with_empty_axes", 0) else tuple(range(ndim))
    found = [axis_index(ctx, a, ndim) for a in axes]
    if len(set(found)) != len(found):
        raise ctx.error(f"expected distinct axes, found {axes}")
    return tuple(sorted(found))


def _reduce(ctx: NodeContext, build: _Build, identity: _Identity) -> Value:
    """A Reduce* node: its axes, ``keepdims``, and the empty-set and empty-output cases."""
    shape = ctx.shape(0)
    dtype = np.dtype(ctx.dtype(0))
    axes = _reduced_axes(ctx, len(shape))
    keepdims = bool(ctx.attr("keepdims", 1))
    if keepdims:
        out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    else:
        out_shape = tuple(d for i, d in enumerate(shape) if i not in axes)
    if any(shape[a] == 0 for a in axes):
        return np.full(out_shape, identity(dtype), dtype=dtype)
    if 0 in out_shape:
        return np.zeros(out_shape, dtype=dtype)
    return build(ctx.input(0), axes, keepdims, dtype.name)


def _zero(_dtype: np.dtype) -> object:
    return 0


def _one(_dtype: np.dtype) -> object:
    return 1


def _lowest(dtype: np.dtype) -> object:
    """Minus infinity, or the smallest value of a dtype without it."""
    if is_float_dtype(dtype.name):
        return -np.inf
    return False if dtype.kind == "b" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> object:
    """Plus infinity, or the largest value of a dtype without it."""
    if is_float_dtype(dtype.name):
        return np.inf
    return True if dtype.kind == "b" else np.iinfo(dtype).max


def _over(op: Callable[..., Expr]) -> _Build:
    """The build reducing with graph reduction ``op``."""

    def build(x: Expr, axes: tuple[int, ...], keepdims: bool, _dtype: str) -> Expr:
        return op(x, axis=axes, keepdims=keepdims) if axes else x

    return build


_sum_of = _over(relay.sum)


def _in_float(fn: Callable[[Expr], Expr], x: Expr, dtype: str) -> Expr:
    """``fn`` (defined on floats) of ``x``; integers go through float64 and are truncated
    back."""
    if dtype.startswith("float"):
        return fn(x)
    return relay.cast(fn(relay.cast(x, dtype="float64")), dtype=dtype)


def _sum_square_of(x: Expr, axes: tuple[int, ...], keepdims: bool, dtype: str) -> Expr:
    return _sum_of(relay.multiply(x, x), axes, keepdims, dtype)


def _l1_of(x: Expr, axes: tuple[int, ...], keepdims: bool, dtype: str) -> Expr:
    return _sum_of(relay.abs(x), axes, keepdims, dtype)


def _l2_of(x: Expr, axes: tuple[int, ...], keepdims: bool, dtype: str) -> Expr:
    return _in_float(relay.sqrt, _sum_square_of(x, axes, keepdims, dtype), dtype)


def _log_sum_of(x: Expr, axes: tuple[int, ...], keepdims: bool, dtype: str) -> Expr:
    return _in_float(relay.log, _sum_of(x, axes, keepdims, dtype), dtype)


def _log_sum_exp_of(x: Expr, axes: tuple[int, ...], keepdims: bool, dtype: str) -> Expr:
    if not axes:
        return x
    if not dtype.startswith("float"):
        return _in_float(lambda f: _log_sum_exp_of(f, axes, keepdims, "float64"), x, dtype)
    # log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the maximum, so that no exp
    # overflows. An infinite maximum (all -inf, or some +inf) would make x - m NaN; the
    # unshifted sum gives the right -inf or +inf there.
    peak = relay.max(x, axis=axes, keepdims=True)
    infinite = relay.equal(relay.abs(peak), const(np.inf, dtype))
    shift = relay.where(infinite, const(0, dtype), peak)
    total = relay.sum(relay.exp(relay.subtract(x, shift)), axis=axes, keepdims=keepdims)
    if not keepdims:
        shift = relay.squeeze(shift, axis=axes)
    return relay.add(relay.log(total), shift)


def _reduce_sum(ctx: NodeContext) -> Value:
    """ReduceSum becomes ``sum`` (integers wrap around); axes must be known while
    compiling."""
    return _reduce(ctx, _sum_of, _zero)


def _reduce_mean(ctx: NodeContext) -> Value:
    """ReduceMean becomes ``mean`` (integers truncate toward zero); axes must be known while
    compiling."""
    return _reduce(ctx, _over(relay.mean), _zero)


def _reduce_max(ctx: NodeContext) -> Value:
    """ReduceMax becomes ``max`` (floats, integers, bool); axes must be known while
    compiling."""
    return _reduce(ctx, _over(relay.max), _lowest)


def _reduce_min(ctx: NodeContext) -> Value:
    """ReduceMin becomes ``min`` (floats, integers, bool); axes must be known while
    compiling."""
    return _reduce(ctx, _over(relay.min), _highest)


def _reduce_prod(ctx: NodeContext) -> Value:
    """ReduceProd becomes ``prod`` (integers wrap around); axes must be known while
    compiling."""
    return _reduce(ctx, _over(relay.prod), _one)


@computed_in_float32
def _reduce_l1(ctx: NodeContext) -> Value:
    """ReduceL1 becomes ``sum(abs(x))``; axes must be known while compiling."""
    return _reduce(ctx, _l1_of, _zero)


@computed_in_float32
def _reduce_l2(ctx: NodeContext) -> Value:
    """ReduceL2 becomes ``sqrt(sum(x * x))`` (integers: the square root in float64,
    truncated); axes must be known while compiling."""
    return _reduce(ctx, _l2_of, _zero)


@computed_in_float32
def _reduce_sum_square(ctx: NodeContext) -> Value:
    """ReduceSumSquare becomes ``sum(x * x)``; axes must be known while compiling."""
    return _reduce(ctx, _sum_square_of, _zero)


@computed_in_float32
def _reduce_log_sum(ctx: NodeContext) -> Value:
    """ReduceLogSum becomes ``log(sum(x))`` (integers: the logarithm in float64,
    truncated); axes must be known while compiling."""
    return _reduce(ctx, _log_sum_of, _lowest)


@computed_in_float32
def _reduce_log_sum_exp(ctx: NodeContext) -> Value:
    """ReduceLogSumExp becomes ``m + log(sum(exp(x - m)))`` with ``m`` the maximum, which
    does not overflow (integers: computed in float64, truncated); axes must be known while
    compiling."""
    return _reduce(ctx, _log_sum_exp_of, _lowest)


# -- ArgMax, ArgMin, TopK ------------------------------------------------------------------------
def _arg_reduce(ctx: NodeContext, op: Callable[..., Expr]) -> Value:
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
    if shape[axis] == 0:
        raise ctx.error(f"expected a non-empty axis {axis}, found input shape {shape}")
    return op(ctx.input(0), axis=axis, keepdims=bool(ctx.attr("keepdims", 1)),
              select_last_index=bool(ctx.attr("select_last_index", 0)))


def _argmax(ctx: NodeContext) -> Value:
    """ArgMax becomes ``argmax``: the int64 index of the largest element along ``axis``
    (first or, with ``select_last_index``, last among equals); the axis must not be
    empty."""
    return _arg_reduce(ctx, relay.argmax)


def _argmin(ctx: NodeContext) -> Value:
    """ArgMin becomes ``argmin``: the int64 index of the smallest element along ``axis``
    (first or, with ``select_last_index``, last among equals); the axis must not be
    empty."""
    return _arg_reduce(ctx, relay.argmin)


def _topk_of(ctx: NodeContext, k: list[int] | None) -> list[Value]:
    """A TopK node taking the ``k`` given (a one-element list)."""
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", -1)), len(shape))
    if k is None or len(k) != 1:
        raise ctx.error(f"expected one k, found {k}")
    if not 0 <= k[0] <= shape[axis]:
        raise ctx.error(f"expected k in [0, {shape[axis]}] (the length of axis {axis}), "
                        f"found {k[0]}")
    out_shape = tuple(k[0] if i == axis else d for i, d in enumerate(shape))
    if 0 in out_shape:
        dtype = ctx.dtype(0)
        return [np.zeros(out_shape, dtype=dtype), np.zeros(out_shape, dtype="int64")]
    out = relay.topk(ctx.input(0), k=k[0], axis=axis, largest=bool(ctx.attr("largest", 1)))
    return [out[0], out[1]]


def _topk_k_attribute(ctx: NodeContext) -> list[Value]:
    """TopK (before version 10) becomes ``topk``: the k largest values along ``axis`` and
    their int64 indices, sorted, equal values lower index first."""
    k = ctx.attr("k")
    return _topk_of(ctx, None if k is None else [int(k)])


def _topk(ctx: NodeContext) -> list[Value]:
    """TopK becomes ``topk``: the k largest (or smallest) values along ``axis`` and their
    int64 indices, equal values lower index first; k must be known while compiling. The
    output is sorted even with ``sorted=0`` (ONNX leaves that order open)."""
    return _topk_of(ctx, ctx.known_ints(1))


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Max": _max,
    "Min": _min,
    "Sum": _sum,
    "Mean": _mean,
    "ReduceSum": _reduce_sum,
    "ReduceMean": _reduce_mean,
    "ReduceMax": _reduce_max,
    "ReduceMin": _reduce_min,
    "ReduceProd": _reduce_prod,
    "ReduceL1": _reduce_l1,
    "ReduceL2": _reduce_l2,
    "ReduceSumSquare": _reduce_sum_square,
    "ReduceLogSum": _reduce_log_sum,
    "ReduceLogSumExp": _reduce_log_sum_exp,
    "ArgMax": _argmax,
    "ArgMin": _argmin,
    "TopK": {1: _topk_k_attribute, 10: _topk},
}
