"""Scalar expressions of the low-level IR (TIR): immediates, variables, buffer loads,
arithmetic, comparisons, logic, ``Select``, ``Cast`` and intrinsic ``Call``\\ s.

Every expression has a ``dtype`` (one of :data:`TIR_DTYPES`). Nodes are immutable and
compared by identity; :func:`passhost.ir.structural_equal` compares them structurally, with
variables compared up to renaming where they are bound. Construction checks operand dtypes,
so an ill-typed expression cannot be built.

Python operators build expressions: ``x + 1``, ``a * b``, ``i < n``, ``a / b`` (``Div``),
``a // b`` (``FloorDiv``), ``a % b`` (``FloorMod``), ``p & q`` / ``p | q`` / ``~p`` (logic).
``==`` and ``!=`` keep their identity meaning (nodes are dictionary keys); use
:meth:`PrimExpr.equal` / :meth:`PrimExpr.not_equal` to build ``EQ`` / ``NE``.
"""

from __future__ import annotations

import math
import re
import struct
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from attrs import field, frozen

from passhost.errors import IRTypeError
from passhost.ir.expr import BaseExpr
from passhost.ir.node import NODE, VALUE
from passhost.ir.types import DTYPES, FLOAT_DTYPES, INT_DTYPES

if TYPE_CHECKING:
    from passhost.tir.function import Buffer

__all__ = [
    "EQ", "GE", "GT", "LE", "LT", "NAMED_CALL_OPS", "NE", "RESERVED_WORDS", "TIR_DTYPES", "Add",
    "And", "BinaryOp", "BufferLoad", "Call", "Cast", "CmpOp", "Div", "FloatImm", "FloorDiv",
    "FloorMod", "IntImm", "Max", "Min", "Mod", "Mul", "Not", "Or", "PrimExpr", "Select",
    "StringImm", "Sub", "Var", "call_extern", "call_kernel", "check_indices",
    "check_tir_dtype", "const", "convert",
]

#: Element types of TIR values: the tensor dtypes plus ``handle`` (a pointer).
TIR_DTYPES = (*DTYPES, "handle")

#: Words the TIR text format uses itself; a Call op may not be named by one of them.
RESERVED_WORDS = frozenset({
    *TIR_DTYPES, "cast", "select", "min", "max", "floordiv", "floormod", "truncmod", "true",
    "false", "inf", "nan", "meta", "elided", "for", "in", "if", "else", "let", "allocate",
    "allocate_const", "buffer", "assert", "seq", "prim_func", "attrs", "match", "decl", "view",
})

_OP_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_NUMERIC = (*INT_DTYPES, *FLOAT_DTYPES)


_DTYPE_SET = frozenset(TIR_DTYPES)
_INT_RANGES = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in INT_DTYPES}
_FLOAT_MAX = {d: float(np.finfo(d).max) for d in FLOAT_DTYPES}


def check_tir_dtype(dtype: object, what: str = "dtype") -> str:
    """Return ``dtype`` as a TIR dtype name, or raise if it is not one of TIR_DTYPES."""
    if type(dtype) is str and dtype in _DTYPE_SET:
        return dtype
    if isinstance(dtype, np.dtype):
        dtype = dtype.name
    if not isinstance(dtype, str) or dtype not in TIR_DTYPES:
        raise IRTypeError(f"unknown {what} {dtype!r}; expected one of {', '.join(TIR_DTYPES)}",
                          expected=" | ".join(TIR_DTYPES), found=repr(dtype))
    return dtype


def _buffer_cls() -> type:
    from passhost.tir.function import Buffer

    return Buffer


