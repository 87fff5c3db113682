"""passhost's own registrations, loaded by the plugin host like any other plugin.

Registering must stay cheap (``passhost plugins list`` loads every plugin): the passes,
instruments and config options are tables of import paths, what their classes and modules
declare is read from a generated manifest, and a factory imports its module only when a
pass or instrument is created.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from passhost.plugins.hookspecs import hookimpl
from passhost.plugins.options import (
    BOOL,
    FLOAT,
    INT,
    STR,
    STR_LIST,
    STR_LIST_MAP,
    OptionSpec,
)
from passhost.plugins.specs import (
    InstrumentSpec,
    OperatorSpec,
    PassSpec,
    PatternTableSpec,
    PipelineSpec,
    lazy_factory,
    lazy_object,
)

#: The built-in passes: name -> (module, class, summary for the listings). Everything else
#: about a pass (opt level, dependencies, options) is declared on its class; MANIFEST holds
#: a copy, written by ``python -m passhost.builtin_plugin``, so that registering imports no
#: pass module; tests/test_builtin_manifest.py keeps it fresh.
PASSES: dict[str, tuple[str, str, str]] = {
    "InferType": ("passhost.relay.transform.infer_type", "InferType",
                  "type-check every graph function"),
    "FoldConstant": ("passhost.relay.transform.fold_constant", "FoldConstant",
                     "evaluate subgraphs whose inputs are all constants"),
    "SimplifyInference": ("passhost.relay.transform.simplify_inference", "SimplifyInference",
                          "rewrite batch_norm, layer_norm and dropout for inference"),
    "FoldScaleAxis": ("passhost.relay.transform.fold_scale_axis", "FoldScaleAxis",
                      "fold per-channel scales into convolution and dense weights"),
    "CanonicalizeOps": ("passhost.relay.transform.canonicalize_ops", "CanonicalizeOps",
                        "rewrite nn.bias_add as add, powers by constant 2 and 3 as products, "
                        "x * sigmoid(x) as nn.silu, whole-plane avg pools as global"),
    "ConvertLayout": ("passhost.relay.transform.convert_layout", "ConvertLayout",
                      "convert layout-sensitive operators to the desired layouts"),
    "EliminateCommonSubexpr": ("passhost.relay.transform.eliminate_common_subexpr",
                               "EliminateCommonSubexpr",
                               "merge calls of one operator on the same arguments and "
                               "attributes"),
    "DeadCodeElimination": ("passhost.relay.transform.dead_code", "DeadCodeElimination",
                            "drop module functions nothing reachable from main uses"),
    "FuseOps": ("passhost.relay.transform.fuse_ops", "FuseOps",
                "group operators into Primitive functions by fusion pattern"),
    "MergeComposite": ("passhost.relay.transform.merge_composite", "MergeComposite",
                       "wrap matches of a pattern table in Composite functions"),
    "AnnotateTarget": ("passhost.relay.transform.annotate_target", "AnnotateTarget",
                       "mark the calls external targets support"),
    "PartitionGraph": ("passhost.relay.transform.partition_graph", "PartitionGraph",
                       "move annotated regions into functions tagged Compiler=<kind>"),
    "LowerTE": ("passhost.backend.lower_te", "LowerTE",
                "lower fused functions to PrimFuncs of kernel calls or loops"),
    "tir.Simplify": ("passhost.tir.transform.simplify", "Simplify",
                     "fold constants, integer identities, known branches, one-iteration loops"),
    "tir.ReuseBuffers": ("passhost.tir.transform.reuse_buffers", "ReuseBuffers",
                         "share memory between allocations whose lifetimes do not overlap"),
    "tir.CollapseLoops": ("passhost.tir.transform.collapse_loops", "CollapseLoops",
                          "merge short innermost loops of a nest into one"),
    "tir.TileTransposes": ("passhost.tir.transform.tile_transposes", "TileTransposes",
                           "walk transposing loop pairs in tiles"),
    "tir.VectorizeReductions": ("passhost.tir.transform.vectorize_reductions",
                                "VectorizeReductions", "accumulate sums in vector lanes"),
    "tir.AnnotateLoops": ("passhost.tir.transform.annotate_loops", "AnnotateLoops",
                          "mark parallel and vectorised loops"),
    "PrintIR": ("passhost.transform.print_ir", "PrintIR", "write the module's text to stderr"),
}
#: The built-in instruments: name -> (module, factory, summary for the listings). Their
#: options are declared on the factory (``Annotated`` constructor parameters, see
#: :mod:`passhost.plugins.declare`); MANIFEST holds a copy, as for :data:`PASSES`.
INSTRUMENTS: dict[str, tuple[str, str, str]] = {
    "print-before-all": ("passhost.instrument.printing", "PrintBeforeAll",
                         "print each pass's PassInfo and input module to stdout"),
    "print-after-all": ("passhost.instrument.printing", "PrintAfterAll",
                        "print each pass's PassInfo and output module to stdout"),
    "print-passes": ("passhost.instrument.printing", "print_passes",
                     "print the module before and after the passes named"),
    "dump-ir": ("passhost.instrument.dump", "DumpIR",
                "write the module after each pass to dump_dir/NNN_<pass>.txt"),
    "print-after-change": ("passhost.instrument.diff", "PrintAfterChange",
                           "print the initial module, then a diff after each pass that "
                           "changed it"),
    # the instruments of passhost.debug (docs/debugging.md)
    "validate-numerics": ("passhost.debug.validate", "ValidateNumerics",
                          "run main in the reference interpreter after each changing pass; "
                          "report the first that changed the outputs, with its diff"),
    "trace-events": ("passhost.debug.events", "TraceEvents",
                     "write context, pass, skip and failure events to a JSON Lines file"),
    "reproducer": ("passhost.debug.reproducer", "ReproducerWriter",
                   "when a pass raises, write a reproducer file into dir"),
    "execution-limit": ("passhost.debug.executions", "ExecutionLimit",
                        "number pass executions; skip the skippable ones after the first max"),
}
#: The built-in PassContext config options: name -> (module, attribute), the
#: :class:`OptionSpec` declared beside the code that reads the option; MANIFEST holds a copy.
CONFIG_OPTIONS: dict[str, tuple[str, str]] = {
    "testing.immutable_module": ("passhost.transform.context", "IMMUTABLE_MODULE"),
    "relay.FuseOps.max_depth": ("passhost.relay.transform.fuse_ops", "MAX_DEPTH"),
    "relay.FuseOps.chain_depthwise": ("passhost.relay.transform.fuse_ops", "CHAIN_DEPTHWISE"),
    "relay.FuseOps.scale_pointwise": ("passhost.relay.transform.fuse_ops", "SCALE_POINTWISE"),
    "debug.max_pass_executions": ("passhost.transform.context", "MAX_PASS_EXECUTIONS"),
    "debug.reproducer_dir": ("passhost.transform.context", "REPRODUCER_DIR"),
    "debug.trace_events": ("passhost.transform.context", "TRACE_EVENTS"),
}
#: The package whose modules define the built-in operators (``define_op``); MANIFEST lists
#: each operator's module, attribute and summary, so that registering imports none of them.
OPERATOR_PACKAGE = "passhost.relay.op"
#: The file holding what the built-in passes, instruments and config options declare:
#: ``{"passes": ..., "instruments": ..., "config_options": ...}``, each keyed by name.
MANIFEST = Path(__file__).with_name("builtin_manifest.json")
_OPTION_TYPES = {t.name: t for t in (INT, FLOAT, BOOL, STR, STR_LIST, STR_LIST_MAP)}


def manifest() -> dict[str, Any]:
    """What each built-in pass, instrument and config option declares, read from its class
    or module (imports all of them): the content :data:`MANIFEST` must hold."""
    from passhost.plugins.declare import options_of

    passes = {}
    for name, (module, attr, _) in PASSES.items():
        cls = _resolve(module, attr)
        info = cls.pass_info
        passes[name] = {"opt_level": info.opt_level, "required": list(info.required),
                        "options": [_row(o) for o in options_of(cls)]}
    instruments = {name: {"options": [_row(o) for o in options_of(_resolve(module, attr))]}
                   for name, (module, attr, _) in INSTRUMENTS.items()}
    config_options = {name: _row(_resolve(module, attr))
                      for name, (module, attr) in CONFIG_OPTIONS.items()}
    return {"passes": passes, "instruments": instruments, "config_options": config_options,
            "operators": _operators()}


def _operators() -> dict[str, list[str]]:
    """Every operator the modules of :data:`OPERATOR_PACKAGE` define: name -> [module,
    attribute, summary] (the first module, in name order, that binds it)."""
    import importlib
    import pkgutil

    from passhost.relay.op.registry import Op

    package = importlib.import_module(OPERATOR_PACKAGE)
    found: dict[str, list[str]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = f"{OPERATOR_PACKAGE}.{info.name}"
        for attr, value in vars(importlib.import_module(module)).items():
            if isinstance(value, Op) and not attr.startswith("_"):
                summary = value.description.strip().splitlines()[0] if value.description else ""
                found.setdefault(value.name, [module, attr, summary.rstrip(".")])
    return dict(sorted(found.items()))


def _resolve(module: str, attr: str) -> Any:
    """``module.attr``, imported."""
    return lazy_factory(module, attr).resolve()  # type: ignore[attr-defined]


def _row(option: OptionSpec) -> list[Any]:
    """``option`` as JSON data: ``[name, type name, default, summary]``."""
    default = list(option.default) if isinstance(option.default, tuple) else option.default
    return [option.name, option.type.name, default, option.summary]


def _option(row: list[Any]) -> OptionSpec:
    """The :class:`OptionSpec` a :func:`_row` wrote."""
    name, kind, default, summary = row
    option_type = _OPTION_TYPES[kind]
    return OptionSpec(name, option_type, None if default is None else option_type.check(default),
                      summary)


def _declared(section: str) -> dict[str, Any]:
    """One section of :data:`MANIFEST`: ``passes``, ``instruments`` or ``config_options``."""
    declared: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))[section]
    return declared


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The host's passes, from :data:`PASSES` and :data:`MANIFEST` (no pass module is
    imported until a pass is made)."""
    declared = _declared("passes")
    specs = []
    for name, (module, attr, summary) in PASSES.items():
        entry = declared[name]
        specs.append(PassSpec(name, lazy_factory(module, attr), entry["opt_level"],
                              tuple(entry["required"]), summary,
                              [_option(row) for row in entry["options"]]))
    return specs


