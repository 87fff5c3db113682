"""The executor: runs an executor plan over preallocated memory.

Storage blocks are allocated once, when the executor is made, each starting on a cache
line (as do the input buffers); every tensor is a view of its block, an input buffer or a
parameter array. ``run`` then only calls the step functions in order on arrays it resolved
up front, so the per-step cost is one Python call. Consecutive steps whose functions
have a native form of one runner (they carry a ``native_step``: a target's compiled loops
and native kernel calls) are bound together when the executor is made and run as one native
call, with no Python between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from passhost.errors import PasshostError
from passhost.runtime.aligned import aligned_full
from passhost.runtime.module import Module, NativeStep, find_function, run_scope, scope_factories
from passhost.runtime.plan import ExecutorPlan, TensorEntry, param_mismatch

__all__ = ["Executor", "ExecutorError"]


class ExecutorError(PasshostError):
    """Bad inputs to an executor, or a plan its modules cannot run."""


Run = tuple[Callable[..., Any], tuple[Any, ...]]


def _native(run: Run) -> tuple[NativeStep, Sequence[Any]] | None:
    """The native step of ``run`` and its bound arguments, or None when it has none."""
    step = getattr(run[0], "native_step", None)
    if step is None:
        return None
    arguments = step.bound_arguments(run[1])
    return None if arguments is None else (step, arguments)


def _timed_call(func: Callable[..., Any], seconds: np.ndarray,
                index: int) -> Callable[..., None]:
    """``func``, adding the wall time of each call to ``seconds[index]``."""

    def timed(*args: Any) -> None:
        start = time.perf_counter()
        func(*args)
        seconds[index] += time.perf_counter() - start

    return timed


def _bind_native_runs(steps: list[Run], seconds: np.ndarray | None = None) -> list[Run]:
    """``steps`` with each run of consecutive native steps of one runner bound into one
    call (a single native step stays a plain call: it costs no more). With ``seconds``
    (float64, one per step), every native step is bound, alone too, and every step adds
    its wall time to its entry when it runs: native ones as the native call runs them."""
    out: list[Run] = []
    natives = [_native(run) for run in steps]
    index = 0
    while index < len(steps):
        group = [natives[index]] if natives[index] is not None else []
        while (group and index + len(group) < len(steps)
               and (following := natives[index + len(group)]) is not None
               and following[0].runner is group[0][0].runner):
            group.append(following)
        if len(group) > 1 or (group and seconds is not None):
            times = None if seconds is None else seconds[index:index + len(group)]
            out.append((group[0][0].runner.bind(group, times), ()))
        elif seconds is not None:
            out.append((_timed_call(steps[index][0], seconds, index), steps[index][1]))
        else:
            out.append(steps[index])
        index += max(len(group), 1)
    return out


class Executor:
    """Runs a compiled model: ``set_input``, ``run``, ``get_output``, or call it with
    arrays (positionally in input order, or by input name) to get the outputs back."""

    def __init__(self, plan: ExecutorPlan, module: Module,
                 params: Mapping[str, np.ndarray]) -> None:
        self.plan = plan
        self.module = module
        arena = aligned_full(max(plan.arena_size, 1), None, np.uint8)
        storages = [arena[offset:offset + size]
                    for offset, size in zip(plan.storage_offsets, plan.storage_sizes)]
        arrays: list[np.ndarray] = []
        self._inputs: dict[str, np.ndarray] = {}
        for t in plan.tensors:
            if t.kind == "storage":
                arr = storages[t.storage][:t.nbytes].view(t.dtype).reshape(t.shape)
            elif t.kind == "input":
                arr = self._inputs.setdefault(t.name, aligned_full(t.shape, 0, t.dtype))
            else:
                arr = self._param(params, t)
            arrays.append(arr)
        self._arrays = arrays
        steps: list[tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = []
        for step in plan.steps:
            func = find_function(module, step.func)
            if func is None:
                raise ExecutorError(f"no runtime module has function {step.func!r}")
            steps.append((func, tuple(arrays[a] for a in step.args)))
        self._steps = steps
        self._runs = _bind_native_runs(steps)
        self._timed: tuple[list[Run], np.ndarray] | None = None
        self._scopes = scope_factories(module)
        self._outputs = [arrays[o] for o in plan.outputs]
        self.input_names = [name for name, _ in plan.inputs]

    @staticmethod
    def _param(params: Mapping[str, np.ndarray], t: TensorEntry) -> np.ndarray:
        if t.name not in params:
            raise ExecutorError(f"parameter {t.name!r} is missing")
        arr = np.asarray(params[t.name], order="C")  # keeps 0-d arrays 0-d
        problem = param_mismatch(t, arr)
        if problem is not None:
            raise ExecutorError(problem)
        arr = arr.view()
        arr.flags.writeable = False
        return arr

    @property
    def num_outputs(self) -> int:
        """How many outputs the model has."""
        return len(self.plan.outputs)

    def set_input(self, key: str | int, value: Any) -> None:
        """Copy ``value`` into input ``key`` (a name or a position), checking its shape and
        dtype."""
        name = self.input_names[key] if isinstance(key, int) else key
        dest = self._inputs.get(name)
        if dest is None:
            raise ExecutorError(f"unknown input {name!r}; the inputs are {self.input_names}")
        if type(value) is np.ndarray and value.dtype == dest.dtype and value.shape == dest.shape:
            np.copyto(dest, value)  # the common case, without the checks' cost
            return
        arr = np.asarray(value)
        # the same dtype in either byte order is taken (copyto converts it)
        if arr.shape != dest.shape or not np.can_cast(arr.dtype, dest.dtype, "equiv"):
            raise ExecutorError(f"input {name!r}: expected {dest.dtype.name}"
                                f"{list(dest.shape)}, found {arr.dtype.name}{list(arr.shape)}")
        np.copyto(dest, arr)

    def run(self) -> None:
        """Run every step once on the current inputs."""
        if len(self._scopes) == 1:  # one target module: its scope, without an ExitStack
            with self._scopes[0]():
                self._run_steps()
            return
        with run_scope(self.module):
            self._run_steps()

    def _run_steps(self, runs: list[Run] | None = None) -> None:
        for func, args in self._runs if runs is None else runs:
            func(*args)

    def run_timed(self, seconds: np.ndarray) -> None:
        """Run every step once, as :meth:`run` does, adding each plan step's wall time in
        seconds to ``seconds[i]`` (one entry per step): a profile of the run itself, where
        native runs time their steps inside the one native call, with nothing between
        them, and other steps are timed around their call."""
        if len(seconds) != len(self.plan.steps):
            raise ExecutorError(f"run_timed: {len(self.plan.steps)} steps, "
                                f"{len(seconds)} entries to add their times to")
        if self._timed is None:
            own = np.zeros(len(self.plan.steps))
            self._timed = (_bind_native_runs(self._steps, own), own)
        runs, own = self._timed
        own[:] = 0.0
        with run_scope(self.module):
            self._run_steps(runs)
        seconds += own

    def get_output(self, index: int) -> np.ndarray:
        """Output ``index`` (a view of the executor's memory: the next run overwrites it)."""
        if not 0 <= index < len(self.plan.outputs):
            raise ExecutorError(f"output {index} does not exist; the model has "
                                f"{len(self.plan.outputs)}")
        return self._arrays[self.plan.outputs[index]]

    def __call__(self, *inputs: Any, **named: Any) -> list[np.ndarray]:
        """Set the inputs, run, and return copies of all outputs."""
        if inputs and named:
            raise ExecutorError("give inputs either positionally or by name, not both")
        if inputs:
            if len(inputs) != len(self.input_names):
                raise ExecutorError(f"expected {len(self.input_names)} inputs "
                                    f"{self.input_names}, found {len(inputs)}")
            given: Any = zip(self.input_names, inputs)
        else:
            missing = [n for n in self.input_names if n not in named]
            if missing:
                raise ExecutorError(f"missing inputs {missing}")
            given = named.items()
        for name, value in given:
            self.set_input(name, value)
        self.run()
        return [output.copy() for output in self._outputs]

    def input_info(self) -> Sequence[tuple[str, tuple[int, ...], str]]:
        """(name, shape, dtype) of every input."""
        return [(n, t.shape, t.dtype) for n, t in self.plan.inputs]
