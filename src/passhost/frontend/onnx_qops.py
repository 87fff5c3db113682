"""Converters of the quantised ONNX operators to ``qnn.*``.

- QuantizeLinear -> ``qnn.quantize``; DequantizeLinear -> ``qnn.dequantize`` (per tensor or
  per axis).
- QLinearConv -> ``qnn.conv2d`` (int32 sums) -> ``nn.bias_add`` (int32 B) ->
  ``qnn.requantize`` from the per-channel scale ``x_scale * w_scale`` (in float64) to
  ``y_scale``.
- QLinearMatMul -> ``qnn.dense`` -> ``qnn.requantize`` when B is a constant matrix (it is
  transposed to the ``(units, in)`` weight while importing); otherwise ``qnn.dequantize`` of
  both inputs -> ``matmul`` -> ``qnn.quantize``.

Scales and zero points must be known while importing (initializers or constants, as in
every exported model); they become constants of the graph. Scales must be float32.

Rounding: ONNX rounds halves to even, ``qnn.quantize`` rounds them away from zero (TFLite),
so a QuantizeLinear result differs by one unit exactly where ``x / scale`` is a tie.
``qnn.requantize`` applies the TFLite fixed-point multiplier where onnxruntime multiplies in
float32, so QLinearConv and QLinearMatMul results agree within one unit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from onnx import helper

from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import axis_index, matmul_any_rank
from passhost.frontend.onnx_registry import Entry
from passhost.frontend.onnx_windows import conv2d_attrs
from passhost.relay import nn, qnn
from passhost.relay.expr import Expr, const
from passhost.relay.op.qnn import QUANT_DTYPES

__all__ = ["CONVERTERS"]

#: The integer types of QLinearConv's and QLinearMatMul's tensors (ONNX allows no others).
_QLINEAR_DTYPES = ("int8", "uint8")


class _Quant(NamedTuple):
    """One tensor's quantisation: scale (float32) and zero point (int32), each a scalar or a
    1-D per-channel array, and the quantised dtype."""

    scale: np.ndarray
    zero_point: np.ndarray
    dtype: str

    def scale_expr(self) -> Expr:
        """The scale as a graph constant."""
        return const(self.scale)

    def zero_point_expr(self) -> Expr:
        """The zero point as a graph constant."""
        return const(self.zero_point)


def _dtype_of(ctx: NodeContext, index: int) -> str:
    """The dtype of input ``index``, without turning a known input into a graph parameter."""
    if ctx.is_known(index):
        return ctx.known(index).dtype.name
    return str(ctx.tensor_type(index).dtype)


def _check_dtype(ctx: NodeContext, what: str, dtype: str, allowed: tuple[str, ...]) -> str:
    if dtype not in allowed:
        raise ctx.error(f"expected {what} of type {', '.join(allowed)}, found {dtype}")
    return dtype


def _per_channel(ctx: NodeContext, index: int, channels: int | None, where: str,
                 ) -> np.ndarray:
    """Known input ``index`` as a scalar, or a 1-D array of ``channels`` values."""
    value = ctx.known(index)
    if value.size == 1:
        return value.reshape(())
    if channels is not None and value.shape == (channels,):
        return value
    expected = "a scalar" if channels is None else \
        f"a scalar or a 1-D tensor of {channels} values ({where})"
    raise ctx.error(f"expected input {index} ({ctx.node.input[index]!r}) to be {expected}, "
                    f"found shape {list(value.shape)}")


def _quant(ctx: NodeContext, scale_index: int, zp_index: int, dtype: str | None,
           channels: int | None = None, where: str = "") -> _Quant:
    """The quantisation given by inputs ``scale_index`` and ``zp_index`` (the zero point is
    optional: 0). ``dtype`` is the quantised dtype the zero point must have (None: take the
    zero point's, uint8 without one); ``channels`` allows per-channel values."""
    scale = _per_channel(ctx, scale_index, channels, where)
    if scale.dtype != np.float32:
        raise ctx.error(f"expected a float32 scale (input {scale_index}), found "
                        f"{scale.dtype.name}")
    if ctx.has_input(zp_index):
        zero_point = _per_channel(ctx, zp_index, channels, where)
        found = zero_point.dtype.name
        if dtype is not None and found != dtype:
            raise ctx.error(f"expected a {dtype} zero point (input {zp_index}), found {found}")
        dtype = found
    else:
        zero_point = np.zeros((), np.int32)
    return _Quant(scale.astype(np.float32), zero_point.astype(np.int32), dtype or "uint8")


def _axis_channels(ctx: NodeContext, shape: tuple[int, ...], scale_index: int,
                   ) -> tuple[int, int | None, str]:
    """(axis, channels, description) of a Quantize/DequantizeLinear node: per axis when its
    scale has several values, else (-1, None, "")."""
    if ctx.known(scale_index).size == 1:
        return -1, None, ""
    axis = axis_index(ctx, int(ctx.attr("axis", 1)), len(shape))
    return axis, shape[axis], f"the length of axis {axis} of the input, shape {list(shape)}"


def _no_blocks(ctx: NodeContext) -> None:
    block_size = int(ctx.attr("block_size", 0))
    if block_size > 0:
        raise ctx.error(f"block quantisation is not supported: expected block_size=0, found "
                        f"{block_size}")


def _float32_input(ctx: NodeContext, index: int) -> None:
    _check_dtype(ctx, f"input {index}", _dtype_of(ctx, index), ("float32",))


# -- QuantizeLinear / DequantizeLinear ----------------------------------------------------------
def _output_dtype_attr(ctx: NodeContext) -> str | None:
    """QuantizeLinear's ``output_dtype`` (opset 21) as a NumPy dtype name; None when unset."""
    code = int(ctx.attr("output_dtype", 0))
    if not code:
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(code)).name
    except (KeyError, TypeError, ValueError) as exc:
        raise ctx.error(f"expected output_dtype to be a tensor element type, found "
                        f"{code}") from exc


