"""The math intrinsics TIR ``Call``\\ s may name (``tir.exp``, ``tir.pow``, ``tir.isnan``...),
declared once: arity, argument dtypes, reference meaning (NumPy) and C spelling.

Every intrinsic takes arguments of one dtype. Most take the IEEE float dtypes and return
their argument's dtype; ``tir.fabs`` also takes integers (the most negative integer stays
itself, as NumPy's ``abs``); ``tir.isnan``, ``tir.isinf`` and ``tir.isfinite`` return
``bool``. float16 computes in float32 and rounds the result to float16 once, in the
reference and in C alike. Build calls with :func:`intrinsic_call`, which checks them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from attrs import field, frozen

from passhost.errors import IRTypeError, UnknownNameError
from passhost.ir.node import FrozenDict, frozen_dict
from passhost.ir.types import FLOAT_DTYPES, INT_DTYPES
from passhost.tir import numpy_math
from passhost.tir.expr import Call, PrimExpr, convert

__all__ = ["INTRINSICS", "Intrinsic", "check_intrinsic_call", "intrinsic_call"]


@frozen
class Intrinsic:
    """One math intrinsic.

    ``numpy`` is its meaning: a function of NumPy arrays or scalars of an accepted dtype
    returning the result dtype. ``c_names`` is its C spelling per accepted dtype (float16 is
    spelled as float32: C computes it in float and rounds); names starting with ``ph_`` are
    helpers the C printer defines in the unit.
    """

    name: str
    arity: int
    dtypes: tuple[str, ...]
    numpy: Callable[..., Any] = field(eq=False)
    c_names: FrozenDict = field(converter=frozen_dict)
    returns_bool: bool = False

    def result_dtype(self, arg_dtype: str) -> str:
        """The dtype of a call whose arguments are ``arg_dtype``."""
        return "bool" if self.returns_bool else arg_dtype

    def c_name(self, dtype: str) -> str:
        """The C function (or macro) computing this intrinsic on ``dtype`` arguments."""
        return self.c_names["float32" if dtype == "float16" else dtype]


def _reference(fn: Callable[..., Any], returns_bool: bool = False) -> Callable[..., Any]:
    """``fn`` made dtype-preserving: float16 computed in float32 and rounded once, the result
    in the arguments' dtype (bool for predicates), floating-point warnings silenced."""

    def reference(*args: Any) -> Any:
        arrays = [np.asarray(a) for a in args]
        dtype = arrays[0].dtype
        if dtype == np.float16:
            arrays = [a.astype(np.float32) for a in arrays]
        with np.errstate(all="ignore"):
            return np.asarray(fn(*arrays)).astype(bool if returns_bool else dtype)[()]

    reference.__name__ = reference.__qualname__ = getattr(fn, "__name__", "reference")
    return reference


def _libm(name: str) -> dict[str, str]:
    return {"float32": f"{name}f", "float64": name}


_INT_SUFFIX = {"int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
               "uint32": "u32", "int64": "i64", "uint64": "u64"}

#: ``(name, arity, NumPy function, C names)`` of the float intrinsics that return their
#: argument's dtype; the C name is a libm function (``f`` suffix for float32) unless given.
_FLOAT_UNARY: tuple[tuple[str, Callable[..., Any], Mapping[str, str] | str], ...] = (
    ("exp", np.exp, "exp"), ("exp2", np.exp2, "exp2"), ("expm1", np.expm1, "expm1"),
    ("log", np.log, "log"), ("log2", np.log2, "log2"), ("log10", np.log10, "log10"),
    ("log1p", np.log1p, "log1p"), ("sqrt", np.sqrt, "sqrt"),
    ("rsqrt", numpy_math.rsqrt, {"float32": "ph_rsqrtf", "float64": "ph_rsqrt"}),
    ("erf", numpy_math.erf_float64, "erf"), ("tanh", np.tanh, "tanh"),
    ("sigmoid", numpy_math.sigmoid, {"float32": "ph_sigmoidf", "float64": "ph_sigmoid"}),
    ("sin", np.sin, "sin"), ("cos", np.cos, "cos"), ("tan", np.tan, "tan"),
    ("asin", np.arcsin, "asin"), ("acos", np.arccos, "acos"), ("atan", np.arctan, "atan"),
    ("sinh", np.sinh, "sinh"), ("cosh", np.cosh, "cosh"), ("asinh", np.arcsinh, "asinh"),
    ("acosh", np.arccosh, "acosh"), ("atanh", np.arctanh, "atanh"),
    ("floor", np.floor, "floor"), ("ceil", np.ceil, "ceil"), ("trunc", np.trunc, "trunc"),
    # Half to even: nearbyint rounds in the current rounding mode, which is to-nearest-even.
    ("round", np.rint, "nearbyint"),
)
_FLOAT_BINARY: tuple[tuple[str, Callable[..., Any], str], ...] = (
    ("pow", np.power, "pow"), ("fmod", np.fmod, "fmod"), ("atan2", np.arctan2, "atan2"),
    ("copysign", np.copysign, "copysign"),
)
#: ``(name, NumPy function, C helper)`` of the integer intrinsics: bitwise logic and shifts
#: (shift amounts must be in [0, bits); left shifts wrap, right shifts of negative values
#: are arithmetic, as NumPy's).
_INT_BINARY: tuple[tuple[str, Callable[..., Any], str], ...] = (
    ("bitwise_and", np.bitwise_and, "band"), ("bitwise_or", np.bitwise_or, "bor"),
    ("bitwise_xor", np.bitwise_xor, "bxor"), ("shift_left", np.left_shift, "shl"),
    ("shift_right", np.right_shift, "shr"),
)
_PREDICATES: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
)


