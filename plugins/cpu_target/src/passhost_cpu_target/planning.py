"""The kernel for each kernel call of a generated module: a native kernel (which may also
do the work of the calls after it) when the native library is available and one fits, else
a NumPy kernel, else None (the operator's reference kernel)."""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from passhost.runtime import KernelCall
from passhost_cpu_target.native_selection import native_plan
from passhost_cpu_target.selection import KernelPlan, select_kernel

__all__ = ["PlanConfig", "plan_call"]


@frozen
class PlanConfig:
    """What the kernels of one module may use: the target's thread count (0: all cores)
    and whether the native kernels are available."""

    num_threads: int = 0
    native: bool = False


def plan_call(call: KernelCall, following: Sequence[KernelCall],
              config: PlanConfig) -> KernelPlan | None:
    """The kernel for ``call``; ``following`` are the kernel calls right after it in the
    same statement sequence (a native plan may absorb some of them)."""
    if config.native:
        plan = native_plan(call, following, config.num_threads)
        if plan is not None:
            return plan
    return select_kernel(call)
