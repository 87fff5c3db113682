"""Converters from ONNX operators (default domain) to passhost graph operators.

Each converter takes a :class:`NodeContext` and returns one value per node output (or a
single value): a graph expression, or a NumPy array when the result is known while
importing (shapes and constants: with static shapes every shape computation folds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Converter, Entry
from passhost.relay import nn
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS", "axis_index", "conv2d_attrs", "matmul_any_rank"]


def _dtype(ctx: NodeContext, index: int = 0) -> str:
    return str(ctx.tensor_type(index).dtype)


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


# -- windows (Conv and pools) --------------------------------------------------------------------
def _window_padding(ctx: NodeContext, spatial: Sequence[int], kernel: Sequence[int],
                    strides: Sequence[int], dilations: Sequence[int],
                    ) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) padding from ``pads`` or ``auto_pad``."""
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto == "NOTSET":
        pads = tuple(int(p) for p in ctx.attr("pads", (0, 0, 0, 0)))
        if len(pads) != 4:
            raise ctx.error(f"expected 4 pads (2-D window), found {list(pads)}")
        return pads  # type: ignore[return-value]
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.error(f"expected auto_pad NOTSET, VALID, SAME_UPPER or SAME_LOWER, "
                        f"found {auto!r}")
    lo, hi = [], []
    for n, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        small, big = total // 2, total - total // 2
        lo.append(small if auto == "SAME_UPPER" else big)
        hi.append(big if auto == "SAME_UPPER" else small)
    return (lo[0], lo[1], hi[0], hi[1])


def _spatial_2d(ctx: NodeContext) -> tuple[int, int]:
    shape = ctx.shape(0)
    if len(shape) != 4:
        raise ctx.error(f"expected a 4-D NCHW input (2-D window), found shape {shape}")
    return shape[2], shape[3]


def conv2d_attrs(ctx: NodeContext, weight_index: int = 1) -> dict[str, object]:
    """The 2-D convolution attributes (``strides``, ``padding``, ``dilation``, ``groups``,
    ``channels``, ``kernel_size``) of a Conv-like node whose data is input 0 and whose OIHW
    weight is input ``weight_index``."""
    spatial = _spatial_2d(ctx)
    wshape = ctx.shape(weight_index)
    if len(wshape) != 4:
        raise ctx.error(f"expected a 4-D OIHW weight (input {weight_index}), found shape "
                        f"{wshape}")
    kernel = tuple(ctx.attr("kernel_shape", wshape[2:]))
    strides = tuple(ctx.attr("strides", (1, 1)))
    dilations = tuple(ctx.attr("dilations", (1, 1)))
    padding = _window_padding(ctx, spatial, kernel, strides, dilations)
    return {"strides": strides, "padding": padding, "dilation": dilations,
            "groups": int(ctx.attr("group", 1)), "channels": wshape[0], "kernel_size": kernel}


def _conv(ctx: NodeContext) -> Value:
    out = nn.conv2d(ctx.input(0), ctx.input(1), **conv2d_attrs(ctx))
    if ctx.has_input(2):
        out = nn.bias_add(out, ctx.input(2), axis=1)
    return out


def _pool(ctx: NodeContext, op: Callable[..., Expr], **extra: object) -> Value:
    _only_first_output(ctx)
    spatial = _spatial_2d(ctx)
    kernel = tuple(ctx.required_attr("kernel_shape"))
    strides = tuple(ctx.attr("strides", (1, 1)))
    dilations = tuple(ctx.attr("dilations", (1, 1)))
    padding = _window_padding(ctx, spatial, kernel, strides, dilations)
    return op(ctx.input(0), pool_size=kernel, strides=strides, dilation=dilations,
              padding=padding, ceil_mode=bool(ctx.attr("ceil_mode", 0)), **extra)


def _max_pool(ctx: NodeContext) -> Value:
    return _pool(ctx, nn.max_pool2d)


def _avg_pool(ctx: NodeContext) -> Value:
    return _pool(ctx, nn.avg_pool2d,
                 count_include_pad=bool(ctx.attr("count_include_pad", 0)))


