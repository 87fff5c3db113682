"""Pass bisection: the first pass execution after which a check fails.

The flow runs once in full, numbering its executions (see
:class:`~passhost.debug.executions.ExecutionLimit`); if the check fails, it runs once with
no skippable execution, which must pass; then a binary search over the skippable
executions finds the first one whose running makes the check fail. The check is applied
at most ``ceil(log2(skippable)) + 2`` times. A user's disabled passes stay disabled in
every run; the build flow's structural steps (``always_run``) run in every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from passhost.debug.checks import make_check
from passhost.debug.executions import ExecutionLimit
from passhost.debug.flows import Flow, Outcome
from passhost.ir.module import IRModule
from passhost.transform.context import MAX_PASS_EXECUTIONS

#: The statuses of a bisection.
FOUND, NEVER_FAILS, ALWAYS_FAILS = "found", "never-fails", "always-fails"


@frozen
class BisectResult:
    """The answer of :func:`bisect`.

    ``status`` is ``found`` (``culprit`` is the name of the pass whose execution number
    ``number`` makes the check fail; ``last_good`` is the limit under which it passes),
    ``never-fails`` (the check passes with every pass) or ``always-fails`` (it fails even
    when no skippable pass runs: the cause is in the input or an always-run step).
    ``executions`` counts the numbered executions of the full run, ``skippable`` those
    bisection may skip; ``checks`` is how many times the check was applied; ``failure`` is
    what the check said at the culprit; ``command`` repeats the failing run (or None).
    """

    status: str
    executions: int
    skippable: int
    checks: int
    culprit: str | None = None
    number: int | None = None
    last_good: int | None = None
    failure: str | None = None
    command: str | None = None
    check: str = ""

    def __str__(self) -> str:
        head = (f"bisect: {self.executions} pass executions, {self.skippable} skippable; "
                f"check {self.check!r} applied {self.checks} times")
        if self.status == NEVER_FAILS:
            return f"{head}\nthe check passes when every pass runs: nothing to bisect\n"
        if self.status == ALWAYS_FAILS:
            return (f"{head}\nthe check fails even when no skippable pass runs: the cause "
                    f"is in the input or in a step that always runs\n  {self.failure}\n")
        lines = [head,
                 f"culprit: {self.culprit} (execution #{self.number})",
                 f"  with it: {self.failure}",
                 f"  without it ({MAX_PASS_EXECUTIONS.name}={self.last_good}): the check "
                 f"passes"]
        if self.command is not None:
            lines.append(f"reproduce: {self.command}")
        return "\n".join(lines) + "\n"


def bisect(mod: IRModule | Flow, *, check: Any = "raises", passes: Any = None,
           target: str | None = None, params: Mapping[str, Any] | None = None,
           opt_level: int | None = None, disabled_pass: Iterable[str] | str | None = None,
           config: Mapping[str, Any] | None = None, source: str | None = None,
           required_pass: Iterable[str] | str | None = None,
           instruments: Iterable[Any] = ()) -> BisectResult:
    """Find the first pass execution that makes ``check`` fail.

    ``mod`` runs through ``passes`` (a pipeline, text or a Pass) and, with ``target``,
    then the build flow (see :class:`~passhost.debug.flows.Flow`, which may also be given
    instead of ``mod`` and the flow's arguments). ``check`` is ``"raises"``,
    ``"numerics"``, ``"numerics:RTOL"``, ``"script:PATH"``, a check object, or a function
    of the :class:`~passhost.debug.flows.Outcome` returning what is wrong (or nothing).
    ``source`` (the module as named on the command line) lets the result carry the
    command that repeats the failing run.
    """
    flow = mod if isinstance(mod, Flow) else Flow(
        mod, passes, target, dict(params or {}), opt_level, disabled_pass, dict(config or {}),
        source, required_pass, tuple(instruments))
    if MAX_PASS_EXECUTIONS.name in flow.config:
        raise ValueError(f"bisect sets {MAX_PASS_EXECUTIONS.name} itself: leave it out of the "
                         f"config")
    checker = make_check(check)
    search = _Search(flow, checker)
    full = search.probe(None)
    numbers = [number for number, _, _, skippable in search.executions if skippable]
    names = {number: name for number, name, _, _ in search.executions}
    common = {"executions": len(search.executions), "skippable": len(numbers),
              "check": checker.text}
    if full is None:
        return BisectResult(NEVER_FAILS, checks=search.checks, **common)
    nothing = search.probe(0) if numbers else full
    if nothing is not None:
        return BisectResult(ALWAYS_FAILS, checks=search.checks, failure=nothing, **common)
    good, bad, failure = 0, len(numbers), full  # prefixes of `numbers`: good passes, bad fails
    while bad - good > 1:
        middle = (good + bad) // 2
        verdict = search.probe(numbers[middle - 1])
        if verdict is None:
            good = middle
        else:
            bad, failure = middle, verdict
    culprit = numbers[bad - 1]
    return BisectResult(FOUND, checks=search.checks, culprit=names[culprit], number=culprit,
                        last_good=numbers[good - 1] if good else 0, failure=failure,
                        command=flow.command(culprit, checker.command_options()), **common)


class _Search:
    """Runs the flow under an execution limit and applies the check, counting both."""

    def __init__(self, flow: Flow, check: Any) -> None:
        self.flow = flow
        self.check = check
        self.checks = 0
        self.executions: list[tuple[int, str, int, bool]] = []

    def probe(self, limit: int | None) -> str | None:
        """Run with at most ``limit`` skippable executions (None: all); the check's verdict."""
        counter = ExecutionLimit(limit)
        outcome: Outcome = self.flow.run([counter])
        if limit is None:
            self.executions = counter.executions
        self.checks += 1
        return self.check.failure(self.flow, outcome)