@hookimpl
def passhost_register_pipelines() -> list[PipelineSpec]:
    """The pipeline the build flow's Optimize step runs (each pass gated by opt level)."""
    return [PipelineSpec(
        "optimize", "InferType,SimplifyInference,FoldConstant,FoldScaleAxis,CanonicalizeOps,"
        "FoldConstant,EliminateCommonSubexpr,DeadCodeElimination",
        "the graph optimisations passhost.build runs before partitioning")]


@hookimpl
def passhost_register_operators() -> list[OperatorSpec]:
    """The graph operators of :data:`OPERATOR_PACKAGE`, from :data:`MANIFEST` (no operator
    module is imported until an operator is looked up)."""
    return [OperatorSpec(name, lazy_object(module, attr), summary)
            for name, (module, attr, summary) in _declared("operators").items()]


@hookimpl
def passhost_register_pattern_tables() -> list[PatternTableSpec]:
    """``example``, a small float table for the documentation and experiments."""
    return [PatternTableSpec("example", lazy_factory("passhost.relay.dataflow_pattern",
                                                     "example_pattern_table"),
                             "conv2d + bias_add [+ relu], dense + add (float; for examples)")]


@hookimpl(trylast=True)
def passhost_relay_to_tir(target: Any, mod: Any) -> Any:
    """The fallback lowering: the target kind's own ``relay_to_tir``, if it has one."""
    return _kind_hook(target, "relay_to_tir", mod)


