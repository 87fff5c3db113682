"""``passhost.build``: the build flow, each step an instrumented pass.

::

    build                      a Sequential, so every instrument sees the whole compile
      BindParams               the given weights become constants of main
      Optimize                 the registered pipeline "optimize", gated by the opt level
      Partition.<kind>         per external target with a pattern table:
                               MergeComposite -> AnnotateTarget -> PartitionGraph
      FuseOps                  what no target took is fused into Primitive functions
      RelayToTIR.<kind>        each target kind with a relay_to_tir hook lowers its functions
      LowerTE                  the default lowering of the rest, for the host target
      tir.phase0 .. phase3     the TIR passes target kinds insert at these phases
      TIRToRuntime.<kind>      each target's PrimFuncs become a runtime module
      Package                  the executor plan (with its memory plan) and the parameters

Fusion runs after partitioning so that the pattern tables see single operators; the
partitioned functions are Primitive already and FuseOps leaves them alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from passhost.backend.lower_te import RESHAPE_ONLY, LowerTE, graph_entry
from passhost.backend.memory_plan import plan_executor
from passhost.errors import PasshostError
from passhost.ir.module import IRModule
from passhost.plugins.manager import get_host
from passhost.relay.expr import Function
from passhost.runtime.compiled import CompiledModule
from passhost.runtime.module import Module
from passhost.runtime.plan import PlanError
from passhost.runtime.plan_check import check_plan_calls
from passhost.target import Target, hooks, parse_targets
from passhost.target.kind import PHASES
from passhost.text.module import print_module
from passhost.tir.function import PrimFunc
from passhost.transform.context import PassContext
from passhost.transform.passes import Pass, Sequential, mark_always_run, module_pass
from passhost.transform.pipeline import build_pipeline
from passhost.transform.registry import get_pass

__all__ = ["BuildError", "build", "build_passes"]

#: The name of the registered pipeline the Optimize step runs.
OPTIMIZE_PIPELINE = "optimize"


class BuildError(PasshostError):
    """A step of the build flow cannot do its job (a target left work undone...)."""


class _BuildState:
    """What the steps hand on besides the module: the runtime modules and the plan."""

    def __init__(self, targets: tuple[Target, ...]) -> None:
        self.targets = targets
        self.modules: dict[str, Module] = {}
        self.tir: dict[str, IRModule] = {}
        self.compiled: CompiledModule | None = None


def _has_hook(target: Target, name: str) -> bool:
    """Whether ``target``'s kind has the hook: as its own attribute, or implemented by
    the plugin that registered the kind."""
    if getattr(target.kind, name) is not None:
        return True
    host = get_host()
    provider = host.registries.targets.entry(target.kind.name).provider
    caller = getattr(host.pm.hook, f"passhost_{name}")
    return any(impl.plugin_name == provider for impl in caller.get_hookimpls())


def _bind_params(params: Mapping[str, Any]) -> Pass:
    from passhost.relay.transform.bind import bind_params_by_name

    arrays = {name: np.asarray(value) for name, value in params.items()}

    def bind(mod: IRModule, ctx: PassContext) -> IRModule:
        return mod.with_function("main", bind_params_by_name(graph_entry(mod), arrays))

    return module_pass(bind, name="BindParams", always_run=True)


def _optimize() -> Pass:
    text = get_host().registries.pipelines.get(OPTIMIZE_PIPELINE).text
    return build_pipeline(text, name="Optimize")


class _TargetSequential(Sequential):
    """A Sequential whose children run with ``target`` as the current target."""

    __slots__ = ("target",)

    def __init__(self, target: Target, passes: list[Pass], name: str) -> None:
        super().__init__(passes, name=name, always_run=True)
        self.target = target

    def _body(self, mod: IRModule, ctx: PassContext) -> IRModule:
        with self.target:
            return super()._body(mod, ctx)


def _partition(target: Target) -> Pass | None:
    """MergeComposite, AnnotateTarget and PartitionGraph for ``target``'s pattern table,
    with ``target`` the current target while the table is made and the steps run (so that
    its options can steer the table and its checks); None when it has no table."""
    with target:
        table = target.kind.pattern_entries(target)
    if not table:
        return None
    from passhost.relay.transform.annotate_target import AnnotateTarget
    from passhost.relay.transform.merge_composite import MergeComposite
    from passhost.relay.transform.partition_graph import PartitionGraph

    steps = [MergeComposite(table), AnnotateTarget([target.kind.name]), PartitionGraph()]
    return _TargetSequential(target, [mark_always_run(step) for step in steps],
                             f"Partition.{target.kind.name}")


def _owned(mod: IRModule, kind: str) -> list[str]:
    return [name for name, f in mod.items()
            if isinstance(f, Function) and f.attrs.get("Compiler") == kind]


def _relay_to_tir(target: Target) -> Pass:
    kind = target.kind.name

    def relay_to_tir(mod: IRModule, ctx: PassContext) -> IRModule:
        with target:
            out = hooks.relay_to_tir(target, mod)
        out = mod if out is None else out
        left = _owned(out, kind)
        if left:
            raise BuildError(f"target {kind!r} left {len(left)} partitioned function(s) "
                             f"unlowered ({', '.join('@' + n for n in left[:5])}): its "
                             f"relay_to_tir must replace them with PrimFuncs")
        untagged = {name: f.with_attr("target", kind) for name, f in out.items()
                    if isinstance(f, PrimFunc) and "target" not in f.attrs}
        return out.with_functions(untagged) if untagged else out

    return module_pass(relay_to_tir, name=f"RelayToTIR.{kind}", always_run=True)


def _check_nothing_owned(target: Target) -> Pass:
    """For an external target without relay_to_tir: fail when it was given functions."""
    kind = target.kind.name

    def check(mod: IRModule, ctx: PassContext) -> IRModule:
        owned = _owned(mod, kind)
        if owned:
            raise BuildError(f"target {kind!r} was given {len(owned)} partitioned "
                             f"function(s) but has no relay_to_tir hook to lower them")
        return mod

    return module_pass(check, name=f"RelayToTIR.{kind}", always_run=True)


def _phases(targets: Iterable[Target]) -> list[Pass]:
    out = []
    for phase in PHASES:
        names = [n for t in targets for n in t.kind.phase_passes.get(phase, ())]
        if names:
            out.append(Sequential([get_pass(n) for n in names], name=phase))
    return out


def _prim_funcs_of(mod: IRModule, kind: str) -> IRModule:
    return IRModule({mod.get_global_var(name): f for name, f in mod.items()
                     if isinstance(f, PrimFunc) and f.attrs.get("target") == kind})


def _tir_to_runtime(target: Target, state: _BuildState) -> Pass:
    kind = target.kind.name

    def tir_to_runtime(mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = _prim_funcs_of(mod, kind)
        if not len(funcs) and not target.kind.host:
            return mod
        with target:
            runtime = hooks.tir_to_runtime(target, funcs)
        if runtime is None:
            raise BuildError(f"no plugin turns the PrimFuncs of target {kind!r} into a "
                             f"runtime module: the kind has no tir_to_runtime hook")
        if not isinstance(runtime, Module):
            raise BuildError(f"tir_to_runtime of target {kind!r} returned "
                             f"{type(runtime).__name__}, not a runtime Module")
        state.modules[kind] = runtime
        state.tir[kind] = funcs
        return mod

    return module_pass(tir_to_runtime, name=f"TIRToRuntime.{kind}", always_run=True)


def _package(state: _BuildState) -> Pass:
    def package(mod: IRModule, ctx: PassContext) -> IRModule:
        orphans = [name for name, f in mod.items() if isinstance(f, PrimFunc)
                   and f.attrs.get("target") not in state.modules]
        if orphans:
            raise BuildError(f"PrimFuncs without a runtime module: "
                             f"{', '.join('@' + n for n in orphans[:5])} (their 'target' "
                             f"attribute names no target of the build)")
        views = [name for name, f in mod.items()
                 if isinstance(f, PrimFunc) and f.attrs.get(RESHAPE_ONLY)]
        plan, params = plan_executor(graph_entry(mod), views)
        try:
            check_plan_calls(plan, state.tir)
        except PlanError as err:
            raise BuildError(f"the executor plan does not fit the PrimFuncs (a target's "
                             f"relay_to_tir must give each PrimFunc one buffer per tensor, "
                             f"of its shape and dtype): {err}") from None
        host = state.targets[-1]
        module = state.modules[host.kind.name]
        for target in state.targets[:-1]:
            if target.kind.name in state.modules:
                module.import_module(state.modules[target.kind.name])
        state.compiled = CompiledModule(
            target=", ".join(str(t) for t in state.targets), plan=plan, params=params,
            module=module, tir=dict(state.tir),
            ir_text=print_module(mod, show_meta_data=False))
        return mod

    return module_pass(package, name="Package", always_run=True)


def build_passes(targets: tuple[Target, ...], params: Mapping[str, Any] | None,
                 state: _BuildState) -> Sequential:
    """The build flow for ``targets`` (external ones first, host last) as one Sequential."""
    host = targets[-1]
    steps: list[Pass | None] = [_bind_params(params) if params else None, _optimize()]
    steps += [_partition(t) for t in targets[:-1]]
    steps.append(get_pass("FuseOps"))
    for t in targets:
        if _has_hook(t, "relay_to_tir"):
            steps.append(_relay_to_tir(t))
        elif t is not host:
            steps.append(_check_nothing_owned(t))
    loops = host.kind.lowers_loops is not None and bool(host.kind.lowers_loops(host))
    steps.append(mark_always_run(LowerTE(host.kind.name, loops)))
    steps += _phases(targets)
    steps += [_tir_to_runtime(t, state) for t in targets]
    steps.append(_package(state))
    return Sequential([s for s in steps if s is not None], name="build", always_run=True)


def build(mod: IRModule, target: str | Target | Iterable[str | Target] = "cpu",
          params: Mapping[str, Any] | None = None) -> CompiledModule:
    """Compile ``mod``'s main for ``target`` (e.g. ``"cmsis-nn, cpu"``) under the current
    PassContext; ``params`` (name -> array) are bound to main's parameters of those names."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"build takes an IRModule, found {type(mod).__name__}")
    targets = parse_targets(target)
    state = _BuildState(targets)
    build_passes(targets, params, state)(mod)
    if state.compiled is None:
        raise BuildError("the Package step did not run (was it disabled?)")
    return state.compiled
