"""``PassTimingInstrument``: wall-clock time of every pass, nested as the passes ran."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

from passhost.instrument import PassInstrument
from passhost_timing.profile import (
    PassProfile,
    profile_to_chrome_trace,
    profile_to_dict,
    profile_to_json,
    render_profiles,
)

NOTHING_PROFILED = "no passes have been profiled, did you enable pass profiling?"


class _Timed:
    """A pass being timed: mutable while it runs."""

    __slots__ = ("children", "end", "failed", "info", "name", "start")

    def __init__(self, info: Any, start: int) -> None:
        self.info = info
        self.name = info.name
        self.start = start
        self.end: int | None = None
        self.failed = False
        self.children: list[_Timed] = []


class PassTimingInstrument(PassInstrument):
    """Times every pass that runs from this instrument's ``run_before_pass`` to its
    ``run_after_pass``. The profile belongs to the instrument: it is cleared when a context
    holding it is entered or exited, survives passes that raise, and is available as text
    (:meth:`render`), data (:meth:`profile`), JSON and a Chrome trace."""

    def __init__(self) -> None:
        self._roots: list[_Timed] = []
        self._stack: list[_Timed] = []

    # -- callbacks -----------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Start a fresh profile."""
        self.clear()

    def exit_pass_ctx(self) -> None:
        """Drop the profile (TVM's behaviour, which the seed tutorial relies on)."""
        self.clear()

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Open a timed entry for the pass, under the pass running it."""
        stack = self._stack
        timed = _Timed(info, time.perf_counter_ns())
        (stack[-1].children if stack else self._roots).append(timed)
        stack.append(timed)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Close the pass's entry."""
        end = time.perf_counter_ns()
        stack = self._stack
        if stack and stack[-1].info is info:
            stack.pop().end = end
        else:
            self._close(info, end, failed=False)

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """Close the entry of a pass that raised, so later renders stay correct."""
        self._close(info, time.perf_counter_ns(), failed=True)

    def _close(self, info: Any, end: int, failed: bool) -> None:
        """Pop entries down to the one for ``info``; entries above it never finished (an
        instrument after this one raised before the pass ran) and are left open."""
        stack = self._stack
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth].info is info:
                timed = stack[depth]
                del stack[depth:]
                timed.end, timed.failed = end, failed
                return

    # -- results -------------------------------------------------------------------------
    def clear(self) -> None:
        """Forget everything profiled so far."""
        self._roots = []
        self._stack = []

    def profile(self) -> tuple[PassProfile, ...]:
        """The finished passes as a tree; an entry that never finished is replaced by its
        finished children."""
        if not self._roots:
            return ()
        origin = self._roots[0].start
        preorder: list[_Timed] = []
        work = list(reversed(self._roots))
        while work:
            timed = work.pop()
            preorder.append(timed)
            work.extend(reversed(timed.children))
        contributed: dict[int, list[PassProfile]] = {}  # children come before parents
        for timed in reversed(preorder):
            kids = [p for child in timed.children for p in contributed.pop(id(child))]
            if timed.end is None:
                contributed[id(timed)] = kids
                continue
            duration = (timed.end - timed.start) / 1e3
            own = duration - sum(k.duration_us for k in kids)
            contributed[id(timed)] = [PassProfile(
                timed.name, duration, own, (timed.start - origin) / 1e3, timed.failed,
                tuple(kids))]
        return tuple(p for root in self._roots for p in contributed[id(root)])

    def render(self) -> str:
        """One line per profiled pass in TVM's format; ``""`` and a warning if none."""
        profiles = self.profile()
        if not profiles:
            warnings.warn(NOTHING_PROFILED, stacklevel=2)
            return ""
        return render_profiles(profiles)

    def to_dict(self) -> dict[str, Any]:
        """The profile as a JSON-ready document."""
        return profile_to_dict(self.profile())

    def to_json(self, indent: int | None = 2) -> str:
        """The profile as JSON text."""
        return profile_to_json(self.profile(), indent)

    def chrome_trace(self) -> dict[str, Any]:
        """The profile as a Chrome trace (Trace Event format)."""
        return profile_to_chrome_trace(self.profile())

    def save_chrome_trace(self, path: str | Path) -> Path:
        """Write the Chrome trace to ``path`` (open it in Perfetto or chrome://tracing)."""
        path = Path(path)
        path.write_text(json.dumps(self.chrome_trace()))
        return path
