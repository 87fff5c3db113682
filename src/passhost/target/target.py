"""Targets: a registered target kind with typed option values, written as a target string.

The syntax (whitespace separates a target's parts; a list separates targets by commas)::

    list    := target ("," target)*
    target  := KIND (option)*            KIND: a kind's or a tag's name
    option  := "-" NAME ["=" value]      "-NAME" alone sets a bool option to true
    value   := bare | quoted             bare: no whitespace, "," or '"'; quoted: a JSON string

``str(target)`` is canonical: the kind, then the options that differ from their defaults,
sorted by name; it parses back to an equal target.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from json.decoder import scanstring  # type: ignore[attr-defined]  # (not in typeshed)
from types import MappingProxyType
from typing import Any, Literal, overload

from attrs import frozen

from passhost.errors import ConflictError, ParseError, PasshostError, UnknownNameError
from passhost.plugins.manager import get_host
from passhost.plugins.options import BOOL, OptionSpec
from passhost.plugins.registry import Registry
from passhost.target.kind import TargetKind, is_target_name

#: The source name in the errors about a target string.
SOURCE_NAME = "<target>"

#: Target kinds that plugin distributions provide: kind name -> distribution to install.
DISTRIBUTIONS = {"cpu": "passhost-cpu-target", "cmsis-nn": "passhost-cmsis-nn"}

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class TargetError(PasshostError, ValueError):
    """A target list is wrong (no host, two hosts, a kind twice), or no target is in scope."""


# -- reading target strings -------------------------------------------------------------------

def _is_bare(char: str) -> bool:
    return not char.isspace() and char not in ',"'


def _is_word(char: str) -> bool:
    return not char.isspace() and char != ","


def quote_value(text: str) -> str:
    """``text`` as an option value in a target string: bare when it can be, else quoted."""
    if text and all(_is_bare(c) for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


@frozen
class _Option:
    """``-name[=value]`` as written: where it starts, its value text (None: no ``=``)."""

    name: str
    start: int
    value: str | None


@frozen
class _Written:
    """One target as written: the kind (or tag) name, where it starts, its options."""

    name: str
    start: int
    options: tuple[_Option, ...]


class _Scanner:
    """Reads target strings, reporting errors with the line and column in ``text``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, problem: str, pos: int) -> ParseError:
        """A ParseError at ``pos``, showing the line of text with a caret under ``pos``."""
        text = self.text
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        column = pos - start + 1
        shown = text[start:] if end < 0 else text[start:end]
        return ParseError(f"{problem}\n    {shown}\n    {' ' * (column - 1)}^",
                          text.count("\n", 0, pos) + 1, column, SOURCE_NAME)

    def peek(self) -> str:
        """The next character, or "" at the end."""
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def run(self, accept: Callable[[str], bool]) -> str:
        """Consume and return the longest run of characters ``accept`` takes."""
        start, text = self.pos, self.text
        while self.pos < len(text) and accept(text[self.pos]):
            self.pos += 1
        return text[start:self.pos]

    def found(self, pos: int) -> str:
        """What stands at ``pos``, for messages: a quoted word or character, or the end."""
        if pos >= len(self.text):
            return "the end of the text"
        end = pos
        while end < len(self.text) and _is_word(self.text[end]):
            end += 1
        return repr(self.text[pos:end] or self.text[pos])

    def targets(self) -> list[_Written]:
        """A comma-separated list of targets, up to the end of the text."""
        written = [self.target()]
        while self.peek() == ",":
            self.pos += 1
            written.append(self.target())
        return written

    def target(self) -> _Written:
        """One target: stops before a comma or at the end."""
        self.run(str.isspace)
        start = self.pos
        name = self.run(_is_word)
        if not is_target_name(name):
            raise self.error(f"expected a target kind or tag name, found {self.found(start)}",
                             start)
        options: list[_Option] = []
        while True:
            self.run(str.isspace)
            if self.peek() in ("", ","):
                return _Written(name, start, tuple(options))
            options.append(self.option())

    def option(self) -> _Option:
        """``-name`` or ``-name=value``, followed by whitespace, a comma or the end."""
        start = self.pos
        if self.peek() != "-":
            raise self.error(f"expected an option -name[=value], found {self.found(start)}",
                             start)
        self.pos += 1
        name = self.run(_NAME_CHARS.__contains__)
        if not is_target_name(name):
            raise self.error(f"expected an option name after '-', found {self.found(start + 1)}",
                             start + 1)
        value = None
        if self.peek() == "=":
            self.pos += 1
            value = self.value(name)
        following = self.peek()
        if following not in ("", ",") and not following.isspace():
            raise self.error(f"expected whitespace, ',' or the end of the text after option "
                             f"-{name}, found {self.found(self.pos)}", self.pos)
        return _Option(name, start, value)

    def value(self, name: str) -> str:
        """A bare or quoted value after ``-name=``."""
        start = self.pos
        if self.peek() == '"':
            try:
                value, self.pos = scanstring(self.text, start + 1)
            except json.JSONDecodeError as err:
                problem = ("has no closing '\"'" if err.msg.startswith("Unterminated")
                           else f"is invalid: {err.msg}")
                raise self.error(f"the quoted value of option -{name} {problem}",
                                 err.pos) from None
            return value
        value = self.run(_is_bare)
        if not value:
            raise self.error(f"expected a value after '-{name}=', found {self.found(start)} "
                             f'(write "" for an empty string)', start)
        return value


