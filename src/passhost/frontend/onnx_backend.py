"""passhost as an ONNX backend (``onnx.backend.base.Backend``), so that ONNX's own
conformance suite (``onnx.backend.test``) can run against it.

``prepare`` imports a model with :func:`~passhost.frontend.onnx.from_onnx` and compiles it
with :func:`passhost.build` for the target ``cpu`` (or the target given as ``target=``); the
returned :class:`PasshostBackendRep` runs the compiled model on lists of arrays in the order
of the model's graph inputs.

passhost compiles static shapes, so some values must be known while compiling: shapes,
axes, pads, ``k``, sizes, a condition that decides an output's length. A model may take
such a value as a graph input (ONNX's node tests do). The backend then compiles when it
first runs: the graph inputs the importer asks for are bound to the values given, and the
model is compiled for them; a later run with other values for those inputs compiles again
(one compiled model is kept per distinct set of such values).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from onnx import ModelProto, numpy_helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from passhost.backend.build import build
from passhost.frontend.errors import OnnxUnknownOperandError
from passhost.frontend.onnx import from_onnx
from passhost.runtime.executor import Executor
from passhost.transform.context import PassContext

__all__ = ["PasshostBackend", "PasshostBackendRep", "prepare", "run_model", "supports_device"]


class _Compiler:
    """Imports and compiles one model, with some graph inputs bound to values."""

    def __init__(self, model: ModelProto, target: str, opt_level: int) -> None:
        self.model = model
        self.target = target
        self.opt_level = opt_level

    def inputs_feeding(self, name: str) -> list[str]:
        """The graph inputs the value ``name`` is computed from (itself, if it is one)."""
        graph = self.model.graph
        producer = {out: node for node in graph.node for out in node.output if out}
        inputs = {i.name for i in graph.input}
        found: list[str] = []
        seen: set[str] = set()
        stack = [name]
        while stack:
            value = stack.pop()
            if value in seen:
                continue
            seen.add(value)
            if value in inputs:
                found.append(value)
            elif value in producer:
                stack.extend(v for v in producer[value].input if v)
        return sorted(found)

    def compile(self, bound: Mapping[str, np.ndarray]) -> Executor:
        """The executor of the model with graph inputs ``bound`` made initializers."""
        model = self.model
        if bound:
            model = ModelProto()
            model.CopyFrom(self.model)
            model.graph.initializer.extend(
                numpy_helper.from_array(np.asarray(value), name) for name, value in bound.items())
        mod, params = from_onnx(model)
        with PassContext(opt_level=self.opt_level):
            return build(mod, self.target, params).executor()


class PasshostBackendRep(BackendRep):
    """A compiled model: ``run`` takes the graph's data inputs in order (or by name)."""

    def __init__(self, compiler: _Compiler, input_names: list[str],
                 executor: Executor | None) -> None:
        self._compiler = compiler
        self.input_names = tuple(input_names)
        #: The graph inputs bound while compiling (empty when none needs to be).
        self.bound_inputs: tuple[str, ...] = ()
        self._executors: dict[tuple[bytes, ...], Executor] = {}
        if executor is not None:
            self._executors[()] = executor

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run the model on ``inputs`` (a list in graph input order, a dict by name, or one
        array); returns the outputs in graph output order."""
        named = self._named(inputs)
        executor = self._executor(named)
        used = {name: named[name] for name in executor.input_names}
        return tuple(executor(**used))

    def _named(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, dict):
            return {name: np.asarray(value) for name, value in inputs.items()}
        values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        if len(values) != len(self.input_names):
            raise ValueError(f"expected {len(self.input_names)} inputs "
                             f"{list(self.input_names)}, found {len(values)}")
        return {name: np.asarray(value) for name, value in zip(self.input_names, values)}

    def _executor(self, named: Mapping[str, np.ndarray]) -> Executor:
        """The executor compiled for the values of the bound inputs in ``named``, compiling
        (and binding more inputs, as the importer asks) when there is none yet."""
        key = tuple(named[name].tobytes() for name in self.bound_inputs)
        if key in self._executors:
            return self._executors[key]
        while True:
            bound = {name: named[name] for name in self.bound_inputs}
            try:
                executor = self._compiler.compile(bound)
            except OnnxUnknownOperandError as exc:
                more = [n for n in self._compiler.inputs_feeding(exc.input_name)
                        if n in named and n not in bound]
                if not more:
                    raise
                self.bound_inputs = (*self.bound_inputs, *more)
                continue
            key = tuple(named[name].tobytes() for name in self.bound_inputs)
            self._executors[key] = executor
            return executor


class PasshostBackend(Backend):
    """The ONNX backend of passhost: import, compile for cpu, run."""

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU",
                **kwargs: Any) -> PasshostBackendRep:
        """Import and compile ``model``; keyword ``target`` (default ``"cpu"``) and
        ``opt_level`` (default 3) choose how. A model that needs the values of some of
        its graph inputs while compiling is compiled when it first runs."""
        if not cls.supports_device(device):
            raise ValueError(f"expected device CPU, found {device!r}")
        compiler = _Compiler(model, kwargs.pop("target", "cpu"),
                             int(kwargs.pop("opt_level", 3)))
        initializers = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initializers]
        try:
            executor: Executor | None = compiler.compile({})
        except OnnxUnknownOperandError as exc:
            if not set(compiler.inputs_feeding(exc.input_name)) & set(names):
                raise
            executor = None
        return PasshostBackendRep(compiler, names, executor)

    @classmethod
    def run_model(cls, model: ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Compile ``model`` and run it once on ``inputs``."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """passhost runs on the host CPU only."""
        return Device(device).type == DeviceType.CPU


prepare = PasshostBackend.prepare
run_model = PasshostBackend.run_model
supports_device = PasshostBackend.supports_device
