"""Target kinds: what a target plugin registers with ``passhost_register_targets``.

A :class:`TargetKind` is plain data: a name, typed options, keys, tags, the hooks and
tables the build flow uses. It is checked when it is created, so a mistake in a plugin is
reported when the plugin loads. This module imports nothing of the IR, so registering a
kind stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from attrs import evolve, field, frozen

from passhost.errors import OptionError, PluginError, UnknownNameError, close_matches
from passhost.plugins.names import is_name
from passhost.plugins.options import OptionSpec
from passhost.plugins.specs import TargetKindBase

if TYPE_CHECKING:
    from passhost.ir.module import IRModule
    from passhost.target.target import Target

#: The TIR phases at which a target kind may insert passes, in the order they run.
PHASES = ("tir.phase0", "tir.phase1", "tir.phase2", "tir.phase3")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_NAME_SYNTAX = "[A-Za-z_][A-Za-z0-9_.-]*"


class TargetKindError(PluginError, ValueError):
    """A target kind is declared wrongly (bad name, duplicate option, unknown phase...)."""


def is_target_name(text: object) -> bool:
    """Whether ``text`` can name a target kind, a tag, a key or an option."""
    return isinstance(text, str) and _NAME.match(text) is not None


@frozen(eq=False, repr=False)
class TargetKind(TargetKindBase):
    """A kind of target (``cpu``, ``cmsis-nn``...): its typed options and what it adds to
    the build flow. Kinds compare by identity; targets compare by kind name and options.

    ``lowers_loops(target)``, for a host kind, says whether the default lowering should
    build loop nests from the operators' TE computes for this build (the kind's
    ``tir_to_runtime`` compiles them); without it, or when it says no, operators are
    lowered to kernel calls.

    ``pattern_table`` is what partitioning merges for this kind: the name of a pattern table
    registered with the plugin host (``passhost_register_pattern_tables``, listed by
    ``passhost pattern-tables list``), a function of the :class:`Target` returning entries,
    or the entries themselves; each is made for the target being built."""

    name: str
    options: tuple[OptionSpec, ...] = ()
    keys: tuple[str, ...] = ()
    relay_to_tir: Callable[[Target, IRModule], IRModule | None] | None = None
    tir_to_runtime: Callable[[Target, IRModule], Any] | None = None
    pattern_table: Any = None
    phase_passes: Mapping[str, tuple[str, ...]] = field(factory=dict)
    tags: Mapping[str, Mapping[str, str]] = field(factory=dict)
    host: bool = False
    summary: str = ""
    lowers_loops: Callable[[Target], bool] | None = None
    _by_name: Mapping[str, OptionSpec] = field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not is_target_name(self.name):
            raise TargetKindError(f"a target kind name matches {_NAME_SYNTAX}, "
                                  f"found {self.name!r}")
        what = f"target kind {self.name!r}"
        options = _check_options(self.options, what)
        by_name = MappingProxyType({opt.name: opt for opt in options})
        for attr, value in (
            ("options", options),
            ("_by_name", by_name),
            ("keys", _check_keys(self.name, self.keys, what)),
            ("phase_passes", _check_phase_passes(self.phase_passes, what)),
            ("tags", _check_tags(self.name, self.tags, by_name, what)),
        ):
            object.__setattr__(self, attr, value)
        _check_rest(self, what)

    def __repr__(self) -> str:
        options = ", ".join(f"-{opt.name}: {opt.type.name}" for opt in self.options)
        return (f"TargetKind({self.name!r}, options=[{options}], keys={list(self.keys)}, "
                f"host={self.host})")

    def option(self, name: str) -> OptionSpec:
        """The declared option ``name``; an unknown name raises
        :class:`~passhost.errors.UnknownNameError` listing close matches and every option."""
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownNameError("option", name, self._by_name,
                                   where=f" of target kind {self.name!r}, "
                                         f"{self.describe_options()}") from None

    def describe_options(self) -> str:
        """``which has the options -a, -b`` (or ``which has no options``), for messages."""
        if not self.options:
            return "which has no options"
        return "which has the options " + ", ".join(f"-{opt.name}" for opt in self.options)

    def passes_at(self, phase: str) -> tuple[str, ...]:
        """The names of the passes this kind inserts at ``phase`` (one of :data:`PHASES`)."""
        if phase not in PHASES:
            raise UnknownNameError("phase", phase, PHASES,
                                   where=f"; the phases are {', '.join(PHASES)}")
        return self.phase_passes.get(phase, ())

    def pattern_entries(self, target: Target | None = None) -> tuple[Any, ...]:
        """The pattern table made for ``target``, as normalised ``(name, pattern, check)``
        entries; empty when the kind has none."""
        table = self.pattern_table
        if table is None:
            return ()
        from passhost.relay.dataflow_pattern import get_pattern_table, normalize_pattern_table

        if isinstance(table, str):
            return get_pattern_table(table, target)
        entries = table(target) if callable(table) else table
        return normalize_pattern_table(entries, f"pattern table of target kind {self.name!r}")


def _check_options(options: Any, what: str) -> tuple[OptionSpec, ...]:
    """The options as a tuple: OptionSpecs with valid, distinct names and fitting defaults."""
    if isinstance(options, (str, Mapping)) or not isinstance(options, Iterable):
        raise TargetKindError(f"{what}: options is a sequence of OptionSpec, found {options!r}")
    options = tuple(options)
    seen: set[str] = set()
    for opt in options:
        if not isinstance(opt, OptionSpec):
            raise TargetKindError(f"{what}: options hold OptionSpec objects, found {opt!r}")
        if not is_target_name(opt.name):
            raise TargetKindError(f"{what}: an option name matches {_NAME_SYNTAX}, "
                                  f"found {opt.name!r}")
        if opt.name in seen:
            raise TargetKindError(f"{what}: option {opt.name!r} is declared twice")
        seen.add(opt.name)
    return tuple(_normalised_default(opt, what) for opt in options)


def _normalised_default(opt: OptionSpec, what: str) -> OptionSpec:
    """``opt`` with its default as the option's type normalises it (a list becomes a
    tuple...), so that defaults compare equal to parsed values."""
    if opt.default is None:
        return opt
    try:
        default = opt.check(opt.default)
    except OptionError:
        raise TargetKindError(f"{what}: the default {opt.default!r} of option {opt.name!r} "
                              f"is not a {opt.type.name}") from None
    return opt if default is opt.default else evolve(opt, default=default)


def _names(value: Any, what: str, field_name: str) -> tuple[str, ...]:
    """``value`` (one name or an iterable of names) as a tuple of valid names."""
    items = (value,) if isinstance(value, str) else value
    if isinstance(items, Mapping) or not isinstance(items, Iterable):
        raise TargetKindError(f"{what}: {field_name} is a sequence of names, found {value!r}")
    items = tuple(items)
    for item in items:
        if not is_target_name(item):
            raise TargetKindError(f"{what}: {field_name} hold names matching {_NAME_SYNTAX}, "
                                  f"found {item!r}")
    return items


def _check_keys(name: str, keys: Any, what: str) -> tuple[str, ...]:
    """The kind's name followed by the declared keys, each once."""
    return tuple(dict.fromkeys((name, *_names(keys, what, "keys"))))


