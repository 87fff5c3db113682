"""The cpu target compiles loop nests to one C unit, runs consecutive loop steps as one
native call, and falls back to Python loops (with one warning) when it cannot compile."""

from __future__ import annotations

import os
import signal
import threading
import warnings

import numpy as np
import pytest

import passhost
from passhost import relay
from passhost.ir.module import IRModule
from passhost_cpu_target.compiled_loops import CompiledLoopsWarning

RNG = np.random.default_rng(7)


def _two_softmaxes() -> IRModule:
    """Two softmaxes in a row: FuseOps keeps them apart (each ends in a reduction), so the
    build has several loop PrimFuncs, called one after the other."""
    x = relay.var("x", shape=(3, 40), dtype="float32")
    y = relay.nn.softmax(relay.exp(x), axis=-1)
    z = relay.nn.softmax(relay.multiply(y, relay.const(3.0)), axis=0)
    return IRModule.from_expr(relay.Function([x], z))


def _expected(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64))
    y = np.exp(e - e.max(-1, keepdims=True))
    y = y / y.sum(-1, keepdims=True) * 3
    z = np.exp(y - y.max(0, keepdims=True))
    return z / z.sum(0, keepdims=True)


def test_loop_steps_are_compiled_c_and_run_as_one_native_call():
    compiled = passhost.build(_two_softmaxes(), "cpu")
    assert len(compiled.tir["cpu"].functions) >= 2
    source = compiled.module.get_source("loops.c")
    assert "__packed(void *const *args)" in source and "for (" in source
    executor = compiled.executor()
    assert len(executor.plan.steps) >= 2 and len(executor._runs) == 1
    x = RNG.standard_normal((3, 40)).astype("float32")
    np.testing.assert_allclose(executor(x)[0], _expected(x), rtol=1e-5)


