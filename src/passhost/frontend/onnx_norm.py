"""Converters of the ONNX normalisations (Instance, Group, Layer, RMS, Lp, mean-variance and
local response normalisation) and of the losses NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import axis_index
from passhost.frontend.onnx_registry import Entry
from passhost.relay import nn
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS"]

_FLOAT_WIDTH = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}
#: The ONNX stash types (stage-one precisions) passhost computes in.
_STASH_DTYPES = {1: "float32", 11: "float64"}


def _as(expr: Expr, have: str, want: str) -> Expr:
    """``expr`` (of dtype ``have``) cast to ``want`` when they differ."""
    return expr if have == want else relay.cast(expr, dtype=want)


def _stash(ctx: NodeContext) -> str:
    """The dtype of attribute ``stash_type`` (the precision of the statistics)."""
    stash = int(ctx.attr("stash_type", 1))
    if stash not in _STASH_DTYPES:
        raise ctx.error(f"expected stash_type 1 (float32) or 11 (float64), found {stash}")
    return _STASH_DTYPES[stash]


def _work_dtype(ctx: NodeContext, *dtypes: str) -> str:
    """The dtype to normalise in: the widest of ``dtypes`` and a float64 stash type (the
    kernels widen float16 and bfloat16 to float32 themselves; the two together are
    normalised in float32)."""
    for dtype in dtypes:
        if dtype not in _FLOAT_WIDTH:
            raise ctx.error(f"expected float16, bfloat16, float32 or float64 tensors, found "
                            f"{dtype}")
    if _stash(ctx) == "float64":
        return "float64"
    if {"float16", "bfloat16"} <= set(dtypes):
        return "float32"
    return max(dtypes, key=_FLOAT_WIDTH.__getitem__)


def _channels(ctx: NodeContext) -> int:
    """The channel count of the (N, C, ...) data, which must have rank >= 3."""
    shape = ctx.shape(0)
    if len(shape) < 3:
        raise ctx.error(f"expected an input of rank >= 3 (N, C, spatial...), found shape "
                        f"{shape}")
    return shape[1]


def _vector(ctx: NodeContext, index: int, length: int, what: str) -> None:
    shape = ctx.shape(index)
    if shape != (length,):
        raise ctx.error(f"expected input {index} of shape ({length},) ({what}), found "
                        f"{shape}")


# -- instance and group normalisation -------------------------------------------------------
def _instance_norm(ctx: NodeContext) -> Value:
    """ONNX InstanceNormalization becomes ``nn.instance_norm`` over the channel axis 1."""
    channels = _channels(ctx)
    for i in (1, 2):
        _vector(ctx, i, channels, "one value per channel")
    return nn.instance_norm(ctx.input(0), ctx.input(1), ctx.input(2), axis=1,
                            epsilon=float(ctx.attr("epsilon", 1e-5)))


def _group_norm(ctx: NodeContext, per_group: bool) -> Value:
    channels = _channels(ctx)
    groups = int(ctx.required_attr("num_groups"))
    if groups < 1 or channels % groups:
        raise ctx.error(f"expected num_groups dividing the {channels} channels, found "
                        f"{groups}")
    dtype = ctx.dtype(0)
    work = _work_dtype(ctx, dtype)
    params = []
    for i in (1, 2):
        if per_group:
            _vector(ctx, i, groups, "one value per group")
            # Each channel takes its group's value.
            group_of = const(np.arange(channels, dtype=np.int64) // (channels // groups))
            param = relay.take(ctx.input(i), group_of, axis=0)
        else:
            _vector(ctx, i, channels, "one value per channel")
            param = ctx.input(i)
        params.append(_as(param, ctx.dtype(i), work))
    out = nn.group_norm(_as(ctx.input(0), dtype, work), *params, num_groups=groups, axis=1,
                        epsilon=float(ctx.attr("epsilon", 1e-5)))
    return _as(out, work, dtype)


def _group_norm_18(ctx: NodeContext) -> Value:
    """ONNX GroupNormalization-18 (scale and bias per group) becomes ``nn.group_norm``
    with each group's scale and bias repeated over its channels."""
    return _group_norm(ctx, per_group=True)


def _group_norm_21(ctx: NodeContext) -> Value:
    """ONNX GroupNormalization-21 (scale and bias per channel) becomes ``nn.group_norm``;
    stash_type 1 or 11 (float64)."""
    return _group_norm(ctx, per_group=False)