def _mapping(value: Any, what: str, field_name: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TargetKindError(f"{what}: {field_name} is a mapping, found {value!r}")
    return value


def _check_phase_passes(phase_passes: Any, what: str) -> Mapping[str, tuple[str, ...]]:
    """Phase name -> pass names, every phase one of :data:`PHASES`; read-only."""
    checked = {}
    for phase, passes in _mapping(phase_passes, what, "phase_passes").items():
        if phase not in PHASES:
            hint = close_matches(str(phase), PHASES, limit=1)
            mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise TargetKindError(f"{what}: unknown phase {phase!r} in phase_passes{mean}; "
                                  f"the phases are {', '.join(PHASES)}")
        checked[phase] = _names(passes, what, f"the passes of phase {phase!r}")
    return MappingProxyType(checked)


def _check_tags(name: str, tags: Any, options: Mapping[str, OptionSpec],
                what: str) -> Mapping[str, Mapping[str, str]]:
    """Tag name -> option values as text, every option declared and every value
    readable as the option's type; read-only."""
    checked = {}
    for tag, values in _mapping(tags, what, "tags").items():
        if not is_target_name(tag) or tag == name:
            raise TargetKindError(f"{what}: a tag name matches {_NAME_SYNTAX} and differs "
                                  f"from the kind's name, found {tag!r}")
        where = f"{what}: tag {tag!r}"
        for option, text in _mapping(values, where, "the tag's values").items():
            spec = options.get(option)
            if spec is None:
                hint = close_matches(str(option), options, limit=1)
                mean = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise TargetKindError(f"{where} sets option {option!r}, which the kind does "
                                      f"not declare{mean}")
            if not isinstance(text, str):
                raise TargetKindError(f"{where} gives option {option!r} the value {text!r}; "
                                      f"tag values are text, as written in a target string")
            try:
                spec.parse(text, f"{where}: option")
            except OptionError as err:
                raise TargetKindError(str(err)) from None
        checked[tag] = MappingProxyType(dict(values))
    return MappingProxyType(checked)


def _check_rest(kind: TargetKind, what: str) -> None:
    """The hooks, the pattern table, ``host`` and ``summary``."""
    for attr in ("relay_to_tir", "tir_to_runtime", "lowers_loops"):
        function = getattr(kind, attr)
        if function is not None and not callable(function):
            raise TargetKindError(f"{what}: {attr} is a function or None, found {function!r}")
    table = kind.pattern_table
    if isinstance(table, str):
        if not is_name(table):
            raise TargetKindError(f"{what}: pattern_table {table!r} is not a pattern table name")
    elif table is not None and not callable(table) and (
            isinstance(table, (bytes, Mapping)) or not isinstance(table, Iterable)):
        raise TargetKindError(f"{what}: pattern_table is the name of a registered pattern "
                              f"table, a function of the target returning (name, pattern"
                              f"[, check]) entries, or the entries, found {table!r}")
    if not isinstance(kind.host, bool):
        raise TargetKindError(f"{what}: host is a bool, found {kind.host!r}")
    if not isinstance(kind.summary, str):
        raise TargetKindError(f"{what}: summary is a str, found {kind.summary!r}")

