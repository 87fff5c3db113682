"""Logic, bitwise and floating-point class operators on tensors (``logical_*``, ``bitwise_*``,
``left_shift``, ``right_shift``, ``isnan``, ``isinf``); the comparisons are in tensor.py.

Notes on the reference kernels:

* The shifts move the bits of ``lhs`` by ``rhs`` places. A left shift of a signed integer moves
  bits into and past the sign bit (two's complement, bits past the top are lost); a right
  shift of a signed integer is arithmetic (it copies the sign bit). A shift by a negative
  amount or by the bit width or more gives what the sign fill alone gives: -1 for a right
  shift of a negative number, 0 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost import te
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES, TensorType, Type
from passhost.relay.op.common import broadcast_rel
from passhost.relay.op.elemwise_te import binary_compute, is_signed, unary_compute
from passhost.relay.op.registry import ArgTypes, Op, OpPattern, TypeRelation, define_op
from passhost.tir.expr import PrimExpr, const

__all__ = [
    "logical_not", "logical_and", "logical_or", "logical_xor",
    "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "isnan", "isinf",
]


def _bool_binary_rel(args: ArgTypes, attrs_value: object) -> Type:
    args.tensor(0, dtypes=("bool",))
    args.tensor(1, dtypes=("bool",))
    return broadcast_rel(args, attrs_value)


def _int_binary_rel(args: ArgTypes, attrs_value: object) -> Type:
    args.tensor(0, dtypes=INT_DTYPES)
    args.tensor(1, dtypes=INT_DTYPES)
    return broadcast_rel(args, attrs_value)


def _binary_op(name: str, kernel: Callable[[np.ndarray, np.ndarray], np.ndarray],
               type_rel: TypeRelation, description: str,
               te_fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Op:
    def compute(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(kernel(a, b), dtype=a.dtype)

    return define_op(name, inputs=("lhs", "rhs"), type_rel=type_rel, compute=compute,
                     pattern=OpPattern.BROADCAST, description=description,
                     te_compute=binary_compute(te_fn, name))


def _unary_op(name: str, kernel: Callable[[np.ndarray], np.ndarray], type_rel: TypeRelation,
              out_dtype: str | None, description: str,
              te_fn: Callable[[PrimExpr], PrimExpr]) -> Op:
    def compute(_attrs: object, x: np.ndarray) -> np.ndarray:
        return np.asarray(kernel(x), dtype=out_dtype or x.dtype)

    return define_op(name, inputs=("data",), type_rel=type_rel, compute=compute,
                     pattern=OpPattern.ELEMWISE, description=description,
                     te_compute=unary_compute(te_fn, name))


def _bool_rel(args: ArgTypes, _attrs: object) -> Type:
    return args.tensor(0, dtypes=("bool",))


def _int_rel(args: ArgTypes, _attrs: object) -> Type:
    return args.tensor(0, dtypes=INT_DTYPES)


def _float_class_rel(args: ArgTypes, _attrs: object) -> Type:
    return TensorType(args.tensor(0, dtypes=ANY_FLOAT_DTYPES).shape, "bool")


# -- logic on bool tensors ----------------------------------------------------------------------
logical_not = _unary_op("logical_not", np.logical_not, _bool_rel, None,
                        "Elementwise logical not of a bool tensor.", lambda x: ~x)
logical_and = _binary_op("logical_and", np.logical_and, _bool_binary_rel,
                         "Elementwise logical and of bool tensors, NumPy broadcasting.",
                         lambda a, b: a & b)
logical_or = _binary_op("logical_or", np.logical_or, _bool_binary_rel,
                        "Elementwise logical or of bool tensors, NumPy broadcasting.",
                        lambda a, b: a | b)
logical_xor = _binary_op("logical_xor", np.logical_xor, _bool_binary_rel,
                         "Elementwise logical exclusive or of bool tensors, NumPy broadcasting.",
                         lambda a, b: a.not_equal(b))


# -- bitwise operators on integer tensors -------------------------------------------------------
def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"uint{dtype.itemsize * 8}")


def _shift(a: np.ndarray, b: np.ndarray, left: bool) -> np.ndarray:
    """``a`` shifted by ``b`` bits (see the module notes for out-of-range amounts)."""
    bits = a.dtype.itemsize * 8
    a, b = np.broadcast_arrays(a, b)
    valid = (b >= 0) & (b < bits)
    amount = np.where(valid, b, 0).astype(_unsigned(a.dtype))
    # Shifting the two's complement bit pattern: left shifts of signed numbers wrap, right
    # shifts of signed numbers copy the sign bit (NumPy's right_shift on signed dtypes).
    fill = np.zeros(a.shape, a.dtype)
    if left:
        moved = np.left_shift(a.view(_unsigned(a.dtype)), amount).view(a.dtype)
    else:
        moved = np.right_shift(a, amount.astype(a.dtype))
        if a.dtype.kind == "i":
            fill = np.negative((a < 0).astype(a.dtype))
    return np.where(valid, moved, fill)


def _shift_te(a: PrimExpr, b: PrimExpr, left: bool) -> PrimExpr:
    """The element of :func:`_shift`: the shift itself only ever by an amount in range, and a
    left shift on the unsigned bits (C leaves the other shifts undefined)."""
    dtype = np.dtype(a.dtype)
    valid = (b >= 0) & (b < dtype.itemsize * 8)
    amount = te.if_then_else(valid, b, 0)
    zero = const(0, a.dtype)
    if left:
        unsigned = _unsigned(dtype).name
        moved = te.cast(te.shift_left(te.cast(a, unsigned), te.cast(amount, unsigned)),
                        a.dtype)
        fill = zero
    else:
        moved = te.shift_right(a, amount)
        fill = te.if_then_else(a < 0, const(-1, a.dtype), zero) if is_signed(a.dtype) else zero
    return te.if_then_else(valid, moved, fill)


def _complement(x: PrimExpr) -> PrimExpr:
    """``x`` with every bit flipped: exclusive or with all ones (-1, or the unsigned maximum)."""
    ones = const(-1, x.dtype) if is_signed(x.dtype) else te.max_value(x.dtype)
    return te.bitwise_xor(x, ones)


bitwise_not = _unary_op("bitwise_not", np.invert, _int_rel, None,
                        "Elementwise bitwise complement of an integer tensor.", _complement)
bitwise_and = _binary_op("bitwise_and", np.bitwise_and, _int_binary_rel,
                         "Elementwise bitwise and of integer tensors, NumPy broadcasting.",
                         te.bitwise_and)
bitwise_or = _binary_op("bitwise_or", np.bitwise_or, _int_binary_rel,
                        "Elementwise bitwise or of integer tensors, NumPy broadcasting.",
                        te.bitwise_or)
bitwise_xor = _binary_op("bitwise_xor", np.bitwise_xor, _int_binary_rel,
                         "Elementwise bitwise exclusive or of integer tensors, NumPy "
                         "broadcasting.", te.bitwise_xor)
left_shift = _binary_op(
    "left_shift", lambda a, b: _shift(a, b, left=True), _int_binary_rel,
    "Elementwise lhs << rhs (bits past the top are lost; a negative amount or one of at "
    "least the bit width gives 0).", lambda a, b: _shift_te(a, b, left=True))
right_shift = _binary_op(
    "right_shift", lambda a, b: _shift(a, b, left=False), _int_binary_rel,
    "Elementwise lhs >> rhs, arithmetic for signed integers (a negative amount or one of at "
    "least the bit width gives -1 for negative lhs, else 0).",
    lambda a, b: _shift_te(a, b, left=False))


# -- floating-point classes ---------------------------------------------------------------------
isnan = _unary_op("isnan", np.isnan, _float_class_rel, "bool",
                  "Elementwise: whether x is NaN, as bool.", te.isnan)
isinf = _unary_op("isinf", np.isinf, _float_class_rel, "bool",
                  "Elementwise: whether x is an infinity (either sign), as bool.", te.isinf)