def test_without_a_working_compiler_the_loops_run_as_python_after_one_warning(monkeypatch):
    """The unit compiles while the build goes on: the build keeps its C text, and the
    first use of its functions (making an executor) says they run as Python."""
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = passhost.build(_two_softmaxes(), "cpu")
    assert "for (" in compiled.module.files["loops.c"]
    with pytest.warns(CompiledLoopsWarning, match="run as Python"):
        executor = compiled.executor()
    x = RNG.standard_normal((3, 40)).astype("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(executor(x)[0], _expected(x), rtol=1e-5)
        np.testing.assert_allclose(compiled.executor()(x)[0], _expected(x), rtol=1e-5)


def test_the_build_returns_before_the_loops_are_compiled(monkeypatch):
    """A compiler that takes its time holds up the first use, not the build."""
    from passhost_cpu_target.native import build as native_build

    started, release = threading.Event(), threading.Event()
    compile_unit = native_build.load_or_build

    def slow(*args, **kwargs):
        started.set()
        assert release.wait(60), "the test never let the compile finish"
        return compile_unit(*args, **kwargs)

    monkeypatch.setattr("passhost_cpu_target.compiled_loops.load_or_build", slow)
    compiled = passhost.build(_two_softmaxes(), "cpu")  # returns while the compile waits
    assert started.wait(60) and not release.is_set()
    release.set()
    x = RNG.standard_normal((3, 40)).astype("float32")
    executor = compiled.executor()
    assert len(executor._runs) == 1  # compiled: one native run
    np.testing.assert_allclose(executor(x)[0], _expected(x), rtol=1e-5)


def test_with_native_code_off_the_build_lowers_to_kernel_calls(monkeypatch):
    monkeypatch.setenv("PASSHOST_CPU_NATIVE", "0")
    compiled = passhost.build(_two_softmaxes(), "cpu")
    assert "loops.c" not in compiled.module.files
    assert "call_kernel" in passhost.text.print_module(compiled.tir["cpu"])
    x = RNG.standard_normal((3, 40)).astype("float32")
    np.testing.assert_allclose(compiled.executor()(x)[0], _expected(x), rtol=1e-5)


def test_a_failing_assertion_in_compiled_loops_is_a_clear_error():
    from passhost.target import Target
    from passhost.tir import AssertStmt, BufferStore, decl_buffer
    from passhost.tir.expr import StringImm
    from passhost.tir.function import PrimFunc
    from passhost_cpu_target.codegen import tir_to_runtime

    x = decl_buffer((2,), "float32", "x")
    body = AssertStmt(x[0] < 1.0, StringImm("x[0] must be below 1"),
                      BufferStore(x, x[1], [0]))
    func = PrimFunc([x.data], {x.data: x}, body, attrs={"global_symbol": "f"})
    module = tir_to_runtime(Target("cpu"), IRModule({"f": func}))
    with pytest.raises(passhost.errors.PasshostError, match="x\\[0\\] must be below 1"):
        module.get_function("f")(np.array([5.0, 1.0], "float32"))


def test_a_fork_during_the_compile_waits_for_it(monkeypatch):
    """A child forked while the loops compile gets the finished library (it has none of the
    parent's threads: a compile still running would never finish there)."""
    from passhost_cpu_target.native import build as native_build

    compile_unit = native_build.load_or_build
    release = threading.Event()

    def slow(*args, **kwargs):
        assert release.wait(60), "the test never let the compile finish"
        return compile_unit(*args, **kwargs)

    monkeypatch.setattr("passhost_cpu_target.compiled_loops.load_or_build", slow)
    compiled = passhost.build(_two_softmaxes(), "cpu")
    threading.Timer(0.2, release.set).start()
    x = RNG.standard_normal((3, 40)).astype("float32")
    pid = os.fork()
    if pid == 0:  # the child: its loops run, compiled
        code = 1
        signal.alarm(60)  # a child waiting for a compile that is not there dies, not hangs
        try:
            executor = compiled.executor()
            if len(executor._runs) == 1 and np.allclose(executor(x)[0], _expected(x),
                                                        rtol=1e-5):
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_gpt2_gelu_after_a_reshape_is_one_loop_nest():
    # the tanh GELU of GPT-2's export, on a reshape, its cube taken in float64
    x = relay.var("x", shape=(4, 96), dtype="float32")
    v = relay.reshape(x, newshape=(1, 4, 96))
    cube = relay.cast(relay.multiply(relay.multiply(relay.cast(v, "float64"),
                                                    relay.cast(v, "float64")),
                                     relay.cast(v, "float64")), "float32")
    inner = relay.multiply(relay.add(v, relay.multiply(cube, relay.const(0.044715))),
                           relay.const(0.7978845608))
    y = relay.multiply(relay.multiply(v, relay.const(0.5)),
                       relay.add(relay.tanh(inner), relay.const(1.0)))
    compiled = passhost.build(IRModule.from_expr(relay.Function([x], y)), "cpu")
    assert [s.func for s in compiled.plan.steps] == [compiled.plan.steps[0].func]
    assert "cast" in compiled.plan.steps[0].func
    data = RNG.uniform(-6, 6, (4, 96)).astype("float32")
    wide = data.astype(np.float64)
    expected = 0.5 * wide * (1 + np.tanh(0.7978845608 * (wide + 0.044715 * wide ** 3)))
    np.testing.assert_allclose(compiled.executor()(data)[0], expected.reshape(1, 4, 96),
                               rtol=2e-6, atol=1e-6)


def test_a_reshape_of_a_matrix_product_is_a_view_of_its_result():
    x = relay.var("x", shape=(6, 40), dtype="float32")
    w = relay.var("w", shape=(48, 40), dtype="float32")
    y = relay.nn.softmax(relay.reshape(relay.nn.dense(x, w), newshape=(2, 3, 48)), axis=-1)
    compiled = passhost.build(IRModule.from_expr(relay.Function([x, w], y)), "cpu")
    plan = compiled.plan
    assert len(plan.steps) == 2
    assert plan.tensors[plan.steps[1].args[0]].storage == \
        plan.tensors[plan.steps[0].args[-1]].storage
    data = RNG.standard_normal((6, 40)).astype("float32")
    weight = RNG.standard_normal((48, 40)).astype("float32")
    product = (data.astype(np.float64) @ weight.T.astype(np.float64)).reshape(2, 3, 48)
    expected = np.exp(product - product.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(compiled.executor()(data, weight)[0], expected,
                               rtol=1e-5, atol=1e-7)


def test_a_transposing_add_runs_in_tiles_with_the_same_numbers():
    # ConvNeXt's residual add after its channels-last block
    x = relay.var("x", shape=(1, 16, 16, 48), dtype="float32")
    r = relay.var("r", shape=(1, 48, 16, 16), dtype="float32")
    y = relay.add(relay.transpose(x, axes=(0, 3, 1, 2)), r)
    compiled = passhost.build(IRModule.from_expr(relay.Function([x, r], y)), "cpu")
    source = compiled.module.get_source("loops.c")
    assert "_inner < INT64_C(16)" in source  # 16 channels a tile
    data = RNG.standard_normal((1, 16, 16, 48)).astype("float32")
    residual = RNG.standard_normal((1, 48, 16, 16)).astype("float32")
    np.testing.assert_array_equal(compiled.executor()(data, residual)[0],
                                  data.transpose(0, 3, 1, 2) + residual)
