"""CanonicalizeOps rewrites ``x * sigmoid(x)`` (either order) of a float32 or float64 ``x``
as ``nn.silu(x)``; a product with another expression, or of float16, bfloat16 or integers,
stays. The rewritten module gives the numbers of the original, which are x / (1 + exp(-x)).
"""

from __future__ import annotations

import numpy as np
import pytest

from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.expr import Call, Function, var
from passhost.relay.interpreter import evaluate
from passhost.relay.op import tensor as tn
from passhost.relay.transform import CanonicalizeOps, InferType
from passhost.relay.visitor import post_order
from passhost.transform.context import PassContext

RNG = np.random.default_rng(11)


def _module(body, *params) -> IRModule:
    return InferType()(IRModule.from_expr(Function(list(params), body)))


def _canonical(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3):
        return CanonicalizeOps()(mod)


def _ops(mod: IRModule) -> list[str]:
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call)]


def _swish(x, sigmoid_first: bool):
    s = tn.sigmoid(x)
    return tn.multiply(s, x) if sigmoid_first else tn.multiply(x, s)


@pytest.mark.parametrize("sigmoid_first", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_product_with_its_own_sigmoid_becomes_silu(sigmoid_first, dtype):
    x = var("x", shape=(2, 3), dtype=dtype)
    after = _canonical(_module(_swish(x, sigmoid_first), x))
    assert _ops(after) == ["nn.silu"]
    assert after["main"].body.args[0] is after["main"].params[0]


def test_the_operand_is_rewritten_first_and_the_silu_reads_it_once():
    x = var("x", shape=(1, 4, 5), dtype="float32")
    b = var("b", shape=(4,), dtype="float32")
    after = _canonical(_module(_swish(nn.bias_add(x, b, axis=1), False), x, b))
    assert _ops(after) == ["expand_dims", "add", "nn.silu"]
    assert after["main"].body.args[0].op.name == "add"


def test_a_product_with_the_sigmoid_of_another_expression_stays():
    x, y = var("x", shape=(2, 3), dtype="float32"), var("y", shape=(2, 3), dtype="float32")
    assert _ops(_canonical(_module(tn.multiply(x, tn.sigmoid(y)), x, y))) == [
        "sigmoid", "multiply"]
    # an equal but distinct expression is another expression
    twice = tn.multiply(tn.negative(x), tn.sigmoid(tn.negative(x)))
    assert _ops(_canonical(_module(twice, x))) == ["negative", "negative", "sigmoid",
                                                   "multiply"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_floats_keep_their_product(dtype):
    # their product rounds the sigmoid first; nn.silu rounds once
    x = var("x", shape=(3,), dtype=dtype)
    assert _ops(_canonical(_module(_swish(x, False), x))) == ["sigmoid", "multiply"]


def test_integer_products_stay():
    x = var("x", shape=(3,), dtype="int32")
    y = var("y", shape=(3,), dtype="float32")
    body = tn.multiply(x, tn.cast(tn.sigmoid(y), dtype="int32"))
    assert _ops(_canonical(_module(body, x, y))) == ["sigmoid", "cast", "multiply"]
    same = tn.multiply(x, tn.cast(tn.sigmoid(tn.cast(x, dtype="float32")), dtype="int32"))
    assert "nn.silu" not in _ops(_canonical(_module(same, x)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_rewritten_module_gives_the_same_numbers(dtype):
    x = var("x", shape=(4, 64), dtype=dtype)
    before = _module(tn.add(_swish(x, False), _swish(tn.negative(x), True)), x)
    after = _canonical(before)
    assert _ops(after).count("nn.silu") == 2
    values = np.concatenate([RNG.uniform(-30, 30, (4, 60)),
                             np.array([[0.0, -0.0, 90.0, -90.0]] * 4)], axis=1).astype(dtype)
    with np.errstate(over="ignore"):
        got, want = evaluate(after, x=values), evaluate(before, x=values)
    np.testing.assert_array_equal(got, want)
    wide = values.astype(np.float64)
    exact = wide / (1 + np.exp(-wide)) - wide / (1 + np.exp(wide))
    np.testing.assert_allclose(got, exact.astype(dtype), rtol=1e-5, atol=1e-6)
