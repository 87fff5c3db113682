"""The ``cmsis-nn`` plugin: the target kind, its pattern table, partitioning pass and pipeline.

Registering imports nothing heavy: the pattern table, the lowering and the code generator
are imported when the build first needs them.
"""

from __future__ import annotations

from typing import Any

from passhost import hookimpl
from passhost.plugins import (
    BOOL,
    STR,
    STR_LIST,
    OptionSpec,
    PassSpec,
    PatternTableSpec,
    PipelineSpec,
    lazy_factory,
)
from passhost.target import TargetKind

KIND = "cmsis-nn"
MERGE_PASS = "CmsisNNMergeComposite"
PIPELINE = "partition_for_cmsis_nn"


def _relay_to_tir(target: Any, mod: Any) -> Any:
    from passhost_cmsis_nn.lowering import relay_to_tir

    return relay_to_tir(target, mod)


def _tir_to_runtime(target: Any, mod: Any) -> Any:
    from passhost_cmsis_nn.codegen import tir_to_runtime

    return tir_to_runtime(target, mod)


def _merge_composite() -> Any:
    from passhost.relay.transform import MergeComposite
    from passhost.transform import Sequential

    return Sequential([MergeComposite(KIND)], name=MERGE_PASS)


@hookimpl
def passhost_register_targets() -> list[TargetKind]:
    """The cmsis-nn target kind."""
    return [TargetKind(
        KIND,
        options=(
            OptionSpec("mcpu", STR, "", "the Cortex-M processor, e.g. cortex-m55 (gives the "
                       "DSP and MVE features; none: plain C)"),
            OptionSpec("mattr", STR_LIST, (), "feature flags: +nomve, +nodsp"),
            OptionSpec("debug_last_error", BOOL, False, "the generated C records the last "
                       "failing CMSIS-NN call (cmsis_nn_last_error())"),
        ),
        relay_to_tir=_relay_to_tir,
        tir_to_runtime=_tir_to_runtime,
        pattern_table=KIND,
        summary="int8/int16 operators as CMSIS-NN calls in generated C (NumPy on the host)",
    )]


@hookimpl
def passhost_register_pattern_tables() -> list[PatternTableSpec]:
    """The layers the cmsis-nn target offloads (the kind names it)."""
    return [PatternTableSpec(KIND, lazy_factory("passhost_cmsis_nn.patterns", "pattern_table"),
                             "the int8/int16 layers CMSIS-NN runs: conv2d, fully connected, "
                             "pools, softmax, add, mul")]


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """MergeComposite with the cmsis-nn pattern table."""
    return [PassSpec(MERGE_PASS, _merge_composite, 0,
                     summary="wrap the patterns the cmsis-nn target offloads in Composite "
                             "functions")]


@hookimpl
def passhost_register_pipelines() -> list[PipelineSpec]:
    """``partition_for_cmsis_nn``: the cmsis-nn partitioning of the build flow."""
    return [PipelineSpec(PIPELINE, f"InferType,{MERGE_PASS},AnnotateTarget{{kinds={KIND}}},"
                                   f"PartitionGraph",
                         "partition a graph for the cmsis-nn target (functions tagged "
                         "Compiler=cmsis-nn)")]
