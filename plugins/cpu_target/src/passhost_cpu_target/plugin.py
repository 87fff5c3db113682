"""The ``cpu`` plugin: registers the ``cpu`` target kind (registration imports no NumPy)."""

from __future__ import annotations

from typing import Any

from passhost import hookimpl
from passhost.plugins import OptionSpec, int_range
from passhost.target import TargetKind

#: The most threads ``num-threads`` may ask for (the kernels keep the count in a C int).
MAX_THREADS = 1024


def _tir_to_runtime(target: Any, mod: Any) -> Any:
    """The cpu code generator, imported on first use."""
    from passhost_cpu_target.codegen import tir_to_runtime

    return tir_to_runtime(target, mod)


def _lowers_loops(target: Any) -> bool:
    """Whether this build compiles loop nests (a C compiler is here, native code is on)."""
    from passhost_cpu_target.codegen import lowers_loops

    return lowers_loops(target)


@hookimpl
def passhost_register_targets() -> list[TargetKind]:
    """The cpu target kind."""
    return [TargetKind(
        "cpu",
        options=(OptionSpec("num-threads", int_range(0, MAX_THREADS), 0,
                            "threads of the native kernels and of BLAS during each run "
                            "(0: all cores)"),),
        keys=("cpu",),
        tir_to_runtime=_tir_to_runtime,
        lowers_loops=_lowers_loops,
        phase_passes={"tir.phase1": ("tir.Simplify",),
                      "tir.phase2": ("tir.ReuseBuffers", "tir.CollapseLoops",
                                     "tir.TileTransposes", "tir.VectorizeReductions"),
                      "tir.phase3": ("tir.AnnotateLoops",)},
        host=True,
        summary="the host CPU: loop nests compiled to C, native kernels, NumPy and BLAS",
    )]
