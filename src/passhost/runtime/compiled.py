"""``CompiledModule``: what ``passhost.build`` returns and an artifact loads back."""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
from attrs import field, frozen

from passhost.ir.module import IRModule
from passhost.runtime.executor import Executor
from passhost.runtime.module import Module
from passhost.runtime.plan import ExecutorPlan

__all__ = ["CompiledModule"]


@frozen(eq=False)
class CompiledModule:
    """A compiled model: the target string, the executor plan, the parameters, the host
    runtime module (importing the external targets' modules), each target's lowered
    PrimFuncs (kind -> module) and the lowered IR as text (constants left out)."""

    target: str
    plan: ExecutorPlan
    params: Mapping[str, np.ndarray] = field(repr=False)
    module: Module
    tir: Mapping[str, IRModule] = field(repr=False)
    ir_text: str = field(repr=False)

    def executor(self) -> Executor:
        """A new executor with its own memory."""
        return Executor(self.plan, self.module, self.params)

    def get_source(self, kind: str | None = None) -> str:
        """The generated source of the host module, or of target ``kind``'s module."""
        if kind is None:
            return self.module.get_source()
        for m in (self.module, *self.module.imported_modules):
            if m.type_key == kind:
                return m.get_source()
        raise KeyError(f"no runtime module of kind {kind!r}")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the artifact file (a .tar; see docs/targets.md, "Artifacts")."""
        from passhost.runtime.artifact import save_artifact

        save_artifact(self, path)
