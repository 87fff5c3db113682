"""Native runs: steps that are one native kernel call (convolution, dense, matrix product,
pooling) and compiled loop steps are bound together when the executor is made and run as
one native call, with the same numbers as step by step; a call whose arguments cannot be
fixed once (a weight given as an input) stays a Python call; a failing step inside a run
raises its own error."""

from __future__ import annotations

import re

import numpy as np
import pytest

import passhost
from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.interpreter import evaluate
from passhost.runtime.module import find_function
from passhost.target import Target
from passhost.tir import AssertStmt, BufferStore, decl_buffer
from passhost.tir.expr import StringImm
from passhost.tir.function import PrimFunc
from passhost.transform import PassContext
from passhost_cpu_target.codegen import tir_to_runtime
from passhost_cpu_target.native.steps import step_runner

RNG = np.random.default_rng(23)


def _data(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype("float32")


def _mlp() -> tuple[IRModule, dict[str, np.ndarray]]:
    """Dense layers (the small-row kernel), a softmax (loops)."""
    x = relay.var("x", shape=(1, 20), dtype="float32")
    w1, w2 = relay.var("w1", shape=(32, 20), dtype="float32"), relay.var(
        "w2", shape=(10, 32), dtype="float32")
    h = nn.relu(nn.dense(x, w1))
    body = nn.softmax(nn.dense(h, w2), axis=-1)
    return (IRModule.from_expr(relay.Function([x, w1, w2], body)),
            {"w1": _data(32, 20), "w2": _data(10, 32)})


def _attention() -> tuple[IRModule, dict[str, np.ndarray]]:
    """A matrix product with a transposed operand, softmax, a product with a weight, a
    convolution and a pool: every native kernel beside loops."""
    x = relay.var("x", shape=(1, 4, 12, 12), dtype="float32")
    w = relay.var("w", shape=(8, 4, 3, 3), dtype="float32")
    p = relay.var("p", shape=(36, 36), dtype="float32")
    c = nn.max_pool2d(nn.relu(nn.conv2d(x, w, padding=(1, 1, 1, 1))), pool_size=(2, 2),
                      strides=(2, 2))
    seq = relay.reshape(c, (8, 36))
    scores = nn.softmax(nn.batch_matmul(relay.expand_dims(seq, 0), relay.expand_dims(seq, 0)),
                        axis=-1)
    out = relay.matmul(relay.reshape(scores, (8, 8)), relay.reshape(seq, (8, 36)))
    body = nn.relu(relay.matmul(out, p))
    return (IRModule.from_expr(relay.Function([x, w, p], body)),
            {"w": _data(8, 4, 3, 3), "p": _data(36, 36)})


def _step_by_step(executor) -> list[np.ndarray]:
    """The executor's outputs when every step is called alone, from Python."""
    for step in executor.plan.steps:
        find_function(executor.module, step.func)(*[executor._arrays[a] for a in step.args])
    return [executor.get_output(i).copy() for i in range(executor.num_outputs)]


@pytest.mark.parametrize("model", [_mlp, _attention], ids=["mlp", "attention"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_model_of_native_steps_runs_as_one_native_call(model, threads):
    mod, params = model()
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, f"cpu -num-threads={threads}", params=params)
    executor = compiled.executor()
    assert len(executor.plan.steps) >= 3 and len(executor._runs) == 1
    x = _data(*mod["main"].params[0].checked_type.shape)
    got = executor(x)[0].copy()
    np.testing.assert_allclose(got, evaluate(mod, x=x, **params), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(_step_by_step(executor)[0], got)


def test_a_weight_given_as_an_input_stays_a_python_call_and_is_read_each_run():
    mod, _ = _attention()
    with PassContext(opt_level=3):
        executor = passhost.build(mod, "cpu -num-threads=1").executor()
    assert len(executor._runs) > 1
    x = _data(1, 4, 12, 12)
    for _ in range(2):
        weights = {"w": _data(8, 4, 3, 3), "p": _data(36, 36)}
        np.testing.assert_allclose(executor(x=x, **weights)[0],
                                   evaluate(mod, x=x, **weights), rtol=1e-4, atol=1e-5)


def _checked_steps_module():
    """Compiled loops ``ok`` (x[1] = x[0] + 1) and ``f`` (x[0] = x[1], failing unless
    x[0] < 1), each over a float32[2]."""
    x = decl_buffer((2,), "float32", "x")
    ok = PrimFunc([x.data], {x.data: x}, BufferStore(x, x[0] + 1.0, [1]),
                  attrs={"global_symbol": "ok"})
    checked = PrimFunc([x.data], {x.data: x},
                       AssertStmt(x[0] < 1.0, StringImm("x[0] must be below 1"),
                                  BufferStore(x, x[1], [0])), attrs={"global_symbol": "f"})
    return tir_to_runtime(Target("cpu"), IRModule({"ok": ok, "f": checked}))


def test_a_failing_step_in_a_native_run_raises_its_own_error():
    module = _checked_steps_module()
    array = np.array([5.0, 1.0], "float32")
    steps = [(module.get_function(name).native_step, [array]) for name in ("ok", "f")]
    run = step_runner().bind(steps)
    with pytest.raises(passhost.errors.PasshostError, match=r"'f'.*x\[0\] must be below 1"):
        run()
    assert array[1] == 6.0  # the step before the failing one ran


@pytest.mark.parametrize("weights_as_inputs", [False, True])
def test_run_timed_adds_each_step_time_and_computes_what_run_does(weights_as_inputs):
    # with the weights as inputs some steps stay Python calls (timed around the call)
    mod, params = _attention()
    with PassContext(opt_level=3):
        built = passhost.build(mod, "cpu -num-threads=2",
                               params=None if weights_as_inputs else params)
    executor = built.executor()
    assert (len(executor._runs) > 1) == weights_as_inputs
    x = _data(1, 4, 12, 12)
    inputs = {"x": x, **(params if weights_as_inputs else {})}
    expected = executor(**inputs)[0].copy()
    seconds = np.zeros(len(executor.plan.steps))
    executor.set_input("x", np.zeros_like(x))
    executor.run_timed(seconds)
    first = seconds.copy()
    assert np.all(first > 0) and first.sum() < 10  # every step timed, in seconds
    executor.set_input("x", x)
    executor.run_timed(seconds)  # adds to what is there
    assert np.all(seconds > first)
    np.testing.assert_array_equal(executor.get_output(0), expected)
    executor.run()  # the untimed runs are untouched
    np.testing.assert_array_equal(executor.get_output(0), expected)
    with pytest.raises(passhost.errors.PasshostError, match="steps, 2 entries"):
        executor.run_timed(np.zeros(2))


def test_a_timed_native_run_times_its_steps_in_order_up_to_a_failure():
    module = _checked_steps_module()
    array = np.array([0.5, 1.0], "float32")
    steps = [(module.get_function(name).native_step, [array]) for name in ("ok", "f", "ok")]
    seconds = np.zeros(3)
    run = step_runner().bind(steps, seconds)
    run()
    assert np.all(seconds > 0) and array.tolist() == [1.5, 2.5]
    before = seconds.copy()
    with pytest.raises(passhost.errors.PasshostError, match=r"'f'.*x\[0\] must be below 1"):
        run()
    # the steps up to the failing one add their times; the one after it did not run
    assert seconds[0] > before[0] and seconds[1] > before[1] and seconds[2] == before[2]
    with pytest.raises(ValueError, match="3 contiguous float64"):
        step_runner().bind(steps, np.zeros(3, "float32"))


def _conv_silu() -> tuple[IRModule, dict[str, np.ndarray]]:
    """A convolution, a bias and x * sigmoid(x) (EfficientNet's activation)."""
    x = relay.var("x", shape=(1, 8, 13, 13), dtype="float32")
    w, b = relay.var("w", shape=(20, 8, 3, 3), dtype="float32"), relay.var(
        "b", shape=(20,), dtype="float32")
    y = nn.bias_add(nn.conv2d(x, w, padding=(1, 1, 1, 1)), b)
    return (IRModule.from_expr(relay.Function([x, w, b], relay.multiply(y, relay.sigmoid(y)))),
            {"w": _data(20, 8, 3, 3), "b": _data(20)})


def _dense_silu() -> tuple[IRModule, dict[str, np.ndarray]]:
    """A dense layer (the matrix-product kernel) with a bias, then sigmoid(x) * x."""
    x = relay.var("x", shape=(12, 30), dtype="float32")
    w, b = relay.var("w", shape=(40, 30), dtype="float32"), relay.var(
        "b", shape=(40,), dtype="float32")
    y = nn.bias_add(nn.dense(x, w), b)
    return (IRModule.from_expr(relay.Function([x, w, b], relay.multiply(relay.sigmoid(y), y))),
            {"w": _data(40, 30), "b": _data(40)})


def _matmul_silu() -> tuple[IRModule, dict[str, np.ndarray]]:
    """A matrix product then x * sigmoid(x)."""
    x = relay.var("x", shape=(2, 9, 16), dtype="float32")
    w = relay.var("w", shape=(16, 24), dtype="float32")
    y = relay.matmul(x, w)
    return (IRModule.from_expr(relay.Function([x, w], relay.multiply(y, relay.sigmoid(y)))),
            {"w": _data(16, 24)})


def _conv_sigmoid() -> tuple[IRModule, dict[str, np.ndarray]]:
    """A pointwise convolution then a sigmoid (a squeeze-excitation gate)."""
    x = relay.var("x", shape=(1, 32, 1, 1), dtype="float32")
    w = relay.var("w", shape=(96, 32, 1, 1), dtype="float32")
    return (IRModule.from_expr(relay.Function([x, w], relay.sigmoid(nn.conv2d(x, w)))),
            {"w": _data(96, 32, 1, 1)})


@pytest.mark.parametrize("model", [_conv_silu, _dense_silu, _matmul_silu, _conv_sigmoid],
                         ids=["conv-bias-silu", "dense-bias-silu", "matmul-silu",
                              "conv-sigmoid"])
def test_an_activation_after_a_kernel_runs_in_its_one_native_step(model):
    mod, params = model()
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, "cpu -num-threads=1", params=params)
    executor = compiled.executor()
    (step,) = executor.plan.steps
    assert len(executor._runs) == 1 and find_function(executor.module, step.func).native_step
    x = _data(*mod["main"].params[0].checked_type.shape) * 4
    np.testing.assert_allclose(executor(x)[0], evaluate(mod, x=x, **params), rtol=1e-5,
                               atol=1e-5)


SUBNORMAL = np.float32(1e-40)  # below float32's smallest normal number, 1.18e-38


def _subnormal_is_kept() -> bool:
    """Whether this thread's float arithmetic keeps a subnormal result (it is not flushed)."""
    return bool(np.float32(1e-38) * np.float32(0.01) != 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_kernels_flush_subnormals_and_loops_keep_them(threads):
    """A subnormal operand costs an instruction a microcode assist of a hundred cycles or
    more, so the native kernels take subnormals as zero (operands and results) on every
    thread of a job; generated loops keep IEEE arithmetic (a cast or a product keeps its
    subnormals), and the calling thread's mode is as it was after the run."""
    x = relay.var("x", shape=(1, 16, 96, 96), dtype="float32")
    w = relay.var("w", shape=(32, 16, 1, 1), dtype="float32")
    outputs = relay.Tuple([nn.conv2d(x, w), relay.multiply(x, relay.const(0.5))])
    mod = IRModule.from_expr(relay.Function([x, w], outputs))
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, f"cpu -num-threads={threads}",
                                  params={"w": np.ones((32, 16, 1, 1), "float32")})
    executor = compiled.executor()
    data = np.full((1, 16, 96, 96), SUBNORMAL, "float32")
    data[0, 0, 0, :4] = [1.0, -2.0, 0.5, 3.0]
    for _ in range(2):  # the second run after the pool's workers ran a flushing job
        assert _subnormal_is_kept()
        summed, halved = executor(data)
        assert _subnormal_is_kept()
        # without the flush: 16 subnormals sum to 1.6e-39
        expected = np.zeros((1, 32, 96, 96), "float32")
        expected[0, :, 0, :4] = [1.0, -2.0, 0.5, 3.0]
        np.testing.assert_array_equal(summed, expected)
        np.testing.assert_array_equal(halved, data * np.float32(0.5))
        assert np.all(halved[data == SUBNORMAL] == np.float32(5e-41))



def _conv_chain(layers, c: int = 16, size: int = 28) -> IRModule:
    """3x3 convolutions with ReLU, each (channels, stride) of ``layers``, on a ``c``-channel
    image of ``size`` x ``size``."""
    rng = np.random.default_rng(5)
    x = relay.var("x", shape=(1, c, size, size), dtype="float32")
    y = x
    for o, s in layers:
        w = relay.const((rng.standard_normal((o, c, 3, 3)) * 0.1).astype("float32"))
        y = relay.nn.relu(relay.nn.conv2d(y, w, strides=(s, s), padding=(1, 1), channels=o,
                                          kernel_size=(3, 3)))
        c = o
    return IRModule.from_expr(relay.Function([x], y))


def _scratch_sizes(mod: IRModule) -> list[int]:
    """The sizes of the convolution work areas the generated module allocates."""
    source = passhost.build(mod, "cpu -num-threads=2").module.files["module.py"]
    return [int(n) for n in re.findall(r"^_conv2d_nchw_scratch\w* = \w+\(\((\d+),\)",
                                       source, re.M)]


def test_the_convolutions_of_a_module_share_one_scratch_as_large_as_the_largest():
    alone = [_scratch_sizes(_conv_chain([(64, 2)])),
             _scratch_sizes(_conv_chain([(64, 1)], c=64, size=14)),
             _scratch_sizes(_conv_chain([(128, 2)], c=64, size=14))]
    sizes = {n for found in alone for n in found}
    assert len(sizes) >= 2  # the layers ask for work areas of different sizes
    mod = _conv_chain([(64, 2), (64, 1), (128, 2)])
    assert _scratch_sizes(mod) == [max(sizes)]
    executor = passhost.build(mod, "cpu -num-threads=2").executor()
    data = np.random.default_rng(6).standard_normal((1, 16, 28, 28)).astype("float32")
    expected = evaluate(mod, data)
    for _ in range(2):  # each call rewrites what the others left in the shared area
        np.testing.assert_allclose(executor(data)[0], expected, rtol=1e-4, atol=1e-5)
