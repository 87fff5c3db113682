"""SimplifyInference: rewrite training-time operators into plain inference arithmetic.

- ``nn.batch_norm(x, gamma, beta, mean, var).0`` becomes ``x * scale + shift`` with
  ``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale``; fields 1 and 2
  (the moving mean and variance) become those arguments;
- ``nn.layer_norm`` becomes its decomposition with ``mean``;
- ``nn.dropout(x)`` becomes ``x``.

The parameters may be any expressions (variables or constants); FoldConstant later turns the
per-channel arithmetic on constants into one multiply and one add per batch norm. bfloat16
norms are unpacked in float32 and their result rounded to bfloat16 once, as the operators
compute them (bfloat16 steps would round after each one).
"""

from __future__ import annotations

from collections.abc import Callable

from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.ir.types import TensorType
from passhost.relay.expr import Call, Function, TupleGetItem, const
from passhost.relay.op import nn
from passhost.relay.op import reduce as rd
from passhost.relay.op import tensor as tn
from passhost.relay.transform.common import along_axis, optimisable
from passhost.relay.transform.function_pass import function_pass
from passhost.relay.visitor import ExprMutator
from passhost.transform.context import PassContext

__all__ = ["SimplifyInference"]


@function_pass(opt_level=0, name="SimplifyInference", required=("InferType",))
class SimplifyInference:
    """Unpack batch_norm and layer_norm into elementwise arithmetic; drop dropout."""

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` rewritten (itself when it has nothing to simplify)."""
        if not optimisable(func):
            return func
        return _Simplifier().visit(func)  # type: ignore[return-value]


def batch_norm_terms(call: Call, dtype: str) -> tuple[BaseExpr, BaseExpr]:
    """``(scale, shift)`` of an ``nn.batch_norm`` call on ``dtype`` data, as 1-D graph
    expressions."""
    _, gamma, beta, mean, var = call.args
    attrs = call.attrs
    eps = const(attrs.epsilon, dtype=dtype)
    if attrs.scale:
        scale = tn.divide(gamma, tn.sqrt(tn.add(var, eps)))
    else:
        scale = tn.rsqrt(tn.add(var, eps))
    mean_scaled = tn.multiply(mean, scale)
    shift = tn.subtract(beta, mean_scaled) if attrs.center else tn.negative(mean_scaled)
    return scale, shift


def unpack_batch_norm(call: Call, data_type: TensorType) -> BaseExpr:
    """Output 0 of the ``nn.batch_norm`` call as ``data * scale + shift``."""
    axis = call.attrs.axis % data_type.ndim
    scale, shift = batch_norm_terms(call, data_type.dtype)
    scaled = tn.multiply(call.args[0], along_axis(scale, axis, data_type.ndim))
    return tn.add(scaled, along_axis(shift, axis, data_type.ndim))


def unpack_layer_norm(call: Call, data_type: TensorType) -> BaseExpr:
    """The ``nn.layer_norm`` call as mean, centring, variance and scaling ops."""
    data, gamma, beta = call.args
    attrs = call.attrs
    ndim = data_type.ndim
    axis = attrs.axis % ndim
    centred = tn.subtract(data, rd.mean(data, axis=axis, keepdims=True))
    var = rd.mean(tn.multiply(centred, centred), axis=axis, keepdims=True)
    eps = const(attrs.epsilon, dtype=data_type.dtype)
    out = tn.divide(centred, tn.sqrt(tn.add(var, eps)))
    if attrs.scale:
        out = tn.multiply(out, along_axis(gamma, axis, ndim))
    if attrs.center:
        out = tn.add(out, along_axis(beta, axis, ndim))
    return out


def _unpacked(unpack: Callable[[Call, TensorType], BaseExpr], call: Call,
              data_type: TensorType) -> BaseExpr:
    """``unpack(call, data_type)``; a bfloat16 call is unpacked on float32 copies of its
    arguments and the result rounded to bfloat16 once."""
    if data_type.dtype != "bfloat16":
        return unpack(call, data_type)
    wide = Call(call.op, [tn.cast(a, dtype="float32") for a in call.args], call.attrs,
                span=call.span)
    return tn.cast(unpack(wide, TensorType(data_type.shape, "float32")), dtype="bfloat16")


class _Simplifier(ExprMutator):
    """Rewrites batch_norm projections, layer_norm and dropout calls."""

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """Dropout is the identity; layer_norm is unpacked; other calls are rebuilt."""
        if op is nn.dropout:
            return args[0]
        new = super().visit_call(call, op, args)
        if op is nn.layer_norm:
            return _unpacked(unpack_layer_norm, new, call.checked_type)  # type: ignore[arg-type]
        return new

    def visit_tuple_get_item(self, item: TupleGetItem, tuple_value: BaseExpr) -> BaseExpr:
        """Field 0 of a batch_norm is unpacked; fields 1 and 2 are the moving mean and
        variance it was given."""
        original = item.tuple_value
        if isinstance(original, Call) and original.op is nn.batch_norm:
            bn: Call = tuple_value  # type: ignore[assignment]
            if item.index == 0:
                return _unpacked(unpack_batch_norm, bn, original.checked_type.fields[0])
            return bn.args[item.index + 2]
        return super().visit_tuple_get_item(item, tuple_value)
