"""Example functions for the ``nn.*`` operators (see op_examples.py)."""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _relu() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.nn.relu(x))


def _conv2d_nchw() -> relay.Function:
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    y = relay.nn.conv2d(x, w, channels=4, kernel_size=(3, 3), padding=(1, 1))
    return relay.Function([x, w], y)


def _conv2d_nhwc_strided() -> relay.Function:
    x = relay.var("x", shape=(2, 9, 7, 3))
    w = relay.var("w", shape=(3, 2, 3, 5))
    y = relay.nn.conv2d(x, w, strides=(2, 1), padding=(1, 0, 2, 1), data_layout="NHWC",
                        kernel_layout="HWIO")
    return relay.Function([x, w], y)


def _conv2d_grouped_dilated() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 9, 9))
    w = relay.var("w", shape=(6, 2, 2, 3))
    y = relay.nn.conv2d(x, w, groups=2, dilation=(2, 1), padding=1)
    return relay.Function([x, w], y)


def _conv2d_depthwise() -> relay.Function:
    x = relay.var("x", shape=(1, 6, 6, 4))
    w = relay.var("w", shape=(3, 3, 8, 1))
    y = relay.nn.conv2d(x, w, groups=4, padding=(1, 1), data_layout="NHWC",
                        kernel_layout="HWOI", out_layout="NCHW")
    return relay.Function([x, w], y)


def _conv2d_int8() -> relay.Function:
    x = relay.var("x", shape=(1, 3, 5, 5), dtype="int8")
    w = relay.var("w", shape=(2, 3, 3, 3), dtype="int8")
    y = relay.nn.conv2d(x, w, strides=2, padding=1, out_dtype="int32")
    return relay.Function([x, w], y)


def _dense() -> relay.Function:
    x = relay.var("x", shape=(2, 5))
    w = relay.var("w", shape=(3, 5))
    return relay.Function([x, w], relay.nn.dense(x, w, units=3))


def _dense_int8() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4), dtype="int8")
    w = relay.var("w", shape=(6, 4), dtype="int8")
    return relay.Function([x, w], relay.nn.dense(x, w, out_dtype="int32"))


def _batch_matmul() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    y = relay.var("y", shape=(1, 5, 4))
    return relay.Function([x, y], relay.nn.batch_matmul(x, y))


def _batch_matmul_nt() -> relay.Function:
    x = relay.var("x", shape=(2, 4, 3))
    y = relay.var("y", shape=(2, 4, 5))
    return relay.Function([x, y], relay.nn.batch_matmul(x, y, transpose_a=True,
                                                        transpose_b=False))


def _bias_add() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4, 4))
    b = relay.var("b", shape=(3,))
    return relay.Function([x, b], relay.nn.bias_add(x, b))


def _batch_norm() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4, 4))
    gamma = relay.var("gamma", shape=(3,))
    beta = relay.var("beta", shape=(3,))
    mean = relay.var("mean", shape=(3,))
    var = relay.const(np.array([0.5, 1.0, 2.0], dtype="float32"))  # variances are >= 0
    y = relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=2e-5)[0]
    return relay.Function([x, gamma, beta, mean], y)


def _layer_norm() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 5))
    gamma = relay.var("gamma", shape=(5,))
    beta = relay.var("beta", shape=(5,))
    return relay.Function([x, gamma, beta], relay.nn.layer_norm(x, gamma, beta))


def _softmax() -> relay.Function:
    x = relay.var("x", shape=(2, 5))
    return relay.Function([x], relay.nn.softmax(x))


def _log_softmax() -> relay.Function:
    x = relay.var("x", shape=(3, 4, 2))
    return relay.Function([x], relay.nn.log_softmax(x, axis=1))


def _leaky_relu() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.nn.leaky_relu(x, alpha=0.1))


def _max_pool2d() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 6, 6))
    y = relay.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), ceil_mode=True)
    return relay.Function([x], y)


def _max_pool2d_nhwc_int8() -> relay.Function:
    x = relay.var("x", shape=(2, 6, 5, 3), dtype="int8")
    y = relay.nn.max_pool2d(x, pool_size=2, strides=2, layout="NHWC")
    return relay.Function([x], y)


def _avg_pool2d() -> relay.Function:
    x = relay.var("x", shape=(1, 3, 6, 6))
    y = relay.nn.avg_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 0, 0))
    return relay.Function([x], y)


def _avg_pool2d_int8() -> relay.Function:
    x = relay.var("x", shape=(1, 5, 5, 2), dtype="int8")
    y = relay.nn.avg_pool2d(x, pool_size=(2, 3), padding=1, layout="NHWC",
                            count_include_pad=True)
    return relay.Function([x], y)


def _global_avg_pool2d() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4, 5))
    return relay.Function([x], relay.nn.global_avg_pool2d(x))


def _pad() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.nn.pad(x, ((0, 0), (1, 2), (2, 0)), pad_value=1.5))


def _pad_reflect() -> relay.Function:
    x = relay.var("x", shape=(3, 4), dtype="int32")
    return relay.Function([x], relay.nn.pad(x, ((2, 1), (0, 3)), pad_mode="reflect"))


def _batch_flatten() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.nn.batch_flatten(x))


def _dropout() -> relay.Function:
    x = relay.var("x", shape=(2, 3))
    return relay.Function([x], relay.nn.dropout(x, rate=0.25))


EXAMPLES: list[tuple[str, Builder]] = [
    ("nn.relu", _relu),
    ("nn.conv2d", _conv2d_nchw),
    ("nn.conv2d", _conv2d_nhwc_strided),
    ("nn.conv2d", _conv2d_grouped_dilated),
    ("nn.conv2d", _conv2d_depthwise),
    ("nn.conv2d", _conv2d_int8),
    ("nn.dense", _dense),
    ("nn.dense", _dense_int8),
    ("nn.batch_matmul", _batch_matmul),
    ("nn.batch_matmul", _batch_matmul_nt),
    ("nn.bias_add", _bias_add),
    ("nn.batch_norm", _batch_norm),
    ("nn.layer_norm", _layer_norm),
    ("nn.softmax", _softmax),
    ("nn.log_softmax", _log_softmax),
    ("nn.leaky_relu", _leaky_relu),
    ("nn.max_pool2d", _max_pool2d),
    ("nn.max_pool2d", _max_pool2d_nhwc_int8),
    ("nn.avg_pool2d", _avg_pool2d),
    ("nn.avg_pool2d", _avg_pool2d_int8),
    ("nn.global_avg_pool2d", _global_avg_pool2d),
    ("nn.pad", _pad),
    ("nn.pad", _pad_reflect),
    ("nn.batch_flatten", _batch_flatten),
    ("nn.dropout", _dropout),
]
