"""Building blocks of operator computes: broadcasting, elementwise maps, flat indices.

These are the shapes most operator computes take, written once: ``elementwise(fn, x)``
maps every element, ``broadcast(fn, a, b, shape=...)`` maps NumPy-broadcast elements, and
``flat_index`` / ``unflatten_index`` convert between a multi-index and a row-major offset
(for reshapes and friends).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from passhost.te.tensor import INDEX_DTYPE, Tensor, compute
from passhost.tir.expr import PrimExpr, const

__all__ = ["broadcast", "broadcast_indices", "elementwise", "flat_index", "unflatten_index"]


def broadcast_indices(indices: Sequence[Any], shape: Sequence[int]) -> tuple[Any, ...]:
    """The indices into a tensor of ``shape`` that NumPy broadcasting reads at
    ``indices`` of the (longer or equal) broadcast result."""
    offset = len(indices) - len(shape)
    zero = const(0, INDEX_DTYPE)
    return tuple(zero if dim == 1 else indices[offset + d] for d, dim in enumerate(shape))


def elementwise(fn: Callable[..., PrimExpr], x: Tensor, name: str) -> Tensor:
    """``fn`` of every element of ``x``."""
    return compute(x.shape, lambda *i: fn(x[i]), name=name)


def broadcast(fn: Callable[..., PrimExpr], *tensors: Tensor, shape: Sequence[int],
              name: str) -> Tensor:
    """``fn`` of the NumPy-broadcast elements of ``tensors``, over the result ``shape``."""
    return compute(shape, lambda *i: fn(*(t[broadcast_indices(i, t.shape)] for t in tensors)),
                   name=name)


def flat_index(indices: Sequence[Any], shape: Sequence[int]) -> PrimExpr:
    """The row-major offset of ``indices`` in a tensor of ``shape``."""
    flat: PrimExpr = const(0, INDEX_DTYPE)
    for index, dim in zip(indices, shape):
        flat = flat * dim + index
    return flat


def unflatten_index(flat: PrimExpr, shape: Sequence[int]) -> tuple[PrimExpr, ...]:
    """The multi-index of the row-major offset ``flat`` in a tensor of ``shape``."""
    out: list[PrimExpr] = []
    for dim in reversed(shape):
        out.append(flat % dim if dim != 1 else const(0, INDEX_DTYPE))
        flat = flat // dim
    return tuple(reversed(out))
