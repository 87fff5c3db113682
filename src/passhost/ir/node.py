"""The base of every IR node, source spans, and the immutable mapping IR nodes hold.

IR nodes are ``attrs`` frozen, slotted classes compared by identity; structural comparison
is :func:`passhost.ir.structural_equal`. Each node class declares ``_sfields``: the fields
that take part in structural equality and hashing, each tagged with how it is compared.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from attrs import field, frozen

#: Field tags for ``_sfields``: compared as child nodes, as plain values, or as definitions
#: of variables (a binding maps the variables of the two sides onto each other).
NODE = "node"
VALUE = "value"
BIND = "bind"


@frozen
class Span:
    """A position in IR text: 1-based line and column."""

    line: int
    column: int
    source_name: str = "<text>"

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"


@frozen(eq=False, repr=False)
class Node:
    """Base class of IR nodes: immutable, identity-compared, optionally located in text."""

    span: Span | None = field(default=None, kw_only=True)

    #: (field name, NODE | VALUE | BIND) pairs used by structural equality and hashing.
    _sfields: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: True on variable classes: compared up to renaming where they are bound.
    _is_var: ClassVar[bool] = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {id(self):#x}>"


class FrozenDict(Mapping):
    """An immutable, hashable mapping that keeps insertion order."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[Any, Any] | Any = (), /, **kwargs: Any) -> None:
        self._data = dict(data, **kwargs)
        self._hash: int | None = None

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def set(self, key: Any, value: Any) -> FrozenDict:
        """Return a copy with ``key`` set to ``value``."""
        data = dict(self._data)
        data[key] = value
        return FrozenDict(data)

    def remove(self, key: Any) -> FrozenDict:
        """Return a copy without ``key`` (which must be present)."""
        data = dict(self._data)
        del data[key]
        return FrozenDict(data)


def frozen_dict(value: Mapping[Any, Any] | None) -> FrozenDict:
    """Converter for attrs fields: ``None`` or any mapping becomes a :class:`FrozenDict`."""
    if isinstance(value, FrozenDict):
        return value
    return FrozenDict(value or {})
