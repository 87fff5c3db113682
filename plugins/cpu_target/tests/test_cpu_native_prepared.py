"""Convolution weights in the native kernel's own form (packed panels, or transformed for
Winograd): an executor's read-only parameters are prepared once and reused on later runs,
a writeable weight (a model input) is prepared on every call so that a change between
runs is seen, and a prepared form is dropped with its array."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import passhost
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.expr import Function, var
from passhost.relay.interpreter import evaluate
from passhost.transform import PassContext
from passhost_cpu_target import native, native_kernels

RNG = np.random.default_rng(5)
#: A 3x3 convolution large enough for the Winograd path, then a 1x1 (packed panels).
W3_SHAPE, W1_SHAPE = (16, 16, 3, 3), (8, 16, 1, 1)


def _model() -> IRModule:
    x = var("x", shape=(1, 16, 24, 24), dtype="float32")
    w3 = var("w3", shape=W3_SHAPE, dtype="float32")
    w1 = var("w1", shape=W1_SHAPE, dtype="float32")
    body = nn.conv2d(nn.relu(nn.conv2d(x, w3, padding=(1, 1, 1, 1))), w1)
    return IRModule.from_expr(Function([x, w3, w1], body))


def _weights() -> dict[str, np.ndarray]:
    return {"w3": RNG.uniform(-1, 1, W3_SHAPE).astype("float32"),
            "w1": RNG.uniform(-1, 1, W1_SHAPE).astype("float32")}


class _CountPrepares:
    """Counts the calls of the library's weight preparation."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        lib = native.library()
        real = lib.conv2d_nchw_prepare

        def counted(*args):
            self.calls += 1
            return real(*args)

        monkeypatch.setattr(lib, "conv2d_nchw_prepare", counted)


def test_parameters_are_prepared_on_the_first_run_only(monkeypatch):
    count = _CountPrepares(monkeypatch)
    weights = _weights()
    with PassContext(opt_level=3):
        compiled = passhost.build(_model(), "cpu -num-threads=1", weights)
    executor = compiled.executor()
    x = RNG.uniform(-1, 1, (1, 16, 24, 24)).astype("float32")
    want = evaluate(_model(), x=x, **weights)
    first = executor(x)[0]
    assert count.calls == 2
    second = executor(x)[0]
    assert count.calls == 2
    np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(second, first)


def test_weights_given_as_inputs_are_prepared_on_every_call(monkeypatch):
    count = _CountPrepares(monkeypatch)
    with PassContext(opt_level=3):
        compiled = passhost.build(_model(), "cpu -num-threads=1")
    executor = compiled.executor()
    x = RNG.uniform(-1, 1, (1, 16, 24, 24)).astype("float32")
    for _ in range(2):
        weights = _weights()
        got = executor(x=x, **weights)[0]
        np.testing.assert_allclose(got, evaluate(_model(), x=x, **weights), rtol=1e-4,
                                   atol=1e-4)
    assert count.calls == 4


def test_a_prepared_form_goes_with_its_array():
    weight = RNG.uniform(-1, 1, (32, 16, 1, 1)).astype("float32")
    weight.flags.writeable = False
    geometry = np.array([1, 16, 5, 5, 32, 5, 5, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1], np.int64)
    before = len(native_kernels._prepared)
    first = native_kernels.prepared_conv2d_weights(weight, None, geometry, "OIHW")
    assert native_kernels.prepared_conv2d_weights(weight, None, geometry, "OIHW") is first
    assert len(native_kernels._prepared) == before + 1
    del weight
    gc.collect()
    assert len(native_kernels._prepared) == before
