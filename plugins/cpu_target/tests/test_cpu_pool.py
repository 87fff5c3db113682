"""The kernels' thread pool (``native/kernels/pool.c``), through the dense layers that run on
it: right results on two threads, with several Python threads running models at once (one
takes the pool, the others run alone), and in a child process forked after the pool's
workers started (it has none of them and must start its own)."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

import passhost
from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.transform import PassContext

RNG = np.random.default_rng(20261126)
#: A layer big enough for two threads (k * units over the pool's threshold).
ROWS, K, UNITS = 2, 784, 520


def _layer(threads: int):
    """A dense layer (bias, relu) with parameter weights, compiled for ``threads``; and the
    float64 function it computes."""
    w = RNG.standard_normal((UNITS, K)).astype("float32")
    b = RNG.standard_normal(UNITS).astype("float32")
    x = relay.var("x", shape=(ROWS, K), dtype="float32")
    body = relay.nn.relu(relay.add(nn.dense(x, relay.const(w)), relay.const(b)))
    with PassContext(opt_level=3):
        compiled = passhost.build(IRModule.from_expr(relay.Function([x], body)),
                                  f"cpu -num-threads={threads}")
    assert "native_kernels.dense" in compiled.get_source()

    def expected(data: np.ndarray) -> np.ndarray:
        return np.maximum(data.astype("float64") @ w.T.astype("float64") + b, 0)

    return compiled, expected


def _inputs(count: int) -> list[np.ndarray]:
    return [RNG.standard_normal((ROWS, K)).astype("float32") for _ in range(count)]


@pytest.mark.parametrize("threads", [1, 2, 0])
def test_a_pooled_dense_layer_is_right_on_every_run(threads):
    compiled, expected = _layer(threads)
    executor = compiled.executor()
    for data in _inputs(50):
        np.testing.assert_allclose(executor(data)[0], expected(data), rtol=1e-4, atol=1e-4)


def test_python_threads_running_models_at_once_get_their_own_results():
    compiled, expected = _layer(2)
    failures: list[str] = []

    def run(seed_inputs: list[np.ndarray]) -> None:
        executor = compiled.executor()
        for data in seed_inputs:
            if not np.allclose(executor(data)[0], expected(data), rtol=1e-4, atol=1e-4):
                failures.append("wrong result")

    workers = [threading.Thread(target=run, args=(_inputs(40),)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []


def _run_in_child(compiled, data, expected, queue) -> None:
    queue.put(bool(np.allclose(compiled.executor()(data)[0], expected, rtol=1e-4,
                               atol=1e-4)))


def test_a_forked_child_starts_its_own_workers():
    compiled, expected = _layer(2)
    data = _inputs(1)[0]
    compiled.executor()(data)  # the parent's workers exist now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_run_in_child, args=(compiled, data, expected(data), queue))
    child.start()
    child.join(timeout=120)
    assert child.exitcode == 0, "the forked child hung or failed"
    assert queue.get(timeout=5) is True
