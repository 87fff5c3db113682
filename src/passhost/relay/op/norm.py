"""Normalisations of the ``nn`` namespace: batch (inference), layer, instance, group, RMS,
Lp normalisation, local response normalisation, and the negative log-likelihood loss.

Every kernel computes in float32 at least (float16 and bfloat16 data are widened, float64
stays) and returns the data's dtype. Statistics are taken per instance: the mean and the biased
variance ``mean((x - mean)**2)`` over the normalised axes. The TE computes (loop nests) take
the same statistics in the same dtypes (:mod:`passhost.relay.op.te_reduce`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from passhost import te
from passhost.errors import AttrError
from passhost.ir.attrs import (
    Attrs,
    attrs_class,
    bool_field,
    float_field,
    int_field,
    str_field,
)
from passhost.ir.types import ANY_FLOAT_DTYPES, TensorType, TupleType, Type
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.common import normalize_axis
from passhost.relay.op.elemwise_te import acc_dtype
from passhost.relay.op.nn import _along, _channel_vector
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, define_op
from passhost.relay.op.te_reduce import (
    as_dtype,
    mean_over,
    reduce_over,
    reduced_index,
    root,
    scale_shift,
    standardise,
    widen_tensor,
)
from passhost.tir.expr import PrimExpr, const

__all__ = [
    "batch_norm", "layer_norm", "instance_norm", "group_norm", "rms_norm", "lp_normalize",
    "lrn", "nll_loss",
    "BatchNormAttrs", "LayerNormAttrs", "InstanceNormAttrs", "GroupNormAttrs", "RMSNormAttrs",
    "LpNormalizeAttrs", "LRNAttrs", "NLLLossAttrs",
]


def _standardise(x: np.ndarray, axes: tuple[int, ...], epsilon: float) -> np.ndarray:
    """``(x - mean) / sqrt(var + epsilon)`` with statistics over ``axes`` (kept)."""
    centred = x - x.mean(axis=axes, keepdims=True)
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    return centred / np.sqrt(var + epsilon)


def _scale_shift(out: np.ndarray, attrs_value: Any, gamma: np.ndarray, beta: np.ndarray,
                 axis: int) -> np.ndarray:
    """Multiply by ``gamma`` and add ``beta`` along ``axis`` (as ``scale``/``center`` say)."""
    if attrs_value.scale:
        out = out * _along(gamma.astype(out.dtype), axis, out.ndim)
    if attrs_value.center:
        out = out + _along(beta.astype(out.dtype), axis, out.ndim)
    return out


# -- nn.batch_norm ---------------------------------------------------------------------------
@attrs_class
class BatchNormAttrs(Attrs):
    """Attributes of ``nn.batch_norm``."""

    axis: int = int_field(1)
    epsilon: float = float_field(1e-5)
    center: bool = bool_field(True)
    scale: bool = bool_field(True)


def _vectors_along_axis(args: ArgTypes, axis: int, vectors: range) -> TensorType:
    """The float data, after checking that inputs ``vectors`` are 1-D tensors of its dtype
    as long as its axis ``axis``."""
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    axis = normalize_axis(args, "axis", axis, data.ndim)
    for i in vectors:
        _channel_vector(args, i, data.shape[axis], data.dtype, axis)
    return data


def _batch_norm_rel(args: ArgTypes, attrs: BatchNormAttrs) -> Type:
    data = _vectors_along_axis(args, attrs.axis, range(1, 5))
    return TupleType([data, args.tensor(3), args.tensor(4)])


def _batch_norm(attrs: BatchNormAttrs, data: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, ...]:
    acc = acc_float(data.dtype)
    axis, nd = attrs.axis % data.ndim, data.ndim
    inv = 1.0 / np.sqrt(var.astype(acc) + attrs.epsilon)
    if attrs.scale:
        inv = inv * gamma.astype(acc)
    shift = -mean.astype(acc) * inv
    if attrs.center:
        shift = shift + beta.astype(acc)
    out = data.astype(acc) * _along(inv, axis, nd) + _along(shift, axis, nd)
    return out.astype(data.dtype, copy=False), mean, var


def _batch_norm_te(attrs: BatchNormAttrs, inputs: Sequence[te.Tensor],
                   out: TupleType) -> tuple[te.Tensor, ...]:
    data, gamma, beta, mean, var = inputs
    acc = acc_dtype(data.dtype)
    axis = attrs.axis % data.ndim

    def inv_element(c: PrimExpr) -> PrimExpr:
        inv = 1.0 / te.sqrt(te.cast(var[c], acc) + attrs.epsilon)
        return inv * te.cast(gamma[c], acc) if attrs.scale else inv

    def shift_element(c: PrimExpr) -> PrimExpr:
        shift = -te.cast(mean[c], acc) * inv[c]
        return shift + te.cast(beta[c], acc) if attrs.center else shift

    inv = te.compute(mean.shape, inv_element, name="batch_norm_inv")
    shift = te.compute(mean.shape, shift_element, name="batch_norm_shift")
    normed = te.compute(data.shape, lambda *i: te.cast(
        te.cast(data[i], acc) * inv[i[axis]] + shift[i[axis]], data.dtype), name="batch_norm")
    return normed, mean, var


batch_norm = define_op(
    "nn.batch_norm", inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    attrs=BatchNormAttrs, type_rel=_batch_norm_rel, compute=_batch_norm,
    pattern=OpPattern.OPAQUE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=_batch_norm_te,
    description="Inference batch normalisation along `axis`; returns (out, mean, var).")


# -- nn.layer_norm ---------------------------------------------------------------------------
@attrs_class
class LayerNormAttrs(Attrs):
    """Attributes of ``nn.layer_norm``."""

    axis: int = int_field(-1)
    epsilon: float = float_field(1e-5)
    center: bool = bool_field(True)
    scale: bool = bool_field(True)


def _layer_norm_rel(args: ArgTypes, attrs: LayerNormAttrs) -> Type:
    return _vectors_along_axis(args, attrs.axis, range(1, 3))


def _layer_norm(attrs: LayerNormAttrs, data: np.ndarray, gamma: np.ndarray,
                beta: np.ndarray) -> np.ndarray:
    axis = attrs.axis % data.ndim
    out = _standardise(data.astype(acc_float(data.dtype)), (axis,), attrs.epsilon)
    return _scale_shift(out, attrs, gamma, beta, axis).astype(data.dtype, copy=False)


def _layer_norm_te(attrs: LayerNormAttrs, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor:
    data, gamma, beta = inputs
    axis = attrs.axis % data.ndim
    normed = standardise(widen_tensor(data), (axis,), attrs.epsilon, "layer_norm_standard")
    return scale_shift(normed, axis, gamma if attrs.scale else None,
                       beta if attrs.center else None, out.dtype, "layer_norm")


layer_norm = define_op(
    "nn.layer_norm", inputs=("data", "gamma", "beta"), attrs=LayerNormAttrs,
    type_rel=_layer_norm_rel, compute=_layer_norm, pattern=OpPattern.OPAQUE,
    layout=LayoutInfo(axis_attrs=("axis",)), te_compute=_layer_norm_te,
    description="Layer normalisation over `axis`, then scale by gamma and shift by beta.")


# -- nn.instance_norm ------------------------------------------------------------------------
@attrs_class
class InstanceNormAttrs(Attrs):
    """Attributes of ``nn.instance_norm``: the channel axis and the usual normalisation
    options."""

    axis: int = int_field(1)
    epsilon: float = float_field(1e-5)
    center: bool = bool_field(True)
    scale: bool = bool_field(True)


def _channel_axis(args: ArgTypes, axis: int) -> tuple[TensorType, int]:
    """The data (float, rank >= 3: batch, channels, spatial axes) and its channel axis."""
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    if data.ndim < 3:
        args.fail(0, "a tensor of rank >= 3 (batch, channels and spatial axes)", data)
    ch = normalize_axis(args, "axis", axis, data.ndim)
    if ch == 0:
        args.fail_attr("axis", "a channel axis other than the batch axis 0", axis)
    return data, ch


def _instance_norm_rel(args: ArgTypes, attrs_value: InstanceNormAttrs) -> Type:
    data, axis = _channel_axis(args, attrs_value.axis)
    for i in (1, 2):
        _channel_vector(args, i, data.shape[axis], data.dtype, axis)
    return data


def _instance_norm(attrs_value: InstanceNormAttrs, data: np.ndarray, gamma: np.ndarray,
                   beta: np.ndarray) -> np.ndarray:
    axis = attrs_value.axis % data.ndim
    spatial = tuple(i for i in range(1, data.ndim) if i != axis)
    out = _standardise(data.astype(acc_float(data.dtype)), spatial, attrs_value.epsilon)
    return _scale_shift(out, attrs_value, gamma, beta, axis).astype(data.dtype, copy=False)


def _scale_shift_te(normed: te.Tensor, attrs_value: Any, gamma: te.Tensor, beta: te.Tensor,
                    axis: int, dtype: str, name: str) -> te.Tensor:
    return scale_shift(normed, axis, gamma if attrs_value.scale else None,
                       beta if attrs_value.center else None, dtype, name)


def _instance_norm_te(attrs_value: InstanceNormAttrs, inputs: Sequence[te.Tensor],
                      out: TensorType) -> te.Tensor:
    data, gamma, beta = inputs
    axis = attrs_value.axis % data.ndim
    spatial = tuple(i for i in range(1, data.ndim) if i != axis)
    normed = standardise(widen_tensor(data), spatial, attrs_value.epsilon, "instance_norm_standard")
    return _scale_shift_te(normed, attrs_value, gamma, beta, axis, out.dtype, "instance_norm")


instance_norm = define_op(
    "nn.instance_norm", inputs=("data", "gamma", "beta"), attrs=InstanceNormAttrs,
    type_rel=_instance_norm_rel, compute=_instance_norm, pattern=OpPattern.OPAQUE,
    layout=LayoutInfo(axis_attrs=("axis",)), te_compute=_instance_norm_te,
    description="Instance normalisation: statistics per instance and channel over the "
                "spatial axes, then gamma and beta per channel.")


# -- nn.group_norm ---------------------------------------------------------------------------
@attrs_class
class GroupNormAttrs(Attrs):
    """Attributes of ``nn.group_norm``: how many groups the channels of ``axis`` split into
    and the usual normalisation options."""

    num_groups: int = int_field(1, minimum=1)
    axis: int = int_field(1)
    epsilon: float = float_field(1e-5)
    center: bool = bool_field(True)
    scale: bool = bool_field(True)


def _group_norm_rel(args: ArgTypes, attrs_value: GroupNormAttrs) -> Type:
    data, axis = _channel_axis(args, attrs_value.axis)
    channels = data.shape[axis]
    if channels % attrs_value.num_groups:
        args.fail_attr("num_groups", f"a divisor of the {channels} channels of {data}",
                       attrs_value.num_groups)
    for i in (1, 2):
        _channel_vector(args, i, channels, data.dtype, axis)
    return data


def _group_norm(attrs_value: GroupNormAttrs, data: np.ndarray, gamma: np.ndarray,
                beta: np.ndarray) -> np.ndarray:
    axis, g = attrs_value.axis % data.ndim, attrs_value.num_groups
    shape = data.shape
    grouped = data.astype(acc_float(data.dtype)).reshape(
        *shape[:axis], g, shape[axis] // g, *shape[axis + 1:])
    stats = tuple(i for i in range(1, grouped.ndim) if i != axis)
    out = _standardise(grouped, stats, attrs_value.epsilon).reshape(shape)
    return _scale_shift(out, attrs_value, gamma, beta, axis).astype(data.dtype, copy=False)


def _group_norm_te(attrs_value: GroupNormAttrs, inputs: Sequence[te.Tensor],
                   out: TensorType) -> te.Tensor:
    data, gamma, beta = inputs
    axis, g = attrs_value.axis % data.ndim, attrs_value.num_groups
    shape, per_group = data.shape, data.shape[axis] // g
    x = widen_tensor(data)
    # The channels of ``axis`` split into (group, channel in group); both views are inlined.
    grouped = te.compute(
        (*shape[:axis], g, per_group, *shape[axis + 1:]),
        lambda *i: x[(*i[:axis], i[axis] * per_group + i[axis + 1], *i[axis + 2:])],
        name="group_norm_grouped")
    stats = tuple(i for i in range(1, grouped.ndim) if i != axis)
    normed = standardise(grouped, stats, attrs_value.epsilon, "group_norm_standard")
    ungrouped = te.compute(
        shape, lambda *i: normed[(*i[:axis], i[axis] // per_group, i[axis] % per_group,
                                  *i[axis + 1:])], name="group_norm_ungrouped")
    return _scale_shift_te(ungrouped, attrs_value, gamma, beta, axis, out.dtype, "group_norm")


group_norm = define_op(
    "nn.group_norm", inputs=("data", "gamma", "beta"), attrs=GroupNormAttrs,
    type_rel=_group_norm_rel, compute=_group_norm, pattern=OpPattern.OPAQUE,
    layout=LayoutInfo(axis_attrs=("axis",)), te_compute=_group_norm_te,
    description="Group normalisation: the channels of `axis` split into num_groups "
                "consecutive groups; statistics per instance and group over the group's "
                "channels and the spatial axes, then gamma and beta per channel.")


# -- nn.rms_norm -----------------------------------------------------------------------------
@attrs_class
class RMSNormAttrs(Attrs):
    """Attributes of ``nn.rms_norm``."""

    axis: int = int_field(-1)
    epsilon: float = float_field(1e-5)


def _rms_norm_rel(args: ArgTypes, attrs_value: RMSNormAttrs) -> Type:
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    if data.ndim < 1:
        args.fail(0, "a tensor of rank >= 1", data)
    axis = normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    _channel_vector(args, 1, data.shape[axis], data.dtype, axis)
    return data


def _rms_norm(attrs_value: RMSNormAttrs, data: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    axis = attrs_value.axis % data.ndim
    x = data.astype(acc_float(data.dtype))
    mean_square = np.mean(x * x, axis=axis, keepdims=True)
    out = x / np.sqrt(mean_square + attrs_value.epsilon)
    out = out * _along(gamma.astype(out.dtype), axis, data.ndim)
    return out.astype(data.dtype, copy=False)


def _rms_norm_te(attrs_value: RMSNormAttrs, inputs: Sequence[te.Tensor],
                 out: TensorType) -> te.Tensor:
    data, gamma = inputs
    axes = (attrs_value.axis % data.ndim,)
    x = widen_tensor(data)
    mean_square = mean_over(x.shape, axes, lambda i: x[i] * x[i], "rms_norm_mean_square")
    denom = root(mean_square, attrs_value.epsilon, "rms_norm_denom")
    normed = te.compute(x.shape, lambda *i: x[i] / denom[reduced_index(i, axes)],
                        name="rms_norm_standard")
    return scale_shift(normed, axes[0], gamma, None, out.dtype, "rms_norm")


rms_norm = define_op(
    "nn.rms_norm", inputs=("data", "gamma"), attrs=RMSNormAttrs, type_rel=_rms_norm_rel,
    compute=_rms_norm, pattern=OpPattern.OPAQUE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=_rms_norm_te,
    description="Root-mean-square normalisation over `axis`: x / sqrt(mean(x**2) + epsilon), "
                "then scaled by gamma.")


# -- nn.lp_normalize -------------------------------------------------------------------------
@attrs_class
class LpNormalizeAttrs(Attrs):
    """Attributes of ``nn.lp_normalize``: the axis and the norm's order (1 or 2)."""

    axis: int = int_field(-1)
    p: int = int_field(2)

    @p.validator
    def _check_p(self, attribute: Any, value: int) -> None:
        if value not in (1, 2):
            raise AttrError(f"attribute '{attribute.name}': expected 1 or 2, found {value!r}")