def _build() -> dict[str, Intrinsic]:
    table: dict[str, Intrinsic] = {}

    def add(intrinsic: Intrinsic) -> None:
        table[intrinsic.name] = intrinsic

    for short, fn, c in _FLOAT_UNARY:
        add(Intrinsic(f"tir.{short}", 1, FLOAT_DTYPES, _reference(fn),
                      _libm(c) if isinstance(c, str) else c))
    for short, fn, c in _FLOAT_BINARY:
        add(Intrinsic(f"tir.{short}", 2, FLOAT_DTYPES, _reference(fn), _libm(c)))
    for short, fn in _PREDICATES:
        add(Intrinsic(f"tir.{short}", 1, FLOAT_DTYPES, _reference(fn, returns_bool=True),
                      {"float32": short, "float64": short}, returns_bool=True))
    for short, fn, helper in _INT_BINARY:
        add(Intrinsic(f"tir.{short}", 2, INT_DTYPES, _reference(fn),
                      {d: f"ph_{helper}_{s}" for d, s in _INT_SUFFIX.items()}))
    abs_names = {**_libm("fabs"), **{d: f"ph_abs_{s}" for d, s in _INT_SUFFIX.items()}}
    add(Intrinsic("tir.fabs", 1, (*FLOAT_DTYPES, *INT_DTYPES), _reference(np.abs), abs_names))
    return dict(sorted(table.items()))


#: Every math intrinsic, by op name (``"tir.exp"``).
INTRINSICS: dict[str, Intrinsic] = _build()


def _lookup(name: str) -> Intrinsic:
    intrinsic = INTRINSICS.get(name)
    if intrinsic is None:
        raise UnknownNameError("intrinsic", name, INTRINSICS)
    return intrinsic


def check_intrinsic_call(call: Call) -> Intrinsic:
    """The intrinsic ``call`` names, after checking its arity, argument dtypes and result
    dtype (``IRTypeError`` otherwise; ``UnknownNameError`` for an unknown op)."""
    intrinsic = _lookup(call.op)
    args = call.args
    if len(args) != intrinsic.arity:
        raise IRTypeError(f"{call.op} takes {intrinsic.arity} argument(s), found {len(args)}",
                          op=call.op, expected=str(intrinsic.arity), found=str(len(args)),
                          span=call.span)
    dtypes = []
    for i, arg in enumerate(args):
        if not isinstance(arg, PrimExpr):
            raise IRTypeError(f"{call.op}: argument {i} must be an expression, found {arg!r}",
                              op=call.op, argument=str(i), span=call.span)
        dtypes.append(arg.dtype)
    if dtypes[0] not in intrinsic.dtypes:
        raise IRTypeError(f"{call.op}: arguments of dtype {dtypes[0]} are not allowed "
                          f"(expected {', '.join(intrinsic.dtypes)})", op=call.op,
                          argument="0", expected=" | ".join(intrinsic.dtypes),
                          found=dtypes[0], span=call.span)
    for i, dtype in enumerate(dtypes[1:], 1):
        if dtype != dtypes[0]:
            raise IRTypeError(f"{call.op}: argument {i} is {dtype}, argument 0 is "
                              f"{dtypes[0]}; the arguments must have one dtype", op=call.op,
                              argument=str(i), expected=dtypes[0], found=dtype,
                              span=call.span)
    expected = intrinsic.result_dtype(dtypes[0])
    if call.dtype != expected:
        raise IRTypeError(f"{call.op} of {dtypes[0]} returns {expected}, the call says "
                          f"{call.dtype}", op=call.op, expected=expected, found=call.dtype,
                          span=call.span)
    return intrinsic


def intrinsic_call(name: str, *args: Any) -> Call:
    """``Call`` of intrinsic ``name`` (``"tir.exp"``) on ``args``, with the result dtype set
    and arity and dtypes checked; Python numbers take the dtype of the other arguments."""
    intrinsic = _lookup(name)
    if len(args) != intrinsic.arity:
        raise IRTypeError(f"{name} takes {intrinsic.arity} argument(s), found {len(args)}",
                          op=name, expected=str(intrinsic.arity), found=str(len(args)))
    like = next((a.dtype for a in args if isinstance(a, PrimExpr)), None)
    exprs = []
    for i, arg in enumerate(args):
        try:
            exprs.append(convert(arg, like))
        except IRTypeError as err:
            raise IRTypeError(f"{name}: argument {i}: {err}", op=name,
                              argument=str(i)) from None
    dtype = exprs[0].dtype
    call = Call(intrinsic.result_dtype(dtype) if dtype in intrinsic.dtypes else dtype, name,
                exprs)
    check_intrinsic_call(call)
    return call
