"""Types of graph-level IR values: tensors, tuples and functions (static shapes)."""

from __future__ import annotations

import ml_dtypes  # noqa: F401 - registers NumPy's "bfloat16" dtype
import numpy as np
from attrs import field, frozen

from passhost.errors import AttrError, IRTypeError

#: The element types a tensor may have.
DTYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
          "int64", "uint64", "bool", "bfloat16")
#: The IEEE floating-point dtypes: every operator on floating-point values takes them.
FLOAT_DTYPES = ("float16", "float32", "float64")
#: bfloat16 (float32's range with 8 significant bits; NumPy computes with it through the
#: ml_dtypes package): the operators whose kernels handle it take it, computing in float32 and
#: rounding each result to bfloat16 once.
BFLOAT16_DTYPES = ("bfloat16",)
#: Every floating-point dtype: the IEEE ones and bfloat16.
ANY_FLOAT_DTYPES = FLOAT_DTYPES + BFLOAT16_DTYPES
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def check_dtype(dtype: object) -> str:
    """Return ``dtype`` as a dtype name, or raise if it is not one of :data:`DTYPES`."""
    if isinstance(dtype, np.dtype):
        dtype = dtype.name
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise AttrError(f"unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}")
    return dtype


def is_float_dtype(dtype: str) -> bool:
    """Whether the dtype named ``dtype`` is a floating-point type (bfloat16 included)."""
    return dtype in FLOAT_DTYPES or dtype in BFLOAT16_DTYPES


def _to_shape(shape: object) -> tuple[int, ...]:
    try:
        dims = tuple(shape)  # type: ignore[arg-type]
    except TypeError:
        raise AttrError(f"a shape must be a sequence of ints, found {shape!r}") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise AttrError(f"a shape must hold non-negative ints, found {shape!r}")
    return tuple(int(d) for d in dims)


class Type:
    """Base class of IR types. Types are values: equal when their contents are equal."""

    __slots__ = ()


@frozen(repr=False)
class TensorType(Type):
    """A tensor of static ``shape`` and element type ``dtype``."""

    shape: tuple[int, ...] = field(converter=_to_shape)
    dtype: str = field(default="float32", converter=check_dtype)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        """The shape as a tuple of ints (TVM's name for it)."""
        return self.shape

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"Tensor[({dims}), {self.dtype}]"

    __repr__ = __str__


def _to_types(values: object) -> tuple[Type, ...]:
    out = tuple(values)  # type: ignore[arg-type]
    for v in out:
        if not isinstance(v, Type):
            raise AttrError(f"expected a Type, found {v!r}")
    return out


@frozen(repr=False)
class TupleType(Type):
    """A tuple of values of the given field types."""

    fields: tuple[Type, ...] = field(converter=_to_types)

    def __str__(self) -> str:
        inner = ", ".join(str(f) for f in self.fields)
        if len(self.fields) == 1:
            inner += ","
        return f"({inner})"

    __repr__ = __str__


@frozen(repr=False)
class FuncType(Type):
    """The type of a function from ``arg_types`` to ``ret_type``."""

    arg_types: tuple[Type, ...] = field(converter=_to_types)
    ret_type: Type

    def __str__(self) -> str:
        args = ", ".join(str(a) for a in self.arg_types)
        return f"fn ({args}) -> {self.ret_type}"

    __repr__ = __str__


def tensor_types(ty: Type) -> list[TensorType]:
    """The tensor types of ``ty`` in order (tuples flattened, nested ones too); raises
    :class:`~passhost.errors.IRTypeError` for a type that holds something else."""
    out: list[TensorType] = []
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        elif isinstance(t, TensorType):
            out.append(t)
        else:
            raise IRTypeError(f"expected tensors or tuples of tensors, found a value of type {t}")
    return out
