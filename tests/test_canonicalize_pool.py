"""CanonicalizeOps rewrites an ``nn.avg_pool2d`` of a float whose one window is the whole
unpadded plane as ``nn.global_avg_pool2d``, in either layout; pools with smaller, padded or
dilated windows, and integer pools, stay. The rewritten module gives the original's numbers,
the mean over each plane."""

from __future__ import annotations

import numpy as np
import pytest

from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.expr import Call, Function, var
from passhost.relay.interpreter import evaluate
from passhost.relay.transform import CanonicalizeOps, InferType
from passhost.relay.visitor import post_order
from passhost.transform.context import PassContext


def _pooled(shape, dtype="float32", **attrs) -> IRModule:
    x = var("x", shape=shape, dtype=dtype)
    return InferType()(IRModule.from_expr(Function([x], nn.avg_pool2d(x, **attrs))))


def _canonical(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3):
        return CanonicalizeOps()(mod)


def _ops(mod: IRModule) -> list[str]:
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call)]


@pytest.mark.parametrize("layout, shape, axes", [
    ("NCHW", (2, 3, 7, 5), (2, 3)),
    ("NHWC", (2, 7, 5, 3), (1, 2)),
])
def test_a_whole_plane_average_pool_becomes_a_global_one(layout, shape, axes):
    window = tuple(shape[a] for a in axes)
    mod = _pooled(shape, pool_size=window, strides=(2, 2), layout=layout)
    after = _canonical(mod)
    assert _ops(after) == ["nn.global_avg_pool2d"]
    x = np.random.default_rng(2).standard_normal(shape).astype("float32")
    want = x.astype("float64").mean(axis=axes, keepdims=True)
    for m in (mod, after):
        np.testing.assert_allclose(evaluate(m["main"], x), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape, dtype, attrs", [
    ((1, 3, 7, 7), "float32", {"pool_size": (3, 3)}),                         # a window
    ((1, 3, 7, 7), "float32", {"pool_size": (7, 7), "padding": (1, 1, 1, 1)}),  # padded
    ((1, 3, 7, 7), "float32", {"pool_size": (4, 4), "dilation": (2, 2)}),     # dilated
    ((1, 3, 7, 7), "int32", {"pool_size": (7, 7)}),                           # integers
], ids=["window", "padded", "dilated", "int32"])
def test_other_average_pools_stay(shape, dtype, attrs):
    assert _ops(_canonical(_pooled(shape, dtype, **attrs))) == ["nn.avg_pool2d"]
