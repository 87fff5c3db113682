"""One event stream: ``TraceEvents`` (instrument ``trace-events``) writes what happens in a
PassContext as versioned JSON Lines, and :func:`read_trace` reads such a file back.

The first line is the header ``{"format": "passhost-trace", "version": 1, ...}``; each
further line is one event object with ``event`` and ``ts`` (microseconds since the trace
started):

- ``context_enter`` and ``context_exit``;
- ``pass_start`` and ``pass_end``: ``n`` (the execution number, as bisection counts),
  ``name``, ``depth`` (0 for a pass called at top level), ``functions`` and ``nodes`` (the
  size of the module the pass got, or returned);
- ``skip``: a pass should_run skipped, with ``n``, ``name``, ``depth`` and ``vetoed_by``;
- ``failure``: a pass that raised (one event at each enclosing level, as the error leaves
  it), with ``n``, ``name``, ``depth`` and ``error`` (``type`` and ``message``).

Readers ignore keys and event kinds they do not know; the version changes when a reader of
the old version would misread a file.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

from passhost._version import __version__
from passhost.debug.executions import Numbering
from passhost.errors import PasshostError
from passhost.instrument.base import PassInstrument
from passhost.plugins.declare import required_path
from passhost.plugins.options import STR

#: The value of the header's ``format`` key.
FORMAT = "passhost-trace"
#: The version this passhost writes and reads.
VERSION = 1
#: What ``functions`` and ``nodes`` count, written in the header.
SIZE_MEANING = ("functions: the module's global functions; nodes: the IR nodes reachable "
                "from them (graph expressions and TIR statements and expressions), each once")
#: The keys every event of a kind has (beyond ``event`` and ``ts``).
EVENT_KEYS: dict[str, tuple[str, ...]] = {
    "context_enter": (),
    "context_exit": (),
    "pass_start": ("n", "name", "depth", "functions", "nodes"),
    "pass_end": ("n", "name", "depth", "functions", "nodes"),
    "skip": ("n", "name", "depth", "vetoed_by"),
    "failure": ("n", "name", "depth", "error"),
}


class TraceFormatError(PasshostError):
    """A file is not a passhost trace, is damaged, or was written by a newer passhost."""


def module_size(mod: Any) -> tuple[int, int]:
    """``(functions, nodes)`` of ``mod`` (see :data:`SIZE_MEANING`)."""
    from passhost.relay.expr import Function
    from passhost.relay.visitor import post_order as graph_nodes
    from passhost.tir.function import PrimFunc
    from passhost.tir.visitor import post_order as tir_nodes

    funcs = [f for _, f in mod.items()]
    graph = [f for f in funcs if isinstance(f, Function)]
    tir = [f.body for f in funcs if isinstance(f, PrimFunc)]
    return len(funcs), len(graph_nodes(graph)) + len(tir_nodes(tir))


class TraceEvents(PassInstrument):
    """Write the events of every context holding this instrument to ``path`` (JSON Lines;
    see the module doc). The file is created, with its header, when a context is first
    entered; later contexts append to it. ``--trace-events FILE`` and the config option
    ``debug.trace_events`` install it. ``path`` is required (an
    :class:`~passhost.errors.OptionError` without it)."""

    def __init__(self, path: Annotated[str | os.PathLike[str] | None, STR,
                                       "the file (required)"] = None) -> None:
        self.path = required_path(path, "trace-events", "path")
        self.numbering = Numbering()
        self._file: IO[str] | None = None
        self._opened = False
        self._origin = 0
        self._sized: tuple[Any, tuple[int, int]] | None = None

    # -- callbacks ----------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Open the file (writing the header the first time) and log the entry."""
        self._open()
        self.numbering.reset()
        self._write("context_enter")

    def exit_pass_ctx(self) -> None:
        """Log the exit and close the file."""
        self._write("context_exit")
        if self._file is not None:
            self._file.close()
            self._file = None

    def should_run(self, mod: Any, info: Any) -> bool:
        """Number the execution; never vetoes."""
        self.numbering.ask(info)
        return True

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Log ``pass_start``."""
        depth = self.numbering.depth
        number = self.numbering.start(info)
        self._pass_event("pass_start", number, info, depth, mod)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Log ``pass_end``."""
        number = self.numbering.end(info)
        self._pass_event("pass_end", number, info, self.numbering.depth, mod)

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """Log ``failure``."""
        number = self.numbering.end(info)
        self._write("failure", n=number, name=info.name, depth=self.numbering.depth,
                    error={"type": type(error).__name__, "message": str(error)})

    def run_skipped(self, mod: Any, info: Any, vetoed_by: tuple[str, ...]) -> None:
        """Log ``skip``."""
        number = self.numbering.skip()
        self._write("skip", n=number, name=info.name, depth=self.numbering.depth,
                    vetoed_by=list(vetoed_by))

    # -- writing ------------------------------------------------------------------------
    def _open(self) -> None:
        if self._file is not None:
            return
        self._file = self.path.open("a" if self._opened else "w", encoding="utf-8")
        if not self._opened:
            self._opened = True
            self._origin = time.perf_counter_ns()
            header = {"format": FORMAT, "version": VERSION, "passhost_version": __version__,
                      "started": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                      "time_unit": "us", "size": SIZE_MEANING}
            self._file.write(json.dumps(header) + "\n")

    def _pass_event(self, kind: str, number: int | None, info: Any, depth: int,
                    mod: Any) -> None:
        now = time.perf_counter_ns()  # the time of the event, before the module is sized
        functions, nodes = self._size(mod)
        self._write(kind, at=now, n=number, name=info.name, depth=depth, functions=functions,
                    nodes=nodes)

    def _size(self, mod: Any) -> tuple[int, int]:
        """The size of ``mod``, computed once for consecutive events on the same module."""
        if self._sized is None or self._sized[0] is not mod:
            self._sized = (mod, module_size(mod))
        return self._sized[1]

    def _write(self, kind: str, at: int | None = None, **fields: Any) -> None:
        """Append one event; ``at`` is its time (perf_counter_ns), now if not given."""
        self._open()
        assert self._file is not None
        ts = ((time.perf_counter_ns() if at is None else at) - self._origin) // 1000
        self._file.write(json.dumps({"event": kind, "ts": ts, **fields}) + "\n")


