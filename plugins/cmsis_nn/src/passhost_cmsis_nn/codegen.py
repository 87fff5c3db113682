"""``tir_to_runtime`` of the ``cmsis-nn`` target: the generated C and the host path.

The runtime module runs each PrimFunc with NumPy on the host (:mod:`passhost_cmsis_nn.host`)
and carries the C source and header of the same PrimFuncs (:mod:`passhost_cmsis_nn.emit_c`)
as its source and files, which artifacts store under ``modules/cmsis-nn/``. Both are made from
the PrimFuncs alone, so loading an artifact rebuilds the same module from its TIR.
"""

from __future__ import annotations

from typing import Any

from passhost.ir import IRModule
from passhost.runtime import FunctionModule
from passhost_cmsis_nn.emit_c import emit_c
from passhost_cmsis_nn.features import features_of
from passhost_cmsis_nn.host import host_functions
from passhost_cmsis_nn.patterns import KIND

__all__ = ["tir_to_runtime"]


def tir_to_runtime(target: Any, mod: IRModule) -> FunctionModule:
    """The runtime module of the ``cmsis-nn`` PrimFuncs of ``mod`` for ``target``."""
    debug = bool(target.options["debug_last_error"])
    c = emit_c(mod, debug_last_error=debug)
    return FunctionModule(KIND, host_functions(mod, features_of(target), debug),
                          source=c.source, files=c.files())
