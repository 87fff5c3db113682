"""TE building blocks of the reductions and of the operators built on them (means, softmax,
arg-extremes, normalisations): reductions over axes, the reference kernels' accumulation
dtypes, means and standardisation.

Accumulation follows :mod:`passhost.relay.op.accumulate`: float16 and bfloat16 compute in
float32 and round once at the end; float32 and float64 compute in themselves. Integer sums
and products accumulate in uint64, whose wrap-around C defines: the result modulo
``2**bits`` is the reference's wrap-around in the input dtype (or in int64, for means).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from passhost import te
from passhost.ir.types import is_float_dtype
from passhost.relay.op.elemwise_te import acc_dtype
from passhost.tir.expr import PrimExpr

__all__ = [
    "INT_ACC", "as_dtype", "mean_over", "reduce_over", "reduced_index",
    "root", "scale_shift", "standardise", "sum_dtype", "widen_tensor",
]

#: The dtype integer sums and products accumulate in (wrapping modulo 2**64, as C defines).
INT_ACC = "uint64"

#: ``source(index)``: the element a reduction reads at ``index`` of its input (the output's
#: index on the kept axes, reduction variables on the reduced ones).
Source = Callable[[tuple[PrimExpr, ...]], PrimExpr]


def sum_dtype(dtype: str) -> str:
    """The dtype sums and products of ``dtype`` elements accumulate in."""
    return acc_dtype(dtype) if is_float_dtype(dtype) else INT_ACC


def widen_tensor(x: te.Tensor) -> te.Tensor:
    """``x`` in its accumulation dtype (``x`` itself when it already is; the cast is
    inlined into whatever reads it)."""
    return as_dtype(x, acc_dtype(x.dtype))


def as_dtype(x: te.Tensor, dtype: str) -> te.Tensor:
    """``x`` converted to ``dtype`` (``x`` itself when it already is)."""
    if x.dtype == dtype:
        return x
    return te.elementwise(lambda v: te.cast(v, dtype), x, name=f"{x.name}_{dtype}")


def reduced_index(index: Sequence[PrimExpr], axes: Sequence[int]) -> tuple[PrimExpr, ...]:
    """Where a statistic over ``axes`` (the reduced axes dropped) is read at the full
    ``index``."""
    return tuple(i for d, i in enumerate(index) if d not in axes)


def reduce_over(shape: Sequence[int], axes: Sequence[int], keepdims: bool, source: Source,
                reducer: te.Reducer, name: str) -> te.Tensor:
    """``reducer`` over ``axes`` of ``source`` (an element of a tensor of ``shape``); the
    result keeps the reduced axes as length 1 or drops them. With no axes it is the source
    itself, elementwise."""
    axes = sorted(axes)
    if keepdims:
        out_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))
    else:
        out_shape = tuple(n for d, n in enumerate(shape) if d not in axes)

    def element(*out_index: PrimExpr) -> PrimExpr | te.Reduce:
        ks = {a: te.reduce_axis(shape[a], f"k{a}") for a in axes}
        kept = iter([i for d, i in enumerate(out_index) if d not in ks] if keepdims
                    else out_index)
        index = tuple(ks[d].var if d in ks else next(kept) for d in range(len(shape)))
        value = source(index)
        return reducer(value, axis=[ks[a] for a in axes]) if ks else value

    return te.compute(out_shape, element, name=name)


def mean_over(shape: Sequence[int], axes: Sequence[int], source: Source,
              name: str) -> te.Tensor:
    """The mean of the float ``source`` over ``axes`` (dropped): the sum in the source's
    dtype divided by the count, as NumPy's ``mean`` computes it."""
    total = reduce_over(shape, axes, False, source, te.sum, f"{name}_sum")
    count = math.prod(shape[a] for a in axes)
    return te.compute(total.shape, lambda *i: total[i] / count, name=name)


def standardise(x: te.Tensor, axes: Sequence[int], epsilon: float, name: str) -> te.Tensor:
    """``(x - mean) / sqrt(var + epsilon)`` with the mean and the biased variance
    ``mean((x - mean)**2)`` over ``axes`` of the float tensor ``x``, as the reference
    kernels compute them (in ``x``'s dtype)."""
    mean = mean_over(x.shape, axes, lambda i: x[i], f"{name}_mean")

    def centred(i: tuple[PrimExpr, ...]) -> PrimExpr:
        return x[i] - mean[reduced_index(i, axes)]

    var = mean_over(x.shape, axes, lambda i: centred(i) * centred(i), f"{name}_var")
    denom = root(var, epsilon, f"{name}_denom")
    return te.compute(x.shape, lambda *i: centred(i) / denom[reduced_index(i, axes)], name=name)


def root(stat: te.Tensor, epsilon: float, name: str) -> te.Tensor:
    """``sqrt(stat + epsilon)``, elementwise (kept in a buffer by ``te.lower`` when read
    per element of a larger tensor, so each root is taken once)."""
    return te.compute(stat.shape, lambda *i: te.sqrt(stat[i] + epsilon), name=name)


def scale_shift(x: te.Tensor, axis: int, gamma: te.Tensor | None, beta: te.Tensor | None,
                dtype: str, name: str) -> te.Tensor:
    """``x * gamma + beta`` with the 1-D ``gamma`` and ``beta`` (either may be None) along
    ``axis``, computed in ``x``'s dtype and converted to ``dtype``."""

    def element(*i: PrimExpr) -> PrimExpr:
        value = x[i]
        if gamma is not None:
            value = value * te.cast(gamma[i[axis]], x.dtype)
        if beta is not None:
            value = value + te.cast(beta[i[axis]], x.dtype)
        return te.cast(value, dtype)

    return te.compute(x.shape, element, name=name)
