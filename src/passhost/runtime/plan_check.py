"""The executor plan checked against what it calls and reads: PrimFuncs and parameters.

The executor hands each step's function one array per tensor of the step, and native code
indexes those arrays by the shapes and dtypes of the PrimFunc's buffers. So every function
a step calls must be a PrimFunc whose parameters are buffers matching the step's tensors
one to one (inputs, then outputs): same count, same shapes, same dtypes; and every
parameter array must have its tensor's shape and dtype. The build checks its own plan this
way, and loading an artifact checks the stored one before any runtime module is generated.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from passhost.ir.module import IRModule
from passhost.runtime.plan import ExecutorPlan, PlanError, Step, param_mismatch
from passhost.tir.function import PrimFunc

__all__ = ["check_params", "check_plan_calls"]


def _callees(tir: Mapping[str, IRModule]) -> dict[str, list[tuple[str, str, PrimFunc]]]:
    """Every name a runtime module may resolve a call by (a PrimFunc's name in its module
    and its ``global_symbol``) -> the (kind, name, PrimFunc)s it may reach."""
    index: dict[str, list[tuple[str, str, PrimFunc]]] = {}
    for kind, mod in tir.items():
        for name, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            symbol = func.attrs.get("global_symbol")
            for key in {name, symbol} if isinstance(symbol, str) else {name}:
                index.setdefault(key, []).append((kind, name, func))
    return index


def _check_call(plan: ExecutorPlan, j: int, step: Step, kind: str, name: str,
                func: PrimFunc) -> None:
    where = f"step {j} ({step.func}), PrimFunc @{name} of target {kind!r}"
    if len(func.params) != len(step.args):
        raise PlanError(f"{where}: the step passes {len(step.args)} tensors, the PrimFunc "
                        f"takes {len(func.params)} parameters")
    for k, (param, a) in enumerate(zip(func.params, step.args)):
        buf = func.buffer_map.get(param)
        if buf is None:
            raise PlanError(f"{where}: parameter {k} (%{param.name_hint}: {param.dtype}) is not a "
                            f"buffer; the executor passes arrays only")
        t = plan.tensors[a]
        if buf.shape != t.shape or buf.dtype != t.dtype:
            raise PlanError(f"{where}: tensor {a} is {t.dtype}{list(t.shape)}, but parameter "
                            f"{k} (buffer %{buf.name}) is {buf.dtype}{list(buf.shape)}")


def check_plan_calls(plan: ExecutorPlan, tir: Mapping[str, IRModule]) -> None:
    """Raise :class:`PlanError` unless every step of ``plan`` (already checked by
    :meth:`ExecutorPlan.check`) calls PrimFuncs of ``tir`` (kind -> module) whose buffer
    parameters match its tensors; a name two PrimFuncs answer to must fit both."""
    callees = _callees(tir)
    for j, step in enumerate(plan.steps):
        funcs = callees.get(step.func)
        if not funcs:
            raise PlanError(f"step {j} calls {step.func!r}, which is no PrimFunc of the "
                            f"targets' TIR")
        for kind, name, func in funcs:
            _check_call(plan, j, step, kind, name, func)


def check_params(plan: ExecutorPlan, params: Mapping[str, np.ndarray]) -> None:
    """Raise :class:`PlanError` unless ``params`` holds exactly the parameters ``plan``
    reads, each with its tensor's shape and dtype."""
    for i, t in enumerate(plan.tensors):
        if t.kind != "param":
            continue
        if t.name not in params:
            raise PlanError(f"tensor {i}: parameter {t.name!r} is missing")
        problem = param_mismatch(t, np.asarray(params[t.name]))
        if problem is not None:
            raise PlanError(f"tensor {i}: {problem}")
    unused = sorted(set(params) - set(plan.param_names))
    if unused:
        raise PlanError(f"parameters {unused[:5]} are not read by the plan")
