"""Example functions for the data movement operators (see op_examples.py)."""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _broadcast_to() -> relay.Function:
    x = relay.var("x", shape=(3, 1))
    return relay.Function([x], relay.broadcast_to(x, (2, 3, 4)))


def _tile() -> relay.Function:
    x = relay.var("x", shape=(2, 3), dtype="int32")
    return relay.Function([x], relay.tile(x, (2, 1, 3)))


def _cumsum() -> relay.Function:
    x = relay.var("x", shape=(3, 4))
    return relay.Function([x], relay.cumsum(x, axis=-1, exclusive=True))


def _cumprod() -> relay.Function:
    x = relay.var("x", shape=(4, 3), dtype="int64")
    return relay.Function([x], relay.cumprod(x, axis=0, reverse=True))


def _trilu() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    k = relay.var("k", shape=(), dtype="int64")
    return relay.Function([x, k], relay.trilu(x, k, upper=False))


def _gather_elements() -> relay.Function:
    x = relay.var("x", shape=(3, 4))
    idx = relay.const(np.array([[0, -1, 2], [1, 1, -3]], dtype="int64"))
    return relay.Function([x], relay.gather_elements(x, idx, axis=0))


def _gather_nd() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    idx = relay.const(np.array([[[2], [0]], [[-1], [1]]], dtype="int32"))
    return relay.Function([x], relay.gather_nd(x, idx, batch_dims=1))


def _scatter_elements() -> relay.Function:
    x = relay.var("x", shape=(3, 4))
    u = relay.var("u", shape=(3, 2))
    idx = relay.const(np.array([[0, 3], [1, 1], [-1, 2]], dtype="int64"))
    return relay.Function([x, u], relay.scatter_elements(x, idx, u, axis=1, reduction="add"))


def _scatter_nd() -> relay.Function:
    x = relay.var("x", shape=(4, 3), dtype="int32")
    u = relay.var("u", shape=(2, 3), dtype="int32")
    idx = relay.const(np.array([[3], [-4]], dtype="int64"))
    return relay.Function([x, u], relay.scatter_nd(x, idx, u))


def _one_hot() -> relay.Function:
    idx = relay.var("i", shape=(2, 3), dtype="int64")
    on = relay.const(np.float32(2.0))
    off = relay.const(np.float32(-1.0))
    return relay.Function([idx], relay.one_hot(idx, on, off, depth=4, axis=1))


def _reverse_sequence() -> relay.Function:
    x = relay.var("x", shape=(4, 3, 2))
    lengths = relay.const(np.array([4, 0, 2], dtype="int64"))
    return relay.Function([x], relay.reverse_sequence(x, lengths, seq_axis=0, batch_axis=1))


def _pad_wrap() -> relay.Function:
    x = relay.var("x", shape=(3, 4), dtype="int32")
    return relay.Function([x], relay.nn.pad(x, ((2, 4), (0, 3)), pad_mode="wrap"))


EXAMPLES: list[tuple[str, Builder]] = [
    ("broadcast_to", _broadcast_to),
    ("tile", _tile),
    ("cumsum", _cumsum),
    ("cumprod", _cumprod),
    ("trilu", _trilu),
    ("gather_elements", _gather_elements),
    ("gather_nd", _gather_nd),
    ("scatter_elements", _scatter_elements),
    ("scatter_nd", _scatter_nd),
    ("one_hot", _one_hot),
    ("reverse_sequence", _reverse_sequence),
    ("nn.pad", _pad_wrap),
]