# -- reading ----------------------------------------------------------------------------

def read_trace(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the events of the trace file ``path``, checked: a file that is not a
    passhost trace, has a damaged line, or comes from a newer version raises
    :class:`TraceFormatError` saying which line and why."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TraceFormatError(f"cannot read {path}: {getattr(err, 'strerror', None) or err}"
                               ) from None
    lines = _lines(text)
    first = next(lines, None)
    if first is None:
        raise TraceFormatError(f"{path}: empty file, not a passhost trace")
    header = _object(path, *first, what="header")
    if header.get("format") != FORMAT:
        raise TraceFormatError(f"{path}:1: not a passhost trace (the first line has no "
                               f"\"format\": \"{FORMAT}\")")
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise TraceFormatError(f"{path}:1: bad trace version {version!r}, expected an int")
    if version > VERSION:
        raise TraceFormatError(f"{path}: trace version {version} was written by a newer "
                               f"passhost ({header.get('passhost_version', 'unknown')}); this "
                               f"passhost ({__version__}) reads version {VERSION}")
    events = []
    for number, line in lines:
        event = _object(path, number, line, what="event")
        kind = event.get("event")
        if kind not in EVENT_KEYS:
            continue  # a kind of event this version does not know: ignored
        missing = [k for k in ("ts", *EVENT_KEYS[kind]) if k not in event]
        if missing:
            raise TraceFormatError(f"{path}:{number}: {kind} event without "
                                   f"{', '.join(missing)}")
        events.append(event)
    return header, events


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def _object(path: Path, number: int, line: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        raise TraceFormatError(f"{path}:{number}: the {what} is not JSON ({err.msg} at column "
                               f"{err.colno})") from None
    if not isinstance(value, dict):
        raise TraceFormatError(f"{path}:{number}: the {what} is not a JSON object")
    return value
