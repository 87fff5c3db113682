"""The build flow: partitioning, default lowering, executor codegen (docs/targets.md)."""

from passhost.backend.build import BuildError, build, build_passes
from passhost.backend.lower_primitive import LoweringError, lower_primitive
from passhost.backend.lower_te import LowerTE
from passhost.backend.memory_plan import plan_executor
from passhost.backend.vector_math import VECTOR_MATH_SOURCE

__all__ = [
    "VECTOR_MATH_SOURCE", "BuildError", "LowerTE", "LoweringError", "build", "build_passes",
    "lower_primitive", "plan_executor",
]
