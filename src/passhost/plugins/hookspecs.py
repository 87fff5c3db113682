"""The hook specifications: the contract between passhost and its plugins.

Every hook name starts with ``passhost_``. Three groups:

- registration hooks, called once per plugin when it is loaded; what each returns is
  attributed to that plugin in the registries;
- the pass-instrument callbacks: a pass instrument is a plugin object implementing some of
  them, and each ``PassContext`` calls its own instruments in list order;
- the two target hooks of the build flow, first result wins.
"""

# A hookspec is a signature with no body; pluggy never calls it.
# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # for the signatures only: the plugin layer imports no IR at run time
    from passhost.ir.module import IRModule
    from passhost.plugins.options import OptionSpec
    from passhost.plugins.specs import (
        InstrumentSpec,
        OperatorSpec,
        PassSpec,
        PatternTableSpec,
        PipelineSpec,
    )
    from passhost.runtime.module import Module
    from passhost.target.kind import TargetKind
    from passhost.target.target import Target
    from passhost.transform.info import PassInfo

#: The pluggy project name, also the prefix of hook names and of marker attributes.
PROJECT = "passhost"

hookspec = pluggy.HookspecMarker(PROJECT)
#: Marks a function or method as an implementation of a passhost hook.
hookimpl = pluggy.HookimplMarker(PROJECT)


class RegistrationHooks:
    """Hooks a plugin implements to contribute named things to the registries."""

    @hookspec
    def passhost_register_passes(self) -> list[PassSpec]:
        """Return :class:`~passhost.plugins.specs.PassSpec` objects."""

    @hookspec
    def passhost_register_instruments(self) -> list[InstrumentSpec]:
        """Return :class:`~passhost.plugins.specs.InstrumentSpec` objects."""

    @hookspec
    def passhost_register_targets(self) -> list[TargetKind]:
        """Return target kinds."""

    @hookspec
    def passhost_register_config_options(self) -> list[OptionSpec]:
        """Return :class:`~passhost.plugins.options.OptionSpec` objects (PassContext config)."""

    @hookspec
    def passhost_register_pipelines(self) -> list[PipelineSpec]:
        """Return :class:`~passhost.plugins.specs.PipelineSpec` objects."""

    @hookspec
    def passhost_register_operators(self) -> list[OperatorSpec]:
        """Return :class:`~passhost.plugins.specs.OperatorSpec` objects (graph operators,
        each made by ``passhost.relay.op.define_op``)."""

    @hookspec
    def passhost_register_pattern_tables(self) -> list[PatternTableSpec]:
        """Return :class:`~passhost.plugins.specs.PatternTableSpec` objects (MergeComposite
        tables, which target kinds name)."""


class InstrumentHooks:
    """The pass-instrument protocol (``docs/spec/pass-instruments.md``) as hooks."""

    @hookspec
    def passhost_enter_pass_ctx(self) -> None:
        """Called when a PassContext holding the instrument is entered."""

    @hookspec
    def passhost_exit_pass_ctx(self) -> None:
        """Called when that PassContext is exited."""

    @hookspec
    def passhost_should_run(self, mod: IRModule, info: PassInfo) -> bool:
        """Return whether the pass described by ``info`` runs on ``mod``."""

    @hookspec
    def passhost_run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called before a pass runs, with its input module."""

    @hookspec
    def passhost_run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        """Called after a pass ran, with the module it returned."""

    @hookspec
    def passhost_run_after_pass_failed(self, mod: IRModule, info: PassInfo,
                                       error: BaseException) -> None:
        """Called, instead of run_after_pass, when the pass body raised ``error``."""

    @hookspec
    def passhost_run_skipped(self, mod: IRModule, info: PassInfo,
                             vetoed_by: tuple[str, ...]) -> None:
        """Called when ``should_run`` skipped the pass; ``vetoed_by`` names the instruments
        that answered false, in list order. Optional: instruments without it see no change."""


class TargetHooks:
    """The two points of the build flow where a target customises lowering."""

    @hookspec(firstresult=True)
    def passhost_relay_to_tir(self, target: Target, mod: IRModule) -> IRModule | None:
        """Lower the graph functions tagged for ``target`` to PrimFuncs; None if not mine."""

    @hookspec(firstresult=True)
    def passhost_tir_to_runtime(self, target: Target, mod: IRModule) -> Module | None:
        """Turn the PrimFuncs of ``target`` into a runtime module; None if not mine."""


#: Every group, for a plugin manager that knows the whole contract.
ALL_HOOKS = (RegistrationHooks, InstrumentHooks, TargetHooks)

#: The instrument callbacks: TVM-style method name -> positional arguments.
INSTRUMENT_CALLBACKS: dict[str, tuple[str, ...]] = {
    "enter_pass_ctx": (),
    "exit_pass_ctx": (),
    "should_run": ("mod", "info"),
    "run_before_pass": ("mod", "info"),
    "run_after_pass": ("mod", "info"),
    "run_after_pass_failed": ("mod", "info", "error"),
    "run_skipped": ("mod", "info", "vetoed_by"),
}

#: The registration hooks and the registry each one fills.
REGISTRATION_HOOKS: dict[str, str] = {
    "passhost_register_passes": "passes",
    "passhost_register_instruments": "instruments",
    "passhost_register_targets": "targets",
    "passhost_register_config_options": "config_options",
    "passhost_register_pipelines": "pipelines",
    "passhost_register_pattern_tables": "pattern_tables",
    "passhost_register_operators": "operators",
}
