"""Converters of the ONNX comparison and logic, bitwise operators, unary math and activations.

Activations without a graph operator of their own become compositions of elementwise graph
operators (ELU is ``where(x > 0, x, alpha * (exp(x) - 1))``); their constants take the
input's dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import along_softmax_axis
from passhost.frontend.onnx_registry import Converter, Entry
from passhost.relay import nn
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS", "legacy_broadcast"]


def _scalar(ctx: NodeContext, value: float) -> Expr:
    """``value`` as a constant of input 0's dtype."""
    return const(value, ctx.dtype(0))


def _float_attr(ctx: NodeContext, name: str, default: float) -> float:
    return float(ctx.attr(name, default))


# -- broadcasting binary operators ---------------------------------------------------------------
def legacy_broadcast(ctx: NodeContext) -> tuple[Expr, Expr]:
    """Inputs 0 and 1 of a binary operator of opset 6 or older, where broadcasting is off
    unless attribute ``broadcast`` is 1 and then aligns input 1 with input 0's axes from
    attribute ``axis`` (default: with its last axes)."""
    a, b = ctx.input(0), ctx.input(1)
    sa, sb = ctx.shape(0), ctx.shape(1)
    if not ctx.attr("broadcast", 0):
        if sa != sb:
            raise ctx.error(f"expected inputs of one shape (broadcast=0), found {list(sa)} and "
                            f"{list(sb)}")
        return a, b
    axis = ctx.attr("axis")
    if axis is None:
        start = len(sa) - len(sb)
    elif -len(sa) <= int(axis) < len(sa):
        start = int(axis) % len(sa)
    else:
        raise ctx.error(f"expected an axis in [{-len(sa)}, {len(sa)}), found {axis}")
    covered = sa[start:start + len(sb)]
    if len(sb) > len(sa) - start or any(db not in (1, da) for da, db in zip(covered, sb)):
        raise ctx.error(f"expected input 1 (shape {list(sb)}) to match the axes of input 0 "
                        f"(shape {list(sa)}) from axis {start}")
    trailing = len(sa) - start - len(sb)
    if trailing:
        b = relay.reshape(b, newshape=(*sb, *([1] * trailing)))
    return a, b


def _binary(op: Callable[[Expr, Expr], Expr], legacy: bool = False) -> Entry:
    """The converter of a broadcasting binary operator; with ``legacy``, versions before 7 use
    the ``broadcast`` and ``axis`` attributes."""
    def convert(ctx: NodeContext) -> Value:
        return op(ctx.input(0), ctx.input(1))

    def convert_legacy(ctx: NodeContext) -> Value:
        return op(*legacy_broadcast(ctx))

    convert.__doc__ = f"Becomes ``{op}``, with NumPy broadcasting."
    convert_legacy.__doc__ = (f"Becomes ``{op}``; before opset 7, inputs broadcast only with "
                              f"attribute ``broadcast=1``, input 1 aligned at ``axis``.")
    return {1: convert_legacy, 7: convert} if legacy else convert


def _unary(op: Callable[[Expr], Expr]) -> Converter:
    """The converter of a unary elementwise operator."""
    def convert(ctx: NodeContext) -> Value:
        return op(ctx.input(0))

    convert.__doc__ = f"Becomes ``{op}``."
    return convert


@computed_in_float32
def _pow(ctx: NodeContext) -> Value:
    """Becomes ``power``, the exponent first cast to the base's dtype."""
    base, exponent = ctx.input(0), ctx.input(1)
    dtype = ctx.dtype(0)
    if ctx.dtype(1) != dtype:
        exponent = relay.cast(exponent, dtype=dtype)
    return relay.power(base, exponent)


def _pow_legacy(ctx: NodeContext) -> Value:
    """Becomes ``power``; before opset 7, inputs broadcast only with attribute
    ``broadcast=1``, the exponent aligned at ``axis``."""
    return relay.power(*legacy_broadcast(ctx))


def _leaky_relu(ctx: NodeContext) -> Value:
    """Becomes ``nn.leaky_relu`` (attribute ``alpha``, default 0.01)."""
    return nn.leaky_relu(ctx.input(0), alpha=_float_attr(ctx, "alpha", 0.01))


def _clip_bound(ctx: NodeContext, index: int) -> float | Expr | None:
    """Clip's bound at input ``index``: a number when known while compiling, an expression
    when computed, None when absent."""
    if not ctx.has_input(index):
        return None
    if not ctx.is_known(index):
        return ctx.input(index)
    value = ctx.known(index)
    if value.size != 1:
        raise ctx.error(f"expected a scalar bound (input {index}), found shape "
                        f"{list(value.shape)}")
    return float(value.reshape(()))


