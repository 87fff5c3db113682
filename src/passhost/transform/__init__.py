"""The pass manager: passes, ``Sequential``, ``PassContext``, the pass registry.

The API follows TVM's ``tvm.transform`` so code written for it ports line for line; the
behaviour is the contract of ``docs/spec/pass-instruments.md``. The per-function passes live
with their IR, as in TVM: ``passhost.relay.transform.function_pass`` and
``passhost.tir.transform.prim_func_pass``.
"""

from passhost.transform.context import IMMUTABLE_MODULE, PassContext, VetoOverruledWarning
from passhost.transform.info import PassInfo
from passhost.transform.passes import (
    ModulePass,
    Pass,
    PerFunctionPass,
    Sequential,
    mark_always_run,
    module_pass,
    pass_decorator,
)
from passhost.transform.pipeline import (
    PassElement,
    PassTextError,
    Pipeline,
    PipelineError,
    SequentialElement,
    build_pipeline,
    format_pipeline,
    parse_pipeline,
    pass_to_element,
)
from passhost.transform.print_ir import PrintIR
from passhost.transform.registry import get_pass, list_passes, pass_spec

__all__ = [
    "IMMUTABLE_MODULE", "ModulePass", "Pass", "PassContext", "PassElement", "PassInfo",
    "PassTextError", "PerFunctionPass", "Pipeline", "PipelineError", "PrintIR", "Sequential",
    "SequentialElement", "VetoOverruledWarning", "build_pipeline", "format_pipeline",
    "get_pass", "list_passes", "mark_always_run", "module_pass", "parse_pipeline",
    "pass_decorator", "pass_spec", "pass_to_element",
]