# -- layer and RMS normalisation -------------------------------------------------------------
def _unidirectional(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without changing ``target``."""
    return len(shape) <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(target)))


def _flat_param(ctx: NodeContext, index: int, trailing: Sequence[int]) -> Expr | None:
    """Input ``index`` as one value per element of the normalised (trailing) axes, flattened
    to 1-D, when it has exactly that many values; else None (it must then broadcast to the
    whole input)."""
    shape = ctx.shape(index)
    size = math.prod(trailing)
    if math.prod(shape) == size and _unidirectional(shape, trailing):
        param = ctx.input(index)
        return param if tuple(shape) == (size,) else relay.reshape(param, newshape=(size,))
    if not _unidirectional(shape, ctx.shape(0)):
        raise ctx.error(f"expected input {index} of a shape that broadcasts to the input "
                        f"{ctx.shape(0)}, found {shape}")
    return None


#: Builds a normalisation over the last axis of data: (data, flat parameters or None, the
#: last axis' length) -> the normalised data.
_LastAxisNorm = Callable[[Expr, list[Expr | None], int], Expr]


def _trailing_norm(ctx: NodeContext, indices: Sequence[int], work: str, out_dtype: str,
                   norm: _LastAxisNorm) -> Expr:
    """Normalise over the axes [axis, rank) in dtype ``work``: they are flattened into one
    axis for ``norm``, which gets the parameters of inputs ``indices`` as flat vectors.
    Parameters that do not cover the normalised axes exactly are applied to the result by
    broadcasting instead (the first one multiplies, the second one adds)."""
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", -1)), len(shape))
    size = math.prod(shape[axis:])
    flat = [_flat_param(ctx, i, shape[axis:]) for i in indices]
    after = any(p is None for p in flat)
    params = [None if after or p is None else _as(p, ctx.dtype(i), work)
              for p, i in zip(flat, indices)]
    merged = (*shape[:axis], size)
    data = _as(ctx.input(0), ctx.dtype(0), work)
    if merged != shape:
        data = relay.reshape(data, newshape=merged)
    out = norm(data, params, size)
    if merged != shape:
        out = relay.reshape(out, newshape=shape)
    out = _as(out, work, out_dtype)
    if after:
        combine = (relay.multiply, relay.add)
        for op, i in zip(combine, indices):
            out = op(out, _as(ctx.input(i), ctx.dtype(i), out_dtype))
    return out


def _layer_norm(ctx: NodeContext) -> Value | list[Value]:
    """ONNX LayerNormalization becomes ``nn.layer_norm`` over the axes [axis, rank)
    (flattened into one); the optional Mean and InvStdDev outputs are computed in the
    stash_type's precision (1: float32, 11: float64)."""
    dtype = ctx.dtype(0)
    work = _work_dtype(ctx, dtype)
    epsilon = float(ctx.attr("epsilon", 1e-5))

    def norm(data: Expr, params: list[Expr | None], size: int) -> Expr:
        scale, bias = (*params, None)[:2]
        return nn.layer_norm(
            data, const(np.ones(size, work)) if scale is None else scale,
            const(np.zeros(size, work)) if bias is None else bias, axis=-1,
            epsilon=epsilon, scale=scale is not None, center=bias is not None)

    indices = (1, 2) if ctx.has_input(2) else (1,)
    y = _trailing_norm(ctx, indices, work, dtype, norm)
    if not any(i < len(ctx.node.output) and ctx.node.output[i] for i in (1, 2)):
        return y
    return [y, *_mean_inv_std(ctx, epsilon)]


def _mean_inv_std(ctx: NodeContext, epsilon: float) -> list[Expr]:
    """LayerNormalization's Mean and InvStdDev outputs (normalised axes kept as 1)."""
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", -1)), len(shape))
    stash = _stash(ctx)
    x = _as(ctx.input(0), ctx.dtype(0), stash)
    axes = tuple(range(axis, len(shape)))
    mean = relay.mean(x, axis=axes, keepdims=True)
    centred = relay.subtract(x, mean)
    var = relay.mean(relay.multiply(centred, centred), axis=axes, keepdims=True)
    return [mean, relay.rsqrt(relay.add(var, const(epsilon, stash)))]


def _rms_norm(ctx: NodeContext) -> Value:
    """ONNX RMSNormalization becomes ``nn.rms_norm`` over the axes [axis, rank) (flattened
    into one); the result has the scale's dtype."""
    dtype, out_dtype = ctx.dtype(0), ctx.dtype(1)
    work = _work_dtype(ctx, dtype, out_dtype)
    epsilon = float(ctx.attr("epsilon", 1e-5))

    def norm(data: Expr, params: list[Expr | None], size: int) -> Expr:
        scale = const(np.ones(size, work)) if params[0] is None else params[0]
        return nn.rms_norm(data, scale, axis=-1, epsilon=epsilon)

    return _trailing_norm(ctx, (1,), work, out_dtype, norm)


# -- Lp, mean-variance and local response normalisation --------------------------------------
def _lp_norm(ctx: NodeContext) -> Value:
    """ONNX LpNormalization becomes ``nn.lp_normalize`` (p 1 or 2; 0 where the norm is
    0)."""
    ndim = len(ctx.shape(0))
    if ndim < 1:
        raise ctx.error("expected an input of rank >= 1, found a scalar")
    axis = axis_index(ctx, int(ctx.attr("axis", -1)), ndim)
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.error(f"expected p 1 or 2, found {p}")
    return nn.lp_normalize(ctx.input(0), axis=axis, p=p)


@computed_in_float32
def _mvn(ctx: NodeContext) -> Value:
    """ONNX MeanVarianceNormalization becomes ``(x - mean) / (sqrt(variance) + 1e-9)`` with
    ``mean`` and ``variance`` over ``axes`` (default 0, 2, 3)."""
    ndim = len(ctx.shape(0))
    given = ctx.attr("axes", (0, 2, 3))
    axes = tuple(sorted({axis_index(ctx, int(a), ndim) for a in given}))
    if len(axes) != len(given):
        raise ctx.error(f"expected distinct axes, found {list(given)}")
    x = ctx.input(0)
    centred = relay.subtract(x, relay.mean(x, axis=axes, keepdims=True))
    var = relay.mean(relay.multiply(centred, centred), axis=axes, keepdims=True)
    std = relay.add(relay.sqrt(var), const(1e-9, ctx.dtype(0)))
    return relay.divide(centred, std)


def _lrn(ctx: NodeContext) -> Value:
    """ONNX LRN becomes ``nn.lrn`` across the channels (axis 1)."""
    shape = ctx.shape(0)
    if len(shape) < 2:
        raise ctx.error(f"expected an input of rank >= 2 (N, C, ...), found shape {shape}")
    size = int(ctx.required_attr("size"))
    if size < 1:
        raise ctx.error(f"expected size >= 1, found {size}")
    return nn.lrn(ctx.input(0), size=size, axis=1, alpha=float(ctx.attr("alpha", 1e-4)),
                  beta=float(ctx.attr("beta", 0.75)), bias=float(ctx.attr("bias", 1.0)))


# -- losses ----------------------------------------------------------------------------------
def _nll_loss_of(ctx: NodeContext, log_prob: Expr) -> Expr:
    """``nn.nll_loss`` of ``log_prob`` (N, C, ...) with the node's targets (input 1),
    optional class weights (input 2), reduction and ignore_index."""
    shape = ctx.shape(0)
    if len(shape) < 2:
        raise ctx.error(f"expected an input of rank >= 2 (N, C, ...), found shape {shape}")
    want = (shape[0], *shape[2:])
    if ctx.shape(1) != want:
        raise ctx.error(f"expected targets (input 1) of shape {want}, found {ctx.shape(1)}")
    reduction = ctx.attr("reduction", "mean")
    if reduction not in ("none", "sum", "mean"):
        raise ctx.error(f"expected reduction none, sum or mean, found {reduction!r}")
    if ctx.has_input(2):
        _vector(ctx, 2, shape[1], "one weight per class")
        weights = ctx.input(2)
    else:
        weights = const(np.ones(shape[1], ctx.dtype(0)))
    ignore = ctx.attr("ignore_index")
    return nn.nll_loss(log_prob, ctx.input(1), weights, reduction=reduction,
                       ignore_index=None if ignore is None else int(ignore))


def _nll_loss(ctx: NodeContext) -> Value:
    """ONNX NegativeLogLikelihoodLoss becomes ``nn.nll_loss`` (reduction none, sum or mean;
    weight; ignore_index)."""
    return _nll_loss_of(ctx, ctx.input(0))


@computed_in_float32
def _softmax_cross_entropy(ctx: NodeContext) -> list[Value]:
    """ONNX SoftmaxCrossEntropyLoss becomes ``nn.log_softmax`` over the classes (axis 1)
    followed by ``nn.nll_loss``; the optional second output is the log_softmax."""
    if len(ctx.shape(0)) < 2:
        raise ctx.error(f"expected scores of rank >= 2 (N, C, ...), found shape "
                        f"{ctx.shape(0)}")
    log_prob = nn.log_softmax(ctx.input(0), axis=1)
    return [_nll_loss_of(ctx, log_prob), log_prob]


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "InstanceNormalization": _instance_norm,
    "GroupNormalization": {18: _group_norm_18, 21: _group_norm_21},
    "LayerNormalization": _layer_norm,
    "RMSNormalization": _rms_norm,
    "LpNormalization": _lp_norm,
    "MeanVarianceNormalization": _mvn,
    "LRN": _lrn,
    "NegativeLogLikelihoodLoss": _nll_loss,
    "SoftmaxCrossEntropyLoss": _softmax_cross_entropy,
}
