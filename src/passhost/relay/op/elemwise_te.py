"""Building blocks of the elementwise operators' TE computes (see :mod:`passhost.te`).

The computes describe, element by element, exactly what the NumPy reference kernels compute:

* float16 and bfloat16 values are widened to float32, computed and rounded once
  (:func:`unary_compute` and :func:`binary_compute` do it for every operator built on them);
* selections follow NumPy's rules for NaN explicitly (:func:`np_maximum`,
  :func:`np_minimum`) rather than relying on what ``tir.Max``/``tir.Min`` do with NaN;
* integer quotients and remainders never divide by zero nor divide the most negative
  integer by -1 (:func:`safe_divisor`): both are undefined in C.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from passhost import te
from passhost.ir.types import TensorType, is_float_dtype
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.registry import TECompute
from passhost.tir.expr import Max, Min, PrimExpr, const

__all__ = [
    "acc_dtype", "binary_compute", "float_const", "is_signed", "np_maximum", "np_minimum",
    "safe_divisor", "unary_compute", "widen",
]

#: ``fn(x)`` or ``fn(a, b)``: the element of the result from the (widened) input elements.
ScalarFn = Callable[..., PrimExpr]


def acc_dtype(dtype: str) -> str:
    """The dtype the reference kernels compute ``dtype`` values in (float32 for float16 and
    bfloat16, every other dtype itself)."""
    return acc_float(np.dtype(dtype)).name


def widen(x: PrimExpr) -> PrimExpr:
    """``x`` converted to the dtype the reference kernels compute its dtype in."""
    return te.cast(x, acc_dtype(x.dtype))


def is_signed(dtype: str) -> bool:
    """Whether ``dtype`` is a signed integer dtype."""
    return np.dtype(dtype).kind == "i"


def unary_compute(fn: ScalarFn, name: str,
                  dtypes: Sequence[str] | None = None) -> TECompute:
    """The TE compute of an elementwise operator: ``fn`` of each element widened (see
    :func:`widen`), converted to the result's dtype; None for input dtypes not in
    ``dtypes`` (when given)."""
    def te_compute(_attrs: object, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor | None:
        (x,) = inputs
        if dtypes is not None and x.dtype not in dtypes:
            return None
        return te.elementwise(lambda v: te.cast(fn(widen(v)), out.dtype), x, name)

    return te_compute


def binary_compute(fn: ScalarFn, name: str,
                   dtypes: Sequence[str] | None = None) -> TECompute:
    """The TE compute of a broadcasting binary operator: ``fn`` of the two widened elements,
    converted to the result's dtype; None for input dtypes not in ``dtypes`` (when given)."""
    def te_compute(_attrs: object, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor | None:
        a, b = inputs
        if dtypes is not None and a.dtype not in dtypes:
            return None
        return te.broadcast(lambda x, y: te.cast(fn(widen(x), widen(y)), out.dtype), a, b,
                            shape=out.shape, name=name)

    return te_compute


def float_const(value: float, dtype: str) -> PrimExpr:
    """``value`` rounded to ``dtype`` as NumPy rounds it (out of range: an infinity), as a
    constant of the dtype ``dtype`` computes in."""
    with np.errstate(all="ignore"):
        rounded = np.asarray(value, dtype=dtype)
    acc = acc_dtype(dtype)
    return const(float(rounded.astype(acc)), acc)


def np_maximum(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """NumPy's ``maximum`` of two values of one dtype: a NaN operand gives NaN; of two
    equal values, ``b`` (as NumPy's float32 and float64 loops: ``maximum(-0.0, 0.0)`` is
    0.0); bools: ``a or b``."""
    if a.dtype == "bool":
        return a | b
    if is_float_dtype(a.dtype):
        return te.if_then_else((a > b) | te.isnan(a), a, b)
    return Max(a, b)


def np_minimum(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """NumPy's ``minimum`` of two values of one dtype (as :func:`np_maximum`); bools:
    ``a and b``."""
    if a.dtype == "bool":
        return a & b
    if is_float_dtype(a.dtype):
        return te.if_then_else((a < b) | te.isnan(a), a, b)
    return Min(a, b)


def safe_divisor(b: PrimExpr) -> PrimExpr:
    """The integer divisor ``b``, with 1 in place of 0 and, for signed dtypes, of -1 (whose
    quotient the caller negates and whose remainder is 0): a divisor C defines for every
    dividend."""
    bad = b.equal(0)
    if is_signed(b.dtype):
        bad = bad | b.equal(-1)
    return te.if_then_else(bad, 1, b)
