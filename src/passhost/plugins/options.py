"""Typed options: what config keys, pass options and target options accept.

An :class:`OptionType` checks a Python value and converts to and from the text used on the
command line and in textual pipelines, so every option reads the same way everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import field, frozen

from passhost.errors import OptionError


@frozen
class OptionType:
    """A named value type: ``check`` normalises a Python value (raising TypeError or
    ValueError when it does not fit), ``parse`` reads text, ``format`` writes text."""

    name: str
    check: Callable[[Any], Any]
    parse: Callable[[str], Any]
    format: Callable[[Any], str]


def _check_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError
    return value


def _check_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError
    return float(value)


def _check_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError


_BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True,
               "false": False, "0": False, "no": False, "off": False}


def _parse_bool(text: str) -> bool:
    try:
        return _BOOL_WORDS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"expected true or false, found {text!r}") from None


def _check_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


def names(value: Iterable[str] | str | None, what: str = "name") -> tuple[str, ...]:
    """A tuple of names: a single string is one name (not its characters), None is none;
    anything else that is not a string raises TypeError naming ``what``."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"a {what} is a str, found {type(item).__name__} {item!r}")
    return items


def _check_str_list(value: Any) -> tuple[str, ...]:
    if value is None:
        raise TypeError
    return names(value)


def _parse_str_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(";") if part.strip())


def _check_str_list_map(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, Mapping):
        raise TypeError
    out = {}
    for key, items in value.items():
        if not isinstance(key, str):
            raise TypeError
        out[key] = _check_str_list(items)
    return out


def _parse_str_list_map(text: str) -> dict[str, tuple[str, ...]]:
    out = {}
    for entry in _parse_str_list(text):
        key, *items = (part.strip() for part in entry.split(":"))
        if not key:
            raise ValueError(f"expected key:value[:value...], found {entry!r}")
        out[key] = tuple(items)
    return out


def _format_float(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else str(value)


INT = OptionType("int", _check_int, int, str)
FLOAT = OptionType("float", _check_float, float, _format_float)
BOOL = OptionType("bool", _check_bool, _parse_bool, lambda v: "true" if v else "false")
STR = OptionType("str", _check_str, str, str)
#: A list of names; text form ``a;b;c``.
STR_LIST = OptionType("list of str", _check_str_list, _parse_str_list, ";".join)
#: A map from name to a list of names; text form ``key:a:b;key2:c``.
STR_LIST_MAP = OptionType(
    "map of str to list of str", _check_str_list_map, _parse_str_list_map,
    lambda v: ";".join(":".join((k, *items)) for k, items in v.items()))

_BY_PYTHON_TYPE: dict[type, OptionType] = {int: INT, float: FLOAT, bool: BOOL, str: STR}


def int_range(low: int, high: int) -> OptionType:
    """The type of integers from ``low`` to ``high`` (both included), such as a count of
    threads that a C ``int`` must hold."""

    def check(value: Any) -> int:
        value = _check_int(value)
        if not low <= value <= high:
            raise ValueError
        return value

    return OptionType(f"int from {low} to {high}", check, int, str)


def option_type(kind: OptionType | type) -> OptionType:
    """The :class:`OptionType` for ``kind``: an OptionType, or one of int, float, bool, str."""
    if isinstance(kind, OptionType):
        return kind
    try:
        return _BY_PYTHON_TYPE[kind]
    except (KeyError, TypeError):
        raise OptionError(f"an option type is an OptionType or one of int, float, bool, str; "
                          f"found {kind!r}") from None


@frozen
class OptionSpec:
    """A named, typed option with a default and a one-line summary."""

    name: str
    type: OptionType = field(converter=option_type)
    default: Any = None
    summary: str = ""

    def check(self, value: Any, what: str = "option") -> Any:
        """Return ``value`` normalised to this option's type, or raise :class:`OptionError`."""
        try:
            return self.type.check(value)
        except (TypeError, ValueError):
            raise OptionError(
                f"{what} {self.name!r} expects {self.type.name}, "
                f"found {type(value).__name__} {value!r}") from None

    def parse(self, text: str, what: str = "option") -> Any:
        """Return the value written as ``text``, or raise :class:`OptionError`."""
        try:
            return self.type.check(self.type.parse(text))
        except (TypeError, ValueError) as err:
            detail = f" ({err})" if str(err) else ""
            raise OptionError(
                f"{what} {self.name!r} expects {self.type.name}, found {text!r}{detail}"
            ) from None

    def format(self, value: Any) -> str:
        """The text form of ``value``."""
        return self.type.format(value)
