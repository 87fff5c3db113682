"""The runtime: the Module protocol, the executor, compiled models and artifacts."""

from passhost.runtime.aligned import aligned_full
from passhost.runtime.artifact import ArtifactError, load_artifact, save_artifact
from passhost.runtime.compiled import CompiledModule
from passhost.runtime.executor import Executor, ExecutorError
from passhost.runtime.module import (
    FunctionModule,
    Module,
    NativeRunner,
    NativeStep,
    find_function,
)
from passhost.runtime.plan import ExecutorPlan, PlanError, Step, TensorEntry

__all__ = [
    "ArtifactError", "CompiledModule", "Executor", "ExecutorError", "ExecutorPlan",
    "FunctionModule", "Module", "NativeRunner", "NativeStep", "PlanError", "Step",
    "TensorEntry", "aligned_full", "find_function", "load", "load_artifact", "save_artifact",
]

#: ``passhost.runtime.load(path)``: the compiled model in an artifact file.
load = load_artifact
