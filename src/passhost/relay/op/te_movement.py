"""Index mappings shared by the TE computes of the data-movement operators.

Data movement computes describe each output element as one load of an input at computed
indices. Every index they build stays inside its buffer for every loop point, taken or not
(TIR evaluates both sides of a ``Select``): indices that depend on a condition or on loaded
data are clamped or wrapped into range, never trusted.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from passhost import te
from passhost.tir.expr import Max, Min, PrimExpr, const

__all__ = ["absolute", "clamp", "load_index", "permute_te", "reshape_indices", "reshape_te",
           "zeros"]


def clamp(x: PrimExpr, lo: int, hi: int) -> PrimExpr:
    """``x`` clamped into ``[lo, hi]`` (an index expression; ``lo <= hi``)."""
    return Max(Min(x, const(hi, te.INDEX_DTYPE)), const(lo, te.INDEX_DTYPE))


def absolute(x: PrimExpr) -> PrimExpr:
    """``|x|`` of an index expression, as ``max(x, 0 - x)``."""
    return Max(x, const(0, x.dtype) - x)


def zeros(shape: Sequence[int], dtype: str, name: str) -> te.Tensor:
    """A tensor of zeros (the compute of a result with no elements, which loads nothing)."""
    return te.compute(shape, lambda *_: te.fill(0, dtype), name=name)


def load_index(tensor: te.Tensor, indices: Sequence[Any]) -> PrimExpr:
    """The element of the integer ``tensor`` at ``indices``, as an index (int64)."""
    return te.cast(tensor[tuple(indices)], te.INDEX_DTYPE)


def _groups(out_shape: Sequence[int], in_shape: Sequence[int],
            ) -> list[tuple[range, range]]:
    """The runs of output and input axes that a row-major reshape maps onto each other:
    consecutive ``(output axes, input axes)`` pairs of equal element counts, cut wherever
    the leading products of both shapes agree."""
    cuts = [(0, 0)]
    j, in_prefix = 0, 1
    out_prefix = 1
    for k, dim in enumerate(out_shape, start=1):
        out_prefix *= dim
        while j < len(in_shape) and in_prefix < out_prefix:
            in_prefix *= in_shape[j]
            j += 1
        if in_prefix == out_prefix and k < len(out_shape):
            cuts.append((k, j))
    cuts.append((len(out_shape), len(in_shape)))
    return [(range(a, b), range(c, d)) for (a, c), (b, d) in itertools.pairwise(cuts)]


def reshape_indices(indices: Sequence[Any], out_shape: Sequence[int],
                    in_shape: Sequence[int]) -> tuple[PrimExpr, ...]:
    """The indices into a tensor of ``in_shape`` of the element that a row-major reshape
    to ``out_shape`` puts at ``indices``. Axes the reshape keeps are passed through, and
    only the runs of axes it merges or splits go through a flat offset."""
    zero = const(0, te.INDEX_DTYPE)
    if math.prod(out_shape) == 0:
        return (zero,) * len(in_shape)  # no element: the loops never run
    out: list[PrimExpr] = [zero] * len(in_shape)
    for out_axes, in_axes in _groups(out_shape, in_shape):
        kept_out = [k for k in out_axes if out_shape[k] != 1]
        kept_in = [k for k in in_axes if in_shape[k] != 1]
        if len(kept_out) == 1 and len(kept_in) == 1:
            out[kept_in[0]] = indices[kept_out[0]]
        elif kept_in:
            flat = indices[kept_out[0]] if len(kept_out) == 1 else te.flat_index(
                [indices[k] for k in kept_out], [out_shape[k] for k in kept_out])
            split = te.unflatten_index(flat, [in_shape[k] for k in kept_in])
            for k, index in zip(kept_in, split):
                out[k] = index
    return tuple(out)


def reshape_te(x: te.Tensor, shape: Sequence[int], name: str) -> te.Tensor:
    """The row-major reshape of ``x`` to ``shape`` (the compute of every operator that
    only changes the shape)."""
    return te.compute(shape, lambda *i: x[reshape_indices(i, shape, x.shape)], name=name)


def permute_te(x: te.Tensor, perm: Sequence[int], name: str) -> te.Tensor:
    """Output axis ``k`` is axis ``perm[k]`` of ``x``."""
    def element(*i: PrimExpr) -> PrimExpr:
        index = dict(zip(perm, i))
        return x[tuple(index[k] for k in range(x.ndim))]

    return te.compute(tuple(x.shape[p] for p in perm), element, name=name)
