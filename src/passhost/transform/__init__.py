"""The pass manager: passes, ``Sequential``, ``PassContext``, the pass registry.

The API follows TVM's ``tvm.transform`` so code written for it ports line for line; the
behaviour is the contract of ``docs/spec/pass-instruments.md``.
"""

from passhost.transform.context import IMMUTABLE_MODULE, PassContext, VetoOverruledWarning
from passhost.transform.info import PassInfo
from passhost.transform.passes import (
    FunctionPass,
    ModulePass,
    Pass,
    PrimFuncPass,
    Sequential,
    function_pass,
    mark_always_run,
    module_pass,
    prim_func_pass,
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
    "IMMUTABLE_MODULE", "FunctionPass", "ModulePass", "Pass", "PassContext", "PassElement",
    "PassInfo", "PassTextError", "Pipeline", "PipelineError", "PrimFuncPass", "PrintIR",
    "Sequential", "SequentialElement", "build_pipeline", "format_pipeline",
    "function_pass", "get_pass", "list_passes", "mark_always_run", "module_pass",
    "VetoOverruledWarning", "parse_pipeline", "pass_spec", "pass_to_element",
    "prim_func_pass",
]