def _clip(ctx: NodeContext) -> Value:
    """Becomes ``clip`` to bounds known while compiling (before opset 11 the attributes
    ``min`` and ``max``), or ``maximum``/``minimum`` with computed bounds."""
    if ctx.opset >= 11:
        lo, hi = _clip_bound(ctx, 1), _clip_bound(ctx, 2)
    else:
        lo, hi = float(ctx.attr("min", -math.inf)), float(ctx.attr("max", math.inf))
    if not isinstance(lo, Expr) and not isinstance(hi, Expr):
        return relay.clip(ctx.input(0), a_min=-math.inf if lo is None else lo,
                          a_max=math.inf if hi is None else hi)
    out = ctx.input(0)
    if lo is not None:
        out = relay.maximum(out, lo if isinstance(lo, Expr) else _scalar(ctx, lo))
    if hi is not None:
        out = relay.minimum(out, hi if isinstance(hi, Expr) else _scalar(ctx, hi))
    return out


# -- logic and comparisons -----------------------------------------------------------------------
def _is_inf(ctx: NodeContext) -> Value:
    """Becomes ``isinf``, or ``equal`` to +inf or -inf when only one sign is detected."""
    positive = bool(ctx.attr("detect_positive", 1))
    negative = bool(ctx.attr("detect_negative", 1))
    x = ctx.input(0)
    if positive and negative:
        return relay.isinf(x)
    if positive or negative:
        return relay.equal(x, _scalar(ctx, math.inf if positive else -math.inf))
    return relay.logical_and(relay.isinf(x), const(False))


def _where(ctx: NodeContext) -> Value:
    """Becomes ``where``: X where the condition holds, else Y, all three broadcast together."""
    return relay.where(ctx.input(0), ctx.input(1), ctx.input(2))


def _bit_shift(ctx: NodeContext) -> Value:
    """Becomes ``left_shift`` or ``right_shift`` (attribute ``direction``); signed integers
    shift as from opset 28 (arithmetic right shifts), and amounts that are negative or not
    less than the bit width give the sign fill alone."""
    direction = ctx.required_attr("direction")
    ops = {"LEFT": relay.left_shift, "RIGHT": relay.right_shift}
    if direction not in ops:
        raise ctx.error(f"expected direction 'LEFT' or 'RIGHT', found {direction!r}")
    return ops[direction](ctx.input(0), ctx.input(1))


def _mod(ctx: NodeContext) -> Value:
    """Becomes ``floor_mod`` (fmod=0: the sign of the divisor, as Python's %) or ``mod``
    (fmod=1: the sign of the dividend, as C's fmod), on integers and floats; an integer
    remainder by zero gives 0."""
    fmod = ctx.attr("fmod", 0)
    if fmod not in (0, 1):
        raise ctx.error(f"expected fmod 0 or 1, found {fmod}")
    return (relay.mod if fmod else relay.floor_mod)(ctx.input(0), ctx.input(1))


# -- unary math ----------------------------------------------------------------------------------
def _reciprocal(ctx: NodeContext) -> Value:
    """Becomes ``divide(1, x)``."""
    return relay.divide(_scalar(ctx, 1.0), ctx.input(0))


@computed_in_float32
def _softsign(ctx: NodeContext) -> Value:
    """Becomes ``x / (1 + abs(x))``."""
    x = ctx.input(0)
    return relay.divide(x, relay.add(relay.abs(x), _scalar(ctx, 1.0)))


# -- activations ---------------------------------------------------------------------------------
def _prelu(ctx: NodeContext) -> Value:
    """Becomes ``where(x < 0, x * slope, x)``; the slope broadcasts to the input's shape
    (before opset 7, a 1-D slope with one value per channel applies along axis 1)."""
    x, slope = ctx.input(0), ctx.input(1)
    sx, ss = ctx.shape(0), ctx.shape(1)
    if ctx.opset < 7 and len(ss) == 1 and ss[0] != 1 and len(sx) >= 2:
        if ss[0] != sx[1]:
            raise ctx.error(f"expected one slope per channel ({sx[1]}), found {ss[0]}")
        slope = relay.reshape(slope, newshape=(ss[0], *([1] * (len(sx) - 2))))
        ss = (ss[0], *([1] * (len(sx) - 2)))
    try:
        fits = np.broadcast_shapes(sx, ss) == tuple(sx)
    except ValueError:
        fits = False
    if not fits:
        raise ctx.error(f"expected a slope broadcastable to the input's shape {list(sx)}, "
                        f"found shape {list(ss)}")
    return relay.where(relay.less(x, _scalar(ctx, 0)), relay.multiply(x, slope), x)


