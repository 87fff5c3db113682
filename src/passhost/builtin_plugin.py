"""passhost's own registrations, loaded by the plugin host like any other plugin.

Registering must stay cheap (``passhost plugins list`` loads every plugin): pass factories
import their pass only when a pass is created.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from passhost.errors import OptionError
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
    PassSpec,
    PatternTableSpec,
    PipelineSpec,
    lazy_factory,
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
    "tir.VectorizeReductions": ("passhost.tir.transform.vectorize_reductions",
                                "VectorizeReductions", "accumulate sums in vector lanes"),
    "tir.AnnotateLoops": ("passhost.tir.transform.annotate_loops", "AnnotateLoops",
                          "mark parallel and vectorised loops"),
    "PrintIR": ("passhost.transform.print_ir", "PrintIR", "write the module's text to stderr"),
}
#: The file holding what each built-in pass declares (see :data:`PASSES`).
MANIFEST = Path(__file__).with_name("builtin_manifest.json")
_OPTION_TYPES = {t.name: t for t in (INT, FLOAT, BOOL, STR, STR_LIST, STR_LIST_MAP)}


def manifest() -> dict[str, Any]:
    """What each built-in pass declares, read from its class (imports every pass module):
    the content :data:`MANIFEST` must hold."""
    from passhost.plugins.declare import options_of

    made = {}
    for name, (module, attr, _) in PASSES.items():
        cls = lazy_factory(module, attr).resolve()  # type: ignore[attr-defined]
        info = cls.pass_info
        made[name] = {"opt_level": info.opt_level, "required": list(info.required),
                      "options": [[o.name, o.type.name, _jsonable(o.default), o.summary]
                                  for o in options_of(cls)]}
    return made


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The host's passes, from :data:`PASSES` and :data:`MANIFEST` (no pass module is
    imported until a pass is made)."""
    declared = json.loads(MANIFEST.read_text(encoding="utf-8"))
    specs = []
    for name, (module, attr, summary) in PASSES.items():
        entry = declared[name]
        options = [OptionSpec(option, _OPTION_TYPES[kind], default if default is None
                              else _OPTION_TYPES[kind].check(default), text)
                   for option, kind, default, text in entry["options"]]
        specs.append(PassSpec(name, lazy_factory(module, attr), entry["opt_level"],
                              tuple(entry["required"]), summary, options))
    return specs


@hookimpl
def passhost_register_pipelines() -> list[PipelineSpec]:
    """The pipeline the build flow's Optimize step runs (each pass gated by opt level)."""
    return [PipelineSpec(
        "optimize", "InferType,SimplifyInference,FoldConstant,FoldScaleAxis,CanonicalizeOps,"
        "FoldConstant,EliminateCommonSubexpr,DeadCodeElimination",
        "the graph optimisations passhost.build runs before partitioning")]


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
    """The host's PassContext config options (their names are constants of the modules
    that read them; the tests check the two agree)."""
    return [
        OptionSpec("testing.immutable_module", bool, False,
                   "check that every pass leaves its input module unchanged"),
        OptionSpec("relay.FuseOps.max_depth", INT, 256,
                   "the most operators FuseOps puts in one Primitive function"),
        OptionSpec("debug.max_pass_executions", INT, None,
                   "run only the first N skippable pass executions (what bisect finds)"),
        OptionSpec("debug.reproducer_dir", STR, None,
                   "when a pass raises, write a reproducer into this directory"),
        OptionSpec("debug.trace_events", STR, None,
                   "write the context's pass events to this JSON Lines file"),
    ]


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    """The host's instruments: printing, dumping and diffing the module around passes, and
    the debugging instruments."""
    from passhost.instrument import (
        DumpIR,
        PassPrintingInstrument,
        PrintAfterAll,
        PrintAfterChange,
        PrintBeforeAll,
    )

    def print_passes(before: tuple[str, ...] = (), after: tuple[str, ...] = ()) -> Any:
        return PassPrintingInstrument(before, after)

    def dump_ir(dump_dir: str | None = None, refresh: bool = False) -> Any:
        if dump_dir is None:
            raise OptionError("instrument 'dump-ir' needs the option 'dump_dir'")
        return DumpIR(dump_dir, refresh)

    show_skipped = OptionSpec("show_skipped", BOOL, False,
                              "also print the passes should_run skipped, and who vetoed them")
    return [
        InstrumentSpec("print-before-all", PrintBeforeAll,
                       "print each pass's PassInfo and input module to stdout",
                       options=[show_skipped]),
        InstrumentSpec("print-after-all", PrintAfterAll,
                       "print each pass's PassInfo and output module to stdout",
                       options=[show_skipped]),
        InstrumentSpec("print-passes", print_passes,
                       "print the module before and after the passes named", options=[
                           OptionSpec("before", STR_LIST, (), "print the input of these passes"),
                           OptionSpec("after", STR_LIST, (), "print the output of these passes"),
                       ]),
        InstrumentSpec("dump-ir", dump_ir,
                       "write the module after each pass to dump_dir/NNN_<pass>.txt", options=[
                           OptionSpec("dump_dir", STR, None, "the directory (required)"),
                           OptionSpec("refresh", BOOL, False,
                                      "first empty dump_dir if it holds only dump files"),
                       ]),
        InstrumentSpec("print-after-change", PrintAfterChange,
                       "print the initial module, then a diff after each pass that changed it",
                       options=[
                           OptionSpec("dump_dir", STR, None,
                                      "write 000_initial.txt and NNN_<pass>.diff files here "
                                      "instead of printing"),
                       ]),
        *_debug_instruments(),
    ]


def _required(instrument: str, option: str, value: Any) -> Any:
    if value is None:
        raise OptionError(f"instrument {instrument!r} needs the option {option!r}")
    return value


def _debug_instruments() -> list[InstrumentSpec]:
    """The instruments of passhost.debug (docs/debugging.md)."""
    debug = "passhost.debug"

    def trace_events(path: str | None = None) -> Any:
        path = _required("trace-events", "path", path)
        return lazy_factory(f"{debug}.events", "TraceEvents")(path=path)

    def reproducer(dir: str | None = None) -> Any:
        dir = _required("reproducer", "dir", dir)
        return lazy_factory(f"{debug}.reproducer", "ReproducerWriter")(dir=dir)

    return [
        InstrumentSpec("validate-numerics", lazy_factory(f"{debug}.validate", "ValidateNumerics"),
                       "run main in the reference interpreter after each changing pass; "
                       "report the first that changed the outputs, with its diff", options=[
                           OptionSpec("rtol", FLOAT, 1e-5, "relative tolerance"),
                           OptionSpec("atol", FLOAT, 1e-5, "absolute tolerance"),
                           OptionSpec("seed", INT, 0, "seed of the fixed random inputs"),
                       ]),
        InstrumentSpec("trace-events", trace_events,
                       "write context, pass, skip and failure events to a JSON Lines file",
                       options=[OptionSpec("path", STR, None, "the file (required)")]),
        InstrumentSpec("reproducer", reproducer,
                       "when a pass raises, write a reproducer file into dir",
                       options=[OptionSpec("dir", STR, None, "the directory (required)")]),
        InstrumentSpec("execution-limit",
                       lazy_factory(f"{debug}.executions", "ExecutionLimit"),
                       "number pass executions; skip the skippable ones after the first max",
                       options=[OptionSpec("max", INT, None,
                                           "how many skippable executions run (default: all)")]),
    ]


if __name__ == "__main__":  # python -m passhost.builtin_plugin: write the manifest afresh
    MANIFEST.write_text(json.dumps(manifest(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {MANIFEST}")