def _axis_rel(args: ArgTypes, attrs_value: Any) -> Type:
    data = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    if data.ndim < 1:
        args.fail(0, "a tensor of rank >= 1", data)
    normalize_axis(args, "axis", attrs_value.axis, data.ndim)
    return data


def _lp_normalize(attrs_value: LpNormalizeAttrs, data: np.ndarray) -> np.ndarray:
    x = data.astype(acc_float(data.dtype))
    axis = attrs_value.axis % data.ndim
    if attrs_value.p == 1:
        norm = np.sum(np.abs(x), axis=axis, keepdims=True)
    else:
        norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    with np.errstate(all="ignore"):
        out = np.where(norm == 0, np.zeros((), x.dtype), x / norm)
    return out.astype(data.dtype, copy=False)


def _lp_normalize_te(attrs_value: LpNormalizeAttrs, inputs: Sequence[te.Tensor],
                     out: TensorType) -> te.Tensor:
    x = widen_tensor(inputs[0])
    axes = (attrs_value.axis % x.ndim,)
    if attrs_value.p == 1:
        norm = reduce_over(x.shape, axes, False, lambda i: te.fabs(x[i]), te.sum,
                           "lp_normalize_norm")
    else:
        squares = reduce_over(x.shape, axes, False, lambda i: x[i] * x[i], te.sum,
                              "lp_normalize_squares")
        norm = te.compute(squares.shape, lambda *i: te.sqrt(squares[i]),
                          name="lp_normalize_norm")

    def element(*i: PrimExpr) -> PrimExpr:
        divisor = norm[reduced_index(i, axes)]
        return te.cast(te.if_then_else(divisor.equal(0), const(0, x.dtype), x[i] / divisor),
                       out.dtype)

    return te.compute(x.shape, element, name="lp_normalize")


