"""Graph-level IR expressions: variables, constants, calls, tuples and functions.

Nodes are immutable and compared by identity; a graph is a DAG (a node used twice is the
same object). ``checked_type`` is inferred on first use (see :mod:`passhost.relay.type_infer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from attrs import field, frozen

from passhost.errors import IRTypeError
from passhost.ir.attrs import Attrs
from passhost.ir.expr import BaseExpr, BaseFunc, GlobalVar
from passhost.ir.node import BIND, NODE, VALUE, FrozenDict, frozen_dict
from passhost.ir.types import TensorType, Type, check_dtype

__all__ = [
    "Call", "Constant", "Expr", "Function", "GlobalVar", "Tuple", "TupleGetItem", "Var",
    "const", "var",
]


@frozen(eq=False, repr=False)
class Expr(BaseExpr):
    """Base class of graph-level expressions."""

    @property
    def checked_type(self) -> Type:
        """The type of this expression, inferred (and cached) on first use."""
        ty = self._checked_type
        if ty is None:
            from passhost.relay.type_infer import infer_type

            ty = infer_type(self)
        return ty

    def as_function(self) -> Function:
        """A function of this expression's free variables returning it."""
        from passhost.relay.analysis import free_vars

        return Function(free_vars(self), self)

    def children(self) -> tuple[BaseExpr, ...]:
        """The expressions this one refers to directly, in evaluation order."""
        return ()

    def __getitem__(self, index: int) -> TupleGetItem:
        """Field ``index`` of a tuple-valued expression (as TVM's TupleWrapper)."""
        return TupleGetItem(self, index)

    def __str__(self) -> str:
        from passhost.text import print_expr

        return print_expr(self)


def _optional_type(value: object) -> Type | None:
    if value is not None and not isinstance(value, Type):
        raise IRTypeError(f"a type annotation must be a Type, found {value!r}")
    return value  # type: ignore[return-value]


@frozen(eq=False, repr=False)
class Var(Expr):
    """A variable: a function parameter. Named for people; compared up to renaming."""

    name_hint: str
    type_annotation: Type | None = field(default=None, converter=_optional_type)

    _sfields = (("type_annotation", VALUE),)
    _is_var = True

    def __attrs_post_init__(self) -> None:
        if self.type_annotation is not None:
            self._set_checked_type(self.type_annotation)

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint})"


def _readonly_array(value: object) -> np.ndarray:
    arr = np.array(value, copy=True) if not isinstance(value, np.ndarray) else value
    if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
        arr = arr.astype(np.float32)
    if arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.array(arr, order="C", copy=True)
        arr.flags.writeable = False
    check_dtype(arr.dtype.name)
    return arr


@frozen(eq=False, repr=False)
class Constant(Expr):
    """A constant tensor. Holds a read-only, C-contiguous NumPy array (copied on creation
    unless it already is one, so the caller's array is never shared mutably)."""

    data: np.ndarray = field(converter=_readonly_array)

    _sfields = (("data", VALUE),)

    def __attrs_post_init__(self) -> None:
        self._set_checked_type(TensorType(self.data.shape, self.data.dtype.name))

    def __repr__(self) -> str:
        return f"Constant({self.data.dtype.name}{list(self.data.shape)})"


def _expr_tuple(values: Iterable[object]) -> tuple[BaseExpr, ...]:
    out = tuple(values)
    for v in out:
        if not isinstance(v, BaseExpr):
            raise IRTypeError(f"expected an expression, found {v!r}")
    return out


