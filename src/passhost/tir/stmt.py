"""Statements of the low-level IR (TIR).

Statements that introduce something (``LetStmt``, ``For``, ``Allocate``,
``AllocateConst``, ``DeclBuffer``, ``AssertStmt``) hold the statement it scopes over as
``body``. ``SeqStmt`` runs statements in order. The variable a statement defines is a
``BIND`` field, declared before the fields that use it, so structural equality compares
programs up to renaming.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import field, frozen

from passhost.errors import IRTypeError
from passhost.ir.node import BIND, NODE, VALUE, Node
from passhost.ir.types import INT_DTYPES, check_dtype
from passhost.tir.expr import (
    BufferLoad,
    PrimExpr,
    StringImm,
    Var,
    _expr,
    _index_tuple,
    check_indices,
    convert,
)
from passhost.tir.function import Buffer, static_shape

__all__ = [
    "FOR_KINDS", "Allocate", "AllocateConst", "AssertStmt", "BufferStore", "DeclBuffer",
    "Evaluate", "For", "IfThenElse", "LetStmt", "SeqStmt", "Stmt",
]

#: The kinds of ``For`` loops.
FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled")


@frozen(eq=False, repr=False)
class Stmt(Node):
    """Base class of TIR statements."""

    def __str__(self) -> str:
        from passhost.text.tir_printer import print_tir

        return print_tir(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x}>"


def _stmt(value: object, what: str) -> Stmt:
    if not isinstance(value, Stmt):
        raise IRTypeError(f"{what} must be a Stmt, found {value!r}")
    return value


def _body(value: object) -> Stmt:
    return _stmt(value, "a body")


def _stmt_tuple(values: Any) -> tuple[Stmt, ...]:
    return tuple(_stmt(v, "a SeqStmt element") for v in values)


def _handle_var(var: object, what: str, span: object) -> None:
    if not isinstance(var, Var) or var.dtype != "handle":
        raise IRTypeError(f"{what} must be a Var of dtype handle, found {var!r}", span=span)


@frozen(eq=False, repr=False)
class SeqStmt(Stmt):
    """Statements run one after the other."""

    seq: tuple[Stmt, ...] = field(converter=_stmt_tuple)

    _sfields = (("seq", NODE),)

    def __len__(self) -> int:
        return len(self.seq)

    def __getitem__(self, index: int) -> Stmt:
        return self.seq[index]

    def __repr__(self) -> str:
        return f"SeqStmt({len(self.seq)} statements)"


@frozen(eq=False, repr=False)
class Evaluate(Stmt):
    """Evaluate an expression for its effect (typically a ``Call``)."""

    value: PrimExpr = field(converter=lambda v: _expr(v, "Evaluate.value"))

    _sfields = (("value", NODE),)


@frozen(eq=False, repr=False)
class Allocate(Stmt):
    """Allocate ``extents`` elements of ``dtype`` in memory ``scope``; ``buffer_var`` (a
    handle) points at them within ``body``."""

    buffer_var: Var
    dtype: str = field(converter=check_dtype)
    extents: tuple[int, ...] = field(converter=static_shape)
    body: Stmt = field(converter=_body)
    scope: str = "global"

    _sfields = (("buffer_var", BIND), ("dtype", VALUE), ("extents", VALUE), ("scope", VALUE),
                ("body", NODE))

    def __attrs_post_init__(self) -> None:
        _handle_var(self.buffer_var, "Allocate.buffer_var", self.span)
        if not isinstance(self.scope, str):
            raise IRTypeError(f"Allocate.scope must be a str, found {self.scope!r}",
                              span=self.span)


def _readonly(arr: np.ndarray) -> np.ndarray:
    if arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr).copy()
        arr.flags.writeable = False
    return arr


@frozen(eq=False, repr=False)
class AllocateConst(Stmt):
    """Constant data (a read-only NumPy array of ``dtype``, reshaped to ``extents``) that
    ``buffer_var`` points at within ``body``."""

    buffer_var: Var
    dtype: str = field(converter=check_dtype)
    extents: tuple[int, ...] = field(converter=static_shape)
    data: np.ndarray
    body: Stmt = field(converter=_body)

    _sfields = (("buffer_var", BIND), ("dtype", VALUE), ("extents", VALUE), ("data", VALUE),
                ("body", NODE))

    def __attrs_post_init__(self) -> None:
        _handle_var(self.buffer_var, "AllocateConst.buffer_var", self.span)
        data = self.data
        if not isinstance(data, np.ndarray):
            try:
                data = np.asarray(data, dtype=self.dtype)
            except (TypeError, ValueError, OverflowError) as err:
                raise IRTypeError(f"AllocateConst: bad data: {err}", span=self.span) from None
        data = _readonly(data)
        object.__setattr__(self, "data", data)
        if data.dtype.name != self.dtype:
            raise IRTypeError(f"AllocateConst: the data is {data.dtype.name}, the allocation "
                              f"is {self.dtype}", expected=self.dtype, found=data.dtype.name,
                              span=self.span)
        if data.shape != self.extents:
            size = int(np.prod(self.extents, dtype=np.int64))
            if data.size != size:
                raise IRTypeError(f"AllocateConst: the data has {data.size} elements, extents "
                                  f"{list(self.extents)} need {size}", span=self.span)
            data = data.reshape(self.extents)
            data.flags.writeable = False
            object.__setattr__(self, "data", data)


@frozen(eq=False, repr=False)
class DeclBuffer(Stmt):
    """Declare ``buffer`` (a view of its ``data`` pointer) for use within ``body``."""

    buffer: Buffer
    body: Stmt = field(converter=_body)

    _sfields = (("buffer", NODE), ("body", NODE))

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.buffer, Buffer):
            raise IRTypeError(f"DeclBuffer needs a Buffer, found {self.buffer!r}",
                              span=self.span)


@frozen(eq=False, repr=False)
class LetStmt(Stmt):
    """Bind ``var`` to ``value`` within ``body``."""

    var: Var
    value: PrimExpr
    body: Stmt = field(converter=_body)

    _sfields = (("value", NODE), ("var", BIND), ("body", NODE))

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise IRTypeError(f"LetStmt.var must be a Var, found {self.var!r}", span=self.span)
        value = convert(self.value, self.var.dtype) if not isinstance(
            self.value, PrimExpr) else self.value
        object.__setattr__(self, "value", value)
        if value.dtype != self.var.dtype:
            raise IRTypeError(f"LetStmt: %{self.var.name_hint} is {self.var.dtype}, the value "
                              f"is {value.dtype}", expected=self.var.dtype, found=value.dtype,
                              span=self.span)


@frozen(eq=False, repr=False)
class For(Stmt):
    """Run ``body`` for ``loop_var`` from ``min`` to ``min + extent - 1``.

    ``kind`` is one of :data:`FOR_KINDS`; ``min`` and ``extent`` have the loop variable's
    dtype (Python ints are converted).
    """

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt = field(converter=_body)

    _sfields = (("min", NODE), ("extent", NODE), ("loop_var", BIND), ("kind", VALUE),
                ("body", NODE))

    def __attrs_post_init__(self) -> None:
        var = self.loop_var
        if not isinstance(var, Var) or var.dtype not in INT_DTYPES:
            raise IRTypeError(f"For.loop_var must be an integer Var, found {var!r}",
                              span=self.span)
        if self.kind not in FOR_KINDS:
            raise IRTypeError(f"unknown loop kind {self.kind!r}; expected one of "
                              f"{', '.join(FOR_KINDS)}", span=self.span)
        for name in ("min", "extent"):
            value = getattr(self, name)
            if not isinstance(value, PrimExpr):
                value = convert(value, var.dtype)
                object.__setattr__(self, name, value)
            if value.dtype != var.dtype:
                raise IRTypeError(f"For.{name} must be {var.dtype} like the loop variable, "
                                  f"found {value.dtype}", expected=var.dtype,
                                  found=value.dtype, span=self.span)


@frozen(eq=False, repr=False)
class IfThenElse(Stmt):
    """Run ``then_case`` when ``condition`` holds, else ``else_case`` (may be None)."""

    condition: PrimExpr = field(converter=lambda v: _expr(v, "IfThenElse.condition"))
    then_case: Stmt = field(converter=lambda v: _stmt(v, "IfThenElse.then_case"))
    else_case: Stmt | None = field(
        default=None, converter=lambda v: None if v is None else _stmt(v, "IfThenElse.else_case"))

    _sfields = (("condition", NODE), ("then_case", NODE), ("else_case", NODE))

    def __attrs_post_init__(self) -> None:
        if self.condition.dtype != "bool":
            raise IRTypeError(f"IfThenElse: the condition must be bool, found "
                              f"{self.condition.dtype}", span=self.span)


@frozen(eq=False, repr=False)
class BufferStore(Stmt):
    """Store ``value`` into ``buffer`` at ``indices``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...] = field(converter=_index_tuple)

    _sfields = (("buffer", NODE), ("value", NODE), ("indices", NODE))

    def __attrs_post_init__(self) -> None:
        buf = self.buffer
        if not isinstance(buf, Buffer):
            raise IRTypeError(f"BufferStore needs a Buffer, found {buf!r}", span=self.span)
        check_indices(buf, self.indices, self.span)
        value = self.value
        if not isinstance(value, PrimExpr):
            value = convert(value, buf.dtype)
            object.__setattr__(self, "value", value)
        if value.dtype != buf.dtype:
            raise IRTypeError(f"BufferStore: buffer {buf.name} holds {buf.dtype}, the value is "
                              f"{value.dtype}", expected=buf.dtype, found=value.dtype,
                              span=self.span)

    def load(self) -> BufferLoad:
        """A load of the element this statement stores."""
        return BufferLoad(self.buffer, self.indices)


def _message(value: object) -> StringImm:
    if isinstance(value, str):
        return StringImm(value)
    if not isinstance(value, StringImm):
        raise IRTypeError(f"AssertStmt.message must be a StringImm, found {value!r}")
    return value


@frozen(eq=False, repr=False)
class AssertStmt(Stmt):
    """Check ``condition`` (failing with ``message``), then run ``body``."""

    condition: PrimExpr = field(converter=lambda v: _expr(v, "AssertStmt.condition"))
    message: StringImm = field(converter=_message)
    body: Stmt = field(converter=_body)

    _sfields = (("condition", NODE), ("message", NODE), ("body", NODE))

    def __attrs_post_init__(self) -> None:
        if self.condition.dtype != "bool":
            raise IRTypeError(f"AssertStmt: the condition must be bool, found "
                              f"{self.condition.dtype}", span=self.span)