@hookimpl(trylast=True)
def passhost_tir_to_runtime(target: Any, mod: Any) -> Any:
    """The fallback code generation: the target kind's own ``tir_to_runtime``, if any."""
    return _kind_hook(target, "tir_to_runtime", mod)


def _kind_hook(target: Any, name: str, mod: Any) -> Any:
    """``target.kind.<name>(target, mod)``, or None when the kind has no such function."""
    function = getattr(getattr(target, "kind", None), name, None)
    return None if function is None else function(target, mod)


@hookimpl
def passhost_register_config_options() -> list[OptionSpec]:
    """The host's PassContext config options, from :data:`CONFIG_OPTIONS` and
    :data:`MANIFEST` (no module reading them is imported)."""
    declared = _declared("config_options")
    return [_option(declared[name]) for name in CONFIG_OPTIONS]


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    """The host's instruments, from :data:`INSTRUMENTS` and :data:`MANIFEST`: printing,
    dumping and diffing the module around passes, and the debugging instruments (no
    instrument module is imported until an instrument is made)."""
    declared = _declared("instruments")
    return [InstrumentSpec(name, lazy_factory(module, attr), summary,
                           [_option(row) for row in declared[name]["options"]])
            for name, (module, attr, summary) in INSTRUMENTS.items()]


if __name__ == "__main__":  # python -m passhost.builtin_plugin: write the manifest afresh
    MANIFEST.write_text(json.dumps(manifest(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {MANIFEST}")
