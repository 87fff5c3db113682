"""Textual pipelines: ``InferType,FoldConstant,sequential{ConvertLayout{a=b},FoldConstant}``.

:func:`parse_pipeline` reads the text into a small data model, :func:`format_pipeline` writes
its canonical text, and :func:`build_pipeline` resolves the names through the pass and
pipeline registries into a :class:`~passhost.transform.passes.Sequential`.

The grammar (whitespace, newlines included, is allowed around every token)::

    pipeline := [ element ( "," element )* ]
    element  := NAME [ "{" body "}" ]
    NAME     := [A-Za-z_][A-Za-z0-9_.\\-]*
    body     := pipeline                     for the element named "sequential"
              | option ( "," option )*       for any other element
    option   := NAME "=" value
    value    := bare | quoted                bare: no , { } = " or whitespace
                                             quoted: a JSON string literal

Parsing, formatting and building use explicit stacks, never recursion over the nesting.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from attrs import field, frozen

from passhost.errors import (
    ConflictError,
    OptionError,
    ParseError,
    PasshostError,
    UnknownNameError,
    add_note,
    close_matches,
)
from passhost.plugins.manager import get_host
from passhost.plugins.names import NAME_CHARS, NAME_START, SEQUENTIAL, is_name
from passhost.transform.passes import Pass, Sequential
from passhost.transform.registry import get_pass, pass_origin

#: The source name in the errors about a pipeline given as text.
SOURCE_NAME = "<pipeline>"

_DELIMITERS = frozenset(',{}="')


def _is_bare(char: str) -> bool:
    return char not in _DELIMITERS and not char.isspace()


def needs_quotes(value: str) -> bool:
    """Whether an option value must be written as a quoted string: it is empty or holds a
    character a bare value cannot hold."""
    return not value or not all(_is_bare(c) for c in value)


# -- the data model -------------------------------------------------------------------------

def _check_pass_name(_element: object, _attr: object, value: str) -> None:
    if not is_name(value):  # type: ignore[arg-type]
        raise ValueError(f"a pipeline element name matches [A-Za-z_][A-Za-z0-9_.-]*, "
                         f"found {value!r}")
    if value == SEQUENTIAL:
        raise ValueError(f"{SEQUENTIAL!r} is not a pass name; use SequentialElement")


def _option_pairs(value: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(tuple(item) for item in items)


def _check_options(element: object, _attr: object, value: tuple) -> None:
    seen: set[str] = set()
    for item in value:
        if len(item) != 2:
            raise ValueError(f"an option is a (name, value) pair, found {item!r}")
        key, text = item
        if not is_name(key):
            raise ValueError(f"an option name matches [A-Za-z_][A-Za-z0-9_.-]*, found {key!r}")
        if not isinstance(text, str):
            raise TypeError(f"option {key!r} has a text value, found {type(text).__name__} "
                            f"{text!r}")
        if key in seen:
            raise ValueError(f"duplicate option {key!r}")
        seen.add(key)


def _check_elements(_owner: object, _attr: object, value: tuple) -> None:
    for item in value:
        if not isinstance(item, (PassElement, SequentialElement)):
            raise TypeError(f"a pipeline holds PassElement and SequentialElement, found "
                            f"{type(item).__name__} {item!r}")


@frozen
class PassElement:
    """A pass or named pipeline, by name, with its options as text in the given order.

    ``line`` and ``column`` say where it was written (0 when made by hand); they take no
    part in equality.
    """

    name: str = field(validator=_check_pass_name)
    options: tuple[tuple[str, str], ...] = field(default=(), converter=_option_pairs,
                                                 validator=_check_options)
    line: int = field(default=0, eq=False, repr=False, kw_only=True)
    column: int = field(default=0, eq=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        return _format_pass(self)


def _elements(value: Iterable[PassElement | SequentialElement]
              ) -> tuple[PassElement | SequentialElement, ...]:
    return tuple(value)


@frozen
class SequentialElement:
    """``sequential{...}``: a nested pipeline, built as a nested Sequential."""

    children: tuple[Element, ...] = field(default=(), converter=_elements,
                                          validator=_check_elements)
    line: int = field(default=0, eq=False, repr=False, kw_only=True)
    column: int = field(default=0, eq=False, repr=False, kw_only=True)

    def __str__(self) -> str:
        return format_pipeline(Pipeline((self,)))


Element = PassElement | SequentialElement


@frozen
class Pipeline:
    """A parsed pipeline: its top-level elements. ``str()`` gives the canonical text."""

    elements: tuple[Element, ...] = field(default=(), converter=_elements,
                                          validator=_check_elements)

    def __str__(self) -> str:
        return format_pipeline(self)


# -- errors ---------------------------------------------------------------------------------

class PipelineError(ParseError):
    """A pipeline that parses but cannot be built: an unknown name (``candidates`` holds close
    matches), a bad option, or a named pipeline that refers to itself."""

    def __init__(self, message: str, line: int, column: int, source_name: str = SOURCE_NAME,
                 *, element: str | None = None, candidates: Iterable[str] = ()) -> None:
        super().__init__(message, line, column, source_name)
        self.element = element
        self.candidates = tuple(candidates)


# -- parsing --------------------------------------------------------------------------------

def parse_pipeline(text: str, *, source_name: str = SOURCE_NAME) -> Pipeline:
    """The :class:`Pipeline` written as ``text``; syntax errors raise
    :class:`~passhost.errors.ParseError` with the line and column, ``source_name`` naming
    the text (named pipelines are parsed as ``<pipeline NAME>``)."""
    if not isinstance(text, str):
        raise TypeError(f"a pipeline is text, found {type(text).__name__} {text!r}")
    return _Parser(text, source_name).parse()


class _Frame:
    """An open ``sequential{``: where it started and the children read so far."""

    __slots__ = ("brace", "children", "start")

    def __init__(self, start: int, brace: int) -> None:
        self.start = start
        self.brace = brace
        self.children: list[Element] = []


class _Parser:
    """A scanner and a loop over an explicit stack of open ``sequential{``."""

    def __init__(self, text: str, source_name: str) -> None:
        self.text = text
        self.end = len(text)
        self.pos = 0
        self.source_name = source_name
        self.newlines = [i for i, c in enumerate(text) if c == "\n"]

    # scanning
    def where(self, pos: int) -> tuple[int, int]:
        """1-based line and column of offset ``pos``."""
        before = bisect.bisect_left(self.newlines, pos)
        line_start = self.newlines[before - 1] + 1 if before else 0
        return before + 1, pos - line_start + 1

    def error(self, message: str, pos: int) -> ParseError:
        line, column = self.where(pos)
        return ParseError(message, line, column, self.source_name)

    def expected(self, what: str, suffix: str = "") -> ParseError:
        return self.error(f"expected {what}, found {self.found()}{suffix}", self.pos)

    def found(self) -> str:
        """What is at the current position, for error messages."""
        if self.pos >= self.end:
            return "end of pipeline"
        char = self.text[self.pos]
        if not _is_bare(char):
            return repr(char)
        stop = self.pos
        while stop < self.end and _is_bare(self.text[stop]):
            stop += 1
        token = self.text[self.pos:stop]
        return repr(token if len(token) <= 24 else token[:24] + "...")

    def skip_space(self) -> None:
        text, pos, end = self.text, self.pos, self.end
        while pos < end and text[pos].isspace():
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < self.end else ""

    def name(self) -> str | None:
        text, start, end = self.text, self.pos, self.end
        if start >= end or text[start] not in NAME_START:
            return None
        pos = start + 1
        while pos < end and text[pos] in NAME_CHARS:
            pos += 1
        self.pos = pos
        return text[start:pos]

    def value(self) -> str | None:
        text, start, end = self.text, self.pos, self.end
        if start >= end:
            return None
        if text[start] == '"':
            return self.quoted()
        pos = start
        while pos < end and _is_bare(text[pos]):
            pos += 1
        if pos == start:
            return None
        self.pos = pos
        return text[start:pos]

    def quoted(self) -> str:
        text, start, end = self.text, self.pos, self.end
        pos = start + 1
        while pos < end and text[pos] != '"':
            pos += 2 if text[pos] == "\\" else 1
        if pos >= end:
            raise self.error("unterminated string: no closing '\"'", start)
        literal = text[start:pos + 1]
        try:
            value = json.loads(literal)
        except json.JSONDecodeError as err:
            message, offset = _string_problem(err, literal)
            raise self.error(message, start + offset) from None
        self.pos = pos + 1
        return value

    # the grammar
    def parse(self) -> Pipeline:
        top: list[Element] = []
        stack: list[_Frame] = []
        self.skip_space()
        if self.pos >= self.end:
            return Pipeline(())
        while True:
            self.element(top, stack)
            while True:  # after an element: a separator, or the end of one or more bodies
                self.skip_space()
                char = self.peek()
                if char == ",":
                    self.pos += 1
                    break
                if not stack:
                    if self.pos >= self.end:
                        return Pipeline(tuple(top))
                    raise self.expected("',' or end of pipeline")
                if char == "}":
                    self.pos += 1
                    self.close(top, stack)
                    continue
                raise self.expected("',' or '}'", self.unclosed(stack[-1].brace))

    def unclosed(self, brace: int) -> str:
        if self.pos < self.end:
            return ""
        line, column = self.where(brace)
        return f" ('{{' at {line}:{column} is not closed)"

    def close(self, top: list[Element], stack: list[_Frame]) -> None:
        frame = stack.pop()
        line, column = self.where(frame.start)
        element = SequentialElement(tuple(frame.children), line=line, column=column)
        (stack[-1].children if stack else top).append(element)

    def element(self, top: list[Element], stack: list[_Frame]) -> None:
        """Read one element; ``sequential{`` opens frames (and ``{}`` closes them at once)."""
        while True:
            self.skip_space()
            start = self.pos
            name = self.name()
            if name is None:
                suffix = self.unclosed(stack[-1].brace) if stack else ""
                raise self.expected("a pass or pipeline name", suffix)
            self.skip_space()
            children = stack[-1].children if stack else top
            line, column = self.where(start)
            if name == SEQUENTIAL:
                if self.peek() != "{":
                    children.append(SequentialElement((), line=line, column=column))
                    return
                stack.append(_Frame(start, self.pos))
                self.pos += 1
                self.skip_space()
                if self.peek() == "}":
                    self.pos += 1
                    self.close(top, stack)
                    return
                continue
            options = self.options(name) if self.peek() == "{" else ()
            children.append(PassElement(name, options, line=line, column=column))
            return

    def options(self, owner: str) -> tuple[tuple[str, str], ...]:
        brace = self.pos
        self.pos += 1
        options: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        while True:
            self.skip_space()
            key_pos = self.pos
            key = self.name()
            if key is None:
                raise self.expected(f"an option name for {owner!r}", self.unclosed(brace))
            if key in seen:
                line, column = self.where(seen[key])
                raise self.error(f"duplicate option {key!r} of {owner!r} (first given at "
                                 f"{line}:{column})", key_pos)
            seen[key] = key_pos
            self.skip_space()
            if self.peek() != "=":
                raise self.expected(f"'=' after option {key!r}", self.unclosed(brace))
            self.pos += 1
            self.skip_space()
            value = self.value()
            if value is None:
                raise self.expected(f"a value for option {key!r}", self.unclosed(brace))
            options.append((key, value))
            self.skip_space()
            char = self.peek()
            if char not in ("}", ","):
                raise self.expected("',' or '}'", self.unclosed(brace))
            self.pos += 1
            if char == "}":
                return tuple(options)


def _string_problem(err: json.JSONDecodeError, literal: str) -> tuple[str, int]:
    """A message for a bad quoted string and the offset (in ``literal``) to report."""
    pos = err.pos
    if err.msg.startswith("Invalid control character"):
        return (f"control character {literal[pos]!r} in a quoted string must be written as "
                f"an escape"), pos
    if err.msg == "Invalid \\escape":
        return (f"invalid escape '{literal[pos:pos + 2]}' in a quoted string, expected one of "
                f"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"), pos
    if err.msg.startswith("Invalid \\uXXXX"):
        if literal[pos - 1:pos + 1] == "\\u":
            pos -= 1
        return "invalid \\uXXXX escape in a quoted string, expected four hex digits", pos
    return f"invalid quoted string: {err.msg}", pos


# -- formatting -----------------------------------------------------------------------------

def _format_value(value: str) -> str:
    return json.dumps(value, ensure_ascii=False) if needs_quotes(value) else value


def _format_pass(element: PassElement) -> str:
    if not element.options:
        return element.name
    body = ",".join(f"{key}={_format_value(value)}" for key, value in element.options)
    return f"{element.name}{{{body}}}"


def format_pipeline(pipeline: Pipeline) -> str:
    """The canonical text of ``pipeline``: no spaces, options in order, values quoted only
    when they must be. ``parse_pipeline`` reads it back to an equal pipeline."""
    if not isinstance(pipeline, Pipeline):
        raise TypeError(f"format_pipeline takes a Pipeline, found {type(pipeline).__name__}")
    parts: list[str] = []
    stack: list[tuple[Iterator[Element], list[bool]]] = [(iter(pipeline.elements), [True])]
    while stack:
        elements, first = stack[-1]
        element = next(elements, None)
        if element is None:
            stack.pop()
            if stack:
                parts.append("}")
            continue
        if not first[0]:
            parts.append(",")
        first[0] = False
        if isinstance(element, SequentialElement):
            parts.append(SEQUENTIAL + "{")
            stack.append((iter(element.children), [True]))
        else:
            parts.append(_format_pass(element))
    return "".join(parts)


# -- building -------------------------------------------------------------------------------

class _Level:
    """A Sequential being built: its remaining elements and the passes made so far."""

    __slots__ = ("elements", "name", "passes", "pipeline", "source_name", "used_at")

    def __init__(self, elements: Iterable[Element], name: str, source_name: str,
                 pipeline: str | None = None, used_at: str | None = None) -> None:
        self.elements = iter(elements)
        self.name = name
        self.passes: list[Pass] = []
        self.source_name = source_name
        self.pipeline = pipeline  # the named pipeline this level expands, if any
        self.used_at = used_at  # where that named pipeline was used


def _note_usage(error: BaseException, levels: list[_Level]) -> None:
    """Say, innermost first, which named pipelines were being expanded and where."""
    for level in reversed(levels):
        if level.pipeline is not None:
            add_note(error, f"in pipeline {level.pipeline!r} used at {level.used_at}")


def _fail(message: str, element: PassElement, levels: list[_Level],
          candidates: Iterable[str] = ()) -> PipelineError:
    """A :class:`PipelineError` at ``element`` of the innermost level being built."""
    error = PipelineError(message, element.line, element.column, levels[-1].source_name,
                          element=element.name, candidates=candidates)
    _note_usage(error, levels)
    return error


def build_pipeline(pipeline: str | Pipeline, name: str = SEQUENTIAL) -> Sequential:
    """A :class:`Sequential` named ``name`` running the pipeline's passes in order.

    Each name is looked up first among the registered passes (built from its text options),
    then among the registered pipelines (expanded into a nested Sequential named after it).
    Unknown names, bad options and self-referring named pipelines raise
    :class:`PipelineError` with the position of the element.
    """
    if isinstance(pipeline, str):
        pipeline = parse_pipeline(pipeline)
    elif not isinstance(pipeline, Pipeline):
        raise TypeError(f"build_pipeline takes text or a Pipeline, found "
                        f"{type(pipeline).__name__}")
    registries = get_host().registries
    levels = [_Level(pipeline.elements, name, SOURCE_NAME)]
    while True:
        level = levels[-1]
        element = next(level.elements, None)
        if element is None:
            built = Sequential(level.passes, name=level.name)
            levels.pop()
            if not levels:
                return built
            levels[-1].passes.append(built)
        elif isinstance(element, SequentialElement):
            levels.append(_Level(element.children, SEQUENTIAL, level.source_name))
        elif element.name in registries.passes:
            level.passes.append(_build_pass(element, levels))
        elif element.name in registries.pipelines:
            levels.append(_expand(element, levels, registries.pipelines))
        else:
            known = [*registries.passes.names(), *registries.pipelines.names()]
            candidates = close_matches(element.name, known)
            hint = ""
            if candidates:
                hint = f"; did you mean {', '.join(repr(c) for c in candidates)}?"
            raise _fail(f"unknown pass or pipeline {element.name!r}{hint}", element, levels,
                        candidates)


def _build_pass(element: PassElement, levels: list[_Level]) -> Pass:
    """The registered pass ``element`` names, made with its text options."""
    try:
        return get_pass(element.name, dict(element.options), from_text=True)
    except (UnknownNameError, OptionError, ConflictError) as err:
        raise _fail(str(err), element, levels, getattr(err, "candidates", ())) from err
    except Exception as err:
        add_note(err, f"while building pass {element.name!r} at {levels[-1].source_name}:"
                      f"{element.line}:{element.column}")
        _note_usage(err, levels)
        raise


def _expand(element: PassElement, levels: list[_Level], pipelines: Any) -> _Level:
    """The level building the named pipeline ``element`` refers to."""
    if element.options:
        raise _fail(f"{element.name!r} is a named pipeline and takes no options", element,
                    levels)
    chain = [level.pipeline for level in levels if level.pipeline is not None]
    if element.name in chain:
        cycle = [*chain[chain.index(element.name):], element.name]
        raise _fail(f"pipeline {element.name!r} refers to itself: {' -> '.join(cycle)}",
                    element, levels)
    try:
        spec = pipelines.get(element.name)
    except ConflictError as err:
        raise _fail(str(err), element, levels) from err
    source_name = f"<pipeline {element.name}>"
    used_at = f"{levels[-1].source_name}:{element.line}:{element.column}"
    try:
        nested = parse_pipeline(spec.text, source_name=source_name)
    except ParseError as err:
        add_note(err, f"in pipeline {element.name!r} used at {used_at}")
        _note_usage(err, levels)
        raise
    return _Level(nested.elements, element.name, source_name, element.name, used_at)


# -- passes back to text --------------------------------------------------------------------

class PassTextError(PasshostError, ValueError):
    """A pass has no text form: it is not a registered pass (``name`` says which)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"pass {name!r} is not a registered pass, so no pipeline text can "
                         f"build it again")
        self.name = name


def pass_to_element(pass_: Pass) -> Element:
    """The pipeline element that builds ``pass_`` again.

    A pass made from the registry (a textual pipeline, :func:`get_pass`) is written with the
    options it was made with; another pass of a registered name by its name alone (its
    options take their defaults); a Sequential named after a registered pipeline by that
    name, any other Sequential as ``sequential{...}`` of its children. A pass with no
    registered name raises :class:`PassTextError`.
    """
    if not isinstance(pass_, Pass):
        raise TypeError(f"pass_to_element takes a Pass, found {type(pass_).__name__}")
    registries = get_host().registries
    top: list[Element] = []
    #: per open Sequential: its remaining children, the elements made so far, the parent's
    stack: list[tuple[Iterator[Pass], list[Element], list[Element] | None]] = [
        (iter((pass_,)), top, None)]
    while stack:
        passes, made, parent = stack[-1]
        child = next(passes, None)
        if child is None:
            stack.pop()
            if parent is not None:
                parent.append(SequentialElement(tuple(made)))
            continue
        element = _element_of(child, registries)
        if element is None:
            stack.append((iter(child.passes), [], made))  # type: ignore[attr-defined]
        else:
            made.append(element)
    return top[0]


def _element_of(pass_: Pass, registries: Any) -> PassElement | None:
    """The element of one pass, or None for a Sequential to write child by child."""
    name = pass_.info.name
    if isinstance(pass_, Sequential):
        return PassElement(name) if name in registries.pipelines else None
    origin = pass_origin(pass_)
    if origin is not None:
        return PassElement(origin[0], origin[1])
    if name in registries.passes and is_name(name):
        return PassElement(name)
    raise PassTextError(name)