def _global_avg_pool(ctx: NodeContext) -> Value:
    _spatial_2d(ctx)
    return nn.global_avg_pool2d(ctx.input(0))


# -- dense algebra -------------------------------------------------------------------------------
def _gemm(ctx: NodeContext) -> Value:
    a, b = ctx.input(0), ctx.input(1)
    if ctx.attr("transA", 0):
        a = relay.transpose(a, axes=(1, 0))
    if not ctx.attr("transB", 0):
        b = relay.transpose(b, axes=(1, 0))
    dtype = _dtype(ctx)
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
    return matmul_any_rank(ctx.input(0), ctx.input(1), ctx.shape(0), ctx.shape(1))


# -- normalisation -------------------------------------------------------------------------------
def _batch_norm(ctx: NodeContext) -> Value:
    _only_first_output(ctx)
    if ctx.attr("training_mode", 0):
        raise ctx.error("expected training_mode=0 (inference), found 1")
    out = nn.batch_norm(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4),
                        axis=1, epsilon=float(ctx.attr("epsilon", 1e-5)))
    return out[0]


def _layer_norm(ctx: NodeContext) -> Value:
    _only_first_output(ctx)
    ndim = len(ctx.shape(0))
    axis = axis_index(ctx, int(ctx.attr("axis", -1)), ndim)
    if axis != ndim - 1:
        raise ctx.error(f"expected normalisation over the last axis only (axis={ndim - 1} or "
                        f"-1), found axis={axis}")
    scale = ctx.input(1)
    if ctx.has_input(2):
        bias, center = ctx.input(2), True
    else:
        bias, center = const(np.zeros(ctx.shape(0)[-1], _dtype(ctx))), False
    return nn.layer_norm(ctx.input(0), scale, bias, axis=-1,
                         epsilon=float(ctx.attr("epsilon", 1e-5)), center=center)


