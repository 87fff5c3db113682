"""Pass executions, numbered in the order they start, and an instrument that runs only the
first N of them (what bisection drives).

An *execution* is one run of a pass as the instruments see it: every pass a context's
instruments are asked about (``should_run``), Sequentials and the passes inside them
included, numbered 1, 2, 3... from the context's entry. A pass named in the context's
``required_pass`` is never asked; it is numbered when it starts.
"""

from __future__ import annotations

from typing import Annotated, Any

from passhost.errors import OptionError
from passhost.instrument.base import PassInstrument


class Numbering:
    """Numbers the executions of one context and keeps the stack of running ones.

    Feed it the callbacks: :meth:`ask` from ``should_run``, :meth:`start` from
    ``run_before_pass``, :meth:`end` from ``run_after_pass`` and ``run_after_pass_failed``,
    :meth:`skip` from ``run_skipped``.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Start again from execution 1 (a context was entered)."""
        self.count = 0
        #: the running executions, outermost first: (PassInfo, number)
        self.running: list[tuple[Any, int]] = []
        self._asked: Any = None

    def ask(self, info: Any) -> int:
        """Number the execution ``should_run`` is asked about."""
        self.count += 1
        self._asked = info
        return self.count

    def start(self, info: Any) -> int:
        """The number of the execution that starts now (numbering it if it was never asked:
        a required pass)."""
        if self._asked is info:
            number = self.count
        else:
            self.count += 1
            number = self.count
        self._asked = None
        self.running.append((info, number))
        return number

    def end(self, info: Any) -> int | None:
        """The number of the execution of ``info`` that ends now (None if it never started
        under this numbering); executions left open above it are dropped."""
        for i in range(len(self.running) - 1, -1, -1):
            if self.running[i][0] is info:
                number = self.running[i][1]
                del self.running[i:]
                return number
        return None

    def skip(self) -> int:
        """The number of the execution that was just skipped."""
        self._asked = None
        return self.count

    @property
    def depth(self) -> int:
        """How many executions are running (0: the next pass is called at top level)."""
        return len(self.running)


class ExecutionLimit(PassInstrument):
    """Run only the first ``max`` skippable executions; skip every later one.

    An execution is *skippable* when its pass's PassInfo has no ``always_run`` flag and it
    runs at top level or as a child of a Sequential. A pass called from inside another
    pass's body belongs to that pass's execution and always runs with it; so do the
    structural steps of the build flow (``always_run``). ``max=None`` skips nothing and
    only numbers. After the run, :attr:`executions` lists ``(number, name, depth,
    skippable)`` for every execution numbered.

    ``passhost compile``/``opt --pass-config debug.max_pass_executions=N`` installs it.
    """

    def __init__(self, max: Annotated[
            int | None, "how many skippable executions run (default: all)"] = None) -> None:
        if max is not None and (isinstance(max, bool) or not isinstance(max, int) or max < 0):
            raise OptionError(f"ExecutionLimit: max is an int >= 0 or None, found {max!r}")
        self.max = max
        self.numbering = Numbering()
        self.executions: list[tuple[int, str, int, bool]] = []

    def enter_pass_ctx(self) -> None:
        """Number from 1 again."""
        self.numbering.reset()
        self.executions = []

    def should_run(self, mod: Any, info: Any) -> bool:
        """Number the execution; false for a skippable one past the limit."""
        skippable = self._skippable(info)
        number = self.numbering.ask(info)
        self.executions.append((number, info.name, self.numbering.depth, skippable))
        return not (skippable and self.max is not None and number > self.max)

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Track the running execution (and number a required pass, never asked)."""
        asked = self.numbering.count
        number = self.numbering.start(info)
        if number > asked:
            self.executions.append((number, info.name, self.numbering.depth - 1, False))

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """The execution ended."""
        self.numbering.end(info)

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """The execution ended by raising."""
        self.numbering.end(info)

    def run_skipped(self, mod: Any, info: Any, vetoed_by: tuple[str, ...]) -> None:
        """The execution was skipped (by this instrument or another)."""
        self.numbering.skip()

    def _skippable(self, info: Any) -> bool:
        if info.always_run:
            return False
        running = self.numbering.running
        return not running or running[-1][0].sequential