@frozen(eq=False, repr=False)
class PrimExpr(BaseExpr):
    """Base class of TIR expressions; every one has a ``dtype`` string."""

    dtype: ClassVar[str]

    # -- building expressions with Python operators ---------------------------------------
    def __add__(self, other: Any) -> PrimExpr:
        return Add(self, other)

    def __radd__(self, other: Any) -> PrimExpr:
        return Add(other, self)

    def __sub__(self, other: Any) -> PrimExpr:
        return Sub(self, other)

    def __rsub__(self, other: Any) -> PrimExpr:
        return Sub(other, self)

    def __mul__(self, other: Any) -> PrimExpr:
        return Mul(self, other)

    def __rmul__(self, other: Any) -> PrimExpr:
        return Mul(other, self)

    def __truediv__(self, other: Any) -> PrimExpr:
        return Div(self, other)

    def __rtruediv__(self, other: Any) -> PrimExpr:
        return Div(other, self)

    def __floordiv__(self, other: Any) -> PrimExpr:
        return FloorDiv(self, other)

    def __rfloordiv__(self, other: Any) -> PrimExpr:
        return FloorDiv(other, self)

    def __mod__(self, other: Any) -> PrimExpr:
        return FloorMod(self, other)

    def __rmod__(self, other: Any) -> PrimExpr:
        return FloorMod(other, self)

    def __lt__(self, other: Any) -> PrimExpr:
        return LT(self, other)

    def __le__(self, other: Any) -> PrimExpr:
        return LE(self, other)

    def __gt__(self, other: Any) -> PrimExpr:
        return GT(self, other)

    def __ge__(self, other: Any) -> PrimExpr:
        return GE(self, other)

    def __and__(self, other: Any) -> PrimExpr:
        return And(self, other)

    def __rand__(self, other: Any) -> PrimExpr:
        return And(other, self)

    def __or__(self, other: Any) -> PrimExpr:
        return Or(self, other)

    def __ror__(self, other: Any) -> PrimExpr:
        return Or(other, self)

    def __invert__(self) -> PrimExpr:
        return Not(self)

    def __neg__(self) -> PrimExpr:
        if isinstance(self, IntImm):
            return IntImm(self.dtype, -self.value)
        if isinstance(self, FloatImm):
            return FloatImm(self.dtype, -self.value)
        return Sub(const(0, self.dtype), self)

    def equal(self, other: Any) -> PrimExpr:
        """The expression ``self == other`` (an ``EQ`` node)."""
        return EQ(self, other)

    def not_equal(self, other: Any) -> PrimExpr:
        """The expression ``self != other`` (an ``NE`` node)."""
        return NE(self, other)

    def astype(self, dtype: str) -> PrimExpr:
        """``self`` converted to ``dtype`` (itself when it already has that dtype)."""
        return self if self.dtype == dtype else Cast(dtype, self)

    def __str__(self) -> str:
        from passhost.text.tir_printer import print_tir

        return print_tir(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dtype})"


# -- immediates ---------------------------------------------------------------------------
def _int_value(value: object) -> int:
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise IRTypeError(f"an IntImm value must be an int, found {value!r}")


@frozen(eq=False, repr=False)
class IntImm(PrimExpr):
    """An integer (or boolean) constant of the given dtype."""

    dtype: str = field(converter=check_tir_dtype)  # type: ignore[misc]
    value: int = field(converter=_int_value)

    _sfields = (("dtype", VALUE), ("value", VALUE))

    def __attrs_post_init__(self) -> None:
        if self.dtype == "bool":
            if self.value not in (0, 1):
                raise IRTypeError(f"a bool IntImm is 0 or 1, found {self.value}", span=self.span)
            return
        bounds = _INT_RANGES.get(self.dtype)
        if bounds is None:
            raise IRTypeError(f"IntImm needs an integer dtype, found {self.dtype}",
                              span=self.span)
        if not bounds[0] <= self.value <= bounds[1]:
            raise IRTypeError(f"{self.value} is out of range for {self.dtype} "
                              f"[{bounds[0]}, {bounds[1]}]", span=self.span)

    def __repr__(self) -> str:
        return f"IntImm({self.dtype}, {self.value})"


def _float_value(value: object) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise IRTypeError(f"a FloatImm value must be a number, found {value!r}")
    out = float(value)
    return math.nan if math.isnan(out) else out


@frozen(eq=False, repr=False)
class FloatImm(PrimExpr):
    """A floating-point constant of the given dtype (any NaN is the canonical NaN)."""

    dtype: str = field(converter=check_tir_dtype)  # type: ignore[misc]
    value: float = field(converter=_float_value)

    # Compared by bit pattern: NaN equals NaN, 0.0 differs from -0.0.
    _sfields = (("dtype", VALUE), ("value_bits", VALUE))

    def __attrs_post_init__(self) -> None:
        if self.dtype not in FLOAT_DTYPES:
            raise IRTypeError(f"FloatImm needs a float dtype, found {self.dtype}",
                              span=self.span)
        if math.isfinite(self.value) and abs(self.value) > _FLOAT_MAX[self.dtype]:
            raise IRTypeError(f"{self.value!r} is out of range for {self.dtype}",
                              span=self.span)

    @property
    def value_bits(self) -> bytes:
        """The IEEE bits of the value (what structural equality compares)."""
        return struct.pack("<d", self.value)

    def __repr__(self) -> str:
        return f"FloatImm({self.dtype}, {self.value!r})"


