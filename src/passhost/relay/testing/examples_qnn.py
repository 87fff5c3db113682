"""Example functions for the ``qnn.*`` operators (see op_examples.py)."""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _scale(value: float | list[float]) -> relay.Constant:
    return relay.const(np.asarray(value, dtype=np.float32))


def _zp(value: int | list[int]) -> relay.Constant:
    return relay.const(np.asarray(value, dtype=np.int32))


def _quantize() -> relay.Function:
    x = relay.var("x", shape=(2, 3))
    return relay.Function([x], relay.qnn.quantize(x, _scale(0.02), _zp(-3)))


def _quantize_per_channel() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    y = relay.qnn.quantize(x, _scale([0.01, 0.02, 0.05]), _zp([0, 3, -7]), axis=1,
                           out_dtype="uint8")
    return relay.Function([x], y)


def _dequantize() -> relay.Function:
    x = relay.var("x", shape=(2, 4), dtype="int8")
    return relay.Function([x], relay.qnn.dequantize(x, _scale([0.5, 0.25, 0.1, 1.0]),
                                                    _zp([1, 0, -2, 3]), axis=1))


def _requantize() -> relay.Function:
    x = relay.var("x", shape=(2, 3), dtype="int32")
    y = relay.qnn.requantize(x, _scale([0.5, 0.03, 0.7]), _zp(0), _scale(0.02), _zp(-5))
    return relay.Function([x], y)


def _conv2d() -> relay.Function:
    x = relay.var("x", shape=(1, 5, 5, 3), dtype="int8")
    rng = np.random.default_rng(1)
    w = relay.const(rng.integers(-128, 128, size=(3, 3, 3, 4)).astype(np.int8))
    y = relay.qnn.conv2d(x, w, _zp(-2), _zp(0), _scale(0.05), _scale([0.1, 0.2, 0.3, 0.4]),
                         padding=(1, 1), strides=(2, 1), data_layout="NHWC",
                         kernel_layout="HWIO")
    return relay.Function([x], y)


def _depthwise_conv2d() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 4, 4), dtype="int8")
    w = relay.var("w", shape=(4, 1, 3, 3), dtype="int8")
    y = relay.qnn.conv2d(x, w, _zp(3), _zp([0, 1, -1, 2]), _scale(0.05), _scale(0.1),
                         padding=(1, 1), groups=2)
    return relay.Function([x, w], y)


def _dense() -> relay.Function:
    x = relay.var("x", shape=(2, 6), dtype="int8")
    w = relay.var("w", shape=(3, 6), dtype="int8")
    y = relay.qnn.dense(x, w, _zp(5), _zp([0, -1, 2]), _scale(0.1), _scale([0.2, 0.3, 0.4]))
    return relay.Function([x, w], y)


def _binary(op: str, dtype: str) -> Builder:
    def build() -> relay.Function:
        a = relay.var("a", shape=(2, 3), dtype=dtype)
        b = relay.var("b", shape=(3,), dtype=dtype)
        zp = 0 if dtype == "int16" else 4
        y = getattr(relay.qnn, op)(a, b, _scale(0.1), _zp(zp), _scale(0.07), _zp(-zp),
                                   _scale(0.15), _zp(zp // 2))
        return relay.Function([a, b], y)

    return build


def _softmax() -> relay.Function:
    x = relay.var("x", shape=(2, 5), dtype="int8")
    y = relay.qnn.softmax(x, _scale(0.1), _zp(3), _scale(1 / 256), _zp(-128))
    return relay.Function([x], y)


EXAMPLES: list[tuple[str, Builder]] = [
    ("qnn.quantize", _quantize),
    ("qnn.quantize", _quantize_per_channel),
    ("qnn.dequantize", _dequantize),
    ("qnn.requantize", _requantize),
    ("qnn.conv2d", _conv2d),
    ("qnn.conv2d", _depthwise_conv2d),
    ("qnn.dense", _dense),
    ("qnn.add", _binary("add", "int8")),
    ("qnn.add", _binary("add", "int16")),
    ("qnn.mul", _binary("mul", "int8")),
    ("qnn.mul", _binary("mul", "int16")),
    ("qnn.softmax", _softmax),
]