@frozen(eq=False, repr=False)
class Call(Expr):
    """A call of an operator (``Op``), a graph ``Function`` or a ``GlobalVar``.

    For an operator call ``attrs`` is an instance of the operator's attrs class (its
    defaults when omitted); other calls take no attrs.
    """

    op: BaseExpr
    args: tuple[BaseExpr, ...] = field(converter=_expr_tuple)
    attrs: Attrs | None = None

    _sfields = (("op", NODE), ("args", NODE), ("attrs", VALUE))

    def __attrs_post_init__(self) -> None:
        op = self.op
        if getattr(type(op), "_is_op", False):
            attrs_cls = op.attrs_cls
            if attrs_cls is None:
                if self.attrs is not None:
                    raise IRTypeError(f"{op.name} takes no attributes", op=op.name,
                                      span=self.span)
            elif self.attrs is None:
                object.__setattr__(self, "attrs", attrs_cls())
            elif type(self.attrs) is not attrs_cls:
                raise IRTypeError(
                    f"{op.name}: attrs must be {attrs_cls.__name__}, "
                    f"found {type(self.attrs).__name__}", op=op.name, span=self.span)
        elif not isinstance(op, (Function, GlobalVar)):
            raise IRTypeError(f"a call's callee must be an operator, a Function or a GlobalVar,"
                              f" found {op!r}", span=self.span)
        elif self.attrs is not None:
            raise IRTypeError("calls of functions take no attributes", span=self.span)

    def children(self) -> tuple[BaseExpr, ...]:
        """The callee (when it is not an operator) followed by the arguments."""
        if isinstance(self.op, (Function, GlobalVar)):
            return (self.op, *self.args)
        return self.args

    def with_args(self, args: Iterable[BaseExpr]) -> Call:
        """A copy of this call with other arguments."""
        return Call(self.op, args, self.attrs, span=self.span)

    def __repr__(self) -> str:
        name = getattr(self.op, "name", None) or type(self.op).__name__
        return f"Call({name})"


@frozen(eq=False, repr=False)
class Tuple(Expr):
    """A tuple of values."""

    fields: tuple[BaseExpr, ...] = field(converter=_expr_tuple)

    _sfields = (("fields", NODE),)

    def children(self) -> tuple[BaseExpr, ...]:
        """The tuple's fields."""
        return self.fields

    def __len__(self) -> int:
        return len(self.fields)


@frozen(eq=False, repr=False)
class TupleGetItem(Expr):
    """Field ``index`` of a tuple-valued expression."""

    tuple_value: BaseExpr
    index: int

    _sfields = (("tuple_value", NODE), ("index", VALUE))

    def children(self) -> tuple[BaseExpr, ...]:
        """The tuple expression."""
        return (self.tuple_value,)


def _var_tuple(values: Iterable[object]) -> tuple[Var, ...]:
    out = tuple(values)
    for v in out:
        if not isinstance(v, Var):
            raise IRTypeError(f"function parameters must be Vars, found {v!r}")
    return out


@frozen(eq=False, repr=False)
class Function(Expr, BaseFunc):
    """A graph function. ``attrs`` holds function attributes such as ``Primitive``,
    ``Composite``, ``Compiler`` and ``global_symbol``."""

    params: tuple[Var, ...] = field(converter=_var_tuple)
    body: BaseExpr
    ret_type: Type | None = field(default=None, converter=_optional_type)
    attrs: FrozenDict = field(default=None, converter=frozen_dict)

    _sfields = (("params", BIND), ("body", NODE), ("ret_type", VALUE), ("attrs", VALUE))

    @property
    def func_attrs(self) -> FrozenDict:
        """The function's attributes."""
        return self.attrs

    def as_function(self) -> Function:
        """The function itself."""
        return self

    def children(self) -> tuple[BaseExpr, ...]:
        """The parameters, then the body."""
        return (*self.params, self.body)

    def with_attr(self, key: str, value: Any) -> Function:
        """A copy with function attribute ``key`` set to ``value``."""
        return Function(self.params, self.body, self.ret_type, self.attrs.set(key, value),
                        span=self.span)

    def with_attrs(self, attrs: Mapping[str, Any]) -> Function:
        """A copy with several function attributes set."""
        merged = dict(self.attrs)
        merged.update(attrs)
        return Function(self.params, self.body, self.ret_type, merged, span=self.span)

    def __repr__(self) -> str:
        return f"Function({len(self.params)} params)"


def var(name_hint: str, type_annotation: Type | None = None, shape: Iterable[int] | None = None,
        dtype: str = "float32") -> Var:
    """Make a variable; ``shape``/``dtype`` build a TensorType annotation (TVM's ``relay.var``)."""
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(tuple(shape), dtype)
    return Var(name_hint, type_annotation)


def const(value: Any, dtype: str | None = None) -> Constant:
    """Make a constant from a number, a nested list or an array (float64 becomes float32
    unless ``dtype`` says otherwise)."""
    arr = np.asarray(value)
    if dtype is not None:
        arr = arr.astype(check_dtype(dtype))
    elif arr.dtype == np.float64:
        arr = arr.astype(np.float32)
    elif arr.dtype == np.int64 and not isinstance(value, np.ndarray):
        arr = arr.astype(np.int32)
    return Constant(arr)
