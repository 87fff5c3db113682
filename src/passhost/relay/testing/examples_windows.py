"""Example functions for the windowed network operators: 3-D, transposed, deformable, max-pool
positions and unpooling (see op_examples.py)."""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _conv3d() -> relay.Function:
    x = relay.var("x", shape=(2, 4, 5, 6, 7))
    w = relay.var("w", shape=(6, 2, 2, 3, 2))
    y = relay.nn.conv3d(x, w, strides=(1, 2, 1), padding=(1, 0, 1, 0, 2, 1),
                        dilation=(2, 1, 1), groups=2, channels=6, kernel_size=(2, 3, 2))
    return relay.Function([x, w], y)


def _conv3d_int8() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 4, 4, 3), dtype="int8")
    w = relay.var("w", shape=(3, 2, 3, 3, 1), dtype="int8")
    return relay.Function([x, w], relay.nn.conv3d(x, w, padding=1, out_dtype="int32"))


def _conv2d_transpose() -> relay.Function:
    x = relay.var("x", shape=(2, 4, 5, 3))
    w = relay.var("w", shape=(4, 3, 3, 2))
    y = relay.nn.conv2d_transpose(x, w, strides=(2, 3), padding=(1, 0, 2, 1),
                                  output_padding=(1, 2), dilation=(1, 2), groups=2)
    return relay.Function([x, w], y)


def _conv3d_transpose() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 3, 4, 2))
    w = relay.var("w", shape=(2, 3, 2, 3, 2))
    y = relay.nn.conv3d_transpose(x, w, strides=(2, 1, 2), padding=(0, 1, 0, 1, 0, 0),
                                  output_padding=(1, 0, 0))
    return relay.Function([x, w], y)


def _max_pool3d() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 6, 5, 7))
    y = relay.nn.max_pool3d(x, pool_size=(2, 3, 2), strides=(2, 2, 3), padding=(1, 1, 0),
                            ceil_mode=True)
    return relay.Function([x], y)


def _avg_pool3d() -> relay.Function:
    x = relay.var("x", shape=(2, 1, 5, 4, 6), dtype="int32")
    y = relay.nn.avg_pool3d(x, pool_size=3, strides=(1, 2, 2), dilation=(1, 1, 2),
                            padding=(1, 1, 1, 0, 2, 1), count_include_pad=True)
    return relay.Function([x], y)


def _max_pool_argmax() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 7, 6))
    y = relay.nn.max_pool_argmax(x, pool_size=(3, 2), strides=(2, 2), dilation=(1, 2),
                                 padding=(1, 0, 1, 1), ceil_mode=True, column_major=True)
    return relay.Function([x], y)


def _max_unpool() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 2, 2))
    # Each value goes to one position of its own 4x4 plane.
    indices = np.array([[[[0, 3], [9, 15]], [[17, 22], [24, 31]]]], dtype="int64")
    y = relay.nn.max_unpool(x, relay.const(indices), index_shape=(4, 4), out_shape=(5, 4))
    return relay.Function([x], y)


def _deformable_conv2d() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 5, 6))
    offset = relay.var("offset", shape=(1, 2 * 2 * 3 * 2, 3, 3))
    w = relay.var("w", shape=(6, 2, 2, 3))
    mask = relay.var("mask", shape=(1, 2 * 2 * 3, 3, 3))
    y = relay.nn.deformable_conv2d(x, offset, w, mask, strides=(2, 2), padding=(1, 1, 0, 0),
                                   dilation=(1, 1), groups=2, deformable_groups=2)
    return relay.Function([x, offset, w, mask], y)


EXAMPLES: list[tuple[str, Builder]] = [
    ("nn.conv3d", _conv3d),
    ("nn.conv3d", _conv3d_int8),
    ("nn.conv2d_transpose", _conv2d_transpose),
    ("nn.conv3d_transpose", _conv3d_transpose),
    ("nn.max_pool3d", _max_pool3d),
    ("nn.avg_pool3d", _avg_pool3d),
    ("nn.max_pool_argmax", _max_pool_argmax),
    ("nn.max_unpool", _max_unpool),
    ("nn.deformable_conv2d", _deformable_conv2d),
]