def _exp_linear(ctx: NodeContext, x: Expr, alpha: float) -> Expr:
    """``x`` where it is positive, else ``alpha * (exp(x) - 1)``."""
    below = relay.multiply(_scalar(ctx, alpha),
                           relay.subtract(relay.exp(x), _scalar(ctx, 1.0)))
    return relay.where(relay.greater(x, _scalar(ctx, 0)), x, below)


@computed_in_float32
def _elu(ctx: NodeContext) -> Value:
    """Becomes ``where(x > 0, x, alpha * (exp(x) - 1))``."""
    return _exp_linear(ctx, ctx.input(0), _float_attr(ctx, "alpha", 1.0))


@computed_in_float32
def _selu(ctx: NodeContext) -> Value:
    """Becomes ``gamma * where(x > 0, x, alpha * (exp(x) - 1))``."""
    alpha = _float_attr(ctx, "alpha", 1.67326319217681884765625)
    gamma = _float_attr(ctx, "gamma", 1.05070102214813232421875)
    return relay.multiply(_scalar(ctx, gamma), _exp_linear(ctx, ctx.input(0), alpha))


@computed_in_float32
def _celu(ctx: NodeContext) -> Value:
    """Becomes ``where(x > 0, x, alpha * (exp(x / alpha) - 1))``; alpha must not be 0."""
    alpha = _float_attr(ctx, "alpha", 1.0)
    if alpha == 0:
        raise ctx.error("expected a non-zero alpha, found 0.0")
    x = ctx.input(0)
    below = relay.multiply(_scalar(ctx, alpha), relay.subtract(
        relay.exp(relay.divide(x, _scalar(ctx, alpha))), _scalar(ctx, 1.0)))
    return relay.where(relay.greater(x, _scalar(ctx, 0)), x, below)


def _hard_sigmoid_of(ctx: NodeContext, alpha: float, beta: float) -> Expr:
    scaled = relay.add(relay.multiply(ctx.input(0), _scalar(ctx, alpha)), _scalar(ctx, beta))
    return relay.clip(scaled, a_min=0.0, a_max=1.0)


@computed_in_float32
def _hard_sigmoid(ctx: NodeContext) -> Value:
    """Becomes ``clip(alpha * x + beta, 0, 1)``."""
    return _hard_sigmoid_of(ctx, _float_attr(ctx, "alpha", 0.2), _float_attr(ctx, "beta", 0.5))


@computed_in_float32
def _hard_swish(ctx: NodeContext) -> Value:
    """Becomes ``x * clip(x / 6 + 1 / 2, 0, 1)``."""
    return relay.multiply(ctx.input(0), _hard_sigmoid_of(ctx, 1.0 / 6.0, 0.5))


@computed_in_float32
def _mish(ctx: NodeContext) -> Value:
    """Becomes ``x * tanh(nn.softplus(x))``."""
    x = ctx.input(0)
    return relay.multiply(x, relay.tanh(nn.softplus(x)))


_SQRT_HALF = math.sqrt(0.5)
_SQRT_TWO_OVER_PI = math.sqrt(2.0 / math.pi)


@computed_in_float32
def _gelu(ctx: NodeContext) -> Value:
    """Becomes ``x / 2 * (1 + erf(x / sqrt(2)))`` or, with approximate="tanh",
    ``x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))``."""
    approximate = ctx.attr("approximate", "none")
    x = ctx.input(0)
    if approximate == "none":
        inner = relay.erf(relay.multiply(x, _scalar(ctx, _SQRT_HALF)))
    elif approximate == "tanh":
        cubic = relay.multiply(relay.multiply(relay.multiply(x, x), x), _scalar(ctx, 0.044715))
        inner = relay.tanh(relay.multiply(relay.add(x, cubic), _scalar(ctx, _SQRT_TWO_OVER_PI)))
    else:
        raise ctx.error(f"expected approximate 'none' or 'tanh', found {approximate!r}")
    half = relay.multiply(x, _scalar(ctx, 0.5))
    return relay.multiply(half, relay.add(inner, _scalar(ctx, 1.0)))


def _thresholded_relu(ctx: NodeContext) -> Value:
    """Becomes ``where(x > alpha, x, 0)``."""
    x = ctx.input(0)
    alpha = _float_attr(ctx, "alpha", 1.0)
    return relay.where(relay.greater(x, _scalar(ctx, alpha)), x, _scalar(ctx, 0))


