"""The cpu target's native runs: the kernel library's ``ph_run_steps`` calls packed
functions (``int32_t f(void *const *args)``) in order, those of the kernels themselves and
those of generated loop units alike, so that the executor runs each stretch of native
steps of a model in one call (:class:`~passhost.runtime.NativeStep`)."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from passhost.runtime import NativeStep
from passhost_cpu_target import native
from passhost_cpu_target.native.library import address

__all__ = ["StepRunner", "kernel_address", "pool_address", "step_runner"]


class StepRunner:
    """Binds native steps into one call of ``ph_run_steps``."""

    def __init__(self, cdll: ctypes.CDLL) -> None:
        self.cdll = cdll
        self.run_steps = cdll.ph_run_steps_timed
        self.run_steps.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
        self.run_steps.restype = ctypes.c_int32

    def bind(self, steps: Sequence[tuple[NativeStep, Sequence[Any]]],
             seconds: np.ndarray | None = None) -> Callable[[], None]:
        """One callable running ``steps`` (their arrays stay where they are); with
        ``seconds`` (float64, one per step), each step's wall time is added to its entry
        on every call, measured in the native loop."""
        n = len(steps)
        if seconds is not None and not (seconds.dtype == np.float64 and seconds.shape == (n,)
                                        and seconds.flags.c_contiguous):
            raise ValueError(f"seconds must be {n} contiguous float64 values")
        fns = (ctypes.c_void_p * n)(*[step.address for step, _ in steps])
        arg_arrays = [(ctypes.c_void_p * max(len(values), 1))(
            *[None if v is None else address(v) for v in values]) for _, values in steps]
        table = (ctypes.c_void_p * n)(*[ctypes.addressof(a) for a in arg_arrays])
        failed = ctypes.c_int64(0)
        bound = [step for step, _ in steps]
        run_steps = self.run_steps
        times = None if seconds is None else seconds.ctypes.data

        def run() -> None:
            status = run_steps(n, fns, table, ctypes.byref(failed), times)
            if status:
                raise bound[failed.value].error(status)

        # the pointer tables and the arrays they point at live as long as the callable
        run.kept = (fns, arg_arrays, table, [values for _, values in steps], seconds)  # type: ignore[attr-defined]
        return run


@functools.cache
def step_runner() -> StepRunner | None:
    """The process's runner, over the native kernel library; None when it is unavailable."""
    lib = native.library()
    return None if lib is None else StepRunner(lib.cdll)


def kernel_address(symbol: str) -> int:
    """The address of the packed form of kernel ``ph_<symbol>``."""
    runner = step_runner()
    assert runner is not None, "kernel_address needs the native kernel library"
    return int(ctypes.cast(getattr(runner.cdll, f"ph_{symbol}__packed"), ctypes.c_void_p).value
               or 0)


def pool_address() -> int:
    """The address of the kernel library's thread pool entry, ``ph_pool_parallel(tasks,
    threads, task, ctx)``, which generated loop units run their parallel loops on; 0 when
    the library is unavailable."""
    runner = step_runner()
    if runner is None:
        return 0
    return int(ctypes.cast(runner.cdll.ph_pool_parallel, ctypes.c_void_p).value or 0)
