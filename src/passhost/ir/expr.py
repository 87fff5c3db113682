"""Expressions shared by the IR layers: the expression base class and ``GlobalVar``."""

from __future__ import annotations

from attrs import field, frozen

from passhost.errors import IRTypeError
from passhost.ir.node import VALUE, Node
from passhost.ir.types import FuncType, Type


@frozen(eq=False, repr=False)
class BaseExpr(Node):
    """Base class of expressions that have a type.

    ``_checked_type`` caches the inferred type; it is a cache of a pure function of the
    node, so filling it does not break immutability.
    """

    _checked_type: Type | None = field(default=None, init=False)

    @property
    def checked_type(self) -> Type:
        """The type of this expression (inferred on first use)."""
        if self._checked_type is None:
            raise IRTypeError(f"{type(self).__name__} has no type", span=self.span)
        return self._checked_type

    def _set_checked_type(self, ty: Type) -> None:
        object.__setattr__(self, "_checked_type", ty)

    def as_function(self) -> BaseFunc:
        """This expression as a module function (``IRModule.from_expr``); graph expressions
        wrap themselves in a function of their free variables, functions are themselves."""
        raise TypeError(f"{type(self).__name__} cannot be a module function")


def _optional_func_type(value: object) -> FuncType | None:
    if value is not None and not isinstance(value, FuncType):
        raise IRTypeError(f"a GlobalVar's type must be a FuncType, found {value!r}")
    return value  # type: ignore[return-value]


@frozen(eq=False, repr=False)
class GlobalVar(BaseExpr):
    """A name of a function in an :class:`~passhost.ir.module.IRModule`.

    Calls to other module functions go through a ``GlobalVar``; its optional type is the
    callee's function type, so the caller can be type-checked on its own.
    """

    name_hint: str
    type_annotation: FuncType | None = field(default=None, converter=_optional_func_type)

    _sfields = (("name_hint", VALUE), ("type_annotation", VALUE))

    def __attrs_post_init__(self) -> None:
        if self.type_annotation is not None:
            self._set_checked_type(self.type_annotation)

    @property
    def checked_type(self) -> Type:
        """The function type of the global (it must have been given one)."""
        if self._checked_type is None:
            raise IRTypeError(
                f"global @{self.name_hint} has no type; build it from a module that holds it",
                span=self.span,
            )
        return self._checked_type

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name_hint})"

    __str__ = __repr__


@frozen(eq=False, repr=False)
class BaseFunc(BaseExpr):
    """Base class of the functions an IRModule holds (graph functions and PrimFuncs)."""

    def as_function(self) -> BaseFunc:
        """The function itself."""
        return self

    @property
    def func_attrs(self):  # pragma: no cover - overridden by every subclass
        """The function's attributes (a FrozenDict)."""
        raise NotImplementedError
