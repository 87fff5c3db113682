"""Converters of the ONNX gathers and scatters: Gather, GatherElements, GatherND, Scatter,
ScatterElements and ScatterND. Indices known while compiling are range-checked then;
computed ones are checked (or, for Gather, wrapped) when the model runs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_movement import exact, one_of
from passhost.frontend.onnx_ops import axis_index
from passhost.frontend.onnx_registry import Entry

__all__ = ["CONVERTERS"]

_ALL_REDUCTIONS = ("none", "add", "mul", "max", "min")


def _check_range(ctx: NodeContext, values: np.ndarray, n: int) -> None:
    bad = (values < -n) | (values >= n)
    if np.any(bad):
        raise ctx.error(f"expected indices in [{-n}, {n}), found {int(values[bad][0])}")


def _check_indices(ctx: NodeContext, index: int, n: int) -> None:
    """Known indices (input ``index``) lie in [-n, n)."""
    if ctx.is_known(index):
        _check_range(ctx, ctx.known(index).astype(np.int64), n)


def _check_index_tuples(ctx: NodeContext, index: int, sizes: Sequence[int]) -> None:
    """Known index tuples (the last axis of input ``index``) address axes of lengths
    ``sizes`` (tuples that do not fit are left to the operator's type relation)."""
    if not ctx.is_known(index):
        return
    values = ctx.known(index).astype(np.int64)
    if values.ndim and 1 <= values.shape[-1] <= len(sizes):
        for j in range(values.shape[-1]):
            _check_range(ctx, values[..., j], sizes[j])


def _gather(ctx: NodeContext) -> Value:
    """Gather becomes take along ``axis``. Known indices are checked to lie in [-n, n);
    computed indices are taken modulo n, so negative ones count from the end as ONNX says
    and out-of-range ones (undefined in ONNX) wrap around instead of failing."""
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
    if not ctx.is_known(1):
        return relay.take(ctx.input(0), ctx.input(1), axis=axis, mode="wrap")
    _check_indices(ctx, 1, shape[axis])
    indices = ctx.known(1).astype("int64")
    indices = np.where(indices < 0, indices + shape[axis], indices)
    return relay.take(ctx.input(0), exact(indices), axis=axis)


# -- gathers and scatters ------------------------------------------------------------------------
def _gather_elements(ctx: NodeContext) -> Value:
    """GatherElements becomes gather_elements along ``axis``. Negative indices count from
    the end; an out-of-range index is an error (while compiling when known, else when run)."""
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
    _check_indices(ctx, 1, shape[axis])
    return relay.gather_elements(ctx.input(0), ctx.input(1), axis=axis)


def _gather_nd(ctx: NodeContext) -> Value:
    """GatherND becomes gather_nd (``batch_dims`` from version 12). Negative indices count
    from the end; an out-of-range index is an error (while compiling when known, else when
    run)."""
    shape = ctx.shape(0)
    batch = int(ctx.attr("batch_dims", 0))
    _check_index_tuples(ctx, 1, shape[batch:])
    return relay.gather_nd(ctx.input(0), ctx.input(1), batch_dims=batch)


def _reduction(ctx: NodeContext, allowed: Sequence[str]) -> str:
    reduction = ctx.attr("reduction", "none")
    if reduction not in allowed:
        raise ctx.error(f"expected reduction {one_of(allowed)} (in this operator version), "
                        f"found {reduction!r}")
    return reduction


def _scatter_elements(allowed: Sequence[str]) -> Entry:
    def convert(ctx: NodeContext) -> Value:
        shape = ctx.shape(0)
        axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
        _check_indices(ctx, 1, shape[axis])
        return relay.scatter_elements(ctx.input(0), ctx.input(1), ctx.input(2), axis=axis,
                                      reduction=_reduction(ctx, allowed))

    convert.__doc__ = (
        "ScatterElements (and the older Scatter) becomes scatter_elements along ``axis``, "
        f"with reduction {one_of(allowed)}. Negative indices count from the end; an "
        "out-of-range index is an error (while compiling when known, else when run).")
    return convert


def _scatter_nd(allowed: Sequence[str]) -> Entry:
    def convert(ctx: NodeContext) -> Value:
        _check_index_tuples(ctx, 1, ctx.shape(0))
        return relay.scatter_nd(ctx.input(0), ctx.input(1), ctx.input(2),
                                reduction=_reduction(ctx, allowed))

    convert.__doc__ = (
        f"ScatterND becomes scatter_nd with reduction {one_of(allowed)}. Negative indices "
        "count from the end; an out-of-range index is an error (while compiling when known, "
        "else when run).")
    return convert


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "GatherND": _gather_nd,
    "Scatter": _scatter_elements(("none",)),
    "ScatterElements": {11: _scatter_elements(("none",)),
                        16: _scatter_elements(("none", "add", "mul")),
                        18: _scatter_elements(_ALL_REDUCTIONS)},
    "ScatterND": {11: _scatter_nd(("none",)),
                  16: _scatter_nd(("none", "add", "mul")),
                  18: _scatter_nd(_ALL_REDUCTIONS)},
}
