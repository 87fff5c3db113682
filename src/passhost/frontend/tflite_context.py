"""The view of one TFLite operator that a converter works with.

It gives the operator's input tensors (their static facts and their graph expressions),
its builtin options, its quantisation parameters as ``qnn`` constants, TFLite's window
padding and fused activations, and errors that name the operator and tensor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from passhost import relay
from passhost.frontend.errors import TfliteImportError
from passhost.frontend.tflite_reader import OperatorInfo, Quantization, TensorInfo
from passhost.relay import nn
from passhost.relay.expr import Expr, const
from passhost.relay.op import fixed_point as fp

__all__ = ["OpContext", "type_problem", "window_padding"]

#: tflite.ActivationFunctionType numbers.
_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
_FLOAT_BOUNDS = {"RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


def window_padding(size: int, kernel: int, stride: int, dilation: int, padding: str,
                   ) -> tuple[int, int, int]:
    """TFLite's ``(output size, pad before, pad after)`` along one spatial axis for
    ``padding`` "SAME" or "VALID"; an odd total pad puts the extra element at the end."""
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
    else:
        out = (size + stride - effective) // stride
    total = max(0, (out - 1) * stride + effective - size)
    return out, total // 2, total - total // 2


def type_problem(t: TensorInfo, expected: tuple[str, ...]) -> str:
    """What is wrong with tensor ``t``, whose type is not one of ``expected``."""
    if t.quantization is not None and t.dtype in ("int16", "uint8", "uint16", "int4"):
        return (f"{t.where}: {t.dtype} quantisation is not supported; expected "
                f"{' or '.join(expected)} tensors")
    return f"{t.where}: unsupported tensor type {t.dtype}; expected {' or '.join(expected)}"


class OpContext:
    """One operator's tensors, expressions, options, quantisation and error helper."""

    def __init__(self, op: OperatorInfo, tensors: tuple[TensorInfo, ...],
                 expr_of: Callable[[int, str], Expr],
                 param_of: Callable[[TensorInfo, np.ndarray], Expr]) -> None:
        self.op = op
        self._tensors = tensors
        self._expr_of = expr_of
        self._param_of = param_of

    @property
    def where(self) -> str:
        """The operator's description for messages: index, type and first output tensor."""
        out = f", output {self._tensors[self.op.outputs[0]].name!r}" if self.op.outputs else ""
        return f"operator {self.op.index} ({self.op.key}{out})"

    def error(self, message: str) -> TfliteImportError:
        """An import error about this operator."""
        return TfliteImportError(f"{self.where}: {message}")

    # -- tensors -----------------------------------------------------------------------------
    def has_input(self, i: int) -> bool:
        """Whether optional input ``i`` is given."""
        return i < len(self.op.inputs) and self.op.inputs[i] >= 0

    def tensor(self, i: int) -> TensorInfo:
        """Input tensor ``i``."""
        if not self.has_input(i):
            raise self.error(f"expected input {i}, found none (the operator lists "
                             f"{list(self.op.inputs)})")
        return self._tensors[self.op.inputs[i]]

    def output(self, i: int = 0) -> TensorInfo:
        """Output tensor ``i``."""
        if i >= len(self.op.outputs):
            raise self.error(f"expected output {i}, found outputs {list(self.op.outputs)}")
        return self._tensors[self.op.outputs[i]]

    def input(self, i: int) -> Expr:
        """Input ``i`` as a graph expression (a constant tensor becomes a parameter)."""
        return self._expr_of(self.tensor(i).index, self.where)

    def constant(self, i: int) -> np.ndarray:
        """The data of constant input ``i``."""
        t = self.tensor(i)
        if t.data is None:
            raise self.error(f"input {i}, {t.where}, must be a constant (buffer data), found "
                             f"a computed tensor")
        try:
            return t.array()
        except TfliteImportError as exc:
            raise self.error(str(exc)) from exc

    def param(self, i: int, shape: tuple[int, ...]) -> Expr:
        """Constant input ``i`` as a parameter of ``shape`` (its data, reshaped)."""
        return self._param_of(self.tensor(i), self.constant(i).reshape(shape))

    def rank(self, i: int, ndim: int) -> tuple[int, ...]:
        """The shape of input ``i``, checked to have ``ndim`` positive dimensions."""
        t = self.tensor(i)
        if len(t.shape) != ndim or min(t.shape, default=1) < 1:
            raise self.error(f"expected input {i}, {t.where}, of rank {ndim} with positive "
                             f"dimensions, found shape {list(t.shape)}")
        return t.shape

    def option(self, name: str, default: Any = None) -> Any:
        """Builtin option ``name`` (schema field name, e.g. ``"StrideW"``), or ``default``."""
        return self.op.options.get(name, default)

    def int_option(self, name: str, minimum: int, default: int | None = None) -> int:
        """An integer option that must be at least ``minimum``."""
        value = self.option(name, default)
        if not isinstance(value, int) or value < minimum:
            raise self.error(f"expected option {name} >= {minimum}, found {value!r}")
        return value

    # -- types and quantisation -------------------------------------------------------------
    @property
    def quantized(self) -> bool:
        """Whether the operator computes on int8 (its input 0 is int8), not float32; any
        other type is an error naming the tensor."""
        t = self.tensor(0)
        if t.dtype == "float32":
            return False
        if t.dtype == "int8":
            self.quantization(t)
            return True
        raise self.unsupported_type(t)

    def unsupported_type(self, t: TensorInfo) -> TfliteImportError:
        """The error for a tensor of a type the operator does not take."""
        return self.error(type_problem(t, ("float32", "int8")))

    def expect_dtype(self, t: TensorInfo, dtype: str, role: str) -> None:
        """Check that tensor ``t`` (the operator's ``role``) has type ``dtype``."""
        if t.dtype != dtype:
            if t.dtype in ("int16", "uint8", "float16") or dtype not in ("int8", "float32"):
                raise self.error(f"{role}, {t.where}: expected {dtype}, found {t.dtype}")
            raise self.error(f"{role}, {t.where}: expected {dtype} like the operator's "
                             f"input, found {t.dtype} (mixed float/int8 operators, such "
                             f"as hybrid quantisation, are not supported)")

    def quantization(self, t: TensorInfo, channels_axis: int | None = None) -> Quantization:
        """The checked quantisation of int8 tensor ``t``: per-tensor, or per-channel along
        ``channels_axis`` when that is given."""
        q = t.quantization
        if q is None:
            raise self.error(f"{t.where}: expected int8 quantisation parameters (scale and "
                             f"zero point), found none")
        if q.zero_point.size != q.scale.size:
            raise self.error(f"{t.where}: expected as many zero points as scales, found "
                             f"{q.zero_point.size} and {q.scale.size}")
        if not np.all(np.isfinite(q.scale) & (q.scale > 0)):
            raise self.error(f"{t.where}: expected positive finite scales, found "
                             f"{q.scale.tolist()}")
        if q.per_channel:
            if channels_axis is None:
                raise self.error(f"{t.where}: expected per-tensor quantisation, found "
                                 f"{q.scale.size} scales")
            if q.axis != channels_axis or t.shape[channels_axis] != q.scale.size:
                raise self.error(f"{t.where}: expected per-channel quantisation along axis "
                                 f"{channels_axis} ({t.shape[channels_axis]} channels), found "
                                 f"{q.scale.size} scales along quantized_dimension {q.axis}")
        return q

    def per_tensor(self, t: TensorInfo) -> tuple[float, int]:
        """The ``(scale, zero_point)`` of per-tensor quantised int8 tensor ``t``."""
        q = self.quantization(t)
        return float(q.scale[0]), int(q.zero_point[0])

    def scale_zero_point(self, t: TensorInfo) -> tuple[Expr, Expr]:
        """Per-tensor ``(scale, zero point)`` of ``t`` as float32 / int32 constants."""
        scale, zero_point = self.per_tensor(t)
        return const(np.float32(scale)), const(zero_point, "int32")

    # -- windows and activations ------------------------------------------------------------
    def window(self, spatial: tuple[int, int], kernel: tuple[int, int],
               strides: tuple[int, int], dilation: tuple[int, int],
               ) -> tuple[int, int, int, int]:
        """``(top, left, bottom, right)`` padding from the operator's Padding option."""
        padding = {0: "SAME", 1: "VALID"}.get(self.option("Padding", 0))
        if padding is None:
            raise self.error(f"expected Padding SAME (0) or VALID (1), found "
                             f"{self.option('Padding')!r}")
        pads = []
        for size, k, s, d in zip(spatial, kernel, strides, dilation):
            out, before, after = window_padding(size, k, s, d, padding)
            if out < 1:
                raise self.error(f"{padding} window of {k} (dilation {d}) does not fit the "
                                 f"input size {size}")
            pads.append((before, after))
        return pads[0][0], pads[1][0], pads[0][1], pads[1][1]

    def activation(self, expr: Expr) -> Expr:
        """The fused activation applied to ``expr``: for int8, a clip to TFLite's
        quantised activation range of the output tensor; for float32, relu or clip."""
        code = self.option("FusedActivationFunction", 0)
        name = _ACTIVATIONS.get(code, f"activation {code}")
        if name == "NONE":
            return expr
        if name not in ("RELU", "RELU6", "RELU_N1_TO_1"):
            raise self.error(f"unsupported fused activation {name}; expected NONE, RELU, "
                             f"RELU6 or RELU_N1_TO_1")
        out = self.output()
        if out.dtype == "int8":
            scale, zero_point = self.per_tensor(out)
            lo, hi = fp.activation_range(name, scale, zero_point, "int8")
            return relay.clip(expr, a_min=float(lo), a_max=float(hi))
        if name == "RELU":
            return nn.relu(expr)
        lo_f, hi_f = _FLOAT_BOUNDS[name]
        return relay.clip(expr, a_min=lo_f, a_max=hi_f)
