"""CanonicalizeOps: rewrite operators with a simpler equivalent in terms of basic ones.

``nn.bias_add(x, b, axis)`` becomes ``add(x, b)`` when ``axis`` is the last axis of ``x``,
else ``add(x, expand_dims(b, axis=1, num_newaxis=ndim - 1 - axis))``, so later passes
(layout conversion, fusion) only deal with broadcasting ``add``.

``power(x, c)`` of a floating-point ``x`` and a constant exponent ``c`` that is 2 everywhere
becomes ``multiply(x, x)``, and, for float16 and float32, one that is 3 everywhere becomes
the product ``x * x * x`` computed in float64 and cast back. The square of a float is
rounded once, as a correctly rounded ``pow`` rounds it; the float64 cube of a float32 is
correctly rounded after the cast but for double rounding's rare ties, where NumPy's
vectorised float32 ``pow`` is one ulp off on about a tenth of cubes. A power is a library
call per element where a product is one vector instruction (GPT-2's GELU spent most of its
time in ``pow(x, 3)``).

``multiply(x, sigmoid(x))`` and ``multiply(sigmoid(x), x)`` of a float32 or float64 ``x``
(the same expression on both sides, after ``x``'s own rewrite) become ``nn.silu(x)``, which
computes exactly that product. Where ``x`` is a convolution, the product reads it twice, so
FuseOps leaves it apart from the convolution; ``nn.silu`` reads it once and fuses into it,
and the cpu target's kernels apply it while they write their output (EfficientNet's
activations). float16 and bfloat16 products stay: they round the sigmoid before the
product, ``nn.silu`` rounds once.

``nn.avg_pool2d`` of a float whose one window is the whole unpadded, undilated plane
becomes ``nn.global_avg_pool2d`` (the same mean, an operator with a compiled loop where the
window pool is a library call: EfficientNet-B0's head).
"""

from __future__ import annotations

from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Constant, Function
from passhost.relay.op import nn
from passhost.relay.op import tensor as tn
from passhost.relay.transform.common import along_axis, optimisable
from passhost.relay.transform.function_pass import function_pass
from passhost.relay.visitor import ExprMutator
from passhost.transform.context import PassContext

__all__ = ["CanonicalizeOps"]

_FLOAT_DTYPES = ("float16", "float32", "float64")
#: The dtypes in which ``nn.silu`` rounds as ``multiply(x, sigmoid(x))`` does.
_SILU_DTYPES = ("float32", "float64")


@function_pass(opt_level=3, name="CanonicalizeOps", required=("InferType",))
class CanonicalizeOps:
    """Rewrite ``nn.bias_add`` as a broadcasting ``add``, powers by 2 and 3 as products,
    ``x * sigmoid(x)`` as ``nn.silu(x)``, a whole-plane average pool as a global one."""

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` rewritten (itself when there is nothing to rewrite)."""
        if not optimisable(func):
            return func
        return _Canonicalizer().visit(func)  # type: ignore[return-value]


def bias_add_as_add(call: Call, data: BaseExpr, bias: BaseExpr) -> Call:
    """The ``nn.bias_add`` ``call`` as ``add`` of ``data`` and ``bias`` (already rewritten
    arguments), the bias expanded to broadcast along the call's axis."""
    ndim = call.args[0].checked_type.ndim
    return tn.add(data, along_axis(bias, call.attrs.axis % ndim, ndim), span=call.span)


def _constant_exponent(call: Call, exponent: BaseExpr) -> float | None:
    """The value of ``power``'s exponent when it is a constant with one value everywhere
    that broadcasts to no larger shape than the base's; else None."""
    base = call.args[0].checked_type
    if not (isinstance(exponent, Constant) and base.dtype in _FLOAT_DTYPES):
        return None
    data = exponent.data
    if data.ndim > base.ndim or any(d != 1 for d in data.shape) or data.dtype != base.dtype:
        return None
    return float(data.reshape(()))


def power_as_products(call: Call, base: BaseExpr, exponent: BaseExpr) -> BaseExpr | None:
    """``power(base, 2)`` or ``power(base, 3)`` as products that round the same, or None."""
    value = _constant_exponent(call, exponent)
    dtype = call.args[0].checked_type.dtype
    if value == 2.0:
        return tn.multiply(base, base, span=call.span)
    if value == 3.0 and dtype in ("float16", "float32"):
        wide = tn.cast(base, dtype="float64", span=call.span)
        cube = tn.multiply(tn.multiply(wide, wide, span=call.span), wide, span=call.span)
        return tn.cast(cube, dtype=dtype, span=call.span)
    return None


def product_as_silu(call: Call, lhs: BaseExpr, rhs: BaseExpr) -> BaseExpr | None:
    """The ``multiply`` ``call`` of ``lhs`` and ``rhs`` (already rewritten arguments) as
    ``nn.silu(x)`` when one of them is ``sigmoid(x)`` of the other, ``x`` float32 or
    float64; else None."""
    if call.args[0].checked_type.dtype not in _SILU_DTYPES:
        return None
    for x, other in ((lhs, rhs), (rhs, lhs)):
        if isinstance(other, Call) and other.op is tn.sigmoid and other.args[0] is x:
            return nn.silu(x, span=call.span)
    return None


def whole_plane_pool(call: Call, data: BaseExpr) -> BaseExpr | None:
    """The ``nn.avg_pool2d`` ``call`` of float ``data`` (already rewritten) as
    ``nn.global_avg_pool2d`` when its one window is the whole unpadded plane; else None."""
    attrs, ty = call.attrs, call.args[0].checked_type
    spatial = (ty.shape[2], ty.shape[3]) if attrs.layout == "NCHW" else (ty.shape[1],
                                                                        ty.shape[2])
    if (ty.dtype not in _FLOAT_DTYPES or tuple(attrs.pool_size) != spatial
            or any(attrs.padding) or tuple(attrs.dilation) != (1, 1)
            or attrs.layout not in ("NCHW", "NHWC")):
        return None
    return nn.global_avg_pool2d(data, layout=attrs.layout, out_layout=attrs.out_layout,
                                span=call.span)


class _Canonicalizer(ExprMutator):
    """Rewrites each ``nn.bias_add`` call, each ``power`` by a constant 2 or 3, each
    product of a value and its sigmoid and each whole-plane average pool."""

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """``nn.bias_add`` becomes ``add``, a power by 2 or 3 products, ``x * sigmoid(x)``
        ``nn.silu(x)``; other calls are rebuilt as usual."""
        if op is nn.bias_add:
            return bias_add_as_add(call, *args)
        if op is tn.power and (products := power_as_products(call, *args)) is not None:
            return products
        if op is tn.multiply and (silu := product_as_silu(call, *args)) is not None:
            return silu
        if op is nn.avg_pool2d and (pool := whole_plane_pool(call, *args)) is not None:
            return pool
        return super().visit_call(call, op, args)
