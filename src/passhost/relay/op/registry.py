"""The operator registry: each operator is declared once, with everything passes need.

An operator declaration (:func:`define_op`) gives its name, its inputs, an attrs class, a type
relation (shape and dtype inference), a NumPy reference kernel, a fusion pattern, for
layout-sensitive operators layout information and, for operators that compile to loops,
a TE compute (``te_compute(attrs, inputs, out_type)``: the result as :mod:`passhost.te`
tensors of the input tensors; a tuple input is a tuple of tensors, a tuple result a tuple;
None where it does not cover the attributes or dtypes). The returned :class:`Op` is also the
builder: ``nn.conv2d(data, weight, strides=(2, 2))`` makes a ``Call``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import attrs
import numpy as np
from attrs import field, frozen

from passhost.errors import AttrError, IRTypeError, PluginError, UnknownNameError
from passhost.ir.attrs import Attrs
from passhost.ir.expr import BaseExpr
from passhost.ir.node import VALUE
from passhost.ir.types import TensorType, TupleType, Type
from passhost.plugins.manager import get_host
from passhost.relay.expr import Call, Expr, Tuple

__all__ = [
    "ArgTypes", "LayoutInfo", "Op", "OpPattern", "define_op", "get_op", "list_ops",
]


class OpPattern(enum.IntEnum):
    """How an operator fuses with its neighbours (TVM's numbering)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


@frozen
class LayoutInfo:
    """Where a layout-sensitive operator keeps its layout.

    ``layout_attrs`` name the attributes holding layout strings (first the data layout, e.g.
    ``("data_layout", "kernel_layout", "out_layout")``); ``axis_attrs`` name attributes that
    hold an axis index into the data layout (``batch_norm``'s ``axis``).
    """

    layout_attrs: tuple[str, ...] = ()
    axis_attrs: tuple[str, ...] = ()


class ArgTypes:
    """The argument types of one operator call, handed to its type relation.

    Its helpers check an argument and, when it does not fit, raise an
    :class:`~passhost.errors.IRTypeError` naming the operator, the argument, what was
    expected and what was found.
    """

    __slots__ = ("op", "span", "types", "values")

    def __init__(self, op: Op, types: Sequence[Type], span: object | None = None,
                 values: Sequence[np.ndarray | None] | None = None) -> None:
        self.op = op
        self.types = tuple(types)
        self.span = span
        self.values = tuple(values) if values is not None else (None,) * len(self.types)

    def __getitem__(self, i: int) -> Type:
        return self.types[i]

    def __len__(self) -> int:
        return len(self.types)

    def constant(self, i: int) -> np.ndarray | None:
        """The value of argument ``i`` when it is a constant (so relations can check
        quantisation parameters), else None."""
        return self.values[i]

    def fail(self, i: int, expected: str, found: object) -> NoReturn:
        """Raise: argument ``i`` was expected to be ``expected`` but is ``found``."""
        arg = self.op.inputs[i]
        raise IRTypeError(f"{self.op.name}: argument '{arg}' expected {expected}, found {found}",
                          op=self.op.name, argument=arg, expected=expected, found=str(found),
                          span=self.span)

    def fail_attr(self, name: str, expected: str, found: object) -> NoReturn:
        """Raise: attribute ``name`` does not fit the argument types."""
        raise IRTypeError(f"{self.op.name}: attribute '{name}' expected {expected}, found {found}",
                          op=self.op.name, argument=name, expected=expected, found=str(found),
                          span=self.span)

    def tensor(self, i: int, *, ndim: int | Sequence[int] | None = None,
               dtypes: Sequence[str] | None = None) -> TensorType:
        """Argument ``i`` as a tensor type, checking its rank and dtype if asked."""
        ty = self.types[i]
        if not isinstance(ty, TensorType):
            self.fail(i, "a tensor", ty)
        if ndim is not None:
            ranks = (ndim,) if isinstance(ndim, int) else tuple(ndim)
            if ty.ndim not in ranks:
                want = " or ".join(f"{r}-D" for r in ranks)
                self.fail(i, f"a {want} tensor", ty)
        if dtypes is not None and ty.dtype not in dtypes:
            self.fail(i, f"dtype {' or '.join(dtypes)}", ty)
        return ty

    def tensors(self, i: int) -> tuple[TensorType, ...]:
        """Argument ``i`` as a tuple of tensor types."""
        ty = self.types[i]
        if not isinstance(ty, TupleType) or not all(isinstance(f, TensorType) for f in ty.fields):
            self.fail(i, "a tuple of tensors", ty)
        return ty.fields  # type: ignore[return-value]

    def same_dtype(self, i: int, j: int) -> str:
        """Check arguments ``i`` and ``j`` are tensors of one dtype; return it."""
        a, b = self.tensor(i), self.tensor(j)
        if a.dtype != b.dtype:
            self.fail(j, f"dtype {a.dtype} (as argument '{self.op.inputs[i]}')", b)
        return a.dtype


TypeRelation = Callable[[ArgTypes, Any], Type]
Kernel = Callable[..., Any]
#: ``te_compute(attrs, inputs, out_type)`` -> a ``te.Tensor`` or a tuple of them. The out
#: type is the operator's own (a TensorType, or a TupleType for several outputs), so each
#: compute declares the one it gets.
TECompute = Callable[[Any, Sequence[Any], Any], Any]


@frozen(eq=False, repr=False)
class Op(Expr):
    """An operator: the declaration and the builder of its calls."""

    name: str
    inputs: tuple[str, ...]
    attrs_cls: type[Attrs] | None
    type_rel: TypeRelation
    compute: Kernel
    pattern: OpPattern
    layout: LayoutInfo | None = None
    tuple_inputs: frozenset[str] = field(default=frozenset(), converter=frozenset)
    description: str = ""
    te_compute: TECompute | None = None

    _sfields = (("name", VALUE),)
    _is_op = True

    @property
    def checked_type(self) -> Type:
        """Operators are not values; asking for their type is an error."""
        raise IRTypeError(f"operator {self.name} is not a value and has no type")

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def __str__(self) -> str:
        return self.name

    # -- building calls -------------------------------------------------------------------
    def attr_names(self) -> tuple[str, ...]:
        """The names of this operator's attributes, in declaration order."""
        if self.attrs_cls is None:
            return ()
        return tuple(a.name for a in attrs.fields(self.attrs_cls))

    def make_attrs(self, values: dict[str, Any]) -> Attrs | None:
        """Build this operator's attrs from keyword values, with errors naming the op."""
        if self.attrs_cls is None:
            if values:
                raise AttrError(f"{self.name} takes no attributes, found {sorted(values)}")
            return None
        known = self.attr_names()
        for key in values:
            if key not in known:
                raise UnknownNameError(f"attribute of {self.name}", key, known)
        try:
            return self.attrs_cls(**values)
        except AttrError as err:
            raise AttrError(f"{self.name}: {err}") from None

    def __call__(self, *args: Any, **kwargs: Any) -> Call:
        """Build a call: inputs positionally or by name, then attributes (positionally in
        declaration order, or by name)."""
        n = len(self.inputs)
        inputs = list(args[:n])
        for name in self.inputs[len(inputs):]:
            if name not in kwargs:
                raise TypeError(f"{self.name}() missing input '{name}'")
            inputs.append(kwargs.pop(name))
        extra = args[n:]
        names = self.attr_names()
        if len(extra) > len(names):
            raise TypeError(f"{self.name}() takes at most {n + len(names)} positional arguments")
        for name, value in zip(names, extra):
            if name in kwargs:
                raise TypeError(f"{self.name}() got attribute '{name}' twice")
            kwargs[name] = value
        span = kwargs.pop("span", None)
        for i, name in enumerate(self.inputs):
            value = inputs[i]
            if name in self.tuple_inputs and isinstance(value, (list, tuple)):
                inputs[i] = Tuple(value)
            elif not isinstance(inputs[i], BaseExpr):
                raise TypeError(f"{self.name}(): input '{name}' must be an expression, "
                                f"found {type(value).__name__}")
        return Call(self, inputs, self.make_attrs(kwargs), span=span)

    # -- semantics --------------------------------------------------------------------------
    def infer_type(self, arg_types: Sequence[Type], attrs_value: Attrs | None,
                   span: object | None = None,
                   arg_values: Sequence[np.ndarray | None] | None = None) -> Type:
        """The result type of a call with these argument types and attributes
        (``arg_values`` holds the data of constant arguments, None for the others)."""
        if len(arg_types) != len(self.inputs):
            raise IRTypeError(
                f"{self.name}: expected {len(self.inputs)} arguments "
                f"({', '.join(self.inputs)}), found {len(arg_types)}",
                op=self.name, expected=str(len(self.inputs)), found=str(len(arg_types)),
                span=span)
        return self.type_rel(ArgTypes(self, arg_types, span, arg_values), attrs_value)

    def evaluate(self, attrs_value: Attrs | None, *args: Any) -> Any:
        """Run the NumPy reference kernel on arrays (tuples of arrays for tuple inputs)."""
        return self.compute(attrs_value, *args)


def define_op(name: str, *, inputs: Sequence[str], type_rel: TypeRelation, compute: Kernel,
              pattern: OpPattern, attrs: type[Attrs] | None = None,
              layout: LayoutInfo | None = None, tuple_inputs: Sequence[str] = (),
              description: str = "", te_compute: TECompute | None = None) -> Op:
    """Declare operator ``name``; returns it (it builds calls of itself). A plugin makes it
    known by returning an :class:`~passhost.plugins.OperatorSpec` whose factory returns it
    (passhost's own are in the built-in plugin's manifest)."""
    return Op(name, tuple(inputs), attrs, type_rel, compute, pattern, layout,
              frozenset(tuple_inputs), description, te_compute)


def get_op(name: str) -> Op:
    """The operator registered as ``name`` with the plugin host; an unknown name lists close
    matches."""
    op = get_host().registries.operators.get(name).factory()
    if not isinstance(op, Op) or op.name != name:
        raise PluginError(f"operator {name!r}: its factory returned {op!r}, not the Op "
                          f"named {name!r}")
    return op


def list_ops() -> list[Op]:
    """Every registered operator, sorted by name."""
    return [get_op(name) for name in sorted(get_host().registries.operators.names())]


def as_array(value: Any, dtype: str) -> np.ndarray:
    """Kernel helper: ``value`` as an array of ``dtype`` (kernels must return exact dtypes)."""
    return np.asarray(value, dtype=dtype)
