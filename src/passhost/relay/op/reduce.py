"""Reduction operators (sum, mean, max, min, prod) over axes.

As in TVM, ``axis`` is None, an int or a tuple of ints; None or an empty tuple reduces every
axis (whatever ``exclude`` says), and ``exclude=True`` reduces every axis *not* listed.
``keepdims`` keeps reduced axes with length 1.

Reference kernels: ``sum`` and ``prod`` keep the input dtype (integers wrap around) and
accumulate float16 and bfloat16 in float32, rounding the result once (an empty reduction
gives 0 and 1); ``mean`` of integers sums in int64 and divides truncating toward zero (TVM's
integer division), giving the input dtype. ``mean``, ``max`` and ``min`` reject a reduction
over zero elements.

TE computes (loop nests) give the same results: integer sums and products accumulate in
uint64, which wraps as the reference's dtypes do; ``max`` and ``min`` propagate NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from passhost import te
from passhost.ir.attrs import Attrs, attrs_class, bool_field, ints_field
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES, TensorType, Type, is_float_dtype
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.elemwise_te import acc_dtype
from passhost.relay.op.registry import ArgTypes, Op, OpPattern, TypeRelation, define_op
from passhost.relay.op.te_reduce import as_dtype, reduce_over, sum_dtype

__all__ = ["max", "mean", "min", "prod", "sum"]


@attrs_class
class ReduceAttrs(Attrs):
    """Attributes of the reductions: which axes, whether to keep them, whether to invert."""

    axis: tuple[int, ...] | None = ints_field(None, optional=True, expand=1)
    keepdims: bool = bool_field(False)
    exclude: bool = bool_field(False)


def reduce_axes(args: ArgTypes, attrs_value: ReduceAttrs, ndim: int) -> tuple[int, ...]:
    """The sorted, non-negative axes a reduction with these attrs reduces on an ``ndim``-D
    input (errors name the ``axis`` attribute)."""
    if not attrs_value.axis:
        return tuple(range(ndim))
    axes = [normalize_axis(args, "axis", a, ndim) for a in attrs_value.axis]
    if len(set(axes)) != len(axes):
        args.fail_attr("axis", "distinct axes", attrs_value.axis)
    if attrs_value.exclude:
        return tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(axes))


def _reduce_rel(dtypes: tuple[str, ...], nonempty: bool) -> TypeRelation:
    def rel(args: ArgTypes, attrs_value: ReduceAttrs) -> Type:
        data = args.tensor(0, dtypes=dtypes)
        axes = reduce_axes(args, attrs_value, data.ndim)
        if nonempty and axes and any(data.shape[a] == 0 for a in axes):
            args.fail(0, f"a tensor with no zero-length reduced axis (axes {list(axes)})", data)
        if attrs_value.keepdims:
            shape = tuple(1 if i in axes else d for i, d in enumerate(data.shape))
        else:
            shape = tuple(d for i, d in enumerate(data.shape) if i not in axes)
        return TensorType(shape, data.dtype)

    return rel


_Kernel = Callable[[ReduceAttrs, np.ndarray], np.ndarray]


def _accumulating(reduce: Callable[..., np.ndarray]) -> _Kernel:
    """A kernel applying NumPy's ``reduce`` in the input dtype (float16 and bfloat16 in
    float32)."""

    def compute(attrs_value: ReduceAttrs, x: np.ndarray) -> np.ndarray:
        axes = _kernel_axes(attrs_value, x.ndim)
        acc = acc_float(x.dtype)
        with np.errstate(all="ignore"):
            out = reduce(x.astype(acc, copy=False), axis=axes, dtype=acc,
                         keepdims=attrs_value.keepdims)
        return np.asarray(out).astype(x.dtype)

    return compute


def _mean(attrs_value: ReduceAttrs, x: np.ndarray) -> np.ndarray:
    axes = _kernel_axes(attrs_value, x.ndim)
    count = 1
    for a in axes:
        count *= x.shape[a]
    keep = attrs_value.keepdims
    if is_float_dtype(x.dtype.name):
        acc = acc_float(x.dtype)
        out = np.sum(x.astype(acc, copy=False), axis=axes, dtype=acc,
                     keepdims=keep) / np.asarray(count, dtype=acc)
        return np.asarray(out).astype(x.dtype)
    total = np.asarray(np.sum(x, axis=axes, dtype=np.int64, keepdims=keep))
    # Truncating division: the floor quotient, one more where a negative total leaves a
    # remainder (no magnitude is taken, which INT64_MIN would not have).
    quotient = total // count + ((total % count != 0) & (total < 0))
    return np.asarray(quotient).astype(x.dtype)


def _extreme(reduce: Callable[..., np.ndarray]) -> _Kernel:
    """A kernel picking the maximum or minimum (NaN propagates; bfloat16 in float32)."""

    def compute(attrs_value: ReduceAttrs, x: np.ndarray) -> np.ndarray:
        axes = _kernel_axes(attrs_value, x.ndim)
        out = reduce(x.astype(acc_float(x.dtype), copy=False), axis=axes,
                     keepdims=attrs_value.keepdims)
        return np.asarray(out).astype(x.dtype)

    return compute


# -- TE computes -------------------------------------------------------------------------
_TECompute = Callable[[ReduceAttrs, Sequence[te.Tensor], TensorType], te.Tensor]


def _accumulating_te(reducer: te.Reducer) -> _TECompute:
    """A TE compute of ``sum`` or ``prod``: accumulate in :func:`sum_dtype`, round once."""

    def te_compute(attrs_value: ReduceAttrs, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor:
        (x,) = inputs
        acc = sum_dtype(x.dtype)
        total = reduce_over(x.shape, _kernel_axes(attrs_value, x.ndim), attrs_value.keepdims,
                            lambda i: te.cast(x[i], acc), reducer, reducer.name)
        return as_dtype(total, out.dtype)

    return te_compute


def _mean_te(attrs_value: ReduceAttrs, inputs: Sequence[te.Tensor],
             out: TensorType) -> te.Tensor:
    (x,) = inputs
    axes = _kernel_axes(attrs_value, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    acc = sum_dtype(x.dtype)
    total = reduce_over(x.shape, axes, attrs_value.keepdims, lambda i: te.cast(x[i], acc),
                        te.sum, "mean_sum")
    if is_float_dtype(x.dtype):
        return te.elementwise(lambda v: te.cast(v / count, out.dtype), total, name="mean")
    # The int64 sum divided truncating toward zero (C's division, as the reference's).
    return te.elementwise(lambda v: te.cast(te.cast(v, "int64") / count, out.dtype), total,
                          name="mean")


def _extreme_te(reducer: te.Reducer) -> _TECompute:
    """A TE compute of ``max`` or ``min``: NaN propagates; narrow floats compare as float32
    (exactly), bools as uint8."""

    def te_compute(attrs_value: ReduceAttrs, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor:
        (x,) = inputs
        work = "uint8" if x.dtype == "bool" else acc_dtype(x.dtype)
        best = reduce_over(x.shape, _kernel_axes(attrs_value, x.ndim), attrs_value.keepdims,
                           lambda i: te.cast(x[i], work), reducer, reducer.name)
        return as_dtype(best, out.dtype)

    return te_compute


def _kernel_axes(attrs_value: ReduceAttrs, ndim: int) -> tuple[int, ...]:
    if not attrs_value.axis:
        return tuple(range(ndim))
    axes = {a % ndim for a in attrs_value.axis}
    if attrs_value.exclude:
        return tuple(i for i in range(ndim) if i not in axes)
    return tuple(sorted(axes))


_NUMERIC = ANY_FLOAT_DTYPES + INT_DTYPES


def _reduce_op(name: str, compute: _Kernel, te_compute: _TECompute, dtypes: tuple[str, ...],
               nonempty: bool, description: str) -> Op:
    return define_op(name, inputs=("data",), type_rel=_reduce_rel(dtypes, nonempty),
                     compute=compute, attrs=ReduceAttrs, pattern=OpPattern.COMM_REDUCE,
                     description=description, te_compute=te_compute)


sum = _reduce_op("sum", _accumulating(np.sum), _accumulating_te(te.sum), _NUMERIC, False,
                 "Sum over axes (the input dtype; integers wrap around).")
mean = _reduce_op("mean", _mean, _mean_te, _NUMERIC, True,
                  "Arithmetic mean over axes (integers: truncated toward zero).")
max = _reduce_op("max", _extreme(np.max), _extreme_te(te.propagating_max),
                 (*_NUMERIC, "bool"), True, "Maximum over axes.")
min = _reduce_op("min", _extreme(np.min), _extreme_te(te.propagating_min),
                 (*_NUMERIC, "bool"), True, "Minimum over axes.")
prod = _reduce_op("prod", _accumulating(np.prod), _accumulating_te(te.prod), _NUMERIC, False,
                  "Product over axes (the input dtype; integers wrap around).")
