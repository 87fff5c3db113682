"""Options declared once, on the factory: a keyword parameter annotated
``Annotated[<type>, "<summary>"]`` is an option of that type, with the parameter's default
and that summary, so a spec derived from the factory (``options_of``) never repeats it.

The types are ``int``, ``float``, ``bool``, ``str``, ``tuple[str, ...]`` (text ``a;b``) and
``dict[str, tuple[str, ...]]`` (text ``key:a:b;key2:c``), each optionally ``| None``; a
parameter taking more from Python than its text form can say names its option type in the
annotation (``Annotated[str | Sequence[tuple], STR, "summary"]``). Parameters without
such an annotation are not options. An instrument whose option has no usable default
declares it ``| None = None`` and checks it (a path: :func:`required_path`).
"""

from __future__ import annotations

import inspect
import os
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from passhost.errors import OptionError
from passhost.plugins.options import (
    BOOL,
    FLOAT,
    INT,
    STR,
    STR_LIST,
    STR_LIST_MAP,
    OptionSpec,
    OptionType,
)
from passhost.plugins.specs import InstrumentSpec

__all__ = ["first_line", "instrument_spec", "options_of", "required_path"]

_TYPES: dict[Any, OptionType] = {int: INT, float: FLOAT, bool: BOOL, str: STR,
                                 tuple[str, ...]: STR_LIST,
                                 dict[str, tuple[str, ...]]: STR_LIST_MAP}


def _option_type(hint: Any, where: str) -> OptionType:
    """The option type of ``hint`` (``X | None`` counts as ``X``)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kept = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(kept) == 1:
            hint = kept[0]
    found = _TYPES.get(hint)
    if found is None:
        raise TypeError(f"{where}: an option's type is one of int, float, bool, str, "
                        f"tuple[str, ...], dict[str, tuple[str, ...]] (or X | None), "
                        f"found {hint!r}")
    return found


def options_of(factory: Callable[..., Any]) -> tuple[OptionSpec, ...]:
    """The options ``factory`` (a class or a function; for a class made by ``module_pass``
    & co., the class it wraps) declares: its keyword parameters annotated
    ``Annotated[type, "summary"]``, in order."""
    factory = getattr(factory, "__wrapped__", factory)  # a pass class's own constructor
    target = (next(vars(cls)["__init__"] for cls in factory.__mro__ if "__init__" in vars(cls))
              if isinstance(factory, type) else factory)
    hints = typing.get_type_hints(target, include_extras=True)
    options = []
    for name, param in inspect.signature(target).parameters.items():
        hint = hints.get(name)
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *extras = typing.get_args(hint)
        summary = next((extra for extra in extras if isinstance(extra, str)), "")
        given = next((extra for extra in extras if isinstance(extra, OptionType)), None)
        default = None if param.default is inspect.Parameter.empty else param.default
        where = f"{getattr(factory, '__qualname__', factory)}, parameter {name!r}"
        options.append(OptionSpec(name, given or _option_type(base, where), default, summary))
    return tuple(options)


def first_line(obj: Any) -> str:
    """The first line of ``obj``'s docstring, without its final full stop: a summary."""
    doc = inspect.getdoc(obj) or ""
    line = doc.strip().splitlines()[0] if doc.strip() else ""
    return line[:-1] if line.endswith(".") else line


def instrument_spec(name: str, factory: Callable[..., Any],
                    summary: str | None = None) -> InstrumentSpec:
    """The :class:`InstrumentSpec` of instrument ``name`` made by ``factory`` (an instrument
    class), its options read from the factory's annotations (:func:`options_of`) and its
    summary, unless given, from the first line of the factory's docstring."""
    return InstrumentSpec(name, factory, first_line(factory) if summary is None else summary,
                          options_of(factory))


def required_path(value: str | os.PathLike[str] | None, instrument: str, option: str
                  ) -> Path:
    """The path ``value`` given for the required option ``option`` of instrument
    ``instrument``; an :class:`~passhost.errors.OptionError` when it was not given (None)."""
    if value is None:
        raise OptionError(f"instrument {instrument!r} needs the option {option!r}")
    return Path(value)
