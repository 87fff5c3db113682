"""Elementwise math beyond tensor.py's: trigonometric and hyperbolic functions, rounding and
sign, the two remainders (``mod``, ``floor_mod``), and ``bitcast``.

Notes on the reference kernels:

* ``round`` rounds halves to the nearest even integer (IEEE 754's default rounding).
* ``bitcast`` reads each element's bytes (little endian) as the target dtype, of the same
  width; bool is one byte, 0 or 1.
* ``mod`` is the remainder of the division truncated toward zero (C's ``fmod``, ``%`` on C
  integers): it has the sign of ``lhs``. ``floor_mod`` is the remainder of the division
  rounded down (Python's ``%``): it has the sign of ``rhs``. An integer remainder by zero gives
  0; a floating-point one gives NaN.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost.ir.attrs import Attrs, attrs_class, dtype_field
from passhost.ir.types import TensorType, Type, is_float_dtype
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.registry import ArgTypes, Op, OpPattern, define_op
from passhost.relay.op.tensor import arithmetic_broadcast_rel, float_rel, numeric_rel, unary_op

__all__ = [
    "floor", "ceil", "round", "sign",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "mod", "floor_mod", "bitcast",
]

# -- rounding and sign --------------------------------------------------------------------------
floor = unary_op("floor", np.floor, float_rel, "Elementwise largest integer <= x.")
ceil = unary_op("ceil", np.ceil, float_rel, "Elementwise smallest integer >= x.")
round = unary_op("round", np.round, float_rel,
                 "Elementwise nearest integer, halves to even.")
sign = unary_op("sign", np.sign, numeric_rel,
                "Elementwise sign: -1, 0 or 1 (NaN stays NaN).")

# -- trigonometric and hyperbolic functions -----------------------------------------------------
sin = unary_op("sin", np.sin, float_rel, "Elementwise sine (radians).")
cos = unary_op("cos", np.cos, float_rel, "Elementwise cosine (radians).")
tan = unary_op("tan", np.tan, float_rel, "Elementwise tangent (radians).")
asin = unary_op("asin", np.arcsin, float_rel, "Elementwise arcsine, in [-pi/2, pi/2].")
acos = unary_op("acos", np.arccos, float_rel, "Elementwise arccosine, in [0, pi].")
atan = unary_op("atan", np.arctan, float_rel, "Elementwise arctangent, in (-pi/2, pi/2).")
sinh = unary_op("sinh", np.sinh, float_rel, "Elementwise hyperbolic sine.")
cosh = unary_op("cosh", np.cosh, float_rel, "Elementwise hyperbolic cosine.")
asinh = unary_op("asinh", np.arcsinh, float_rel, "Elementwise inverse hyperbolic sine.")
acosh = unary_op("acosh", np.arccosh, float_rel,
                 "Elementwise inverse hyperbolic cosine (NaN below 1).")
atanh = unary_op("atanh", np.arctanh, float_rel,
                 "Elementwise inverse hyperbolic tangent (NaN outside [-1, 1]).")


# -- remainders ---------------------------------------------------------------------------------
def _remainder_op(name: str, ufunc: Callable[..., np.ndarray], description: str) -> Op:
    def compute(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            if is_float_dtype(a.dtype.name):
                acc = acc_float(a.dtype)
                return np.asarray(ufunc(a.astype(acc), b.astype(acc))).astype(a.dtype)
            # NumPy gives 0 for an integer remainder by zero too; the divisor is made 1 first
            # so that no warning is raised and the result is 0 whatever NumPy's version.
            zero = b == 0
            out = ufunc(a, np.where(zero, np.ones((), b.dtype), b))
            return np.where(zero, np.zeros((), a.dtype), out).astype(a.dtype, copy=False)

    return define_op(name, inputs=("lhs", "rhs"), type_rel=arithmetic_broadcast_rel,
                     compute=compute, pattern=OpPattern.BROADCAST, description=description)


mod = _remainder_op(
    "mod", np.fmod,
    "Elementwise remainder of lhs / rhs truncated toward zero (C fmod; the sign of lhs).")
floor_mod = _remainder_op(
    "floor_mod", np.mod,
    "Elementwise remainder of lhs / rhs rounded down (Python %; the sign of rhs).")


# -- bitcast ------------------------------------------------------------------------------------
@attrs_class
class BitcastAttrs(Attrs):
    """Attributes of ``bitcast``: the dtype the bits are read as."""

    dtype: str = dtype_field(allow_empty=False)


def _bitcast_rel(args: ArgTypes, attrs_value: BitcastAttrs) -> Type:
    data = args.tensor(0)
    width = np.dtype(attrs_value.dtype).itemsize
    if np.dtype(data.dtype).itemsize != width:
        args.fail(0, f"a tensor of {width}-byte elements (as {attrs_value.dtype})", data)
    return TensorType(data.shape, attrs_value.dtype)


def _bitcast(attrs_value: BitcastAttrs, x: np.ndarray) -> np.ndarray:
    little = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<"))
    out = little.view(np.dtype(attrs_value.dtype).newbyteorder("<"))
    return out.astype(attrs_value.dtype, copy=False)


bitcast = define_op(
    "bitcast", inputs=("data",), type_rel=_bitcast_rel, compute=_bitcast, attrs=BitcastAttrs,
    pattern=OpPattern.ELEMWISE,
    description="Each element's bytes (little endian) read as another dtype of the same "
                "width; the shape stays.")