# -- finding kinds ----------------------------------------------------------------------------

def _registry() -> Registry:
    return get_host().registries.targets


def _find_kind(name: str) -> tuple[TargetKind, str | None]:
    """The kind registered as ``name``, else the kind declaring the tag ``name``; the
    second item is the tag (None for a kind)."""
    registry = _registry()
    if name in registry:
        return registry.get(name), None
    tagged = [entry for entry in registry.entries()
              if isinstance(entry.spec, TargetKind) and name in entry.spec.tags]
    if len(tagged) > 1:
        raise ConflictError("target tag", name, (entry.provider for entry in tagged))
    if tagged:
        return tagged[0].spec, name
    raise _unknown_kind(name, registry)


def _unknown_kind(name: str, registry: Registry) -> UnknownNameError:
    """The error for an unknown kind: close matches among kinds and tags, and where a
    kind that a known distribution provides comes from."""
    tags = [tag for entry in registry.entries() if isinstance(entry.spec, TargetKind)
            for tag in entry.spec.tags]
    host = get_host()
    where, note = "", host.not_loaded_hint()
    distribution = DISTRIBUTIONS.get(name)
    if distribution is not None:
        where, note = host.provided_by(distribution), ""
    elif not len(registry):
        where = (f" (no target kind is registered; the cpu target comes with: "
                 f"pip install {DISTRIBUTIONS['cpu']})")
    return UnknownNameError("target kind", name, [*registry.names(), *tags], where=where,
                            note=note)


def _host_kinds() -> list[str]:
    return [entry.name for entry in _registry().entries()
            if isinstance(entry.spec, TargetKind) and entry.spec.host]


# -- targets ----------------------------------------------------------------------------------

def _initial_values(kind: TargetKind, tag: str | None) -> dict[str, Any]:
    """Every option's default, overridden by the tag's values."""
    values = {opt.name: opt.default for opt in kind.options}
    for name, text in (kind.tags[tag] if tag is not None else {}).items():
        values[name] = kind.option(name).parse(text, f"option of target tag {tag!r}:")
    return values


def _frozen(value: Any) -> Any:
    """``value`` made hashable: mappings become sorted item tuples, lists tuples."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


class Target:
    """A target kind with a value for each of its options. ``Target("cpu -num-threads=2")``
    reads a target string (a kind or a tag name, then ``-name=value`` options); options not
    given take the tag's value, else their default. Immutable; compares and hashes by kind
    name and option values; ``with target:`` makes it :meth:`current` in this thread."""

    __slots__ = ("_kind", "_options", "_tag", "_values")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"Target takes a target string such as 'cpu -num-threads=2', "
                            f"found {type(text).__name__} {text!r}")
        scanner = _Scanner(text)
        written = scanner.target()
        if scanner.peek() == ",":
            raise scanner.error("a Target is one target; read a comma-separated list with "
                                "passhost.target.parse_targets", scanner.pos)
        self._set(*_read(written, scanner))

    @classmethod
    def from_kind(cls, kind: str | TargetKind, options: Mapping[str, Any] | None = None,
                  ) -> Target:
        """A target of ``kind`` (a registered kind or tag name, or a TargetKind) with the
        Python values ``options`` (name -> value, checked against the option types)."""
        if isinstance(kind, str):
            kind, tag = _find_kind(kind)
        elif isinstance(kind, TargetKind):
            tag = None
        else:
            raise TypeError(f"Target.from_kind takes a kind name or a TargetKind, "
                            f"found {type(kind).__name__} {kind!r}")
        values = _initial_values(kind, tag)
        for name, value in (options or {}).items():
            values[name] = kind.option(name).check(value, f"option of target kind "
                                                          f"{kind.name!r}:")
        target = cls.__new__(cls)
        target._set(kind, values, tag)
        return target

    def _set(self, kind: TargetKind, values: dict[str, Any], tag: str | None) -> None:
        self._kind = kind
        self._values = values
        self._options = MappingProxyType(values)
        self._tag = tag

    # -- fields ---------------------------------------------------------------------------
    @property
    def kind(self) -> TargetKind:
        """The target kind."""
        return self._kind

    @property
    def options(self) -> Mapping[str, Any]:
        """Every option's value by name (read-only; defaults included)."""
        return self._options

    @property
    def tag(self) -> str | None:
        """The tag this target was written as, or None."""
        return self._tag

    @property
    def keys(self) -> tuple[str, ...]:
        """The kind's keys (its name first)."""
        return self._kind.keys

    # -- text, equality -------------------------------------------------------------------
    def __str__(self) -> str:
        parts = [self._kind.name]
        for name in sorted(self._values):
            spec = self._kind.option(name)
            value = self._values[name]
            if value != spec.default:
                parts.append(_option_text(spec, value))
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Target):
            return NotImplemented
        return self._kind.name == other._kind.name and self._values == other._values

    def __hash__(self) -> int:
        return hash((self._kind.name, frozenset((k, _frozen(v))
                                                for k, v in self._values.items())))

    # -- the per-thread scope -------------------------------------------------------------
    def __enter__(self) -> Target:
        _SCOPE.stack.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        stack = _SCOPE.stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is self:
                del stack[i]
                return

    @overload
    @staticmethod
    def current(allow_none: Literal[True] = ...) -> Target | None: ...

    @overload
    @staticmethod
    def current(allow_none: Literal[False]) -> Target: ...

    @staticmethod
    def current(allow_none: bool = True) -> Target | None:
        """The innermost target entered with ``with target:`` in this thread; None when
        there is none, or a :class:`TargetError` when ``allow_none`` is False."""
        stack = _SCOPE.stack
        if stack:
            return stack[-1]
        if allow_none:
            return None
        raise TargetError("no target is in scope: enter one with 'with Target(\"cpu\"):' "
                          "or pass the target explicitly")


