"""Example functions for the logic, unary math and activation operators (see op_examples.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _unary(op: Callable[..., relay.Expr], dtype: str = "float32",
           prep: Callable[[relay.Expr], relay.Expr] | None = None, **attrs: object) -> Builder:
    """``op`` of one input; ``prep`` maps the input into the operator's domain first."""
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 3, 4), dtype=dtype)
        return relay.Function([x], op(prep(x) if prep else x, **attrs))

    return build


def _bitcast(source: str, target: str) -> Builder:
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 3), dtype=source)
        return relay.Function([x], relay.bitcast(x, dtype=target))

    return build


def _binary(op: Callable[..., relay.Expr], dtype: str) -> Builder:
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 1, 3), dtype=dtype)
        y = relay.var("y", shape=(4, 1), dtype=dtype)
        return relay.Function([x, y], op(x, y))

    return build


def _in_unit_interval(x: relay.Expr) -> relay.Expr:
    """Values in (-0.9, 0.9), where asin, acos and atanh are defined and finite."""
    return relay.multiply(relay.tanh(x), relay.const(0.9))


def _at_least_one(x: relay.Expr) -> relay.Expr:
    """Values above 1, where acosh is defined."""
    return relay.add(relay.exp(x), relay.const(1.0))


def _special_values(op: Callable[..., relay.Expr]) -> Builder:
    """``op`` of NaN and the infinities as well as ordinary numbers."""
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 3))
        special = relay.const(np.array([np.nan, np.inf, -np.inf], dtype="float32"))
        return relay.Function([x], op(relay.concatenate([x, relay.reshape(special, (1, 3))],
                                                        axis=0)))

    return build


def _remainder(op: Callable[..., relay.Expr], dtype: str) -> Builder:
    """``op`` with divisors kept away from zero (exp(y) for floats, constants for ints)."""
    def build() -> relay.Function:
        x = relay.var("x", shape=(2, 3), dtype=dtype)
        if dtype.startswith("float"):
            y = relay.var("y", shape=(3,), dtype=dtype)
            return relay.Function([x, y], op(x, relay.exp(y)))
        return relay.Function([x], op(x, relay.const(np.array([3, -2, 7], dtype=dtype))))

    return build


EXAMPLES: list[tuple[str, Builder]] = [
    ("logical_not", _unary(relay.logical_not, "bool")),
    ("logical_and", _binary(relay.logical_and, "bool")),
    ("logical_or", _binary(relay.logical_or, "bool")),
    ("logical_xor", _binary(relay.logical_xor, "bool")),
    ("bitwise_not", _unary(relay.bitwise_not, "uint16")),
    ("bitwise_and", _binary(relay.bitwise_and, "int32")),
    ("bitwise_or", _binary(relay.bitwise_or, "uint8")),
    ("bitwise_xor", _binary(relay.bitwise_xor, "int64")),
    ("left_shift", _binary(relay.left_shift, "int8")),
    ("right_shift", _binary(relay.right_shift, "int16")),
    ("right_shift", _binary(relay.right_shift, "uint32")),
    ("isnan", _special_values(relay.isnan)),
    ("isinf", _special_values(relay.isinf)),
    ("floor", _unary(relay.floor)),
    ("ceil", _unary(relay.ceil, "float64")),
    ("round", _unary(relay.round, "float16")),
    ("sign", _unary(relay.sign)),
    ("sign", _unary(relay.sign, "int8")),
    ("sin", _unary(relay.sin)),
    ("cos", _unary(relay.cos)),
    ("tan", _unary(relay.tan, prep=_in_unit_interval)),
    ("asin", _unary(relay.asin, prep=_in_unit_interval)),
    ("acos", _unary(relay.acos, prep=_in_unit_interval)),
    ("atan", _unary(relay.atan)),
    ("sinh", _unary(relay.sinh)),
    ("cosh", _unary(relay.cosh)),
    ("asinh", _unary(relay.asinh)),
    ("acosh", _unary(relay.acosh, prep=_at_least_one)),
    ("atanh", _unary(relay.atanh, prep=_in_unit_interval)),
    ("mod", _remainder(relay.mod, "float32")),
    ("mod", _remainder(relay.mod, "int32")),
    ("floor_mod", _remainder(relay.floor_mod, "float64")),
    ("floor_mod", _remainder(relay.floor_mod, "int8")),
    ("bitcast", _bitcast("float32", "int32")),
    ("bitcast", _bitcast("bool", "uint8")),
    ("nn.softplus", _unary(relay.nn.softplus)),
    ("nn.silu", _unary(relay.nn.silu)),
    ("nn.hardmax", _unary(relay.nn.hardmax, axis=1)),
]
