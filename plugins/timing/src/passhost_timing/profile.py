"""Pass profiles as data: a tree of timed passes, and its text, JSON and Chrome-trace forms."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

from attrs import field, frozen

#: Version of the JSON document :func:`profile_to_json` writes.
SCHEMA_VERSION = 1


@frozen
class PassProfile:
    """One timed run of a pass: name, wall time and self time in microseconds, start offset
    (microseconds since the first profiled pass), whether the pass raised, and the passes
    it ran inside itself. A skipped pass (shown on request) has no duration and names the
    instruments that vetoed it in ``skipped_by``."""

    name: str
    duration_us: float
    self_us: float
    start_us: float
    failed: bool = False
    children: tuple[PassProfile, ...] = field(default=())
    skipped_by: tuple[str, ...] = ()


Visit = tuple[int, PassProfile, "PassProfile | None"]


def walk(profiles: tuple[PassProfile, ...]) -> Iterator[Visit]:
    """``(depth, profile, parent)`` depth-first in execution order, without recursion."""
    stack: list[Visit] = [
        (0, p, None) for p in reversed(profiles)]
    while stack:
        depth, prof, parent = stack.pop()
        yield depth, prof, parent
        stack.extend((depth + 1, child, prof) for child in reversed(prof.children))


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}" if whole else "0.00"


def render_profiles(profiles: tuple[PassProfile, ...]) -> str:
    """TVM's render format: one line per pass, ``\\t`` per depth,
    ``name: Dus [Sus] (P_total%; P_parent%)``, durations in whole microseconds."""
    total = sum(int(p.duration_us) for p in profiles)
    lines = []
    for depth, prof, parent in walk(profiles):
        if prof.skipped_by:
            lines.append(f"{chr(9) * depth}{prof.name}: skipped (vetoed by "
                         f"{', '.join(prof.skipped_by)})\n")
            continue
        duration = int(prof.duration_us)
        own = duration - sum(int(c.duration_us) for c in prof.children)
        of_total = _percent(duration, total)
        of_parent = of_total if parent is None else _percent(duration, int(parent.duration_us))
        lines.append(f"{chr(9) * depth}{prof.name}: {duration}us [{own}us] "
                     f"({of_total}%; {of_parent}%)\n")
    return "".join(lines)


def _as_dict(prof: PassProfile) -> dict[str, Any]:
    node = {"name": prof.name, "duration_us": prof.duration_us, "self_us": prof.self_us,
            "start_us": prof.start_us, "failed": prof.failed, "children": []}
    if prof.skipped_by:
        node["skipped_by"] = list(prof.skipped_by)
    return node


def profile_to_dict(profiles: tuple[PassProfile, ...]) -> dict[str, Any]:
    """A JSON-ready document: ``{"schema_version": 1, "passes": [...]}``, children nested."""
    roots: list[dict[str, Any]] = []
    made: dict[int, dict[str, Any]] = {}
    for _, prof, parent in walk(profiles):
        node = made[id(prof)] = _as_dict(prof)
        (roots if parent is None else made[id(parent)]["children"]).append(node)
    return {"schema_version": SCHEMA_VERSION, "passes": roots}


def profile_to_json(profiles: tuple[PassProfile, ...], indent: int | None = 2) -> str:
    """The profile as JSON text."""
    return json.dumps(profile_to_dict(profiles), indent=indent)


def profile_to_chrome_trace(profiles: tuple[PassProfile, ...]) -> dict[str, Any]:
    """The profile in the Trace Event format of ``chrome://tracing`` and Perfetto: one
    complete event (``ph: "X"``) per pass, nested by time; an instant event per skipped
    pass."""
    pid, tid = os.getpid(), threading.get_ident()
    events = [{"name": prof.name, "cat": "pass", "ph": "X", "ts": prof.start_us,
               "dur": prof.duration_us, "pid": pid, "tid": tid,
               "args": {"self_us": prof.self_us, "failed": prof.failed}}
              if not prof.skipped_by else
              {"name": f"skipped: {prof.name}", "cat": "skip", "ph": "i", "s": "t",
               "ts": prof.start_us, "pid": pid, "tid": tid,
               "args": {"vetoed_by": list(prof.skipped_by)}}
              for _, prof, _ in walk(profiles)]
    return {"traceEvents": events, "displayTimeUnit": "ms"}
