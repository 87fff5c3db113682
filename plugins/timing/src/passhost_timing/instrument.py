"""``PassTimingInstrument``: wall-clock time of every pass, nested as the passes ran."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Annotated, Any

from passhost.instrument import PassInstrument
from passhost_timing.profile import (
    PassProfile,
    profile_to_chrome_trace,
    profile_to_dict,
    profile_to_json,
    render_profiles,
)

NOTHING_PROFILED = "no passes have been profiled, did you enable pass profiling?"
#: Marks the log entry of a skipped pass.
SKIPPED = "skipped"


_now = time.perf_counter_ns


class PassTimingInstrument(PassInstrument):
    """Times every pass that runs from this instrument's ``run_before_pass`` to its
    ``run_after_pass``. The profile belongs to the instrument: it is cleared when a context
    holding it is entered or exited, survives passes that raise, and is available as text
    (:meth:`render`), data (:meth:`profile`), JSON and a Chrome trace.

    With ``show_skipped``, the passes an instrument's should_run skipped are in the profile
    too, where they would have run: a :class:`PassProfile` of no duration whose
    ``skipped_by`` names the instruments that vetoed it, rendered as
    ``name: skipped (vetoed by X)``. Off by default: TVM neither times nor shows them.

    While passes run, the callbacks only append ``(info, ns)`` (a pass starts),
    ``(info, ns, failed)`` (it ends) or ``(info, ns, vetoed_by, SKIPPED)`` (it was skipped)
    to a log; the tree is built when asked for.
    """

    def __init__(self, show_skipped: Annotated[
            bool, "also show the passes should_run skipped"] = False) -> None:
        self.show_skipped = show_skipped
        self._log: list[tuple[Any, ...]] = []
        self._record = self._log.append

    # -- callbacks -----------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Start a fresh profile."""
        self.clear()

    def exit_pass_ctx(self) -> None:
        """Drop the profile (TVM's behaviour, which the seed tutorial relies on)."""
        self.clear()

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Note that the pass starts."""
        self._record((info, _now()))

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Note that the pass ended."""
        self._record((info, _now(), False))

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """Note that the pass ended by raising, so later renders stay correct."""
        self._record((info, _now(), True))

    def run_skipped(self, mod: Any, info: Any, vetoed_by: tuple[str, ...]) -> None:
        """Note the skipped pass, if asked to show skipped passes."""
        if self.show_skipped:
            self._record((info, _now(), vetoed_by, SKIPPED))

    # -- results -------------------------------------------------------------------------
    def clear(self) -> None:
        """Forget everything profiled so far."""
        self._log.clear()

    def profile(self) -> tuple[PassProfile, ...]:
        """The finished passes as a tree, in execution order.

        A pass that started but never ended (an instrument after this one raised before the
        pass could run) is left out; the passes that finished inside it take its place.
        """
        if not self._log:
            return ()
        origin = self._log[0][1]
        # open entries: [info, start, children]; finished ones become PassProfiles
        top: list[PassProfile] = []
        stack: list[list[Any]] = []
        for event in self._log:
            if len(event) == 2:
                stack.append([event[0], event[1], []])
                continue
            if len(event) == 4:
                info, at, vetoed_by, _ = event
                skipped = PassProfile(info.name, 0.0, 0.0, (at - origin) / 1e3,
                                      skipped_by=tuple(vetoed_by))
                (stack[-1][2] if stack else top).append(skipped)
                continue
            info, end, failed = event
            depth = len(stack) - 1
            while depth >= 0 and stack[depth][0] is not info:
                depth -= 1
            if depth < 0:
                continue  # an end whose start was cleared
            _, start, kids = stack[depth]
            for unfinished in stack[depth + 1:]:  # their finished children take their place
                kids.extend(unfinished[2])
            del stack[depth:]
            duration = (end - start) / 1e3
            own = duration - sum(k.duration_us for k in kids)
            finished = PassProfile(info.name, duration, own, (start - origin) / 1e3, failed,
                                   tuple(kids))
            (stack[-1][2] if stack else top).append(finished)
        for unfinished in stack:  # still running, or never ended: keep finished children
            top.extend(unfinished[2])
        return tuple(top)

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
