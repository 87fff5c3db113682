"""Activation functions of the ``nn`` namespace (``nn.softplus``, ``nn.silu``, ``nn.hardmax``).

Most activations (ELU, SELU, GELU, hard sigmoid, ...) are compositions of elementwise
operators and have no operator of their own; these three are primitives: ``softplus`` needs
a form that neither overflows nor loses small values, ``hardmax`` picks the first maximum,
and ``silu`` (``x * sigmoid(x)``, which CanonicalizeOps makes of that product) is one
elementwise operator where the product reads ``x`` twice, so that FuseOps can fuse it into
the convolution or dense layer before it and a kernel apply it as it writes its output.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost import te
from passhost.ir.attrs import Attrs, attrs_class, int_field
from passhost.ir.types import ANY_FLOAT_DTYPES, TensorType, Type
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.elemwise_te import np_maximum, unary_compute
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, define_op
from passhost.relay.op.search import arg_extreme_te
from passhost.relay.op.te_reduce import reduced_index
from passhost.relay.op.tensor import float_rel, multiply, sigmoid, unary_op
from passhost.tir.expr import PrimExpr, const

__all__ = ["softplus", "silu", "hardmax"]


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


def _hardmax_rel(args: ArgTypes, attrs_value: HardmaxAttrs) -> Type:
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    return data


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
    "nn.hardmax", inputs=("data",), attrs=HardmaxAttrs, type_rel=_hardmax_rel,
    compute=_hardmax, pattern=OpPattern.OPAQUE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=_hardmax_te,
    description="1 at the first maximum along `axis` (the first NaN if any), 0 elsewhere.")
