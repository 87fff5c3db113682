"""The kernels' thread pool (``native/kernels/pool.c``), which runs every parallel loop of the
kernel library: right results on two threads, with several Python threads running models at
once (one takes the pool, the others run alone), and in a child process forked after the
pool's workers started (it has none of them and must start its own); idle workers asleep,
not spinning; every kernel path at
two threads equal, bit for bit, to one thread and close to the reference interpreter; and
the pool itself (``pool_driver.c``) under AddressSanitizer, UndefinedBehaviorSanitizer and
ThreadSanitizer: each task once, thread numbers below the job's thread count."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import passhost
from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.interpreter import evaluate
from passhost.testing.sanitizers import SANITIZER_FLAGS, build_sanitized
from passhost.transform import PassContext
from passhost_cpu_target import native
from passhost_cpu_target.native.build import find_compiler

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


def _pool_stats() -> list[list[str]]:
    """The /proc stat fields (after the name) of this process's pool workers, the threads
    named "passhost-pool"."""
    stats = []
    for task in Path("/proc/self/task").iterdir():
        try:
            if (task / "comm").read_text().strip() == "passhost-pool":
                stats.append((task / "stat").read_text().rsplit(")", 1)[1].split())
        except OSError:  # the thread ended meanwhile
            continue
    return stats


def _cpu_seconds(stats: list[list[str]]) -> float:
    """CPU seconds (user and system) the threads of ``stats`` have used."""
    return sum(int(f[11]) + int(f[12]) for f in stats) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_idle_workers_go_to_sleep_instead_of_taking_a_core():
    compiled, expected = _layer(2)
    executor = compiled.executor()
    for data in _inputs(20):
        np.testing.assert_allclose(executor(data)[0], expected(data), rtol=1e-4, atol=1e-4)
    before = _pool_stats()
    assert before, "no pool worker started"
    time.sleep(1.0)
    # workers spin ~50 us and yield 1 ms after their last job, then sleep on a futex
    assert _cpu_seconds(_pool_stats()) - _cpu_seconds(before) < 0.2


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


#: The shapes of the kernel-path model's inputs.
PATH_INPUTS = {"x": (2, 32, 28, 28), "xh": (2, 28, 28, 32), "a": (4, 96, 64), "b": (4, 96, 80)}


def _kernel_paths() -> tuple[IRModule, dict[str, np.ndarray], list[str]]:
    """A model taking every parallel path of the kernel library once (two images, so that
    jobs span images), its weights, and the name of each output's path. The convolutions'
    shapes pick their paths (conv.c): 3x3 stride 1 at 14x14 Winograd; dilated, im2col with
    160 output channels (two chunks sharing packed columns); 3x3 stride 2 at 14x14 the wide
    grid; at 7x7 with reductions of 128 and more, transposed (a 1x1 in place, a 1x1 stride-2
    layer with 256 output channels from gathered columns of the 160-channel one). Depthwise
    3x3 layers at stride 1 and 2 over rows of 14 and more take their row paths, dilated ones
    the phase planes, 7x7 planes the channels-last path."""
    x, xh, a, b = (relay.var(name, shape=shape, dtype="float32")
                   for name, shape in PATH_INPUTS.items())
    params: dict[str, np.ndarray] = {}
    weights: list[relay.Var] = []

    def weight(name: str, *shape: int) -> relay.Var:
        params[name] = RNG.uniform(-1, 1, shape).astype("float32")
        weights.append(relay.var(name, shape=shape, dtype="float32"))
        return weights[-1]

    same = (1, 1, 1, 1)
    pooled = nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=same)  # 32 x 14 x 14
    implicit = nn.relu(nn.conv2d(pooled, weight("implicit", 128, 32, 3, 3), strides=(2, 2),
                                 padding=same))  # 128 x 7 x 7
    shared = nn.conv2d(pooled, weight("shared", 160, 32, 3, 3), dilation=(2, 2),
                       padding=(2, 2, 2, 2))  # 160 x 14 x 14
    outputs = {
        "max pool 3x3 stride 2": pooled,
        "max pool, phase planes": nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2)),
        "depthwise, same size": nn.relu(nn.conv2d(x, weight("dw_same", 32, 1, 3, 3),
                                                  padding=same, groups=32)),
        "depthwise, stride 2": nn.conv2d(x, weight("dw_s2", 32, 1, 3, 3), strides=(2, 2),
                                         padding=same, groups=32),
        "depthwise, phase planes": nn.conv2d(x, weight("dw_taps", 32, 1, 3, 3), dilation=(2, 2),
                                             padding=(2, 2, 2, 2), groups=32),
        "depthwise, small planes": nn.conv2d(implicit, weight("dw_small", 128, 1, 3, 3),
                                             padding=same, groups=128),
        "depthwise, NHWC": nn.conv2d(xh, weight("dw_nhwc", 3, 3, 32, 1), padding=same,
                                     groups=32, data_layout="NHWC", kernel_layout="HWOI"),
        "winograd": nn.relu(nn.conv2d(pooled, weight("winograd", 48, 32, 3, 3), padding=same)),
        "im2col, columns shared by chunks": shared,
        "im2col, groups": nn.conv2d(pooled, weight("grouped", 32, 16, 3, 3), padding=same,
                                    groups=2),
        "implicit (wide grid)": implicit,
        "transposed 1x1": nn.conv2d(implicit, weight("transposed", 96, 128, 1, 1)),
        "transposed, gathered": nn.conv2d(shared, weight("gathered", 256, 160, 1, 1),
                                          strides=(2, 2)),
        "batched matmul": nn.batch_matmul(a, b, transpose_a=True, transpose_b=False),
    }
    body = relay.Tuple(list(outputs.values()))
    return (IRModule.from_expr(relay.Function([x, xh, a, b, *weights], body)), params,
            list(outputs))


@pytest.fixture(scope="module")
def kernel_paths() -> tuple[dict[int, list[np.ndarray]], list[np.ndarray], list[str]]:
    """The kernel-path model's outputs at 1 and 2 threads, the reference interpreter's, and
    the paths' names."""
    mod, params, names = _kernel_paths()
    inputs = {name: RNG.uniform(-1, 1, shape).astype("float32")
              for name, shape in PATH_INPUTS.items()}
    got = {}
    for threads in (1, 2):
        with PassContext(opt_level=3):
            compiled = passhost.build(mod, f"cpu -num-threads={threads}", params)
        source = compiled.get_source()
        for kernel in ("conv2d_nchw", "depthwise_conv2d_nchw", "depthwise_conv2d_nhwc",
                       "max_pool2d_nchw", "matmul"):
            assert f"native_kernels.{kernel}" in source, kernel
        got[threads] = [np.array(out) for out in compiled.executor()(*inputs.values())]
    want = [np.asarray(out) for out in evaluate(mod, **inputs, **params)]
    return got, want, names


