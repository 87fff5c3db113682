"""InferType: type every graph function of the module.

Types are cached on the nodes, so the pass returns the module itself; what it adds is the
check: a module that does not type-check raises an :class:`~passhost.errors.IRTypeError`
naming the operator and argument, noted with the pass (and any enclosing passes).
"""

from __future__ import annotations

from passhost.ir.module import IRModule
from passhost.relay.expr import Function
from passhost.relay.type_infer import infer_type
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["InferType"]


@module_pass(opt_level=0, name="InferType")
class InferType:
    """Infer (and check) the type of every graph function; the module is returned as is."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Type each graph function, in module order."""
        for func in mod.functions.values():
            if isinstance(func, Function):
                infer_type(func)
        return mod
