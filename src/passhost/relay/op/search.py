"""Index-valued reductions and selection: ``argmax``, ``argmin``, ``topk``.

* ``argmax`` / ``argmin`` reduce one axis (negative counts from the end) to the int64 index
  of its largest / smallest element: the first such index, or the last one with
  ``select_last_index``. ``keepdims`` keeps the axis with length 1. The axis must not be
  empty. A NaN is picked before any number (NumPy's convention) by both.
* ``topk`` returns the ``k`` largest (or, with ``largest=False``, smallest) elements along
  ``axis`` and their int64 indices, as a tuple ``(values, indices)``; both are sorted (largest
  first, or smallest first), and equal values keep their order (lower index first).
  ``0 <= k <= length of the axis``. NaN counts as larger than every number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from passhost import te
from passhost.ir.attrs import Attrs, attrs_class, bool_field, int_field
from passhost.ir.types import (
    ANY_FLOAT_DTYPES,
    INT_DTYPES,
    TensorType,
    TupleType,
    Type,
    is_float_dtype,
)
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.registry import ArgTypes, Op, OpPattern, define_op
from passhost.relay.op.te_reduce import reduce_over, reduced_index, widen_tensor
from passhost.tir.expr import PrimExpr

__all__ = ["arg_extreme_te", "argmax", "argmin", "topk"]

_NUMERIC = ANY_FLOAT_DTYPES + INT_DTYPES


# -- argmax, argmin ----------------------------------------------------------------------------
@attrs_class
class ArgReduceAttrs(Attrs):
    """Attributes of ``argmax`` and ``argmin``: the axis, whether to keep it, which of equal
    extremes to pick."""

    axis: int = int_field(0)
    keepdims: bool = bool_field(False)
    select_last_index: bool = bool_field(False)


def _arg_reduce_rel(args: ArgTypes, attrs_value: ArgReduceAttrs) -> Type:
    data = args.tensor(0, dtypes=_NUMERIC)
    axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    if data.shape[axis] == 0:
        args.fail(0, f"a tensor whose axis {axis} is not empty", data)
    if attrs_value.keepdims:
        shape = tuple(1 if i == axis else d for i, d in enumerate(data.shape))
    else:
        shape = tuple(d for i, d in enumerate(data.shape) if i != axis)
    return TensorType(shape, "int64")


def arg_extreme_te(x: te.Tensor, axis: int, keepdims: bool, extreme: te.Reducer,
                   last: bool, name: str) -> te.Tensor:
    """The int64 index along ``axis`` of the first (or ``last``) element of ``x`` equal to
    its ``extreme`` there, or of the first (last) NaN: the extreme value in one pass, then
    the least (greatest) index holding it in another. Narrow floats compare as float32."""
    wide = widen_tensor(x)
    best = reduce_over(x.shape, (axis,), False, lambda i: wide[i], extreme, f"{name}_value")
    n = x.shape[axis]

    def index(i: tuple[PrimExpr, ...]) -> PrimExpr:
        value = wide[i]
        hit = value.equal(best[reduced_index(i, (axis,))])
        if is_float_dtype(value.dtype):
            hit = hit | te.isnan(value)  # only when ``best`` is NaN: NaN propagates to it
        return te.if_then_else(hit, i[axis], -1 if last else n)

    return reduce_over(x.shape, (axis,), keepdims, index, te.max if last else te.min, name)


def _arg_reduce_op(name: str, find: Callable[..., np.ndarray], which: str,
                   extreme: te.Reducer) -> Op:
    def compute(attrs_value: ArgReduceAttrs, x: np.ndarray) -> np.ndarray:
        axis = attrs_value.axis % x.ndim
        x = x.astype(acc_float(x.dtype), copy=False)  # bfloat16 compares as float32
        if attrs_value.select_last_index:
            index = x.shape[axis] - 1 - find(np.flip(x, axis), axis=axis)
        else:
            index = find(x, axis=axis)
        if attrs_value.keepdims:
            index = np.expand_dims(index, axis)
        return np.asarray(index, dtype=np.int64)

    def te_compute(attrs_value: ArgReduceAttrs, inputs: Sequence[te.Tensor],
                   _out: TensorType) -> te.Tensor:
        (x,) = inputs
        return arg_extreme_te(x, attrs_value.axis % x.ndim, attrs_value.keepdims, extreme,
                              attrs_value.select_last_index, name)

    return define_op(name, inputs=("data",), type_rel=_arg_reduce_rel, compute=compute,
                     attrs=ArgReduceAttrs, pattern=OpPattern.COMM_REDUCE,
                     te_compute=te_compute,
                     description=f"The int64 index of the {which} element along an axis "
                                 f"(the first one, or the last with select_last_index).")


argmax = _arg_reduce_op("argmax", np.argmax, "largest", te.propagating_max)
argmin = _arg_reduce_op("argmin", np.argmin, "smallest", te.propagating_min)


# -- topk --------------------------------------------------------------------------------------
@attrs_class
class TopKAttrs(Attrs):
    """Attributes of ``topk``: how many elements, along which axis, largest or smallest."""

    k: int = int_field(minimum=0)
    axis: int = int_field(-1)
    largest: bool = bool_field(True)


def _topk_rel(args: ArgTypes, attrs_value: TopKAttrs) -> Type:
    data = args.tensor(0, dtypes=_NUMERIC)
    axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    if attrs_value.k > data.shape[axis]:
        args.fail_attr("k", f"at most the length {data.shape[axis]} of axis {axis} of {data}",
                       attrs_value.k)
    shape = tuple(attrs_value.k if i == axis else d for i, d in enumerate(data.shape))
    return TupleType([TensorType(shape, data.dtype), TensorType(shape, "int64")])


def _topk(attrs_value: TopKAttrs, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    axis = attrs_value.axis % x.ndim
    n = x.shape[axis]
    keys = x.astype(acc_float(x.dtype), copy=False)  # bfloat16 sorts as float32
    if attrs_value.largest:
        # A stable ascending sort of the reversed axis, read backwards: descending values,
        # and equal values in ascending order of their original index.
        order = n - 1 - np.flip(np.argsort(np.flip(keys, axis), axis=axis, kind="stable"),
                                axis)
    else:
        order = np.argsort(keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(attrs_value.k), axis=axis).astype(np.int64)
    values = np.take_along_axis(x, indices, axis=axis)
    return np.asarray(values, dtype=x.dtype), indices


topk = define_op(
    "topk", inputs=("data",), type_rel=_topk_rel, compute=_topk, attrs=TopKAttrs,
    pattern=OpPattern.OPAQUE,
    description="The k largest (or smallest) elements along an axis and their int64 indices, "
                "sorted, equal values lower index first.")
