"""What a debugging tool runs again and again: a module through a pipeline (what
``passhost opt`` does), or through an optional pipeline and then the build flow for a
target (what ``passhost compile`` does), under given PassContext settings."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from passhost.ir.module import IRModule
from passhost.transform.context import MAX_PASS_EXECUTIONS


@frozen
class Outcome:
    """What one run gave: the output (an IRModule, or a CompiledModule for a build) or the
    exception it raised."""

    output: Any = None
    error: BaseException | None = None


def _names(value: Iterable[str] | str | None) -> tuple[str, ...]:
    from passhost.plugins.options import names

    return names(value, "pass name")


@frozen
class Flow:
    """A module, the passes to run on it, and the context to run them in.

    ``passes`` is a pipeline (text, or a Pass); ``target`` (a target string) adds the build
    flow after it, with ``params`` bound as weights. ``opt_level`` defaults as the commands
    do: 3 with a target, 2 without. ``instruments`` run in every run's context, before the
    ones the run adds. ``source`` is the module as named on the command line (a file,
    ``zoo:NAME``...), needed to write a command that repeats the run.
    """

    mod: IRModule
    passes: Any = None
    target: str | None = None
    params: Mapping[str, Any] = field(factory=dict)
    opt_level: int | None = None
    disabled_pass: tuple[str, ...] = field(default=(), converter=_names)
    config: Mapping[str, Any] = field(factory=dict)
    source: str | None = None
    required_pass: tuple[str, ...] = field(default=(), converter=_names)
    instruments: tuple[Any, ...] = field(default=(), converter=tuple)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.mod, IRModule):
            raise TypeError(f"a flow runs an IRModule, found {type(self.mod).__name__}")
        if self.passes is None and self.target is None:
            raise ValueError("a flow needs passes, a target, or both")

    @property
    def level(self) -> int:
        """The opt level the flow runs at."""
        if self.opt_level is not None:
            return self.opt_level
        return 3 if self.target is not None else 2

    def run(self, instruments: Sequence[Any] = ()) -> Outcome:
        """Run the flow once with ``instruments``; an exception the passes raise is caught
        into the outcome."""
        from passhost.backend import build
        from passhost.transform import Pass, PassContext, build_pipeline

        ctx = PassContext(opt_level=self.level, required_pass=self.required_pass,
                          disabled_pass=self.disabled_pass,
                          instruments=(*self.instruments, *instruments), config=self.config)
        with ctx:
            try:
                mod = self.mod
                if self.passes is not None:
                    pipeline = self.passes
                    mod = (pipeline if isinstance(pipeline, Pass)
                           else build_pipeline(pipeline))(mod)
                output = mod if self.target is None else build(mod, self.target, self.params)
            except Exception as err:
                return Outcome(error=err)
        return Outcome(output=output)

    def command(self, max_executions: int, extra: Sequence[str] = ()) -> str | None:
        """The ``passhost opt`` or ``passhost compile`` command that repeats the run with
        only the first ``max_executions`` skippable executions; None when the flow is not
        expressible as one (no source, or a pipeline that is not text)."""
        if self.source is None or (self.passes is not None and not isinstance(self.passes,
                                                                               str)):
            return None
        from passhost.plugins.manager import get_host

        options = get_host().registries.config_options
        argv = ["passhost", "compile" if self.target else "opt", self.source]
        if self.target is not None:
            argv += ["--target", self.target]
        if self.passes is not None:
            argv += ["--passes", self.passes]
        argv += ["-O", str(self.level)]
        for name in self.required_pass:
            argv += ["--required-pass", name]
        for name in self.disabled_pass:
            argv += ["--disabled-pass", name]
        config = {**self.config, MAX_PASS_EXECUTIONS.name: max_executions}
        for key, value in config.items():
            argv += ["--pass-config", f"{key}={options.get(key).format(value)}"]
        argv += [*extra, "-o", "culprit.tar" if self.target else "culprit.txt"]
        return shlex.join(argv)
