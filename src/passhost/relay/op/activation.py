"""Activation functions of the ``nn`` namespace: ``nn.softmax`` and ``nn.log_softmax``,
``nn.leaky_relu``, ``nn.softplus``, ``nn.silu`` and ``nn.hardmax``.

Most activations (ELU, SELU, GELU, hard sigmoid, ...) are compositions of elementwise
operators and have no operator of their own; these are primitives. Softmax and its log
subtract the maximum along their axis first, so that no exponential overflows; ``softplus``
needs a form that neither overflows nor loses small values; ``hardmax`` picks the first
maximum; ``silu`` (``x * sigmoid(x)``, which CanonicalizeOps makes of that product) is one
elementwise operator where the product reads ``x`` twice, so that FuseOps can fuse it into
the convolution or dense layer before it and a kernel apply it as it writes its output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from passhost import te
from passhost.ir.attrs import Attrs, attrs_class, float_field, int_field
from passhost.ir.types import ANY_FLOAT_DTYPES, TensorType, Type
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.elemwise_te import acc_dtype, float_const, np_maximum, unary_compute
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, define_op
from passhost.relay.op.search import arg_extreme_te
from passhost.relay.op.te_reduce import reduce_over, reduced_index, widen_tensor
from passhost.relay.op.tensor import float_rel, multiply, sigmoid, unary_op
from passhost.tir.expr import PrimExpr, const

__all__ = [
    "softmax", "log_softmax", "leaky_relu", "softplus", "silu", "hardmax",
    "SoftmaxAttrs", "LeakyReluAttrs",
]


# -- nn.softmax / nn.log_softmax -------------------------------------------------------------
@attrs_class
class SoftmaxAttrs(Attrs):
    """Attributes of ``nn.softmax`` and ``nn.log_softmax``."""

    axis: int = int_field(-1)


def _float_axis_rel(args: ArgTypes, attrs: SoftmaxAttrs | HardmaxAttrs) -> Type:
    """One floating-point tensor with a valid ``axis``; the result has its type."""
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    normalize_axis(args, "axis", attrs.axis, data.ndim)
    return data


def _shifted(attrs: SoftmaxAttrs, data: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    axis = attrs.axis % data.ndim
    x = data.astype(acc_float(data.dtype))
    z = x - x.max(axis=axis, keepdims=True, initial=-np.inf)  # an empty axis has no max
    return z, np.exp(z), axis


def _softmax(attrs: SoftmaxAttrs, data: np.ndarray) -> np.ndarray:
    _, e, axis = _shifted(attrs, data)
    return (e / e.sum(axis=axis, keepdims=True)).astype(data.dtype, copy=False)


def _log_softmax(attrs: SoftmaxAttrs, data: np.ndarray) -> np.ndarray:
    z, e, axis = _shifted(attrs, data)
    return (z - np.log(e.sum(axis=axis, keepdims=True))).astype(data.dtype, copy=False)


def _softmax_stages(attrs: SoftmaxAttrs, data: te.Tensor,
                    ) -> tuple[Callable[[tuple[PrimExpr, ...]], PrimExpr], te.Tensor, te.Tensor,
                               tuple[int]]:
    """``x - max`` (an element), ``exp(x - max)`` and its sum along the axis."""
    axes = (attrs.axis % data.ndim,)
    x = widen_tensor(data)
    best = reduce_over(x.shape, axes, False, lambda i: x[i], te.propagating_max, "softmax_max")

    def shifted(i: tuple[PrimExpr, ...]) -> PrimExpr:
        return x[i] - best[reduced_index(i, axes)]

    exps = te.compute(x.shape, lambda *i: te.exp(shifted(i)), name="softmax_exp")
    total = reduce_over(x.shape, axes, False, lambda i: exps[i], te.sum, "softmax_sum")
    return shifted, exps, total, axes


def _softmax_te(attrs: SoftmaxAttrs, inputs: Sequence[te.Tensor], out: TensorType,
                ) -> te.Tensor:
    _, exps, total, axes = _softmax_stages(attrs, inputs[0])
    return te.compute(out.shape, lambda *i: te.cast(exps[i] / total[reduced_index(i, axes)],
                                                    out.dtype), name="softmax")


def _log_softmax_te(attrs: SoftmaxAttrs, inputs: Sequence[te.Tensor], out: TensorType,
                    ) -> te.Tensor:
    shifted, _, total, axes = _softmax_stages(attrs, inputs[0])
    return te.compute(out.shape, lambda *i: te.cast(
        shifted(i) - te.log(total[reduced_index(i, axes)]), out.dtype), name="log_softmax")


softmax = define_op(
    "nn.softmax", inputs=("data",), attrs=SoftmaxAttrs, type_rel=_float_axis_rel,
    compute=_softmax, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    layout=LayoutInfo(axis_attrs=("axis",)), description="Softmax along `axis`.",
    te_compute=_softmax_te)

log_softmax = define_op(
    "nn.log_softmax", inputs=("data",), attrs=SoftmaxAttrs, type_rel=_float_axis_rel,
    compute=_log_softmax, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    layout=LayoutInfo(axis_attrs=("axis",)), description="Log of softmax along `axis`.",
    te_compute=_log_softmax_te)


# -- nn.leaky_relu ---------------------------------------------------------------------------
@attrs_class
class LeakyReluAttrs(Attrs):
    """Attributes of ``nn.leaky_relu``."""

    alpha: float = float_field(0.01)


def _leaky_relu(attrs: LeakyReluAttrs, x: np.ndarray) -> np.ndarray:
    acc = acc_float(x.dtype)
    alpha = np.asarray(attrs.alpha, dtype=acc)
    wide = x.astype(acc, copy=False)
    return np.where(wide > 0, wide, wide * alpha).astype(x.dtype, copy=False)


def _leaky_relu_te(attrs: LeakyReluAttrs, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor:
    alpha = float_const(attrs.alpha, acc_dtype(inputs[0].dtype))
    return unary_compute(lambda x: te.if_then_else(x > 0, x, x * alpha),
                         "leaky_relu")(attrs, inputs, out)


leaky_relu = define_op(
    "nn.leaky_relu", inputs=("data",), attrs=LeakyReluAttrs, type_rel=float_rel,
    compute=_leaky_relu, pattern=OpPattern.ELEMWISE,
    description="x if x > 0 else alpha * x, elementwise.", te_compute=_leaky_relu_te)


# -- nn.softplus -----------------------------------------------------------------------------
def _softplus(_attrs: object, x: np.ndarray) -> np.ndarray:
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): exp never overflows, and for very
    # negative x the result is exp(x) rather than 0.
    wide = x.astype(acc_float(x.dtype), copy=False)
    with np.errstate(all="ignore"):
        return np.asarray(np.maximum(wide, 0) + np.log1p(np.exp(-np.abs(wide)))).astype(x.dtype)


def _softplus_te(x: PrimExpr) -> PrimExpr:
    return np_maximum(x, const(0, x.dtype)) + te.log1p(te.exp(te.fabs(x) * -1))


softplus = define_op(
    "nn.softplus", inputs=("data",), type_rel=float_rel, compute=_softplus,
    pattern=OpPattern.ELEMWISE, description="Elementwise log(1 + exp(x)), computed stably.",
    te_compute=unary_compute(_softplus_te, "softplus"))


# -- nn.silu ---------------------------------------------------------------------------------
def _silu(x: np.ndarray) -> np.ndarray:
    # The reference kernels of sigmoid and multiply, on float32 for float16 and bfloat16.
    return multiply.evaluate(None, x, sigmoid.evaluate(None, x))


silu = unary_op("nn.silu", _silu, float_rel,
                "Elementwise x * sigmoid(x) (SiLU, swish): sigmoid, then multiply.",
                lambda x: x * te.sigmoid(x))


# -- nn.hardmax ------------------------------------------------------------------------------
@attrs_class
class HardmaxAttrs(Attrs):
    """Attributes of ``nn.hardmax``: the axis along which the maximum is picked."""

    axis: int = int_field(-1)


def _hardmax(attrs_value: HardmaxAttrs, data: np.ndarray) -> np.ndarray:
    out = np.zeros_like(data)
    if data.size:
        wide = data.astype(acc_float(data.dtype), copy=False)  # bfloat16 compares as float32
        first = np.expand_dims(np.argmax(wide, axis=attrs_value.axis), attrs_value.axis)
        np.put_along_axis(out, first, 1, axis=attrs_value.axis)
    return out


def _hardmax_te(attrs_value: HardmaxAttrs, inputs: Sequence[te.Tensor],
                out: TensorType) -> te.Tensor:
    (x,) = inputs
    axis = attrs_value.axis % x.ndim
    first = arg_extreme_te(x, axis, False, te.propagating_max, False, "hardmax_index")
    return te.compute(x.shape, lambda *i: te.cast(
        i[axis].equal(first[reduced_index(i, (axis,))]),
        out.dtype), name="hardmax")


hardmax = define_op(
    "nn.hardmax", inputs=("data",), attrs=HardmaxAttrs, type_rel=_float_axis_rel,
    compute=_hardmax, pattern=OpPattern.OPAQUE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=_hardmax_te,
    description="1 at the first maximum along `axis` (the first NaN if any), 0 elsewhere.")
