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

from collections.abc import Callable, Sequence

import numpy as np

from passhost import te
from passhost.ir.attrs import Attrs, attrs_class, dtype_field
from passhost.ir.types import TensorType, Type, is_float_dtype
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.elemwise_te import binary_compute, is_signed, safe_divisor
from passhost.relay.op.registry import ArgTypes, Op, OpPattern, define_op
from passhost.relay.op.tensor import arithmetic_broadcast_rel, float_rel, numeric_rel, unary_op
from passhost.tir.expr import FloorMod, Mod, PrimExpr, const

__all__ = [
    "floor", "ceil", "round", "sign",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    "mod", "floor_mod", "bitcast",
]

# -- rounding and sign --------------------------------------------------------------------------
def _sign_te(x: PrimExpr) -> PrimExpr:
    # NumPy: the sign of either zero is +0, of NaN NaN; unsigned integers are never negative.
    zero = const(0, x.dtype)
    rest = te.if_then_else(te.isnan(x), x, zero) if is_float_dtype(x.dtype) else zero
    if is_float_dtype(x.dtype) or is_signed(x.dtype):
        rest = te.if_then_else(x < 0, -1, rest)
    return te.if_then_else(x > 0, 1, rest)


floor = unary_op("floor", np.floor, float_rel, "Elementwise largest integer <= x.", te.floor)
ceil = unary_op("ceil", np.ceil, float_rel, "Elementwise smallest integer >= x.", te.ceil)
round = unary_op("round", np.round, float_rel,
                 "Elementwise nearest integer, halves to even.", te.round)
sign = unary_op("sign", np.sign, numeric_rel,
                "Elementwise sign: -1, 0 or 1 (NaN stays NaN).", _sign_te)

# -- trigonometric and hyperbolic functions -----------------------------------------------------
sin = unary_op("sin", np.sin, float_rel, "Elementwise sine (radians).", te.sin)
cos = unary_op("cos", np.cos, float_rel, "Elementwise cosine (radians).", te.cos)
tan = unary_op("tan", np.tan, float_rel, "Elementwise tangent (radians).", te.tan)
asin = unary_op("asin", np.arcsin, float_rel, "Elementwise arcsine, in [-pi/2, pi/2].",
                te.asin)
acos = unary_op("acos", np.arccos, float_rel, "Elementwise arccosine, in [0, pi].", te.acos)
atan = unary_op("atan", np.arctan, float_rel, "Elementwise arctangent, in (-pi/2, pi/2).",
                te.atan)
sinh = unary_op("sinh", np.sinh, float_rel, "Elementwise hyperbolic sine.", te.sinh)
cosh = unary_op("cosh", np.cosh, float_rel, "Elementwise hyperbolic cosine.", te.cosh)
asinh = unary_op("asinh", np.arcsinh, float_rel, "Elementwise inverse hyperbolic sine.",
                 te.asinh)
acosh = unary_op("acosh", np.arccosh, float_rel,
                 "Elementwise inverse hyperbolic cosine (NaN below 1).", te.acosh)
atanh = unary_op("atanh", np.arctanh, float_rel,
                 "Elementwise inverse hyperbolic tangent (NaN outside [-1, 1]).", te.atanh)


# -- remainders ---------------------------------------------------------------------------------
def _int_remainder(remainder: type[Mod] | type[FloorMod]) -> Callable[..., PrimExpr]:
    """The integer remainder ``remainder(a, b)``, 0 for a zero divisor (and, through the
    safe divisor, for -1)."""
    return lambda a, b: te.if_then_else(b.equal(0), 0, remainder(a, safe_divisor(b)))


def _mod_te(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return te.fmod(a, b) if is_float_dtype(a.dtype) else _int_remainder(Mod)(a, b)


def _floor_mod_te(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if not is_float_dtype(a.dtype):
        return _int_remainder(FloorMod)(a, b)
    # NumPy: C's fmod, moved by b when it is nonzero and of the other sign than b; a zero
    # remainder takes b's sign. A NaN remainder (b zero or NaN, a infinite) stays NaN.
    r = te.fmod(a, b)
    moved = te.if_then_else((b < 0).not_equal(r < 0), r + b, r)
    return te.if_then_else(r.equal(0), te.copysign(const(0, a.dtype), b), moved)


def _remainder_op(name: str, ufunc: Callable[..., np.ndarray], description: str,
                  te_fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Op:
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
                     compute=compute, pattern=OpPattern.BROADCAST, description=description,
                     te_compute=binary_compute(te_fn, name))


mod = _remainder_op(
    "mod", np.fmod,
    "Elementwise remainder of lhs / rhs truncated toward zero (C fmod; the sign of lhs).",
    _mod_te)
floor_mod = _remainder_op(
    "floor_mod", np.mod,
    "Elementwise remainder of lhs / rhs rounded down (Python %; the sign of rhs).",
    _floor_mod_te)


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
    # (ascontiguousarray makes a 0-d array 1-d: the shape is restored.)
    little = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<")).reshape(x.shape)
    out = little.view(np.dtype(attrs_value.dtype).newbyteorder("<"))
    return out.astype(attrs_value.dtype, copy=False)


def _bitcast_te(attrs_value: BitcastAttrs, inputs: Sequence[te.Tensor],
                _out: TensorType) -> te.Tensor | None:
    # Between integers of one width (bools as bytes of 0 or 1), reading the bits as the other
    # dtype is a conversion (two's complement wraps). Floats' bits need a reinterpreting
    # intrinsic, which TE has not; a byte other than 0 and 1 read as a bool is no bool.
    (x,) = inputs
    target = attrs_value.dtype
    if is_float_dtype(x.dtype) or is_float_dtype(target):
        return None
    if target == "bool" and x.dtype != "bool":
        return None
    return te.elementwise(lambda v: te.cast(v, target), x, "bitcast")


bitcast = define_op(
    "bitcast", inputs=("data",), type_rel=_bitcast_rel, compute=_bitcast, attrs=BitcastAttrs,
    pattern=OpPattern.ELEMWISE,
    description="Each element's bytes (little endian) read as another dtype of the same "
                "width; the shape stays.", te_compute=_bitcast_te)
