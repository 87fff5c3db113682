"""``PrintAfterChange``: the initial module, then a unified diff after each pass that changed it.

TVM has no such instrument: ``PrintAfterAll`` prints the whole module after every pass, so a
long pipeline buries the few lines that changed.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import IO, Annotated, Any

from passhost.instrument.base import PassInstrument
from passhost.instrument.dump import safe_file_name
from passhost.plugins.options import STR

#: The header printed before the initial module.
INITIAL_HEADER = "=== initial module ==="


class PrintAfterChange(PassInstrument):
    """Print the initial module once per context, then a unified diff (3 lines of context,
    headers ``--- before <name>`` / ``+++ after <name>``) of the module's text after each
    pass that changed it. Passes that change nothing, and skipped passes, print nothing.

    Nesting rule, so that no change is reported twice: the instrument keeps a stack of
    (input text, number of reports so far), one entry per running pass. After a pass:

    - if its output text equals its input text, nothing is reported;
    - else if a child (a pass it contains, or a pass called inside its body) reported during
      this pass and the output equals the last reported text, the children already
      reported everything, so nothing is reported;
    - else the diff goes from the last reported text, if a child reported during this pass,
      or from the pass's own input text otherwise, to its output text.

    The second test needs a child report: a pass whose output merely equals an earlier,
    unrelated report (the same pipeline run twice in one context) is still reported.

    A change an enclosing pass makes in its body *before* calling an inner pass is therefore
    not reported: the inner pass diffs from its own input, and the enclosing pass from the
    inner pass's report.

    With ``dump_dir`` the instrument writes files instead of printing: ``000_initial.txt``
    (the initial module's text), then ``{n:03d}_{name}.diff`` for the n-th reported change
    (n from 1, pass names sanitised as by :class:`~passhost.instrument.dump.DumpIR`).
    ``file=None`` prints to ``sys.stdout`` as it is at print time.
    """

    def __init__(self,
                 dump_dir: Annotated[str | os.PathLike[str] | None, STR,
                                     "write 000_initial.txt and NNN_<pass>.diff files here "
                                     "instead of printing"] = None,
                 file: IO[str] | None = None) -> None:
        self.dump_dir = None if dump_dir is None else Path(dump_dir)
        self.file = file
        self._cached: tuple[Any, str] | None = None
        self._reset()

    def _reset(self) -> None:
        self._initial_done = False
        #: one entry per running pass: (pass info, input text, reports when it started)
        self._stack: list[tuple[Any, str, int]] = []
        self._reports = 0
        #: the output text of the latest reported change
        self._last_reported = ""

    def _text(self, mod: Any) -> str:
        """The text of ``mod``, computed once for consecutive callbacks on the same object."""
        cached = self._cached
        if cached is not None and cached[0] is mod:
            return cached[1]
        text = str(mod)
        self._cached = (mod, text)
        return text

    # -- callbacks ----------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Start afresh: the next pass prints the initial module again."""
        self._reset()
        self._cached = None

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Report the initial module if this is the first pass; remember the input text."""
        text = self._text(mod)
        if not self._initial_done:
            self._initial_done = True
            self._emit_initial(text)
        self._stack.append((info, text, self._reports))

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Report what this pass changed that its children did not (see the class doc)."""
        entry = self._pop(info)
        if entry is None:
            return
        _, before, reports_at_start = entry
        after = self._text(mod)
        if after == before:
            return
        if self._reports > reports_at_start:  # a child reported: start from its report
            if after == self._last_reported:
                return
            before = self._last_reported
        self._reports += 1
        self._last_reported = after
        self._emit_diff(before, after, info.name, self._reports)

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """Forget the failed pass; nothing is reported for it."""
        self._pop(info)

    def _pop(self, info: Any) -> tuple[Any, str, int] | None:
        """Pop the entry of ``info`` and any left above it by passes that never finished."""
        stack = self._stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is info:
                entry = stack[i]
                del stack[i:]
                return entry
        return None

    # -- output -------------------------------------------------------------------------
    def _emit_initial(self, text: str) -> None:
        if self.dump_dir is None:
            print(INITIAL_HEADER, file=self.file)
            print(text, end="" if text.endswith("\n") else "\n", file=self.file)
        else:
            self._write("000_initial.txt", text)

    def _emit_diff(self, before: str, after: str, name: str, number: int) -> None:
        diff = text_diff(before, after, name)
        if self.dump_dir is None:
            print(diff, end="", file=self.file)
        else:
            self._write(f"{number:03d}_{safe_file_name(name)}.diff", diff)

    def _write(self, file_name: str, text: str) -> None:
        assert self.dump_dir is not None
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        (self.dump_dir / file_name).write_text(text, encoding="utf-8")


def text_diff(before: str, after: str, name: str) -> str:
    """The unified diff (3 lines of context, headers ``--- before <name>`` / ``+++ after
    <name>``) of a module's text across the pass ``name``; empty when the texts are equal."""
    return "".join(difflib.unified_diff(_lines(before), _lines(after),
                                        fromfile=f"before {name}", tofile=f"after {name}",
                                        n=3))


def _lines(text: str) -> list[str]:
    """The lines of ``text`` split at ``\\n`` only, each ending in one (the diff stays
    line-based even when the last line has no newline)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1] + "\n")
    return lines
