"""CanonicalizeOps: rewrite operators with a simpler equivalent in terms of basic ones.

``nn.bias_add(x, b, axis)`` becomes ``add(x, b)`` when ``axis`` is the last axis of ``x``,
else ``add(x, expand_dims(b, axis=1, num_newaxis=ndim - 1 - axis))``, so later passes
(layout conversion, fusion) only deal with broadcasting ``add``.
"""

from __future__ import annotations

from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Function
from passhost.relay.op import nn
from passhost.relay.op import tensor as tn
from passhost.relay.transform.common import along_axis, optimisable
from passhost.relay.visitor import ExprMutator
from passhost.transform.context import PassContext
from passhost.transform.passes import function_pass

__all__ = ["CanonicalizeOps"]


@function_pass(opt_level=3, name="CanonicalizeOps", required=("InferType",))
class CanonicalizeOps:
    """Rewrite ``nn.bias_add`` as a broadcasting ``add``."""

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` rewritten (itself when it has no ``nn.bias_add``)."""
        if not optimisable(func):
            return func
        return _Canonicalizer().visit(func)  # type: ignore[return-value]


def bias_add_as_add(call: Call, data: BaseExpr, bias: BaseExpr) -> Call:
    """The ``nn.bias_add`` ``call`` as ``add`` of ``data`` and ``bias`` (already rewritten
    arguments), the bias expanded to broadcast along the call's axis."""
    ndim = call.args[0].checked_type.ndim
    return tn.add(data, along_axis(bias, call.attrs.axis % ndim, ndim), span=call.span)


class _Canonicalizer(ExprMutator):
    """Rewrites each ``nn.bias_add`` call."""

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """``nn.bias_add`` becomes ``add``; other calls are rebuilt as usual."""
        if op is nn.bias_add:
            return bias_add_as_add(call, *args)
        return super().visit_call(call, op, args)
