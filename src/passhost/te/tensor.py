"""Tensors of the tensor-expression layer: placeholders, computed tensors and reductions.

A :class:`Tensor` is either a *placeholder* (an input the caller provides) or the result of
:func:`compute`, which describes every element of the result by one scalar TIR expression of
its indices. Indexing a tensor (``a[i, j]``) loads one element: the expression is a TIR
``BufferLoad`` of the tensor's buffer, so the same expressions serve in TE and in TIR.
A compute body may also be a :class:`Reduce` (``te.sum(a[i, k], axis=k)``): the element is
the reduction of its source over the reduction axes.

Index variables are ``int64``. :func:`passhost.te.lower` turns tensors into a PrimFunc.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from attrs import field, frozen

from passhost.errors import IRTypeError
from passhost.tir.expr import BufferLoad, PrimExpr, Var, const, convert
from passhost.tir.function import Buffer, decl_buffer, static_shape
from passhost.tir.visitor import post_order

__all__ = [
    "INDEX_DTYPE", "IterVar", "Reduce", "Reducer", "Tensor", "body_exprs", "compute",
    "placeholder", "reduce_axis",
]

#: The dtype of index variables and of the indices TE builds.
INDEX_DTYPE = "int64"


@frozen(eq=False)
class IterVar:
    """A reduction axis: ``var`` runs over ``[0, extent)``. In index arithmetic it stands
    for its variable (``a[i, k + 1]``)."""

    var: Var
    extent: int

    def __add__(self, other: Any) -> PrimExpr:
        return self.var + other

    def __radd__(self, other: Any) -> PrimExpr:
        return other + self.var

    def __sub__(self, other: Any) -> PrimExpr:
        return self.var - other

    def __rsub__(self, other: Any) -> PrimExpr:
        return other - self.var

    def __mul__(self, other: Any) -> PrimExpr:
        return self.var * other

    def __rmul__(self, other: Any) -> PrimExpr:
        return other * self.var

    def __floordiv__(self, other: Any) -> PrimExpr:
        return self.var // other

    def __mod__(self, other: Any) -> PrimExpr:
        return self.var % other

    def __lt__(self, other: Any) -> PrimExpr:
        return self.var < other

    def __le__(self, other: Any) -> PrimExpr:
        return self.var <= other

    def __gt__(self, other: Any) -> PrimExpr:
        return self.var > other

    def __ge__(self, other: Any) -> PrimExpr:
        return self.var >= other


def reduce_axis(extent: int, name: str = "k") -> IterVar:
    """A reduction axis over ``[0, extent)``."""
    if isinstance(extent, bool) or not isinstance(extent, int) or extent < 0:
        raise IRTypeError(f"reduce_axis: the extent must be an int >= 0, found {extent!r}")
    return IterVar(Var(name, INDEX_DTYPE), extent)


@frozen(eq=False)
class Reducer:
    """A commutative reduction: ``combine(acc, x)`` and the identity of each dtype."""

    name: str
    combine: Callable[[PrimExpr, PrimExpr], PrimExpr]
    identity: Callable[[str], PrimExpr]

    def __call__(self, source: Any, axis: IterVar | Sequence[IterVar],
                 where: PrimExpr | None = None) -> Reduce:
        """The reduction of ``source`` over ``axis`` (elements where ``where`` holds)."""
        axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
        if not axes or not all(isinstance(a, IterVar) for a in axes):
            raise IRTypeError(f"{self.name}: axis must be reduce_axis() results, found "
                              f"{axis!r}")
        return Reduce(self, convert(source), axes, where)


@frozen(eq=False)
class Reduce:
    """The body of a reduction stage: ``reducer`` over ``source`` on ``axes``, counting only
    the points where ``where`` (a bool expression, or None) holds."""

    reducer: Reducer
    source: PrimExpr
    axes: tuple[IterVar, ...]
    where: PrimExpr | None = None

    @property
    def dtype(self) -> str:
        """The dtype of the reduction (its source's)."""
        return self.source.dtype


def _shape(value: Any) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    return static_shape(value)


@frozen(eq=False)
class Tensor:
    """A tensor of static ``shape`` and ``dtype``: a placeholder (``body`` None) or computed
    element by element from ``axes`` by ``body``. ``buffer`` holds it when it is stored."""

    shape: tuple[int, ...] = field(converter=_shape)
    dtype: str
    name: str
    axes: tuple[Var, ...] = ()
    body: PrimExpr | Reduce | None = None
    inputs: tuple[Tensor, ...] = ()
    buffer: Buffer = field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "buffer", decl_buffer(self.shape, self.dtype, self.name))

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def is_placeholder(self) -> bool:
        """Whether the tensor is an input rather than computed."""
        return self.body is None

    @property
    def is_reduction(self) -> bool:
        """Whether the tensor is computed by a reduction."""
        return isinstance(self.body, Reduce)

    def __getitem__(self, indices: Any) -> BufferLoad:
        """The element at ``indices`` (one integer expression or int per dimension)."""
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IRTypeError(f"tensor {self.name} has {len(self.shape)} dimension(s), "
                              f"found {len(indices)} index(es)")
        load = BufferLoad(self.buffer, tuple(_index(i) for i in indices))
        readers = getattr(_RECORDING, "stack", None)
        if readers:
            readers[-1].setdefault(id(self.buffer), self)
        return load

    def __repr__(self) -> str:
        kind = "placeholder" if self.is_placeholder else "compute"
        return f"Tensor({self.name}: {self.dtype}{list(self.shape)}, {kind})"