def _str_value(value: object) -> str:
    if not isinstance(value, str):
        raise IRTypeError(f"a StringImm value must be a str, found {value!r}")
    return value


@frozen(eq=False, repr=False)
class StringImm(PrimExpr):
    """A string constant (dtype ``handle``), e.g. the function name of a ``call_extern``."""

    value: str = field(converter=_str_value)
    dtype: str = field(init=False, default="handle")  # type: ignore[misc]

    _sfields = (("value", VALUE),)

    def __repr__(self) -> str:
        return f"StringImm({self.value!r})"


def _name(value: object) -> str:
    if not isinstance(value, str):
        raise IRTypeError(f"a name must be a str, found {value!r}")
    return value


@frozen(eq=False, repr=False)
class Var(PrimExpr):
    """A scalar variable (or a pointer, dtype ``handle``). Its name is for people only:
    variables are compared up to renaming where they are bound."""

    name_hint: str = field(converter=_name)
    dtype: str = field(default="int32", converter=check_tir_dtype)  # type: ignore[misc]

    _sfields = (("dtype", VALUE),)
    _is_var = True

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint}: {self.dtype})"


# -- conversion helpers -------------------------------------------------------------------
def const(value: int | float | bool, dtype: str | None = None) -> PrimExpr:
    """An immediate: ``IntImm`` for integer and bool dtypes, ``FloatImm`` for float ones.

    Without ``dtype``: bools are ``bool``, ints ``int32``, floats ``float32``.
    """
    if dtype is None:
        if isinstance(value, (bool, np.bool_)):
            dtype = "bool"
        elif isinstance(value, (int, np.integer)):
            dtype = "int32"
        elif isinstance(value, (float, np.floating)):
            dtype = "float32"
        else:
            raise IRTypeError(f"cannot make a constant of {value!r}")
    dtype = check_tir_dtype(dtype)
    if dtype in FLOAT_DTYPES:
        return FloatImm(dtype, value)
    if isinstance(value, (float, np.floating)):
        if not float(value).is_integer():
            raise IRTypeError(f"cannot make a {dtype} constant of {value!r}")
        value = int(value)
    return IntImm(dtype, value)


def convert(value: Any, dtype: str | None = None) -> PrimExpr:
    """``value`` as an expression: expressions pass through, Python numbers become immediates
    (of ``dtype`` when given), strings become ``StringImm``."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        if dtype is not None and dtype != "handle":
            if dtype == "bool" and not isinstance(value, (bool, np.bool_)):
                raise IRTypeError(f"cannot use {value!r} where a bool is expected")
            return const(value, dtype)
        return const(value)
    raise IRTypeError(f"expected a TIR expression, found {value!r}")


def _expr(value: Any, what: str) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    try:
        return convert(value)
    except IRTypeError:
        raise IRTypeError(f"{what} must be a TIR expression, found {value!r}") from None


def _operands(node: Any, names: tuple[str, ...]) -> list[PrimExpr]:
    """Convert Python scalars among a node's operands, taking the dtype of the others."""
    raw = [getattr(node, n) for n in names]
    if all(isinstance(v, PrimExpr) for v in raw):
        return raw
    like = next((v.dtype for v in raw if isinstance(v, PrimExpr)), None)
    out = []
    for name, value in zip(names, raw):
        if not isinstance(value, PrimExpr):
            try:
                value = convert(value, like)
            except IRTypeError as err:
                raise IRTypeError(f"{type(node).__name__}.{name}: {err}",
                                  span=node.span) from None
            object.__setattr__(node, name, value)
        out.append(value)
    return out


# -- buffer load --------------------------------------------------------------------------
def _index_tuple(values: Any) -> tuple[PrimExpr, ...]:
    if isinstance(values, (PrimExpr, int, np.integer)):
        values = (values,)
    return tuple(_expr(v, "a buffer index") for v in values)


