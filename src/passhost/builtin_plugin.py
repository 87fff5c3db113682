"""passhost's own registrations, loaded by the plugin host like any other plugin.

Registering must stay cheap (``passhost plugins list`` loads every plugin): pass factories
import their pass only when a pass is created.
"""

from __future__ import annotations

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
from passhost.plugins.specs import InstrumentSpec, PassSpec, PipelineSpec, lazy_factory


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The host's passes."""
    return [*_graph_passes(),
        PassSpec("LowerTE", lazy_factory("passhost.backend.lower_te", "LowerTE"), 0,
                 ("InferType",), "lower fused functions to PrimFuncs of kernel calls or loops",
                 options=[OptionSpec("target", STR, "cpu",
                                     "the target kind written in each PrimFunc"),
                          OptionSpec("loops", bool, False,
                                     "loop nests from TE computes where every operator "
                                     "has one")]),
        *_tir_passes(),
        PassSpec("PrintIR", lazy_factory("passhost.transform.print_ir", "PrintIR"), 0,
                 summary="write the module's text to stderr", options=[
                     OptionSpec("header", str, "", "a header printed before the module"),
                     OptionSpec("show_meta_data", bool, False, "print large constants in full"),
                 ]),
    ]


def _graph_pass(name: str, module: str, opt_level: int, required: tuple[str, ...],
                summary: str, options: tuple[OptionSpec, ...] = ()) -> PassSpec:
    return PassSpec(name, lazy_factory(f"passhost.relay.transform.{module}", name), opt_level,
                    required, summary, options)


def _tir_passes() -> list[PassSpec]:
    """The TIR passes of :mod:`passhost.tir.transform`, run at the build's phases."""
    def tir_pass(name: str, module: str, opt_level: int, summary: str) -> PassSpec:
        return PassSpec(f"tir.{name}", lazy_factory(f"passhost.tir.transform.{module}", name),
                        opt_level, (), summary)

    return [
        tir_pass("Simplify", "simplify", 1,
                 "fold constants, integer identities, known branches, one-iteration loops"),
        tir_pass("ReuseBuffers", "reuse_buffers", 2,
                 "share memory between allocations whose lifetimes do not overlap"),
        tir_pass("CollapseLoops", "collapse_loops", 2,
                 "merge short innermost loops of a nest into one"),
        tir_pass("VectorizeReductions", "vectorize_reductions", 2,
                 "accumulate sums in vector lanes"),
        tir_pass("AnnotateLoops", "annotate_loops", 2,
                 "mark parallel and vectorised loops"),
    ]


def _graph_passes() -> list[PassSpec]:
    """The standard graph passes of :mod:`passhost.relay.transform` (docs/passes.md)."""
    infer = ("InferType",)
    return [
        _graph_pass("InferType", "infer_type", 0, (), "type-check every graph function"),
        _graph_pass("FoldConstant", "fold_constant", 2, (),
                    "evaluate subgraphs whose inputs are all constants", (
                        OptionSpec("fold_qnn", BOOL, False, "also fold qnn.* operators"),)),
        _graph_pass("SimplifyInference", "simplify_inference", 0, infer,
                    "rewrite batch_norm, layer_norm and dropout for inference"),
        _graph_pass("FoldScaleAxis", "fold_scale_axis", 3, infer,
                    "fold per-channel scales into convolution and dense weights"),
        _graph_pass("CanonicalizeOps", "canonicalize_ops", 3, infer,
                    "rewrite nn.bias_add as add, powers by constant 2 and 3 as products, "
                    "x * sigmoid(x) as nn.silu, whole-plane avg pools as global"),
        _graph_pass("ConvertLayout", "convert_layout", 3, ("InferType", "CanonicalizeOps"),
                    "convert layout-sensitive operators to the desired layouts", (
                        OptionSpec("desired_layouts", STR_LIST_MAP, {},
                                   "op:data_layout[:kernel_layout];... e.g. "
                                   "nn.conv2d:NHWC:HWIO"),)),
        _graph_pass("EliminateCommonSubexpr", "eliminate_common_subexpr", 3, infer,
                    "merge calls of one operator on the same arguments and attributes"),
        _graph_pass("DeadCodeElimination", "dead_code", 1, (),
                    "drop module functions nothing reachable from main uses"),
        _graph_pass("FuseOps", "fuse_ops", 0, infer,
                    "group operators into Primitive functions by fusion pattern", (
                        OptionSpec("max_depth", INT, None,
                                   "most operators in one group (default: the config "
                                   "option relay.FuseOps.max_depth)"),)),
        _graph_pass("MergeComposite", "merge_composite", 0, (),
                    "wrap matches of a pattern table in Composite functions", (
                        OptionSpec("pattern_table", STR, None,
                                   "the name of a registered pattern table"),)),
        _graph_pass("AnnotateTarget", "annotate_target", 0, infer,
                    "mark the calls external targets support", (
                        OptionSpec("kinds", STR_LIST, (), "the target kinds, e.g. cmsis-nn"),)),
        _graph_pass("PartitionGraph", "partition_graph", 0, (),
                    "move annotated regions into functions tagged Compiler=<kind>"),
    ]


@hookimpl
def passhost_register_pipelines() -> list[PipelineSpec]:
    """The pipeline the build flow's Optimize step runs (each pass gated by opt level)."""
    return [PipelineSpec(
        "optimize", "InferType,SimplifyInference,FoldConstant,FoldScaleAxis,CanonicalizeOps,"
        "FoldConstant,EliminateCommonSubexpr,DeadCodeElimination",
        "the graph optimisations passhost.build runs before partitioning")]


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
