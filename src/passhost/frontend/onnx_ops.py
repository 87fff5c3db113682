"""Converters of the ONNX dense algebra (Gemm, MatMul), BatchNormalization and Softmax,
and the helpers other converter modules share (axes, any-rank matmul, softmax axes).

Each converter takes a :class:`NodeContext` and returns one value per node output (or a
single value): a graph expression, or a NumPy array when the result is known while
importing (shapes and constants: with static shapes every shape computation folds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Entry
from passhost.relay import nn
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS", "along_softmax_axis", "axis_index", "matmul_any_rank"]


def axis_index(ctx: NodeContext, axis: int, ndim: int) -> int:
    """``axis`` (negative counts from the end) as an index into ``ndim`` axes."""
    if not -ndim <= axis < ndim:
        raise ctx.error(f"expected an axis in [{-ndim}, {ndim}), found {axis}")
    return axis % ndim


def _only_first_output(ctx: NodeContext) -> None:
    extra = [name for name in ctx.node.output[1:] if name]
    if extra:
        raise ctx.error(f"only the first output is supported in inference, found outputs "
                        f"{extra} used")


# -- dense algebra -------------------------------------------------------------------------------
@computed_in_float32
def _gemm(ctx: NodeContext) -> Value:
    """Becomes ``nn.dense`` (B transposed unless ``transB``, A when ``transA``), scaled by
    ``alpha``, plus ``beta * C`` broadcast when C is given."""
    a, b = ctx.input(0), ctx.input(1)
    if ctx.attr("transA", 0):
        a = relay.transpose(a, axes=(1, 0))
    if not ctx.attr("transB", 0):
        b = relay.transpose(b, axes=(1, 0))
    dtype = ctx.dtype(0)
    out = nn.dense(a, b)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        out = relay.multiply(out, const(alpha, dtype))
    if ctx.has_input(2):
        c = ctx.input(2)
        if beta != 1.0:
            c = relay.multiply(c, const(beta, dtype))
        out = relay.add(out, c)
    return out


def matmul_any_rank(a: Expr, b: Expr, sa: Sequence[int], sb: Sequence[int]) -> Expr:
    """ONNX (NumPy) ``a @ b`` of shapes ``sa`` and ``sb``, either of which may be 1-D."""
    if len(sa) >= 2 and len(sb) >= 2:
        return relay.matmul(a, b)
    out_shape = np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]))
    out_shape = (*out_shape, *sa[-2:-1], *sb[-1:]) if len(sb) >= 2 else (*out_shape, *sa[-2:-1])
    if len(sa) == 1:
        a = relay.reshape(a, newshape=(1, sa[0]))
    if len(sb) == 1:
        b = relay.reshape(b, newshape=(sb[0], 1))
    return relay.reshape(relay.matmul(a, b), newshape=tuple(out_shape))


def _matmul(ctx: NodeContext) -> Value:
    """Becomes ``matmul`` (NumPy semantics: broadcast batch axes; a 1-D side is reshaped to
    a matrix and back)."""
    return matmul_any_rank(ctx.input(0), ctx.input(1), ctx.shape(0), ctx.shape(1))


# -- normalisation -------------------------------------------------------------------------------
def _batch_norm(ctx: NodeContext) -> Value:
    """Becomes ``nn.batch_norm`` over axis 1 with the given statistics (inference only:
    ``training_mode=1`` and the running-statistics outputs are errors)."""
    _only_first_output(ctx)
    if ctx.attr("training_mode", 0):
        raise ctx.error("expected training_mode=0 (inference), found 1")
    out = nn.batch_norm(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4),
                        axis=1, epsilon=float(ctx.attr("epsilon", 1e-5)))
    return out[0]


def along_softmax_axis(ctx: NodeContext, op: Callable[..., Expr]) -> Value:
    """``op(data, axis=...)`` with the axis semantics of Softmax, LogSoftmax and Hardmax: from
    opset 13 along attribute ``axis`` (default -1); before, on the input coerced to 2-D at
    ``axis`` (default 1: the axes before it become rows, the rest columns), along the rows."""
    shape = ctx.shape(0)
    default = -1 if ctx.opset >= 13 else 1
    axis = axis_index(ctx, int(ctx.attr("axis", default)), len(shape))
    if ctx.opset >= 13 or axis == len(shape) - 1:
        return op(ctx.input(0), axis=axis)
    flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    out = op(relay.reshape(ctx.input(0), newshape=flat), axis=-1)
    return relay.reshape(out, newshape=shape)


def _softmax(ctx: NodeContext) -> Value:
    """Becomes ``nn.softmax``; before opset 13 the input is coerced to 2-D at ``axis``."""
    return along_softmax_axis(ctx, nn.softmax)




#: The converter of each supported ONNX operator type.
CONVERTERS: dict[str, Entry] = {
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_norm,
    "Softmax": _softmax,
}
