"""The checks bisection applies to each run: it raised; its outputs differ from the
reference interpreter's; a user script rejects its output.

A check's :meth:`failure` returns None when the run is good, else a line saying what is
wrong. On the command line a check is ``raises``, ``numerics[:RTOL]`` or ``script:PATH``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from passhost.debug.flows import Flow, Outcome
from passhost.debug.numerics import ATOL, RTOL, compare_outputs, fixed_inputs, run_reference
from passhost.errors import PasshostError
from passhost.ir.module import IRModule

#: The check forms of the command line, for messages.
FORMS = "raises, numerics[:RTOL] or script:PATH"


class CheckError(PasshostError):
    """A check is written wrongly, or cannot be applied."""


def _raised(outcome: Outcome) -> str | None:
    error = outcome.error
    return None if error is None else f"raised {type(error).__name__}: {error}"


class Raises:
    """Fails when the run raises."""

    text = "raises"

    def failure(self, flow: Flow, outcome: Outcome) -> str | None:
        """What the run raised, or None."""
        return _raised(outcome)

    def command_options(self) -> list[str]:
        """Options that make the reproducing command show the failure (none needed)."""
        return []


class Numerics:
    """Fails when the output's numbers differ from the reference interpreter's on the
    flow's input module, on fixed random inputs (``seed``), beyond ``rtol``/``atol``; a
    run that raises fails too. The output is run in the interpreter (a module) or by its
    executor (a build)."""

    def __init__(self, rtol: float = RTOL, atol: float = ATOL, seed: int = 0) -> None:
        self.rtol, self.atol, self.seed = rtol, atol, seed
        self._reference: tuple[Flow, dict[str, Any], list[Any]] | None = None
        self.text = "numerics" if rtol == RTOL else f"numerics:{rtol:g}"

    def failure(self, flow: Flow, outcome: Outcome) -> str | None:
        """What differs, or None."""
        raised = _raised(outcome)
        if raised is not None:
            return raised
        inputs, expected = self._expected(flow)
        try:
            found = _outputs(outcome.output, inputs)
        except Exception as err:
            return f"its output cannot be run ({type(err).__name__}: {err})"
        problem = compare_outputs(expected, found, self.rtol, self.atol)
        return None if problem is None else f"outputs differ from the reference: {problem}"

    def _expected(self, flow: Flow) -> tuple[dict[str, Any], list[Any]]:
        cached = self._reference
        if cached is None or cached[0] is not flow:
            inputs = fixed_inputs(flow.mod, self.seed, flow.params)
            cached = self._reference = (flow, inputs, run_reference(flow.mod, inputs))
        return cached[1], cached[2]

    def command_options(self) -> list[str]:
        """The validate-numerics instrument, which reports the pass and its diff."""
        return ["--instrument", f"validate-numerics{{rtol={self.rtol:g},atol={self.atol:g},"
                                f"seed={self.seed}}}"]


def _outputs(output: Any, inputs: dict[str, Any]) -> list[Any]:
    if isinstance(output, IRModule):
        return run_reference(output, inputs)
    executor = output.executor()
    return executor(**{name: inputs[name] for name, _, _ in executor.input_info()})


class Script:
    """Fails when ``path OUTPUT`` exits non-zero, OUTPUT being the run's output written to
    a temporary file: the module's text (``.txt``) or the artifact (``.tar``). A ``.py``
    script is run with this Python. A run that raises fails without calling the script."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.text = f"script:{path}"

    def failure(self, flow: Flow, outcome: Outcome) -> str | None:
        """The script's exit status and last line of output when it failed, or None."""
        raised = _raised(outcome)
        if raised is not None:
            return raised
        with tempfile.TemporaryDirectory(prefix="passhost-check-") as tmp:
            if isinstance(outcome.output, IRModule):
                out = Path(tmp) / "output.txt"
                out.write_text(outcome.output.astext(), encoding="utf-8")
            else:
                out = Path(tmp) / "output.tar"
                outcome.output.save(out)
            argv = [sys.executable, self.path] if self.path.endswith(".py") else [self.path]
            try:
                done = subprocess.run([*argv, str(out)], capture_output=True, text=True,
                                      check=False)
            except OSError as err:
                raise CheckError(f"cannot run the check script {self.path}: "
                                 f"{err.strerror or err}") from None
        if done.returncode == 0:
            return None
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return (f"{self.path} exited with status {done.returncode}"
                + (f": {said[-1]}" if said else ""))

    def command_options(self) -> list[str]:
        """Nothing: run the script on the command's output."""
        return []


class Custom:
    """A check given as a function of the :class:`Outcome`, returning what is wrong (a
    string, or True) or nothing (None, False, "")."""

    text = "custom"

    def __init__(self, function: Callable[[Outcome], Any]) -> None:
        self.function = function

    def failure(self, flow: Flow, outcome: Outcome) -> str | None:
        """The function's verdict as a line of text, or None."""
        verdict = self.function(outcome)
        if not verdict:
            return None
        return verdict if isinstance(verdict, str) else "the check failed"

    def command_options(self) -> list[str]:
        """Nothing."""
        return []


def make_check(check: Any) -> Any:
    """A check object from a check, a function of the Outcome, or the command-line text
    ``raises``, ``numerics[:RTOL]``, ``script:PATH``."""
    if hasattr(check, "failure"):
        return check
    if callable(check):
        return Custom(check)
    if not isinstance(check, str):
        raise CheckError(f"a check is {FORMS}, a check object or a function; found {check!r}")
    kind, sep, arg = check.partition(":")
    if kind == "raises" and not sep:
        return Raises()
    if kind == "numerics":
        if not sep:
            return Numerics()
        try:
            rtol = float(arg)
        except ValueError:
            rtol = -1.0
        if not rtol >= 0:
            raise CheckError(f"numerics:RTOL takes a number >= 0, found {arg!r}")
        return Numerics(rtol=rtol)
    if kind == "script" and arg:
        return Script(arg)
    raise CheckError(f"unknown check {check!r}; a check is {FORMS}")
