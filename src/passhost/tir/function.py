"""Buffers and ``PrimFunc``: a low-level function over explicit buffers.

A :class:`Buffer` is a typed, shaped view of the memory its ``data`` pointer (a ``handle``
Var) points at. A :class:`PrimFunc` takes scalar and pointer parameters; ``buffer_map``
says which pointer parameters are viewed as which buffers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from attrs import field, frozen

from passhost.errors import IRTypeError
from passhost.ir.expr import BaseFunc
from passhost.ir.node import BIND, NODE, VALUE, FrozenDict, Node, frozen_dict
from passhost.ir.types import Type, check_dtype
from passhost.tir.expr import BufferLoad, Var, check_tir_dtype

if TYPE_CHECKING:
    from passhost.tir.stmt import BufferStore, Stmt

__all__ = ["Buffer", "PrimFunc", "decl_buffer", "static_shape"]


def static_shape(value: object) -> tuple[int, ...]:
    """Converter: a static shape (a sequence of non-negative ints; an int is 1-D)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        dims = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        raise IRTypeError(f"a shape must be a sequence of ints, found {value!r}") from None
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise IRTypeError(f"a shape must hold non-negative ints, found {value!r}")
    return tuple(int(d) for d in dims)


def _buffer_name(value: object) -> str:
    if not isinstance(value, str):
        raise IRTypeError(f"a buffer name must be a str, found {value!r}")
    return value


@frozen(eq=False, repr=False)
class Buffer(Node):
    """A ``dtype`` array of static ``shape`` in memory ``scope``, at pointer ``data``.

    ``data`` is bound where the buffer is first met (structural equality compares it up to
    renaming); ``name`` is for people only.
    """

    data: Var
    dtype: str = field(converter=check_dtype)
    shape: tuple[int, ...] = field(converter=static_shape)
    name: str = field(converter=_buffer_name)
    scope: str = "global"

    _sfields = (("data", BIND), ("dtype", VALUE), ("shape", VALUE), ("scope", VALUE))

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.data, Var) or self.data.dtype != "handle":
            raise IRTypeError(f"buffer {self.name}: data must be a Var of dtype handle, found "
                              f"{self.data!r}", span=self.span)
        if not isinstance(self.scope, str):
            raise IRTypeError(f"buffer {self.name}: scope must be a str, found {self.scope!r}",
                              span=self.span)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def __getitem__(self, indices: Any) -> BufferLoad:
        """``buffer[i, j]``: a load of one element."""
        if not isinstance(indices, tuple):
            indices = (indices,)
        return BufferLoad(self, indices)

    __iter__ = None  # indexing builds loads; a buffer is not a sequence

    def load(self, indices: Iterable[Any]) -> BufferLoad:
        """A load of the element at ``indices``."""
        return BufferLoad(self, tuple(indices))

    def store(self, indices: Iterable[Any], value: Any) -> BufferStore:
        """A store of ``value`` at ``indices``."""
        from passhost.tir.stmt import BufferStore

        return BufferStore(self, value, tuple(indices))

    def __repr__(self) -> str:
        return f"Buffer({self.name}: {self.dtype}{list(self.shape)})"


def decl_buffer(shape: Iterable[int] | int, dtype: str = "float32", name: str = "buffer",
                data: Var | None = None, scope: str = "global") -> Buffer:
    """A buffer with a fresh ``data`` pointer (named ``<name>_data``) unless one is given."""
    if data is None:
        data = Var(f"{name}_data", "handle")
    return Buffer(data, dtype, shape, name, scope)


def _params(values: Iterable[object]) -> tuple[Var, ...]:
    out = tuple(values)
    for v in out:
        if not isinstance(v, Var):
            raise IRTypeError(f"PrimFunc parameters must be Vars, found {v!r}")
    return out


def _ret_type(value: object) -> str | None:
    if value is None:
        return None
    return check_tir_dtype(value, "return dtype")


@frozen(eq=False, repr=False)
class PrimFunc(BaseFunc):
    """A low-level function: ``params`` (scalar or ``handle`` Vars), the buffers some
    handle parameters are viewed as (``buffer_map``), a statement ``body``, an optional
    scalar return dtype ``ret_type`` and function attributes (``global_symbol``,
    ``tir.noalias``, ``target``...).

    A PrimFunc has no graph-level type: :attr:`checked_type` raises ``IRTypeError``.
    """

    params: tuple[Var, ...] = field(converter=_params)
    buffer_map: FrozenDict = field(converter=frozen_dict)
    body: Stmt
    ret_type: str | None = field(default=None, converter=_ret_type)
    attrs: FrozenDict = field(default=None, converter=frozen_dict)

    _sfields = (("params", BIND), ("buffer_map", NODE), ("body", NODE), ("ret_type", VALUE),
                ("attrs", VALUE))

    def __attrs_post_init__(self) -> None:
        from passhost.tir.stmt import Stmt

        seen: set[int] = set()
        for p in self.params:
            if id(p) in seen:
                raise IRTypeError(f"PrimFunc: parameter %{p.name_hint} appears twice",
                                  span=self.span)
            seen.add(id(p))
        for key, buf in self.buffer_map.items():
            if not isinstance(key, Var) or id(key) not in seen:
                raise IRTypeError(f"PrimFunc: buffer_map key {key!r} is not a parameter",
                                  span=self.span)
            if key.dtype != "handle":
                raise IRTypeError(f"PrimFunc: buffer_map key %{key.name_hint} must be a handle,"
                                  f" found {key.dtype}", span=self.span)
            if not isinstance(buf, Buffer):
                raise IRTypeError(f"PrimFunc: buffer_map value {buf!r} is not a Buffer",
                                  span=self.span)
        if not isinstance(self.body, Stmt):
            raise IRTypeError(f"PrimFunc: the body must be a Stmt, found {self.body!r}",
                              span=self.span)

    @property
    def func_attrs(self) -> FrozenDict:
        """The function's attributes."""
        return self.attrs

    @property
    def checked_type(self) -> Type:
        """Always raises: PrimFuncs have no graph-level type."""
        raise IRTypeError("a PrimFunc has no graph-level type (it works on buffers, not "
                          "tensors); look at its params and buffer_map instead",
                          span=self.span)

    def with_body(self, body: Stmt) -> PrimFunc:
        """A copy with another body."""
        return PrimFunc(self.params, self.buffer_map, body, self.ret_type, self.attrs,
                        span=self.span)

    def with_attr(self, key: str, value: Any) -> PrimFunc:
        """A copy with function attribute ``key`` set to ``value``."""
        return PrimFunc(self.params, self.buffer_map, self.body, self.ret_type,
                        self.attrs.set(key, value), span=self.span)

    def with_attrs(self, attrs: Mapping[str, Any]) -> PrimFunc:
        """A copy with several function attributes set."""
        merged = dict(self.attrs)
        merged.update(attrs)
        return PrimFunc(self.params, self.buffer_map, self.body, self.ret_type, merged,
                        span=self.span)

    def astext(self, name: str | None = None) -> str:
        """This function in the TIR text format (large constants inline or elided)."""
        from passhost.text.tir_printer import print_prim_func

        if name is None:
            symbol = self.attrs.get("global_symbol")
            name = symbol if isinstance(symbol, str) else "main"
        return print_prim_func(name, self, None)

    def __str__(self) -> str:
        return self.astext()

    def __repr__(self) -> str:
        return f"PrimFunc({len(self.params)} params)"