def _quantize_linear(ctx: NodeContext) -> Value:
    _no_blocks(ctx)
    _float32_input(ctx, 0)
    axis, channels, where = _axis_channels(ctx, ctx.shape(0), 1)
    q = _quant(ctx, 1, 2, _output_dtype_attr(ctx), channels, where)
    _check_dtype(ctx, "the quantised output (the zero point's type)", q.dtype, QUANT_DTYPES)
    return qnn.quantize(ctx.input(0), q.scale_expr(), q.zero_point_expr(), axis=axis,
                        out_dtype=q.dtype)


def _dequantize_linear(ctx: NodeContext) -> Value:
    _no_blocks(ctx)
    dtype = _check_dtype(ctx, "input 0", _dtype_of(ctx, 0), (*QUANT_DTYPES, "int32"))
    axis, channels, where = _axis_channels(ctx, ctx.shape(0), 1)
    q = _quant(ctx, 1, 2, dtype, channels, where)
    return qnn.dequantize(ctx.input(0), q.scale_expr(), q.zero_point_expr(), axis=axis)


# -- QLinearConv / QLinearMatMul ----------------------------------------------------------------
def _require_inputs(ctx: NodeContext, count: int) -> None:
    missing = [i for i in range(count) if not ctx.has_input(i)]
    if missing:
        raise ctx.error(f"expected inputs 0 to {count - 1}, found none for {missing}")


def _output_quant(ctx: NodeContext) -> _Quant:
    """The output quantisation of QLinearConv and QLinearMatMul (inputs 6 and 7)."""
    y = _quant(ctx, 6, 7, None)
    _check_dtype(ctx, "y_zero_point", y.dtype, _QLINEAR_DTYPES)
    return y


def _requantize(ctx: NodeContext, acc: Expr, input_scale: np.ndarray, axis: int) -> Expr:
    """int32 sums ``acc`` with scale ``input_scale`` (float64, scalar or per channel along
    ``axis``) requantised to the node's output quantisation."""
    y = _output_quant(ctx)
    return qnn.requantize(acc, const(input_scale), const(np.zeros((), np.int32)),
                          y.scale_expr(), y.zero_point_expr(), axis=axis, out_dtype=y.dtype)


def _product_scale(a: _Quant, b: _Quant) -> np.ndarray:
    return a.scale.astype(np.float64) * b.scale.astype(np.float64)


def _qlinear_conv(ctx: NodeContext) -> Value:
    _require_inputs(ctx, 8)
    x_dtype = _check_dtype(ctx, "x", _dtype_of(ctx, 0), _QLINEAR_DTYPES)
    w_dtype = _check_dtype(ctx, "w", _dtype_of(ctx, 3), _QLINEAR_DTYPES)
    attrs = conv2d_attrs(ctx, weight_index=3)
    x = _quant(ctx, 1, 2, x_dtype)
    w = _quant(ctx, 4, 5, w_dtype, attrs["channels"], "the weight's output channels")
    acc = qnn.conv2d(ctx.input(0), ctx.input(3), x.zero_point_expr(), w.zero_point_expr(),
                     x.scale_expr(), w.scale_expr(), out_dtype="int32", **attrs)
    if ctx.has_input(8):
        _check_dtype(ctx, "the bias B", _dtype_of(ctx, 8), ("int32",))
        acc = nn.bias_add(acc, ctx.input(8), axis=1)
    return _requantize(ctx, acc, _product_scale(x, w), axis=1)


def _qlinear_matmul(ctx: NodeContext) -> Value:
    _require_inputs(ctx, 8)
    a_dtype = _check_dtype(ctx, "a", _dtype_of(ctx, 0), _QLINEAR_DTYPES)
    b_dtype = _check_dtype(ctx, "b", _dtype_of(ctx, 3), _QLINEAR_DTYPES)
    a_shape, b_shape = ctx.shape(0), ctx.shape(3)
    a = _quant(ctx, 1, 2, a_dtype)
    columns = b_shape[-1] if len(b_shape) >= 2 else None
    b = _quant(ctx, 4, 5, b_dtype, columns, "B's columns")
    if ctx.is_known(3) and len(b_shape) == 2:
        weight = const(np.ascontiguousarray(ctx.known(3).T))
        acc = qnn.dense(ctx.input(0), weight, a.zero_point_expr(), b.zero_point_expr(),
                        a.scale_expr(), b.scale_expr(), out_dtype="int32")
        return _requantize(ctx, acc, _product_scale(a, b), axis=-1)
    real_a = qnn.dequantize(ctx.input(0), a.scale_expr(), a.zero_point_expr(), axis=-1)
    real_b = qnn.dequantize(ctx.input(3), b.scale_expr(), b.zero_point_expr(), axis=-1)
    real = matmul_any_rank(real_a, real_b, a_shape, b_shape)
    y = _output_quant(ctx)
    return qnn.quantize(real, y.scale_expr(), y.zero_point_expr(), axis=-1, out_dtype=y.dtype)


#: The converter of each supported quantised ONNX operator type.
CONVERTERS: dict[str, Entry] = {
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
}

