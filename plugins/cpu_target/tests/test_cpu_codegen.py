"""Code generation from hand-written PrimFuncs: kernel calls, allocations made once,
constants, loops and scalar TIR, assertions, errors, names, and the reference fallback."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cpu_helpers import assert_same, compile_funcs, prim_func, run_op, uses_fast_kernel

from passhost import te as tensor_expr
from passhost.runtime.kernel_call import kernel_call
from passhost.runtime.module import FunctionModule
from passhost.tir import expr as te
from passhost.tir import stmt as ts
from passhost.tir.function import PrimFunc, decl_buffer
from passhost.tir.intrinsics import intrinsic_call
from passhost_cpu_target import emitter
from passhost_cpu_target.errors import CodegenError, TIRAssertionError

RNG = np.random.default_rng(3)


def _add_relu_with_allocation():
    """out = relu(x + b) through an allocated intermediate t."""
    x, b, out = (decl_buffer(s, "float32", n) for s, n in
                 (((2, 3), "x"), ((3,), "b"), ((2, 3), "out")))
    t = decl_buffer((2, 3), "float32", "t")
    body = ts.SeqStmt([kernel_call("add", None, [t], [x, b]),
                       kernel_call("nn.relu", None, [out], [t])])
    body = ts.Allocate(t.data, "float32", t.shape, ts.DeclBuffer(t, body))
    return prim_func([x, b, out], body)


def test_kernel_calls_and_an_allocation_reused_by_every_call():
    module = compile_funcs({"f": _add_relu_with_allocation()})
    assert isinstance(module, FunctionModule) and module.type_key == "cpu"
    f = module.get_function("f")
    allocated = [name for name in f.__globals__ if name.startswith("_t")]
    assert len(allocated) == 1
    first = f.__globals__[allocated[0]]
    for _ in range(2):
        x, b = RNG.uniform(-1, 1, (2, 3)).astype("float32"), RNG.uniform(-1, 1, 3).astype(
            "float32")
        out = np.empty((2, 3), "float32")
        f(x, b, out)
        np.testing.assert_array_equal(out, np.maximum(x + b, 0))
        assert f.__globals__[allocated[0]] is first
        np.testing.assert_array_equal(first, x + b)  # the call wrote the allocated array
    source = module.get_source()
    assert f"\n{allocated[0]} = _aligned_full((2, 3), 0, 'float32')\n" in source
    assert first.ctypes.data % 64 == 0  # vector rows never straddle two cache lines
    assert "def f(x, b, out):" in source


def test_allocate_const_is_bound_not_printed():
    data = np.arange(1000, dtype=np.float32) * np.float32(0.123456)
    x, out = decl_buffer((1000,), "float32", "x"), decl_buffer((1000,), "float32", "out")
    c = decl_buffer((1000,), "float32", "c")
    body = ts.AllocateConst(c.data, "float32", c.shape, data,
                            ts.DeclBuffer(c, kernel_call("multiply", None, [out], [x, c])))
    module = compile_funcs({"f": prim_func([x, out], body)})
    xs = RNG.uniform(-1, 1, 1000).astype("float32")
    result = np.empty(1000, "float32")
    module.get_function("f")(xs, result)
    np.testing.assert_array_equal(result, xs * data)
    source = module.get_source()
    assert len(source) < 1000 and repr(float(data[7])) not in source
    assert "constant float32[1000]" in source


def test_loops_lets_conditions_and_scalar_arithmetic():
    """out[i, j] = select(j < 2, x[i, j] * 2 + i, -x[i, j]) + min(i, j), and the integer
    division kinds, checked against hand-computed values."""
    x, out = decl_buffer((2, 3), "float32", "x"), decl_buffer((2, 3), "float32", "out")
    a, q = decl_buffer((4,), "int32", "a"), decl_buffer((4, 4), "int32", "q")
    i, j, k = te.Var("i"), te.Var("j"), te.Var("k")
    s = te.Var("s", "float32")
    value = te.Select(j < 2, x[i, j] * te.const(2.0) + te.Cast("float32", i),
                      -x[i, j]) + te.Cast("float32", te.Min(i, j))
    nested = ts.For(i, 0, 2, "serial", ts.For(j, 0, 3, "serial", ts.LetStmt(
        s, value, ts.BufferStore(out, s, [i, j]))))
    divisions = ts.For(k, 0, 4, "serial", ts.SeqStmt([
        ts.BufferStore(q, te.Div(a[k], te.const(3)), [0, k]),
        ts.BufferStore(q, te.Mod(a[k], te.const(3)), [1, k]),
        ts.BufferStore(q, te.FloorDiv(a[k], te.const(3)), [2, k]),
        ts.IfThenElse(a[k] < 0, ts.BufferStore(q, te.FloorMod(a[k], te.const(3)), [3, k]),
                      ts.BufferStore(q, te.const(99), [3, k]))]))
    module = compile_funcs({"f": prim_func([x, a, out, q], ts.SeqStmt([nested, divisions]))})
    xs = np.array([[1, 2, 3], [4, 5, 6]], "float32")
    ints = np.array([7, -7, 6, -1], "int32")
    result, quotients = np.empty((2, 3), "float32"), np.empty((4, 4), "int32")
    module.get_function("f")(xs, ints, result, quotients)
    np.testing.assert_array_equal(result, [[2, 4, -3], [9, 12, -5]])
    np.testing.assert_array_equal(quotients, [[2, -2, 2, 0], [1, -1, 0, -1],
                                              [2, -3, 2, -1], [99, 2, 99, 2]])


def test_truncating_division_of_the_smallest_int64_and_isnan():
    a, q = decl_buffer((3,), "int64", "a"), decl_buffer((3,), "int64", "q")
    x, nan = decl_buffer((3,), "float32", "x"), decl_buffer((3,), "bool", "nan")
    k = te.Var("k", "int64")
    body = ts.For(k, 0, 3, "serial", ts.SeqStmt([
        ts.BufferStore(q, te.Div(a[k], te.const(3, "int64")), [k]),
        ts.BufferStore(nan, te.Call("bool", "tir.isnan", [x[k]]), [k])]))
    module = compile_funcs({"f": prim_func([a, x, q, nan], body)})
    quotients, flags = np.empty(3, "int64"), np.empty(3, bool)
    smallest = np.iinfo("int64").min
    module.get_function("f")(np.array([smallest, -7, 7], "int64"),
                             np.array([np.nan, np.inf, 0], "float32"), quotients, flags)
    np.testing.assert_array_equal(quotients, [-(2**63 // 3), -2, 2])
    np.testing.assert_array_equal(flags, [True, False, False])


def test_scalar_parameters_bound_loops():
    n = te.Var("n")
    x = decl_buffer((5,), "float32", "x")
    i = te.Var("i")
    body = ts.For(i, 0, n, "serial", ts.BufferStore(x, x[i] + te.const(1.0), [i]))
    module = compile_funcs({"g": PrimFunc([x.data, n], {x.data: x}, body)})
    xs = np.zeros(5, "float32")
    module.get_function("g")(xs, 3)
    np.testing.assert_array_equal(xs, [1, 1, 1, 0, 0])


def test_a_failing_assert_raises_with_its_message():
    x, out = decl_buffer((2,), "float32", "x"), decl_buffer((2,), "float32", "out")
    body = ts.AssertStmt(x[0] > te.const(0.0), "x[0] must be positive",
                         kernel_call("sqrt", None, [out], [x]))
    f = compile_funcs({"f": prim_func([x, out], body)}).get_function("f")
    result = np.empty(2, "float32")
    f(np.array([4, 9], "float32"), result)
    np.testing.assert_array_equal(result, [2, 3])
    with pytest.raises(TIRAssertionError, match=r"'f'.*x\[0\] must be positive"):
        f(np.array([-4, 9], "float32"), result)


def test_call_extern_is_a_codegen_error_naming_the_function():
    x = decl_buffer((2,), "float32", "x")
    body = ts.Evaluate(te.call_extern("arm_add_s8", x.data, 2))
    with pytest.raises(CodegenError, match=r"arm_add_s8.*cannot call external C"):
        compile_funcs({"f": prim_func([x], body)})


def test_an_unknown_intrinsic_is_a_codegen_error():
    x = decl_buffer((2,), "float32", "x")
    body = ts.BufferStore(x, te.Call("float32", "tir.mystery", [x[0]]), [1])
    with pytest.raises(CodegenError, match=r"unknown intrinsic 'tir\.mystery'"):
        compile_funcs({"f": prim_func([x], body)})


_UNARY = {"exp": math.exp, "exp2": lambda v: 2.0 ** v, "expm1": math.expm1, "log": math.log,
          "log2": math.log2, "log10": math.log10, "log1p": math.log1p, "sqrt": math.sqrt,
          "rsqrt": lambda v: 1 / math.sqrt(v), "erf": math.erf, "tanh": math.tanh,
          "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "sin": math.sin, "cos": math.cos,
          "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
          "sinh": math.sinh, "cosh": math.cosh, "asinh": math.asinh,
          "acosh": lambda v: math.acosh(v + 1), "atanh": math.atanh}
#: Each intrinsic of passhost.te: its arguments and its value, from Python's math module.
_INTRINSIC_CASES = {
    **{name: ((0.5,), fn(0.5)) for name, fn in _UNARY.items()},
    "acosh": ((1.5,), math.acosh(1.5)), "fabs": ((-2.5,), 2.5), "floor": ((-2.5,), -3.0),
    "ceil": ((-2.5,), -2.0), "round": ((-2.5,), -2.0), "trunc": ((-2.5,), -2.0),
    "pow": ((0.5, -3.0), 8.0), "fmod": ((-7.5, 2.0), -1.5),
    "atan2": ((0.5, -3.0), math.atan2(0.5, -3.0)), "copysign": ((0.5, -3.0), -0.5),
    "isnan": ((math.nan,), True), "isinf": ((-math.inf,), True), "isfinite": ((math.inf,), False),
    "bitwise_and": ((6, 3), 2), "bitwise_or": ((6, 3), 7), "bitwise_xor": ((6, 3), 5),
    "shift_left": ((6, 3), 48), "shift_right": ((-6, 1), -3),
}


@pytest.mark.parametrize("name", sorted(_INTRINSIC_CASES))
def test_every_te_intrinsic_is_computed(name):
    args, expected = _INTRINSIC_CASES[name]
    dtype = "int32" if isinstance(args[0], int) else "float32"
    x = decl_buffer((len(args),), dtype, "x")
    call = tensor_expr.intrinsic(name, *(x[i] for i in range(len(args))))
    out = decl_buffer((1,), call.dtype, "out")
    f = compile_funcs({"f": prim_func([x, out], ts.BufferStore(out, call, [0]))})
    result = np.zeros(1, call.dtype)
    f.get_function("f")(np.array(args, dtype), result)
    np.testing.assert_allclose(result, [expected], rtol=1e-6)


def test_the_cases_cover_every_te_intrinsic():
    assert sorted(_INTRINSIC_CASES) == sorted(tensor_expr.INTRINSIC_NAMES)


def test_intrinsics_run_their_numpy_meaning():
    """Intrinsics come from passhost.tir.intrinsics: any of its table runs, here sigmoid, erf
    and pow of float32 values, and fabs of an integer."""
    x, out = decl_buffer((4,), "float32", "x"), decl_buffer((3, 4), "float32", "out")
    n, m = decl_buffer((4,), "int32", "n"), decl_buffer((4,), "int32", "m")
    i = te.Var("i")
    body = ts.For(i, 0, 4, "serial", ts.SeqStmt([
        ts.BufferStore(out, intrinsic_call("tir.sigmoid", x[i]), [0, i]),
        ts.BufferStore(out, intrinsic_call("tir.erf", x[i]), [1, i]),
        ts.BufferStore(out, intrinsic_call("tir.pow", x[i], 2.0), [2, i]),
        ts.BufferStore(m, intrinsic_call("tir.fabs", n[i]), [i])]))
    f = compile_funcs({"f": prim_func([x, out, n, m], body)}).get_function("f")
    xs, result = np.array([-2, -0.5, 0, 3], "float32"), np.empty((3, 4), "float32")
    ints, absolute = np.array([-5, 0, 7, -(2**31)], "int32"), np.empty(4, "int32")
    f(xs, result, ints, absolute)
    np.testing.assert_allclose(result[0], 1 / (1 + np.exp(-xs.astype(np.float64))), rtol=1e-6)
    np.testing.assert_allclose(result[1], [math.erf(v) for v in xs], rtol=1e-6)
    np.testing.assert_array_equal(result[2], xs * xs)
    np.testing.assert_array_equal(absolute, [5, 0, 7, -(2**31)])


def test_source_holds_every_function_under_sanitised_names():
    funcs = {"fused.nn-relu": _add_relu_with_allocation(), "class": _add_relu_with_allocation()}
    funcs["lambda"] = funcs.pop("class").with_attr("global_symbol", "lambda_symbol")
    module = compile_funcs(funcs)
    source = module.get_source()
    assert module.get_source("module.py") == source
    assert "def fused_nn_relu(x, b, out):" in source
    assert "def lambda_1(x, b, out):" in source
    compile(source, "<check>", "exec")
    for name in ("fused.nn-relu", "f", "lambda", "lambda_symbol"):
        assert module.get_function(name) is not None, name
    assert module.get_function("lambda") is module.get_function("lambda_symbol")


def test_buffers_viewing_a_parameter_in_another_shape():
    x, out = decl_buffer((2, 3), "float32", "x"), decl_buffer((6,), "float32", "out")
    flat = decl_buffer((6,), "float32", "flat", data=x.data)
    body = ts.DeclBuffer(flat, kernel_call("negative", None, [out], [flat]))
    module = compile_funcs({"f": prim_func([x, out], body)})
    xs, result = np.arange(6, dtype="float32").reshape(2, 3), np.empty(6, "float32")
    module.get_function("f")(xs, result)
    np.testing.assert_array_equal(result, -np.arange(6))


@pytest.mark.parametrize(("name", "attrs", "inputs"), [
    ("nn.layer_norm", {"axis": 1}, [RNG.normal(size=(3, 4)).astype("float32"),
                                    RNG.normal(size=4).astype("float32"),
                                    RNG.normal(size=4).astype("float32")]),
    ("take", {"axis": 0, "mode": "wrap"}, [RNG.normal(size=(5, 2)).astype("float32"),
                                           np.array([[0, 7], [-1, 3]], "int32")]),
    ("strided_slice", {"begin": (1, -1), "end": (4, 0), "strides": (2, -1)},
     [RNG.normal(size=(5, 4)).astype("float32")]),
    ("erf", None, [RNG.normal(size=(3, 3)).astype("float32")]),
    ("split", {"indices_or_sections": (1, 3), "axis": 1},
     [RNG.normal(size=(2, 5)).astype("float32")]),
])
def test_operators_without_fast_kernels_call_the_reference(name, attrs, inputs):
    got, expected, source = run_op(name, attrs, inputs)
    assert not uses_fast_kernel(source)
    assert f"operator {name} (reference kernel)" in source
    assert_same(got, expected, rtol=0, atol=0)


def test_the_fallback_passes_tuple_inputs_as_tuples(monkeypatch):
    monkeypatch.setattr(emitter, "plan_call", lambda call, following, config: None)
    parts = (np.ones((2, 1), "float32"), np.zeros((2, 3), "float32"))
    got, expected, source = run_op("concatenate", {"axis": 1}, [parts])
    assert ".evaluate(None" not in source and "(x0_0, x0_1))" in source
    assert_same(got, expected, rtol=0, atol=0)


def test_the_fallback_runs_in_place_elementwise_calls(monkeypatch):
    monkeypatch.setattr(emitter, "plan_call", lambda call, following, config: None)
    a = RNG.normal(size=(3, 4)).astype("float32")
    b = RNG.normal(size=(4,)).astype("float32")
    got, expected, _ = run_op("add", None, [a, b], alias=0)
    assert_same(got, expected, rtol=0, atol=0)


def test_the_copy_kernel_copies():
    x, out = decl_buffer((4,), "float32", "x"), decl_buffer((4,), "float32", "out")
    body = kernel_call("copy", None, [out], [x])
    module = compile_funcs({"f": prim_func([x, out], body)})
    xs, result = np.array([-1, 2, -3, 4], "float32"), np.empty(4, "float32")
    module.get_function("f")(xs, result)
    np.testing.assert_array_equal(result, xs)
