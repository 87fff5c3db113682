"""The native matrix-product kernel agrees with the reference kernels of ``nn.dense``,
``matmul`` and ``nn.batch_matmul``: every transpose and batch broadcast it reads in place,
shapes around its tile sizes, read-only (packed once) and writeable second operands, and
its epilogue (per-channel bias, then scale, a residual, a clip, a final sigmoid or SiLU), at
1, 2 and all threads."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import assert_same, run_op
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cpu_native_fusion import _body, _call, _fused

import passhost
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.expr import Function, var
from passhost.relay.interpreter import evaluate
from passhost.relay.op import tensor as tn
from passhost.tir.function import decl_buffer
from passhost.transform import PassContext
from passhost_cpu_target import native
from passhost_cpu_target.epilogue import Epilogue, match_epilogue

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
RNG = np.random.default_rng(17)
THREADS = st.sampled_from([0, 1, 2])
#: Sizes around the kernel's tiles (7, 8 or 14 rows with AVX-512, else 6; 32 or 16
#: columns; 256-deep slabs).
SIZES = st.sampled_from([1, 2, 5, 7, 8, 9, 16, 17, 31, 33, 64, 129, 257])


def _data(shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def _frozen(array):
    array.flags.writeable = False
    return array


@SETTINGS
@given(rows=SIZES, k=SIZES, units=SIZES, lead=st.sampled_from([(), (3,), (2, 2)]),
       frozen=st.booleans(), threads=THREADS)
def test_dense_of_any_rows(rows, k, units, lead, frozen, threads):
    x, w = _data((*lead, rows + 8, k)), _data((units, k))
    got, expected, source = run_op("nn.dense", {}, [x, _frozen(w) if frozen else w],
                                   num_threads=threads)
    assert "native_kernels.matmul" in source
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(m=SIZES, k=SIZES, n=SIZES, batches=st.sampled_from([((), ()), ((3,), ()), ((), (3,)),
                                                           ((2, 3), (2, 3)), ((1, 3), (3,)),
                                                           ((4,), (1,))]),
       frozen=st.booleans(), threads=THREADS)
def test_matmul_broadcasting_a_whole_operand(m, k, n, batches, frozen, threads):
    a, b = _data((*batches[0], m, k)), _data((*batches[1], k, n))
    got, expected, source = run_op("matmul", {}, [a, _frozen(b) if frozen else b],
                                   num_threads=threads)
    assert "native_kernels.matmul" in source
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


def test_matmul_batches_broadcast_dimension_by_dimension_use_numpy():
    a, b = _data((2, 1, 3, 4)), _data((1, 2, 4, 5))
    got, expected, source = run_op("matmul", {}, [a, b])
    assert "native_kernels.matmul" not in source
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(m=SIZES, k=SIZES, n=SIZES, items=st.sampled_from([(1, 1), (3, 3), (3, 1), (1, 3)]),
       ta=st.booleans(), tb=st.booleans(), threads=THREADS)
def test_batch_matmul_reads_transposes_in_place(m, k, n, items, ta, tb, threads):
    x = _data((items[0], k, m) if ta else (items[0], m, k))
    y = _data((items[1], n, k) if tb else (items[1], k, n))
    got, expected, source = run_op("nn.batch_matmul", {"transpose_a": ta, "transpose_b": tb},
                                   [x, y], num_threads=threads)
    assert "native_kernels.matmul" in source
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


def test_zero_depth_products_are_the_epilogue_of_zero():
    got, expected, _ = _fused("matmul", {}, [_data((9, 0)), _data((0, 40))],
                              [("add", None, _data((40,)), False)])
    assert_same([got], [expected])


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_bias_scale_residual_and_clip_run_in_the_kernel(threads):
    steps = [("add", None, _data((48,)), True), ("multiply", None, _data((48,)), False),
             ("add", None, _data((2, 37, 48)), False),
             ("clip", {"a_min": -0.5, "a_max": 0.5}, None, False)]
    got, expected, source = _fused("matmul", {}, [_data((2, 37, 70)), _frozen(_data((70, 48)))],
                                   steps, threads)
    body = _body(source)
    assert body.count("\n    ") == 1 and "_matmul(T, x0, x1, e0, e1, e2," in body
    assert_same([got], [expected], rtol=1e-5, atol=1e-5)


def _dense_model() -> IRModule:
    x = var("x", shape=(20, 30), dtype="float32")
    w = var("w", shape=(40, 30), dtype="float32")
    return IRModule.from_expr(Function([x, w], nn.relu(nn.dense(x, w))))


def test_parameters_are_packed_on_the_first_run_and_inputs_on_every_run(monkeypatch):
    lib, calls = native.library(), []
    real = lib.matmul_pack_b
    monkeypatch.setattr(lib, "matmul_pack_b", lambda *args: calls.append(args) or real(*args))
    x = _data((20, 30))
    weights = {"w": _data((40, 30))}
    with PassContext(opt_level=3):
        bound = passhost.build(_dense_model(), "cpu -num-threads=1", weights).executor()
        unbound = passhost.build(_dense_model(), "cpu -num-threads=1").executor()
    for _ in range(2):
        np.testing.assert_allclose(bound(x)[0], evaluate(_dense_model(), x=x, **weights),
                                   rtol=1e-5, atol=1e-5)
    assert len(calls) == 1
    for _ in range(2):
        w = _data((40, 30))
        np.testing.assert_allclose(unbound(x=x, w=w)[0], evaluate(_dense_model(), x=x, w=w),
                                   rtol=1e-5, atol=1e-5)
    assert len(calls) == 1  # a writeable operand is packed by the kernel itself


def test_a_scale_before_the_bias_or_after_a_residual_ends_the_epilogue():
    out = decl_buffer((5, 8), "float32", "T")
    bias, res = decl_buffer((8,), "float32", "b"), decl_buffer((5, 8), "float32", "r")
    scale = _call("multiply", [out], [out, bias])
    add = _call("add", [out], [out, bias])
    residual = _call("add", [out], [res, out])
    assert match_epilogue(out, [scale, add], 1, scale=True) == Epilogue(calls=1, scale=bias)
    assert match_epilogue(out, [residual, scale], 1, scale=True) == Epilogue(residual=res,
                                                                             calls=1)
    assert match_epilogue(out, [scale], 1) == Epilogue()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_residual_broadcast_over_the_batch_is_added_in_the_kernel(threads):
    # attention scores plus one mask for every head
    steps = [("add", None, _data((1, 1, 37, 41)), False)]
    got, expected, source = _fused("matmul", {}, [_data((1, 6, 37, 16)), _data((1, 6, 16, 41))],
                                   steps, threads)
    body = _body(source)
    assert body.count("\n    ") == 1 and "_matmul(T, x0, x1, None, None, e0," in body
    assert_same([got], [expected], rtol=1e-5, atol=1e-5)


def test_a_broadcast_residual_is_not_absorbed_where_the_batch_folds_into_the_rows():
    steps = [("add", None, _data((1, 5, 8)), False)]
    got, expected, source = _fused("matmul", {}, [_data((3, 5, 4)), _data((4, 8))], steps)
    assert _body(source).count("\n    ") == 2
    assert_same([got], [expected], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
@pytest.mark.parametrize("extras", ["none", "bias", "all"])
@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((16, 40), (40, 64)),          # whole tiles
    ((2, 37, 70), (70, 48)),       # the batch folded into rows; partial tiles both ways
    ((3, 9, 300), (3, 300, 20)),   # batched, two slabs of the reduction, narrow
], ids=["whole-tiles", "edges", "batched"])
def test_the_activation_comes_last_in_the_kernel(a_shape, b_shape, extras, activation):
    n = b_shape[-1]
    out_shape = (*a_shape[:-1], n) if len(b_shape) == 2 else (*b_shape[:-2], a_shape[-2], n)
    steps = []
    if extras != "none":
        steps.append(("add", None, _data((n,)), True))
    if extras == "all":
        steps += [("multiply", None, _data((n,)), False), ("add", None, _data(out_shape), False),
                  ("clip", {"a_min": -0.5, "a_max": 0.75}, None, False)]
    got, expected, source = _fused("matmul", {}, [_data(a_shape), _frozen(_data(b_shape))],
                                   steps, 1, activation)
    assert _body(source).count("\n    ") == 1 and "_matmul(T, x0, x1," in source
    assert_same([got], [expected], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows", [
    64,    # panels of 8 rows
    196,   # of 14 (ConvNeXt-T's third stage)
    27,    # of 14, the last one a row short
    49,    # of 7 (ConvNeXt-T's last stage)
    20,    # of 7, the last one a row short
])
def test_every_row_panel_height_agrees(rows, threads):
    # mm_height picks the panels' height from the rows (with AVX-512; elsewhere all take
    # 6). 1100 deep crosses the 1024-deep slab; 40 columns end with a narrow block. The
    # epilogue (bias, scale, residual, clip, SiLU) runs from the registers of each height.
    a = _data((rows, 1100))
    steps = [("add", None, _data((40,)), True), ("multiply", None, _data((40,)), False),
             ("add", None, _data((rows, 40)), False),
             ("clip", {"a_min": -8.0, "a_max": 9.0}, None, False)]
    got, expected, source = _fused("matmul", {}, [a, _frozen(_data((1100, 40)))], steps,
                                   threads, "nn.silu")
    assert _body(source).count("\n    ") == 1 and "_matmul(T, x0, x1," in source
    assert_same([got], [expected], rtol=1e-4, atol=1e-4)


def test_a_zero_depth_product_takes_the_activation():
    got, expected, _ = _fused("matmul", {}, [_data((9, 0)), _data((0, 40))],
                              [("add", None, _data((40,)), False)], activation="nn.silu")
    assert_same([got], [expected])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((2, 37, 70), (70, 48)),       # the batch folded into rows; partial tiles both ways
    ((3, 9, 300), (3, 300, 20)),   # batched, two slabs of the reduction, narrow
], ids=["edges", "batched"])
def test_a_gate_after_the_activation_is_multiplied_in_the_kernel(a_shape, b_shape, threads):
    n = b_shape[-1]
    out_shape = (*a_shape[:-1], n) if len(b_shape) == 2 else (*b_shape[:-2], a_shape[-2], n)
    steps = [("add", None, _data((n,)), True), ("nn.silu", None, None, False),
             ("multiply", None, _data(out_shape), False)]
    got, expected, source = _fused("matmul", {}, [_data(a_shape), _frozen(_data(b_shape))],
                                   steps, threads)
    body = _body(source)
    assert body.count("\n    ") == 1 and "_matmul(T, x0, x1, e0, None, None, e2," in body
    assert_same([got], [expected], rtol=1e-5, atol=1e-5)


def test_a_gate_is_only_a_product_right_after_the_activation():
    out = decl_buffer((5, 8), "float32", "T")
    gate, bias = decl_buffer((5, 8), "float32", "g"), decl_buffer((8,), "float32", "b")
    silu = _call("nn.silu", [out], [out])
    product = _call("multiply", [out], [out, gate])
    assert match_epilogue(out, [silu, product], 1, gate=True) == Epilogue(
        calls=2, activation="nn.silu", gate=gate)
    assert match_epilogue(out, [silu, product], 1) == Epilogue(calls=1, activation="nn.silu")
    assert match_epilogue(out, [product, silu], 1, gate=True) == Epilogue()
    per_channel = _call("multiply", [out], [out, bias])
    assert match_epilogue(out, [silu, per_channel], 1, gate=True) == Epilogue(
        calls=1, activation="nn.silu")


def test_a_swiglu_feed_forward_runs_as_one_native_call():
    x = var("x", shape=(1, 24, 32), dtype="float32")
    wg, wu = (var(name, shape=(32, 64), dtype="float32") for name in ("wg", "wu"))
    gate = tn.matmul(x, wg)
    body = tn.multiply(tn.multiply(gate, tn.sigmoid(gate)), tn.matmul(x, wu))
    mod = IRModule.from_expr(Function([x, wg, wu], body))
    weights = {"wg": _data((32, 64)), "wu": _data((32, 64))}
    with PassContext(opt_level=3):
        executor = passhost.build(mod, "cpu -num-threads=1", weights).executor()
    x_value = _data((1, 24, 32))
    assert len(executor._runs) == 1
    np.testing.assert_allclose(executor(x_value)[0], evaluate(mod, x=x_value, **weights),
                               rtol=1e-5, atol=1e-5)