lp_normalize = define_op(
    "nn.lp_normalize", inputs=("data",), attrs=LpNormalizeAttrs, type_rel=_axis_rel,
    compute=_lp_normalize, pattern=OpPattern.OPAQUE, layout=LayoutInfo(axis_attrs=("axis",)),
    te_compute=_lp_normalize_te,
    description="Divide by the L1 or L2 norm along `axis` (0 where the norm is 0).")


# -- nn.lrn ----------------------------------------------------------------------------------
@attrs_class
class LRNAttrs(Attrs):
    """Attributes of ``nn.lrn``: the window ``size`` across channels of ``axis`` and the
    coefficients of ``x / (bias + alpha / size * sum(x**2 in window)) ** beta``."""

    size: int = int_field(5, minimum=1)
    axis: int = int_field(1)
    bias: float = float_field(1.0)
    alpha: float = float_field(1e-4)
    beta: float = float_field(0.75)


def _lrn(attrs_value: LRNAttrs, data: np.ndarray) -> np.ndarray:
    x = data.astype(acc_float(data.dtype))
    axis, size = attrs_value.axis % data.ndim, attrs_value.size
    # Channel c sums the squares of channels [c - (size - 1) // 2, c + size // 2].
    pad = [(0, 0)] * data.ndim
    pad[axis] = ((size - 1) // 2, size // 2)
    squares = np.pad(x * x, pad)
    window_sums = sliding_window_view(squares, size, axis=axis).sum(axis=-1)
    denom = (attrs_value.bias + attrs_value.alpha / size * window_sums) ** attrs_value.beta
    with np.errstate(all="ignore"):
        return (x / denom).astype(data.dtype, copy=False)


def _lrn_te(attrs_value: LRNAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    x = widen_tensor(inputs[0])
    axis, size = attrs_value.axis % x.ndim, attrs_value.size
    channels, before = x.shape[axis], (size - 1) // 2

    def window_sum(*i: PrimExpr) -> te.Reduce:
        k = te.reduce_axis(size, "k")
        c = i[axis] - before + k.var
        value = x[(*i[:axis], c, *i[axis + 1:])]
        return te.sum(value * value, axis=k, where=(c >= 0) & (c < channels))

    sums = te.compute(x.shape, window_sum, name="lrn_window_sum")
    scale = attrs_value.alpha / size

    def element(*i: PrimExpr) -> PrimExpr:
        denom = te.pow(attrs_value.bias + scale * sums[i], attrs_value.beta)
        return te.cast(x[i] / denom, out.dtype)

    return te.compute(x.shape, element, name="lrn")


lrn = define_op(
    "nn.lrn", inputs=("data",), attrs=LRNAttrs, type_rel=_axis_rel, compute=_lrn,
    pattern=OpPattern.OPAQUE, layout=LayoutInfo(axis_attrs=("axis",)), te_compute=_lrn_te,
    description="Local response normalisation across the channels of `axis`: "
                "x / (bias + alpha / size * (sum of x**2 over a window of size channels)) "
                "** beta.")


# -- nn.nll_loss -----------------------------------------------------------------------------
@attrs_class
class NLLLossAttrs(Attrs):
    """Attributes of ``nn.nll_loss``: the reduction and the target value to ignore."""

    reduction: str = str_field("mean", choices=("none", "sum", "mean"))
    ignore_index: int | None = int_field(None, optional=True)


def _nll_loss_rel(args: ArgTypes, attrs_value: NLLLossAttrs) -> Type:
    pred = args.tensor(0, dtypes=ANY_FLOAT_DTYPES)
    if pred.ndim < 2:
        args.fail(0, "a tensor of rank >= 2 (batch, classes, ...)", pred)
    targets = args.tensor(1, dtypes=("int32", "int64"))
    want = (pred.shape[0], *pred.shape[2:])
    if targets.shape != want:
        args.fail(1, f"a tensor of shape {want} (predictions without the class axis)", targets)
    _channel_vector(args, 2, pred.shape[1], pred.dtype, 1)
    if attrs_value.reduction == "none":
        return TensorType(want, pred.dtype)
    return TensorType((), pred.dtype)


def _nll_loss(attrs_value: NLLLossAttrs, pred: np.ndarray, targets: np.ndarray,
              weights: np.ndarray) -> np.ndarray:
    acc = acc_float(pred.dtype)
    classes = pred.shape[1]
    # Targets outside [0, classes) (ignore_index among them) count with weight 0.
    valid = (targets >= 0) & (targets < classes)
    if attrs_value.ignore_index is not None:
        valid &= targets != attrs_value.ignore_index
    picked_class = np.where(valid, targets, 0).astype(np.int64)
    picked = np.take_along_axis(pred, np.expand_dims(picked_class, 1), axis=1)[:, 0]
    weight = np.where(valid, weights.astype(acc)[picked_class], np.zeros((), acc))
    loss = -picked.astype(acc) * weight
    if attrs_value.reduction == "none":
        return loss.astype(pred.dtype, copy=False)
    total = loss.sum(dtype=acc)
    if attrs_value.reduction == "mean":
        with np.errstate(all="ignore"):
            total = total / weight.sum(dtype=acc)
    return np.asarray(total, dtype=pred.dtype)


def _nll_loss_te(attrs_value: NLLLossAttrs, inputs: Sequence[te.Tensor],
                 out: TensorType) -> te.Tensor:
    pred, targets, weights = inputs
    acc = acc_dtype(pred.dtype)
    classes = pred.shape[1]

    def picked(i: tuple[PrimExpr, ...]) -> tuple[PrimExpr, PrimExpr]:
        """The prediction and weight of the target at ``i`` (0 for an ignored target, whose
        class reads as 0: never outside the predictions)."""
        target = te.cast(targets[i], "int64")
        valid = (target >= 0) & (target < classes)
        if attrs_value.ignore_index is not None:
            valid = valid & target.not_equal(attrs_value.ignore_index)
        cls = te.if_then_else(valid, target, 0)
        weight = te.if_then_else(valid, te.cast(weights[cls], acc), const(0, acc))
        return te.cast(pred[(i[0], cls, *i[1:])], acc), weight

    def loss(i: tuple[PrimExpr, ...]) -> PrimExpr:
        value, weight = picked(i)
        return -value * weight

    if attrs_value.reduction == "none":
        return te.compute(out.shape, lambda *i: te.cast(loss(i), out.dtype), name="nll_loss")
    every = tuple(range(targets.ndim))
    total = reduce_over(targets.shape, every, False, loss, te.sum, "nll_loss_sum")
    if attrs_value.reduction == "sum":
        return as_dtype(total, out.dtype)
    weight_sum = reduce_over(targets.shape, every, False, lambda i: picked(i)[1], te.sum,
                             "nll_loss_weight_sum")
    return te.compute((), lambda: te.cast(total[()] / weight_sum[()], out.dtype),
                      name="nll_loss")


nll_loss = define_op(
    "nn.nll_loss", inputs=("predictions", "targets", "weights"), attrs=NLLLossAttrs,
    type_rel=_nll_loss_rel, compute=_nll_loss, pattern=OpPattern.OPAQUE,
    te_compute=_nll_loss_te,
    description="Negative log-likelihood loss: -predictions[n, targets[n, ...], ...] times "
                "the target's class weight; summed, or divided by the summed weights "
                "(mean), or kept per element (none). Targets equal to ignore_index or "
                "outside the classes weigh 0.")
