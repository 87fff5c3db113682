"""The runtime: the Module protocol, the executor, compiled models and artifacts, and the
kernel-call convention of lowered PrimFuncs (which the artifact loader checks)."""

from passhost.runtime.aligned import aligned_full
from passhost.runtime.artifact import ArtifactError, load_artifact, save_artifact
from passhost.runtime.compiled import CompiledModule
from passhost.runtime.executor import Executor, ExecutorError
from passhost.runtime.kernel_call import (
    COPY,
    KernelCall,
    KernelCallError,
    decode_kernel_call,
    kernel_call,
)
from passhost.runtime.module import (
    FunctionModule,
    Module,
    NativeRunner,
    NativeStep,
    find_function,
)
from passhost.runtime.plan import ExecutorPlan, PlanError, Step, TensorEntry

__all__ = [
    "COPY", "ArtifactError", "CompiledModule", "Executor", "ExecutorError", "ExecutorPlan",
    "FunctionModule", "KernelCall", "KernelCallError", "Module", "NativeRunner", "NativeStep",
    "PlanError", "Step", "TensorEntry", "aligned_full", "decode_kernel_call", "find_function",
    "kernel_call", "load", "load_artifact", "save_artifact",
]

#: ``passhost.runtime.load(path)``: the compiled model in an artifact file.
load = load_artifact