def check_indices(buffer: Buffer, indices: tuple[PrimExpr, ...], span: object = None) -> None:
    """Raise unless ``indices`` fit ``buffer``: one integer index per dimension."""
    if len(indices) != len(buffer.shape):
        raise IRTypeError(
            f"buffer {buffer.name} has {len(buffer.shape)} dimension(s), "
            f"found {len(indices)} index(es)", expected=str(len(buffer.shape)),
            found=str(len(indices)), span=span)
    for idx in indices:
        if idx.dtype not in INT_DTYPES:
            raise IRTypeError(f"buffer {buffer.name}: an index must be an integer, found "
                              f"{idx.dtype}", span=span)


@frozen(eq=False, repr=False)
class BufferLoad(PrimExpr):
    """The element of ``buffer`` at ``indices`` (one index per dimension)."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...] = field(converter=_index_tuple)
    dtype: str = field(init=False, default="")  # type: ignore[misc]

    _sfields = (("buffer", NODE), ("indices", NODE))

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.buffer, _buffer_cls()):
            raise IRTypeError(f"BufferLoad needs a Buffer, found {self.buffer!r}",
                              span=self.span)
        check_indices(self.buffer, self.indices, self.span)
        object.__setattr__(self, "dtype", self.buffer.dtype)


# -- binary and unary operators -----------------------------------------------------------
@frozen(eq=False, repr=False)
class BinaryOp(PrimExpr):
    """Base class of binary operators; Python numbers among the operands take the dtype of
    the other operand."""

    a: PrimExpr
    b: PrimExpr
    dtype: str = field(init=False, default="")  # type: ignore[misc]

    _sfields = (("a", NODE), ("b", NODE))
    #: The dtypes the operands may have.
    _operand_dtypes: ClassVar[tuple[str, ...]] = _NUMERIC

    def __attrs_post_init__(self) -> None:
        a, b = _operands(self, ("a", "b"))
        name = type(self).__name__
        if a.dtype != b.dtype:
            raise IRTypeError(f"{name}: operands have different dtypes {a.dtype} and {b.dtype}",
                              op=name, expected=a.dtype, found=b.dtype, span=self.span)
        if a.dtype not in self._operand_dtypes:
            raise IRTypeError(f"{name}: operands of dtype {a.dtype} are not allowed "
                              f"(expected {', '.join(self._operand_dtypes)})", op=name,
                              found=a.dtype, span=self.span)
        object.__setattr__(self, "dtype", self._result_dtype(a.dtype))

    @staticmethod
    def _result_dtype(operand: str) -> str:
        return operand


@frozen(eq=False, repr=False)
class Add(BinaryOp):
    """``a + b``."""


@frozen(eq=False, repr=False)
class Sub(BinaryOp):
    """``a - b``."""


@frozen(eq=False, repr=False)
class Mul(BinaryOp):
    """``a * b``."""


@frozen(eq=False, repr=False)
class Div(BinaryOp):
    """``a / b``: true division for floats, truncating division for integers (as C)."""


@frozen(eq=False, repr=False)
class Mod(BinaryOp):
    """The remainder of truncating division (C's ``%``; ``truncmod`` in text)."""


@frozen(eq=False, repr=False)
class FloorDiv(BinaryOp):
    """Division rounding towards negative infinity."""


@frozen(eq=False, repr=False)
class FloorMod(BinaryOp):
    """The remainder of floor division (the sign of ``b``)."""


@frozen(eq=False, repr=False)
class Min(BinaryOp):
    """The smaller of ``a`` and ``b``."""


@frozen(eq=False, repr=False)
class Max(BinaryOp):
    """The larger of ``a`` and ``b``."""


@frozen(eq=False, repr=False)
class CmpOp(BinaryOp):
    """Base class of comparisons: operands of one dtype, a ``bool`` result."""

    @staticmethod
    def _result_dtype(operand: str) -> str:
        return "bool"


@frozen(eq=False, repr=False)
class EQ(CmpOp):
    """``a == b``."""

    _operand_dtypes = TIR_DTYPES


@frozen(eq=False, repr=False)
class NE(CmpOp):
    """``a != b``."""

    _operand_dtypes = TIR_DTYPES


@frozen(eq=False, repr=False)
class LT(CmpOp):
    """``a < b``."""


@frozen(eq=False, repr=False)
class LE(CmpOp):
    """``a <= b``."""


@frozen(eq=False, repr=False)
class GT(CmpOp):
    """``a > b``."""


@frozen(eq=False, repr=False)
class GE(CmpOp):
    """``a >= b``."""


@frozen(eq=False, repr=False)
class And(BinaryOp):
    """Logical and of two bools."""

    _operand_dtypes = ("bool",)


@frozen(eq=False, repr=False)
class Or(BinaryOp):
    """Logical or of two bools."""

    _operand_dtypes = ("bool",)


@frozen(eq=False, repr=False)
class Not(PrimExpr):
    """Logical negation of a bool."""

    a: PrimExpr
    dtype: str = field(init=False, default="bool")  # type: ignore[misc]

    _sfields = (("a", NODE),)

    def __attrs_post_init__(self) -> None:
        (a,) = _operands(self, ("a",))
        if a.dtype != "bool":
            raise IRTypeError(f"Not: the operand must be bool, found {a.dtype}", op="Not",
                              expected="bool", found=a.dtype, span=self.span)


@frozen(eq=False, repr=False)
class Select(PrimExpr):
    """``true_value`` where ``condition`` holds, else ``false_value`` (both evaluated)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: str = field(init=False, default="")  # type: ignore[misc]

    _sfields = (("condition", NODE), ("true_value", NODE), ("false_value", NODE))

    def __attrs_post_init__(self) -> None:
        cond = _expr(self.condition, "Select.condition")
        object.__setattr__(self, "condition", cond)
        t, f = _operands(self, ("true_value", "false_value"))
        if cond.dtype != "bool":
            raise IRTypeError(f"Select: the condition must be bool, found {cond.dtype}",
                              op="Select", expected="bool", found=cond.dtype, span=self.span)
        if t.dtype != f.dtype:
            raise IRTypeError(f"Select: the values have different dtypes {t.dtype} and "
                              f"{f.dtype}", op="Select", span=self.span)
        object.__setattr__(self, "dtype", t.dtype)


@frozen(eq=False, repr=False)
class Cast(PrimExpr):
    """``value`` converted to ``dtype``."""

    dtype: str = field(converter=check_tir_dtype)  # type: ignore[misc]
    value: PrimExpr = field(converter=lambda v: _expr(v, "Cast.value"))

    _sfields = (("dtype", VALUE), ("value", NODE))


def _call_args(values: Any) -> tuple[Any, ...]:
    buffer_cls = _buffer_cls()
    out = []
    for v in values:
        out.append(v if isinstance(v, buffer_cls) else _expr(v, "a Call argument"))
    return tuple(out)


def _op_name(value: object) -> str:
    if not isinstance(value, str) or not _OP_NAME_RE.match(value):
        raise IRTypeError(f"a Call op must be an identifier such as 'call_extern' or "
                          f"'tir.exp', found {value!r}")
    if value in RESERVED_WORDS:
        raise IRTypeError(f"{value!r} is a reserved word of the TIR text format and cannot "
                          "name a Call op")
    return value


#: Intrinsics whose first argument names the function they call.
NAMED_CALL_OPS = ("call_extern", "call_kernel")


@frozen(eq=False, repr=False)
class Call(PrimExpr):
    """A call of the intrinsic ``op`` returning ``dtype``.

    ``call_extern`` and ``call_kernel`` take a ``StringImm`` naming the function first;
    arguments are expressions or :class:`~passhost.tir.function.Buffer` objects.
    """

    dtype: str = field(converter=check_tir_dtype)  # type: ignore[misc]
    op: str = field(converter=_op_name)
    args: tuple[Any, ...] = field(default=(), converter=_call_args)

    _sfields = (("dtype", VALUE), ("op", VALUE), ("args", NODE))

    def __attrs_post_init__(self) -> None:
        if self.op in NAMED_CALL_OPS and (not self.args
                                          or not isinstance(self.args[0], StringImm)):
            raise IRTypeError(f"{self.op}: the first argument must be a StringImm naming the "
                              "function", op=self.op, span=self.span)

    def __repr__(self) -> str:
        return f"Call({self.op}: {self.dtype})"


def call_extern(func_name: str, *args: Any, dtype: str = "int32") -> Call:
    """``call_extern("func_name", args...)``: a call of an external C function."""
    return Call(dtype, "call_extern", (StringImm(func_name), *args))


def call_kernel(kernel_name: str, *args: Any, dtype: str = "int32") -> Call:
    """``call_kernel("kernel_name", args...)``: a call of a named kernel over buffers."""
    return Call(dtype, "call_kernel", (StringImm(kernel_name), *args))