@pytest.mark.parametrize("path", range(14))
def test_every_kernel_path_at_two_threads_is_one_threads_result(kernel_paths, path):
    got, want, names = kernel_paths
    assert len(names) == 14
    one, two = got[1][path], got[2][path]
    assert np.array_equal(one, two), names[path]
    np.testing.assert_allclose(two, want[path], rtol=1e-4, atol=1e-4 * np.abs(want[path]).max(),
                               err_msg=names[path])


DRIVER = Path(__file__).with_name("pool_driver.c")


@pytest.mark.parametrize("sanitizers", [SANITIZER_FLAGS, ("-fsanitize=thread",)],
                         ids=["address-undefined", "thread"])
def test_the_pool_runs_each_task_once_on_numbered_threads(tmp_path, sanitizers):
    compiler = find_compiler()
    if compiler is None:
        pytest.skip("no C compiler")
    sources = native.sources()
    for name in ("kernels.h", "pool.c"):  # the pool needs nothing else of the library
        (tmp_path / name).write_text(sources[name], encoding="utf-8")
    program = build_sanitized(compiler, [
        "-std=gnu11", "-O1", "-g", "-march=native", "-fopenmp", "-Wall", "-Werror",
        f"-I{tmp_path}", DRIVER, tmp_path / "pool.c"], tmp_path / "pool_driver", sanitizers)
    run = subprocess.run([str(program)], capture_output=True, text=True, check=False,
                         timeout=300)
    if "unexpected memory mapping" in run.stderr:
        pytest.skip(f"ThreadSanitizer cannot run here: {run.stderr.strip()[:200]}")
    assert run.returncode == 0 and "Sanitizer" not in run.stderr, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == "ok"


_THREADS_CHILD = """
import os, sys
import numpy as np
import passhost
from passhost import relay
from passhost.ir.module import IRModule
from passhost.transform import PassContext

def names():
    return {t: open(f"/proc/self/task/{t}/comm").read().strip()
            for t in os.listdir("/proc/self/task")}

x = relay.var("x", shape=(12, 197, 197), dtype="float32")
mod = IRModule.from_expr(relay.Function([x], relay.nn.softmax(x, axis=-1)))
with PassContext(opt_level=3):
    compiled = passhost.build(mod, "cpu -num-threads=2")
source = compiled.module.files["loops.c"]
assert "ph_parallel_for(" in source and "ph_kernel" not in source, "a loops-only model"
run = compiled.executor()
data = np.random.default_rng(0).standard_normal((12, 197, 197)).astype(np.float32)
before = names()
(out,) = run(data)
started = {t: n for t, n in names().items() if t not in before}
want = np.exp(data - data.max(-1, keepdims=True))
np.testing.assert_allclose(out, want / want.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
print(sorted(started.values()))
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_compiled_loops_run_on_the_kernels_pool_not_on_openmp():
    """A model made of compiled loops only, at two threads, starts one thread: the kernels'
    pool worker (OpenMP would start a thread of its own, named as the process)."""
    if native.library() is None:
        pytest.skip("no native kernel library (no C compiler)")
    done = subprocess.run([sys.executable, "-c", _THREADS_CHILD], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[-2] == "['passhost-pool']"
