"""Example functions for elementwise, reduction and shape operators (see op_examples.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _add() -> relay.Function:
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    return relay.Function([x, y], relay.add(x, y))


def _binary(op: Callable[..., relay.Expr], dtype: str = "float32") -> Builder:
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 1, 3), dtype=dtype)
        y = relay.var("y", shape=(4, 1), dtype=dtype)
        return relay.Function([x, y], op(x, y))

    return build


def _divide() -> relay.Function:
    # The divisor is kept away from zero: exp(y) > 0.
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    return relay.Function([x, y], relay.divide(x, relay.exp(y)))


def _divide_int() -> relay.Function:
    x = relay.var("x", shape=(2, 3), dtype="int32")
    d = relay.const(np.array([3, -2, 7], dtype="int32"))
    return relay.Function([x], relay.divide(x, d))


def _power() -> relay.Function:
    # A positive base keeps every real power defined.
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(2, 3))
    return relay.Function([x, y], relay.power(relay.exp(x), y))


def _unary(op: Callable[..., relay.Expr], positive: bool = False,
           dtype: str = "float32") -> Builder:
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 3, 4), dtype=dtype)
        arg = relay.exp(x) if positive else x
        return relay.Function([x], op(arg))

    return build


def _clip() -> relay.Function:
    x = relay.var("x", shape=(3, 4))
    return relay.Function([x], relay.clip(x, -0.5, 1.0))


def _cast() -> relay.Function:
    x = relay.var("x", shape=(3, 4))
    return relay.Function([x], relay.cast(x, "int32"))


def _where() -> relay.Function:
    c = relay.var("c", shape=(2, 1), dtype="bool")
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(2, 3))
    return relay.Function([c, x, y], relay.where(c, x, y))


def _matmul() -> relay.Function:
    a = relay.var("a", shape=(2, 1, 3, 4))
    b = relay.var("b", shape=(5, 4, 2))
    return relay.Function([a, b], relay.matmul(a, b))


def _reduce(op: Callable[..., relay.Expr], **kwargs: object) -> Builder:
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 3, 4))
        return relay.Function([x], op(x, **kwargs))

    return build


def _reshape() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.reshape(x, (0, -1)))


def _transpose() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.transpose(x, (1, 2, 0)))


def _squeeze() -> relay.Function:
    x = relay.var("x", shape=(1, 3, 1, 2))
    return relay.Function([x], relay.squeeze(x, axis=(0, 2)))


def _expand_dims() -> relay.Function:
    x = relay.var("x", shape=(3, 2))
    return relay.Function([x], relay.expand_dims(x, 1, 2))


def _concatenate() -> relay.Function:
    a = relay.var("a", shape=(2, 3))
    b = relay.var("b", shape=(2, 1))
    return relay.Function([a, b], relay.concatenate([a, b], 1))


def _split() -> relay.Function:
    x = relay.var("x", shape=(6, 2))
    return relay.Function([x], relay.split(x, (1, 4), 0))


def _strided_slice() -> relay.Function:
    x = relay.var("x", shape=(5, 6))
    return relay.Function([x], relay.strided_slice(x, (4, 1), (-6, 100), (-2, 2)))


def _take() -> relay.Function:
    x = relay.var("x", shape=(4, 3))
    idx = relay.const(np.array([[0, 3], [-1, 7]], dtype="int32"))
    return relay.Function([x], relay.take(x, idx, axis=0))


def _layout_transform() -> relay.Function:
    x = relay.var("x", shape=(1, 3, 4, 5))
    return relay.Function([x], relay.layout_transform(x, "NCHW", "NHWC"))


EXAMPLES: list[tuple[str, Builder]] = [
    ("add", _add),
    ("subtract", _binary(relay.subtract)),
    ("multiply", _binary(relay.multiply, "int32")),
    ("divide", _divide),
    ("divide", _divide_int),
    ("power", _power),
    ("maximum", _binary(relay.maximum)),
    ("minimum", _binary(relay.minimum, "int8")),
    ("equal", _binary(relay.equal, "int32")),
    ("not_equal", _binary(relay.not_equal)),
    ("less", _binary(relay.less)),
    ("less_equal", _binary(relay.less_equal)),
    ("greater", _binary(relay.greater)),
    ("greater_equal", _binary(relay.greater_equal)),
    ("sqrt", _unary(relay.sqrt, positive=True)),
    ("rsqrt", _unary(relay.rsqrt, positive=True)),
    ("exp", _unary(relay.exp)),
    ("erf", _unary(relay.erf)),
    ("negative", _unary(relay.negative)),
    ("sigmoid", _unary(relay.sigmoid)),
    ("tanh", _unary(relay.tanh)),
    ("abs", _unary(relay.abs)),
    ("log", _unary(relay.log, positive=True)),
    ("clip", _clip),
    ("cast", _cast),
    ("where", _where),
    ("matmul", _matmul),
    ("sum", _reduce(relay.sum, axis=1)),
    ("mean", _reduce(relay.mean, axis=(0, 2), keepdims=True)),
    ("max", _reduce(relay.max, axis=1, exclude=True)),
    ("min", _reduce(relay.min)),
    ("reshape", _reshape),
    ("transpose", _transpose),
    ("squeeze", _squeeze),
    ("expand_dims", _expand_dims),
    ("concatenate", _concatenate),
    ("split", _split),
    ("strided_slice", _strided_slice),
    ("take", _take),
    ("layout_transform", _layout_transform),
]