#: Per thread, the tensors each :func:`compute` being built has read (innermost last).
_RECORDING = threading.local()


@contextmanager
def _recording() -> Iterator[dict[int, Tensor]]:
    stack = getattr(_RECORDING, "stack", None)
    if stack is None:
        stack = _RECORDING.stack = []
    read: dict[int, Tensor] = {}
    stack.append(read)
    try:
        yield read
    finally:
        stack.pop()


def body_exprs(body: PrimExpr | Reduce) -> list[PrimExpr]:
    """The scalar expressions of a compute body (a reduction's source and condition)."""
    if isinstance(body, Reduce):
        return [body.source] + ([body.where] if body.where is not None else [])
    return [body]


def _index(value: Any) -> PrimExpr:
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise IRTypeError(f"a tensor index must be an integer expression or int, found "
                          f"{value!r}")
    return const(value, INDEX_DTYPE)


def placeholder(shape: Sequence[int] | int, dtype: str = "float32",
                name: str = "placeholder") -> Tensor:
    """An input tensor."""
    return Tensor(shape, dtype, name)


def compute(shape: Sequence[int] | int, fcompute: Callable[..., Any], name: str = "compute",
            dtype: str | None = None) -> Tensor:
    """The tensor whose element at ``(i0, i1, ...)`` is ``fcompute(i0, i1, ...)`` (a scalar
    expression or a :class:`Reduce`); ``dtype``, when given, must be its dtype."""
    shape = _shape(shape)
    axes = tuple(Var(n, INDEX_DTYPE) for n in _axis_names(fcompute, len(shape)))
    with _recording() as read:
        body = fcompute(*axes)
    if not isinstance(body, Reduce):
        try:
            body = convert(body)
        except IRTypeError:
            raise IRTypeError(f"compute {name}: the body must be a scalar expression or a "
                              f"reduction, found {body!r}") from None
    if dtype is not None and body.dtype != dtype:
        raise IRTypeError(f"compute {name}: the body is {body.dtype}, expected {dtype}",
                          expected=dtype, found=body.dtype)
    for node in post_order(body_exprs(body)):
        if isinstance(node, BufferLoad) and id(node.buffer) not in read:
            raise IRTypeError(f"compute {name}: the body loads buffer {node.buffer.name}, "
                              f"which is no tensor indexed while computing it")
    return Tensor(shape, body.dtype, name, axes, body, tuple(read.values()))


def _axis_names(fcompute: Callable[..., Any], ndim: int) -> list[str]:
    """The names of ``fcompute``'s positional parameters when there are ``ndim`` of them,
    else ``i0, i1, ...``."""
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(names) != ndim:
        return [f"i{n}" for n in range(ndim)]
    return names
