"""passhost as an ONNX backend (``onnx.backend.base.Backend``), so that ONNX's own
conformance suite (``onnx.backend.test``) can run against it.

``prepare`` imports a model with :func:`~passhost.frontend.onnx.from_onnx` and compiles it
with :func:`passhost.build` for the target ``cpu`` (or the target given as ``target=``); the
returned :class:`PasshostBackendRep` runs the compiled model on lists of arrays in the order
of the model's graph inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import ModelProto
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from passhost.backend.build import build
from passhost.frontend.onnx import from_onnx
from passhost.runtime.executor import Executor
from passhost.transform.context import PassContext

__all__ = ["PasshostBackend", "PasshostBackendRep", "prepare", "run_model", "supports_device"]


class PasshostBackendRep(BackendRep):
    """A compiled model: ``run`` takes the graph's data inputs in order (or by name)."""

    def __init__(self, executor: Executor, input_names: Sequence[str]) -> None:
        self.executor = executor
        self.input_names = tuple(input_names)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run the model on ``inputs`` (a list in graph input order, a dict by name, or one
        array); returns the outputs in graph output order."""
        if isinstance(inputs, dict):
            named = dict(inputs)
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) != len(self.input_names):
                raise ValueError(f"expected {len(self.input_names)} inputs "
                                 f"{list(self.input_names)}, found {len(values)}")
            named = dict(zip(self.input_names, values))
        used = {name: named[name] for name in self.executor.input_names}
        return tuple(self.executor(**used))


class PasshostBackend(Backend):
    """The ONNX backend of passhost: import, compile for cpu, run."""

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "CPU",
                **kwargs: Any) -> PasshostBackendRep:
        """Import and compile ``model``; keyword ``target`` (default ``"cpu"``) and
        ``opt_level`` (default 3) choose how."""
        if not cls.supports_device(device):
            raise ValueError(f"expected device CPU, found {device!r}")
        target = kwargs.pop("target", "cpu")
        opt_level = int(kwargs.pop("opt_level", 3))
        mod, params = from_onnx(model)
        with PassContext(opt_level=opt_level):
            compiled = build(mod, target, params)
        initializers = {t.name for t in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in initializers]
        return PasshostBackendRep(compiled.executor(), names)

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
