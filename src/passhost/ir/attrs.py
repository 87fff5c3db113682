"""Operator attributes: frozen attrs classes built from typed, validated fields.

An operator declares one ``Attrs`` subclass. Its fields are made with the helpers below so
that every value is normalised (lists become tuples) and checked, and a bad value raises
:class:`~passhost.errors.AttrError` naming the attribute, the expected and the found value.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import numpy as np
from attrs import field, frozen

from passhost.errors import AttrError

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # Python 3.10: the marker only informs type checkers; at run time it changes nothing
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda function: function
from passhost.ir.types import DTYPES


@frozen
class Attrs:
    """Base class of operator attribute classes (frozen, slotted, compared by value)."""

    def fields_dict(self) -> dict[str, Any]:
        """The attribute values by name, in declaration order."""
        return {a.name: getattr(self, a.name) for a in attrs.fields(type(self))}

    def with_changes(self, **changes: Any) -> Attrs:
        """Return a copy with some attributes replaced (validated like the original)."""
        return attrs.evolve(self, **changes)


_C = TypeVar("_C", bound=type)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def attrs_class(cls: _C) -> _C:
    """Decorator turning a subclass of :class:`Attrs` into a frozen keyword-only attrs class
    (typed as such: type checkers see its fields and keyword-only constructor)."""
    return frozen(kw_only=True)(cls)


def _fail(name: str, expected: str, value: Any) -> AttrError:
    return AttrError(f"attribute '{name}': expected {expected}, found {value!r}")


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _checked(expected: str, convert: Callable[[Any], Any]) -> Callable[[Any, Any, Any], None]:
    """Build an attrs validator that runs ``convert`` to check a (converted) value."""

    def validate(_inst: Any, attribute: attrs.Attribute, value: Any) -> None:
        if convert(value) is _BAD:
            raise _fail(attribute.name, expected, value)

    return validate


_BAD = object()


def _as_int(v: Any) -> Any:
    return int(v) if _is_int(v) else v


def _as_ints(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_as_ints(x) for x in v)
    return _as_int(v)


def int_field(default: int | None = None, *, minimum: int | None = None, optional: bool = False):
    """An int attribute (``None`` allowed when ``optional``), at least ``minimum`` if given."""
    expected = "an int" + (f" >= {minimum}" if minimum is not None else "")
    if optional:
        expected += " or None"

    def check(v: Any) -> Any:
        if v is None and optional:
            return v
        if not _is_int(v) or (minimum is not None and v < minimum):
            return _BAD
        return v

    return field(default=default, converter=_as_int, validator=_checked(expected, check))


def float_field(default: float | None = None, *, optional: bool = False):
    """A float attribute; ints are accepted and converted."""
    expected = "a number" + (" or None" if optional else "")

    def convert(v: Any) -> Any:
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            return float(v)
        return v

    def check(v: Any) -> Any:
        if v is None and optional:
            return v
        return v if isinstance(v, float) else _BAD

    return field(default=default, converter=convert, validator=_checked(expected, check))


def bool_field(default: bool):
    """A bool attribute (0 and 1 are accepted)."""

    def convert(v: Any) -> Any:
        if isinstance(v, (bool, np.bool_)) or (_is_int(v) and v in (0, 1)):
            return bool(v)
        return v

    def check(v: Any) -> Any:
        return v if isinstance(v, bool) else _BAD

    return field(default=default, converter=convert, validator=_checked("a bool", check))


def str_field(default: str | None = None, *, choices: Collection[str] | None = None,
              optional: bool = False):
    """A string attribute, restricted to ``choices`` if given."""
    expected = "a string" if choices is None else "one of " + ", ".join(repr(c) for c in choices)
    if optional:
        expected += " or None"

    def check(v: Any) -> Any:
        if v is None and optional:
            return v
        if not isinstance(v, str) or (choices is not None and v not in choices):
            return _BAD
        return v

    return field(default=default, validator=_checked(expected, check))


def dtype_field(default: str = "", *, allow_empty: bool = True):
    """A dtype name; ``""`` (when allowed) means "the same as the input"."""
    choices = (("",) if allow_empty else ()) + DTYPES
    return str_field(default, choices=choices)


def ints_field(default: tuple[int, ...] | None = None, *, lengths: Collection[int] | None = None,
               optional: bool = False, expand: int | None = None):
    """A tuple of ints. ``lengths`` restricts its length; a bare int (or a 1-tuple) is
    repeated ``expand`` times when ``expand`` is given; ``None`` allowed when ``optional``."""
    expected = "a tuple of ints"
    if lengths is not None:
        expected = f"a tuple of {' or '.join(str(n) for n in sorted(lengths))} ints"
    if optional:
        expected += " or None"

    def convert(v: Any) -> Any:
        if expand is not None and _is_int(v):
            v = (v,) * expand
        if isinstance(v, (list, tuple, np.ndarray)):
            v = tuple(_as_int(x) for x in v)
            if expand is not None and len(v) == 1:
                v = v * expand
        return v

    def check(v: Any) -> Any:
        if v is None and optional:
            return v
        if not isinstance(v, tuple) or not all(_is_int(x) for x in v):
            return _BAD
        if lengths is not None and len(v) not in lengths:
            return _BAD
        return v

    return field(default=default, converter=convert, validator=_checked(expected, check))


def nested_ints_field(default: tuple[tuple[int, ...], ...] | None = None):
    """A tuple of tuples of ints (for example ``pad_width``)."""

    def check(v: Any) -> Any:
        if not isinstance(v, tuple):
            return _BAD
        for row in v:
            if not isinstance(row, tuple) or not all(_is_int(x) for x in row):
                return _BAD
        return v

    return field(default=default, converter=_as_ints,
                 validator=_checked("a tuple of tuples of ints", check))


def value_field(default: Any = None):
    """An attribute holding any printable constant (a number, string, bool or None)."""

    def check(v: Any) -> Any:
        return v if v is None or isinstance(v, (bool, int, float, str)) else _BAD

    return field(default=default, validator=_checked("a number, string, bool or None", check))