def _option_text(spec: OptionSpec, value: Any) -> str:
    """``-name`` for a true bool, else ``-name=value`` with the value quoted if needed."""
    if spec.type is BOOL and value is True:
        return f"-{spec.name}"
    return f"-{spec.name}={quote_value(spec.format(value))}"


def _read(written: _Written, scanner: _Scanner) -> tuple[TargetKind, dict[str, Any], str | None]:
    """The kind, option values and tag of a target as written."""
    kind, tag = _find_kind(written.name)
    values = _initial_values(kind, tag)
    given: set[str] = set()
    for option in written.options:
        spec = kind.option(option.name)
        if option.name in given:
            raise scanner.error(f"option -{option.name} is given twice", option.start)
        given.add(option.name)
        if option.value is not None:
            values[option.name] = spec.parse(option.value,
                                             f"option of target kind {kind.name!r}:")
        elif spec.type is BOOL:
            values[option.name] = True
        else:
            raise scanner.error(f"option -{option.name} of target kind {kind.name!r} needs a "
                                f"value: -{option.name}=<{spec.type.name}>", option.start)
    return kind, values, tag


class _Scope(threading.local):
    """The targets entered in one thread, innermost last."""

    def __init__(self) -> None:
        self.stack: list[Target] = []


_SCOPE = _Scope()


# -- lists of targets -------------------------------------------------------------------------

def _parse_list(text: str) -> list[Target]:
    scanner = _Scanner(text)
    found = []
    for written in scanner.targets():
        target = Target.__new__(Target)
        target._set(*_read(written, scanner))
        found.append(target)
    return found


def _collect(targets: Any) -> list[Target]:
    """The targets of a string, a Target or a sequence of them, in the order given."""
    if isinstance(targets, Target):
        return [targets]
    if isinstance(targets, str):
        return _parse_list(targets)
    if isinstance(targets, Iterable) and not isinstance(targets, (bytes, Mapping)):
        found: list[Target] = []
        for item in targets:
            if not isinstance(item, (str, Target)):
                raise TypeError(f"a target list holds target strings and Targets, found "
                                f"{type(item).__name__} {item!r}")
            found.extend(_collect(item))
        return found
    raise TypeError(f"expected a target string, a Target or a sequence of them, found "
                    f"{type(targets).__name__} {targets!r}")


def _host_problem(hosts: list[Target], listing: str) -> str:
    if hosts:
        names = " and ".join(repr(str(t)) for t in hosts)
        return (f"the target list {listing!r} has {len(hosts)} host targets, {names}: "
                f"exactly one target must be of a host kind")
    registered = _host_kinds()
    example = registered[0] if registered else "cpu"
    problem = (f"the target list {listing!r} needs a host target such as {example!r}: exactly "
               f"one target must be of a host kind, which runs what the other targets do not")
    if registered:
        return problem + f" (host kinds: {', '.join(registered)})"
    return problem + (f" (no host kind is registered; the cpu target comes with: "
                      f"pip install {DISTRIBUTIONS['cpu']})")


def parse_targets(targets: str | Target | Iterable[str | Target]) -> tuple[Target, ...]:
    """The targets of a build: a comma-separated target string, a Target or a sequence of
    them. External targets come first, in the order given, and the host target last;
    exactly one target must be of a host kind and no kind may appear twice
    (:class:`TargetError` otherwise)."""
    found = _collect(targets)
    if not found:
        raise TargetError("the target list is empty: give at least a host target such as "
                          "'cpu'")
    listing = ", ".join(str(t) for t in found)
    seen: set[str] = set()
    for target in found:
        if target.kind.name in seen:
            raise TargetError(f"the target list {listing!r} gives the target kind "
                              f"{target.kind.name!r} twice: each kind may appear once")
        seen.add(target.kind.name)
    hosts = [t for t in found if t.kind.host]
    if len(hosts) != 1:
        raise TargetError(_host_problem(hosts, listing))
    return (*(t for t in found if not t.kind.host), hosts[0])