def _softmax(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    default = -1 if ctx.opset >= 13 else 1
    axis = axis_index(ctx, int(ctx.attr("axis", default)), len(shape))
    if ctx.opset >= 13 or axis == len(shape) - 1:
        return nn.softmax(ctx.input(0), axis=axis)
    flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    out = nn.softmax(relay.reshape(ctx.input(0), newshape=flat), axis=-1)
    return relay.reshape(out, newshape=shape)


# -- elementwise ---------------------------------------------------------------------------------
def _unary(op: Callable[[Expr], Expr]) -> Converter:
    def convert(ctx: NodeContext) -> Value:
        return op(ctx.input(0))
    return convert


def _binary(op: Callable[[Expr, Expr], Expr]) -> Converter:
    def convert(ctx: NodeContext) -> Value:
        return op(ctx.input(0), ctx.input(1))
    return convert


def _pow(ctx: NodeContext) -> Value:
    base, exponent = ctx.input(0), ctx.input(1)
    if _dtype(ctx, 1) != _dtype(ctx, 0):
        exponent = relay.cast(exponent, dtype=_dtype(ctx, 0))
    return relay.power(base, exponent)


def _leaky_relu(ctx: NodeContext) -> Value:
    return nn.leaky_relu(ctx.input(0), alpha=float(ctx.attr("alpha", 0.01)))


def _clip(ctx: NodeContext) -> Value:
    if ctx.opset >= 11:
        lo = float(ctx.known(1)) if ctx.has_input(1) else -math.inf
        hi = float(ctx.known(2)) if ctx.has_input(2) else math.inf
    else:
        lo, hi = float(ctx.attr("min", -math.inf)), float(ctx.attr("max", math.inf))
    return relay.clip(ctx.input(0), a_min=lo, a_max=hi)


def _mod(ctx: NodeContext) -> Value:
    if not (ctx.is_known(0) and ctx.is_known(1)):
        raise ctx.error("Mod is supported on values known while importing (shape "
                        "arithmetic), found a computed tensor")
    a, b = ctx.known(0), ctx.known(1)
    fmod = bool(ctx.attr("fmod", 0))
    if not fmod and (a.dtype.kind == "f" or b.dtype.kind == "f"):
        raise ctx.error(f"expected fmod=1 for floating-point inputs, found fmod=0 "
                        f"({a.dtype}, {b.dtype})")
    if b.dtype.kind in "iu" and np.any(b == 0):
        raise ctx.error(f"expected non-zero integer divisors, found {b.tolist()}")
    return np.fmod(a, b) if fmod else np.mod(a, b)


# -- shapes and constants ------------------------------------------------------------------------
def _shape(ctx: NodeContext) -> Value:
    shape = np.asarray(ctx.shape(0), dtype="int64")
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    return shape[start:None if end is None else int(end)].copy()


def _constant_of_shape(ctx: NodeContext) -> Value:
    value = ctx.attr("value")
    fill = np.zeros(1, "float32") if value is None else np.asarray(value).reshape(-1)
    return np.full(tuple(int(d) for d in ctx.known(0)), fill[0], dtype=fill.dtype)


def _reshape(ctx: NodeContext) -> Value:
    newshape = [int(d) for d in ctx.known(1)]
    if ctx.attr("allowzero", 0) and 0 in newshape:
        raise ctx.error(f"allowzero=1 with a 0 in the shape is not supported, found "
                        f"{newshape}")
    return relay.reshape(ctx.input(0), newshape=tuple(newshape))


def _transpose(ctx: NodeContext) -> Value:
    perm = ctx.attr("perm")
    ndim = len(ctx.shape(0))
    axes = tuple(range(ndim - 1, -1, -1)) if perm is None else tuple(int(p) for p in perm)
    return relay.transpose(ctx.input(0), axes=axes)


def _concat(ctx: NodeContext) -> Value:
    inputs = [ctx.input(i) for i in range(ctx.num_inputs)]
    return relay.concatenate(inputs, axis=int(ctx.required_attr("axis")))


def _flatten(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise ctx.error(f"expected an axis in [{-len(shape)}, {len(shape)}], found {axis}")
    if axis < 0:
        axis += len(shape)
    flat = (math.prod(shape[:axis]), math.prod(shape[axis:]))
    return relay.reshape(ctx.input(0), newshape=flat)


def _unsqueeze(ctx: NodeContext) -> Value:
    shape = list(ctx.shape(0))
    axes = ctx.known_ints(1, "axes")
    if axes is None:
        raise ctx.error("expected axes (input 1 or attribute), found none")
    rank = len(shape) + len(axes)
    for axis in sorted(axis_index(ctx, a, rank) for a in axes):
        shape.insert(axis, 1)
    return relay.reshape(ctx.input(0), newshape=tuple(shape))


def _squeeze(ctx: NodeContext) -> Value:
    axes = ctx.known_ints(1, "axes")
    ndim = len(ctx.shape(0))
    axis = None if axes is None else tuple(axis_index(ctx, a, ndim) for a in axes)
    return relay.squeeze(ctx.input(0), axis=axis)


def _gather(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
    if not ctx.is_known(1):
        return relay.take(ctx.input(0), ctx.input(1), axis=axis, mode="wrap")
    indices = ctx.known(1).astype("int64")
    if np.any(indices < -shape[axis]) or np.any(indices >= shape[axis]):
        raise ctx.error(f"expected indices in [{-shape[axis]}, {shape[axis]}), found "
                        f"{indices.tolist()}")
    indices = np.where(indices < 0, indices + shape[axis], indices)
    return relay.take(ctx.input(0), const(indices), axis=axis)


def _reduce_mean(ctx: NodeContext) -> Value:
    ndim = len(ctx.shape(0))
    axes = ctx.known_ints(1, "axes") if ctx.opset >= 18 else ctx.attr("axes")
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return ctx.input(0)
        axes = list(range(ndim))
    axis = tuple(axis_index(ctx, a, ndim) for a in axes)
    return relay.mean(ctx.input(0), axis=axis, keepdims=bool(ctx.attr("keepdims", 1)))


def _split(ctx: NodeContext) -> Sequence[Value]:
    shape = ctx.shape(0)
    axis = axis_index(ctx, int(ctx.attr("axis", 0)), len(shape))
    count = len(ctx.node.output)
    sizes = ctx.known_ints(1, "split")
    if sizes is None:
        chunk = math.ceil(shape[axis] / count)
        sizes = [min(chunk, shape[axis] - i * chunk) for i in range(count)]
    if len(sizes) != count or sum(sizes) != shape[axis]:
        raise ctx.error(f"expected {count} sizes summing to {shape[axis]}, found {sizes}")
    bounds = tuple(int(b) for b in np.cumsum(sizes)[:-1])
    out = relay.split(ctx.input(0), indices_or_sections=bounds, axis=axis)
    return [out[i] for i in range(count)]


def _slice(ctx: NodeContext) -> Value:
    shape = ctx.shape(0)
    if ctx.opset >= 10:
        starts, ends = ctx.known_ints(1), ctx.known_ints(2)
        axes, steps = ctx.known_ints(3), ctx.known_ints(4)
    else:
        starts, ends, axes = ctx.attr("starts"), ctx.attr("ends"), ctx.attr("axes")
        steps = None
    if starts is None or ends is None:
        raise ctx.error("expected starts and ends, found none")
    axes = (list(range(len(starts))) if axes is None
            else [axis_index(ctx, a, len(shape)) for a in axes])
    steps = [1] * len(starts) if steps is None else steps

    def clamp(v: int, axis: int) -> int:
        return max(-shape[axis] - 1, min(int(v), shape[axis]))

    return relay.strided_slice(
        ctx.input(0), begin=tuple(clamp(s, a) for s, a in zip(starts, axes)),
        end=tuple(clamp(e, a) for e, a in zip(ends, axes)), strides=tuple(steps),
        axes=tuple(axes))


def _pad(ctx: NodeContext) -> Value:
    ndim = len(ctx.shape(0))
    pads = ctx.known_ints(1) if ctx.opset >= 11 else ctx.attr("pads")
    if pads is None or len(pads) != 2 * ndim:
        raise ctx.error(f"expected {2 * ndim} pads, found {pads}")
    if any(p < 0 for p in pads):
        raise ctx.error(f"expected non-negative pads, found {pads}")
    if ctx.opset >= 11:
        value = float(ctx.known(2).reshape(-1)[0]) if ctx.has_input(2) else 0.0
    else:
        value = float(ctx.attr("value", 0.0))
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise ctx.error(f"expected mode constant, edge or reflect, found {mode!r}")
    width = tuple((pads[i], pads[i + ndim]) for i in range(ndim))
    return nn.pad(ctx.input(0), pad_width=width, pad_value=value, pad_mode=mode)


#: The converter of each supported ONNX operator type.
CONVERTERS: dict[str, Entry] = {
    "Conv": _conv,
    "Gemm": _gemm,
    "MatMul": _matmul,
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "Relu": _unary(nn.relu),
    "LeakyRelu": _leaky_relu,
    "Clip": _clip,
    "Sigmoid": _unary(relay.sigmoid),
    "Tanh": _unary(relay.tanh),
    "Sqrt": _unary(relay.sqrt),
    "Erf": _unary(relay.erf),
    "Exp": _unary(relay.exp),
    "Add": _binary(relay.add),
    "Sub": _binary(relay.subtract),
    "Mul": _binary(relay.multiply),
    "Div": _binary(relay.divide),
    "Pow": _pow,
    "Mod": _mod,
    "Softmax": _softmax,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Flatten": _flatten,
    "GlobalAveragePool": _global_avg_pool,
    "MaxPool": _max_pool,
    "AveragePool": _avg_pool,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Gather": _gather,
    "Shape": _shape,
    "ConstantOfShape": _constant_of_shape,
    "ReduceMean": _reduce_mean,
    "Split": _split,
    "Slice": _slice,
    "Pad": _pad,
}
