"""``ValidateNumerics`` (instrument ``validate-numerics``): the first pass that changed the
module's outputs beyond a tolerance, with the diff of the module's text across it."""

from __future__ import annotations

from typing import Annotated, Any

from attrs import frozen

from passhost.debug.numerics import ATOL, RTOL, compare_outputs, fixed_inputs, run_reference
from passhost.errors import OptionError
from passhost.instrument.base import PassInstrument
from passhost.instrument.diff import text_diff

NAME = "validate-numerics"


@frozen
class Mismatch:
    """A pass whose output module computes other numbers than the module before the
    pipeline: its name, what differs, and the unified diff of the module's text."""

    pass_name: str
    problem: str
    diff: str


class ValidateNumerics(PassInstrument):
    """Run ``main`` in the reference interpreter on fixed random inputs (drawn from
    ``seed``) before the first pass of the context, then after every pass that returned a
    different module, and report the first pass whose outputs differ beyond ``rtol`` and
    ``atol`` (see :func:`~passhost.debug.numerics.compare_outputs`).

    The module is only read. A module the interpreter cannot run (one lowered to PrimFuncs,
    say) is noted once and skipped; checking resumes when a later module runs again. The
    report is :meth:`render` (``passhost opt``/``compile`` print it to stderr) and
    :attr:`mismatch`.
    """

    def __init__(self, rtol: Annotated[float, "relative tolerance"] = RTOL,
                 atol: Annotated[float, "absolute tolerance"] = ATOL,
                 seed: Annotated[int, "seed of the fixed random inputs"] = 0) -> None:
        for name, value in (("rtol", rtol), ("atol", atol)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise OptionError(f"{NAME}: {name} is a number >= 0, found {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise OptionError(f"{NAME}: seed is an int, found {seed!r}")
        self.rtol, self.atol, self.seed = float(rtol), float(atol), seed
        self._reset()

    def _reset(self) -> None:
        self.mismatch: Mismatch | None = None
        #: why the module could not be run, said once (None: it always ran)
        self.unrunnable: str | None = None
        self.checked = 0
        self._inputs: dict[str, Any] | None = None
        self._expected: list[Any] | None = None
        self._started = False
        self._stack: list[tuple[Any, Any]] = []
        self._last: Any = None

    # -- callbacks ----------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Start afresh: the next pass's input is the new reference."""
        self._reset()

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Compute the reference before the first pass; remember each pass's input."""
        if not self._started:
            self._started = True
            self._reference(mod)
        self._stack.append((info, mod))

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Check the outputs if the pass returned a different module."""
        before = self._pop(info)
        if before is None or mod is before or mod is self._last or self._expected is None:
            return
        if self.mismatch is not None:
            return
        self._last = mod
        try:
            found = run_reference(mod, self._inputs or {})
        except Exception as err:
            self._cannot_run(f"after {info.name}", err,
                             "modules it cannot run are not checked")
            return
        self.checked += 1
        problem = compare_outputs(self._expected, found, self.rtol, self.atol)
        if problem is not None:
            self.mismatch = Mismatch(info.name, problem, text_diff(str(before), str(mod),
                                                                   info.name))

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """Forget the pass that raised."""
        self._pop(info)

    # -- report -------------------------------------------------------------------------
    def render(self) -> str:
        """The report: the first pass beyond tolerance and its diff, or that all were
        within it; and the note about a module the interpreter could not run."""
        settings = f"rtol={self.rtol:g}, atol={self.atol:g}, seed={self.seed}"
        lines = []
        if self.mismatch is not None:
            lines.append(f"{NAME}: pass {self.mismatch.pass_name} changed the outputs "
                         f"({settings}): {self.mismatch.problem}")
            lines.append(self.mismatch.diff.rstrip("\n"))
        elif self._expected is not None:
            lines.append(f"{NAME}: the outputs stayed within {settings} in each changed "
                         f"module the interpreter could run ({self.checked} checked)")
        if self.unrunnable is not None:
            lines.append(f"{NAME}: {self.unrunnable}")
        return "".join(line + "\n" for line in lines)

    # -- helpers ------------------------------------------------------------------------
    def _reference(self, mod: Any) -> None:
        try:
            inputs = fixed_inputs(mod, self.seed)
            self._expected = run_reference(mod, inputs)
        except Exception as err:
            self._cannot_run("before the first pass", err, "nothing is checked")
            return
        self._inputs = inputs

    def _cannot_run(self, where: str, err: BaseException, consequence: str) -> None:
        if self.unrunnable is None:
            self.unrunnable = (f"the reference interpreter cannot run the module {where} "
                               f"({type(err).__name__}: {err}); {consequence}")

    def _pop(self, info: Any) -> Any:
        """The input module of the ending pass ``info`` (None if it is not on the stack)."""
        stack = self._stack
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] is info:
                mod = stack[i][1]
                del stack[i:]
                return mod
        return None