def _shrink(ctx: NodeContext) -> Value:
    """Becomes ``where(x < -lambd, x + bias, where(x > lambd, x - bias, 0))``; integer inputs
    are computed in float64 and cast back (truncating toward zero)."""
    lambd, bias = _float_attr(ctx, "lambd", 0.5), _float_attr(ctx, "bias", 0.0)
    dtype = ctx.dtype(0)
    x = ctx.input(0)
    work = dtype if dtype.startswith("float") else "float64"
    if work != dtype:
        x = relay.cast(x, dtype=work)

    def c(value: float) -> Expr:
        return const(value, work)

    out = relay.where(relay.less(x, c(-lambd)), relay.add(x, c(bias)),
                      relay.where(relay.greater(x, c(lambd)), relay.subtract(x, c(bias)), c(0)))
    return out if work == dtype else relay.cast(out, dtype=dtype)


@computed_in_float32
def _swish(ctx: NodeContext) -> Value:
    """Becomes ``x * sigmoid(alpha * x)`` (with alpha 1, CanonicalizeOps then makes float32
    and float64 ones ``nn.silu``)."""
    x = ctx.input(0)
    alpha = _float_attr(ctx, "alpha", 1.0)
    scaled = x if alpha == 1.0 else relay.multiply(x, _scalar(ctx, alpha))
    return relay.multiply(x, relay.sigmoid(scaled))


def _log_softmax(ctx: NodeContext) -> Value:
    """Becomes ``nn.log_softmax``; before opset 13 the input is coerced to 2-D at ``axis``
    (default 1) and normalised over all axes from it."""
    return along_softmax_axis(ctx, nn.log_softmax)


def _hardmax(ctx: NodeContext) -> Value:
    """Becomes ``nn.hardmax`` (1 at the first maximum); before opset 13 the input is coerced
    to 2-D at ``axis`` (default 1) and the maximum is over all axes from it."""
    return along_softmax_axis(ctx, nn.hardmax)


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Add": _binary(relay.add, legacy=True),
    "Sub": _binary(relay.subtract, legacy=True),
    "Mul": _binary(relay.multiply, legacy=True),
    "Div": _binary(relay.divide, legacy=True),
    "Pow": {1: _pow_legacy, 7: _pow},
    "Relu": _unary(nn.relu),
    "LeakyRelu": _leaky_relu,
    "Clip": _clip,
    "Sigmoid": _unary(relay.sigmoid),
    "Tanh": _unary(relay.tanh),
    "Sqrt": _unary(relay.sqrt),
    "Erf": _unary(relay.erf),
    "Exp": _unary(relay.exp),
    "Equal": _binary(relay.equal, legacy=True),
    "Less": _binary(relay.less, legacy=True),
    "Greater": _binary(relay.greater, legacy=True),
    "LessOrEqual": _binary(relay.less_equal),
    "GreaterOrEqual": _binary(relay.greater_equal),
    "Not": _unary(relay.logical_not),
    "And": _binary(relay.logical_and, legacy=True),
    "Or": _binary(relay.logical_or, legacy=True),
    "Xor": _binary(relay.logical_xor, legacy=True),
    "Where": _where,
    "IsNaN": _unary(relay.isnan),
    "IsInf": _is_inf,
    "BitwiseNot": _unary(relay.bitwise_not),
    "BitwiseAnd": _binary(relay.bitwise_and),
    "BitwiseOr": _binary(relay.bitwise_or),
    "BitwiseXor": _binary(relay.bitwise_xor),
    "BitShift": _bit_shift,
    "Mod": _mod,
    "Neg": _unary(relay.negative),
    "Abs": _unary(relay.abs),
    "Log": _unary(relay.log),
    "Reciprocal": _reciprocal,
    "Floor": _unary(relay.floor),
    "Ceil": _unary(relay.ceil),
    "Round": _unary(relay.round),
    "Sign": _unary(relay.sign),
    "Sin": _unary(relay.sin),
    "Cos": _unary(relay.cos),
    "Tan": _unary(relay.tan),
    "Asin": _unary(relay.asin),
    "Acos": _unary(relay.acos),
    "Atan": _unary(relay.atan),
    "Sinh": _unary(relay.sinh),
    "Cosh": _unary(relay.cosh),
    "Asinh": _unary(relay.asinh),
    "Acosh": _unary(relay.acosh),
    "Atanh": _unary(relay.atanh),
    "Softsign": _softsign,
    "Softplus": _unary(nn.softplus),
    "PRelu": _prelu,
    "Elu": _elu,
    "Selu": _selu,
    "Celu": _celu,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
    "Mish": _mish,
    "Gelu": _gelu,
    "ThresholdedRelu": _thresholded_relu,
    "Shrink": _shrink,
    "Swish": _swish,
    "LogSoftmax": _log_softmax,
    "Hardmax": _hardmax,
}
