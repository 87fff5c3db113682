"""The TIR -> C printer (passhost.backend.c): hand-built PrimFuncs of loops, allocations,
assertions, constants, buffer views, scalar parameters, external calls and kernels, names,
deep expressions and threads, printed into one unit, compiled with the system C compiler and
run (see c_printer_harness), against NumPy. Arithmetic, conversions and intrinsics are in
test_c_printer_arithmetic, errors in test_c_printer_errors, random expression trees in
test_c_printer_random.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from c_printer_harness import (
    ALL_DTYPES,
    BF16,
    NATIVE,
    PREAMBLE,
    UnitCases,
    buffers,
    func,
    loop,
    outputs,
    run_here,
    scale_kernel,
    unit_fixtures,
    zeros,
)
from c_unit_helpers import CC, compile_unit
from passhost.backend.c import (
    STATUS_ASSERT,
    STATUS_NO_MEMORY,
    CCodegenError,
    print_unit,
)
from passhost.tir import (
    EQ,
    GE,
    GT,
    LT,
    Allocate,
    AllocateConst,
    And,
    AssertStmt,
    BufferStore,
    Call,
    Cast,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    PrimExpr,
    PrimFunc,
    Select,
    SeqStmt,
    Var,
    call_extern,
    call_kernel,
    const,
    decl_buffer,
    intrinsic_call,
)

RNG = np.random.default_rng(20)
CASES = UnitCases()
case = CASES.case
unit, run = unit_fixtures(CASES)


# -- loops, elementwise work, multi-dimensional buffers ----------------------------------------
def _elementwise() -> PrimFunc:
    x, y = buffers("float32", ("x", (64, 33)), ("y", (64, 33)))
    i, j = Var("i"), Var("j")
    value = intrinsic_call("tir.exp", x[i, j]) * const(2.0) + x[i, j]
    return func([x, y], loop(i, 64, loop(j, 33, BufferStore(y, value, [i, j]), "vectorized"),
                             "parallel"))


EXP_X = RNG.uniform(-3, 3, (64, 33)).astype(np.float32)
ELEMENTWISE = case("elementwise", _elementwise(), EXP_X, np.zeros((64, 33), np.float32))


def test_parallel_and_vectorized_loops_compute_elementwise(run):
    _, y = outputs(run, ELEMENTWISE)
    np.testing.assert_allclose(y, np.exp(EXP_X) * np.float32(2) + EXP_X, rtol=1e-6, atol=1e-5)


def _transpose() -> PrimFunc:
    (x,) = buffers("int32", ("x", (2, 3, 4)))
    out, row = buffers("int32", ("out", (4, 3, 2)), ("row", (3,)))
    i, j, k, m = Var("i"), Var("j"), Var("k"), Var("m", "int64")
    body = SeqStmt([
        loop(i, 2, loop(j, 3, loop(k, 4, BufferStore(out, x[i, j, k], [k, j, i])))),
        # constant indices fold; an int64 loop variable indexes without widening
        For(m, IntImm("int64", 0), IntImm("int64", 3), "unrolled",
            BufferStore(row, x[IntImm("int64", 1), m, IntImm("int64", 3)], [m])),
    ])
    return func([x, out, row], body)


TRANSPOSE_X = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
TRANSPOSE = case("transpose", _transpose(), TRANSPOSE_X, np.zeros((4, 3, 2), np.int32),
                 np.zeros(3, np.int32))


def test_multi_dimensional_indices_flatten_row_major(run, unit):
    _, out, row = outputs(run, TRANSPOSE)
    np.testing.assert_array_equal(out, TRANSPOSE_X.transpose(2, 1, 0))
    np.testing.assert_array_equal(row, TRANSPOSE_X[1, :, 3])
    assert "#pragma GCC unroll 3" in unit.source


def _bounded_loops() -> PrimFunc:
    (out,) = buffers("int32", ("out", (12,)))
    n, i, j = Var("n"), Var("i"), Var("j")
    chain = IfThenElse(i < 3, BufferStore(out, const(1), [i]),
                       IfThenElse(i < 6, BufferStore(out, const(2), [i]),
                                  IfThenElse(EQ(i, const(7)), BufferStore(out, const(7), [i]),
                                             BufferStore(out, const(3), [i]))))
    sq = j * j  # one node twice in a condition: computed once before the test, so the
    # else-branch holding it cannot be an `else if`
    guarded = IfThenElse(j < 0, Evaluate(0), IfThenElse(
        And(GT(sq, const(20)), LT(sq, const(80))), BufferStore(out, out[j] + const(100), [j])))
    return func([out, n], SeqStmt([For(i, 2, n, "serial", chain),
                                   For(j, n - 4, 4, "serial", guarded)]))


BOUNDED = case("bounded_loops", _bounded_loops(), np.zeros(12, np.int32), 9)


def test_loops_with_bounds_from_parameters_and_if_chains(run):
    (out, _n) = outputs(run, BOUNDED)
    want = np.array([0, 0, 1, 2, 2, 2, 3, 7, 3, 3, 3, 0])  # i from 2, 9 times
    want[5:9] += np.where((np.arange(5, 9) ** 2 > 20) & (np.arange(5, 9) ** 2 < 80), 100, 0)
    np.testing.assert_array_equal(out, want)


def test_an_else_if_evaluating_something_first_is_an_else_block(unit):
    text = unit.source
    assert "} else if (i < 6) {" in text
    body = text[text.index("int32_t bounded_loops("):]
    assert "} else {\n" in body and "const int32_t ph_t" in body


# -- assertions and allocations: status codes, messages, stack and heap memory -----------------
def _checked() -> PrimFunc:
    n = Var("n")
    x, out = buffers("float32", ("x", (8,)), ("out", (8,)))
    big = decl_buffer((20000,), "float32", "big")  # 80 KB: on the heap
    i, j = Var("i"), Var("j")
    per_thread = decl_buffer((30000,), "float32", "scratch")  # heap memory of each thread
    small = decl_buffer((4,), "float32", "small")  # stack memory of each thread
    parallel = For(i, 0, 8, "parallel", Allocate(
        per_thread.data, "float32", per_thread.shape, Allocate(
            small.data, "float32", small.shape, SeqStmt([
                AssertStmt(GE(x[i], 0.0), "x must not be negative", SeqStmt([
                    BufferStore(per_thread, intrinsic_call("tir.sqrt", x[i]), [i * 1000]),
                    BufferStore(small, per_thread[i * 1000], [3]),
                    BufferStore(out, small[3] + big[i], [i])]))]))))
    body = AssertStmt(GT(n, 0), "n must be positive", Allocate(
        big.data, "float32", big.shape, SeqStmt([
            loop(j, 20000, BufferStore(big, Cast("float32", j) * Cast("float32", n), [j])),
            parallel])))
    return func([n, x, out], body)


CHECKED_X = np.array([4, 9, 0, 1, 2.25, 16, 25, 36], np.float32)
CHECKED = case("checked", _checked(), 3, CHECKED_X, np.zeros(8, np.float32))
CHECKED_N = case("checked", _checked(), -1, CHECKED_X, np.zeros(8, np.float32))
CHECKED_X_NEGATIVE = np.where(np.arange(8) == 5, np.float32(-1), CHECKED_X)
CHECKED_X_BAD = case("checked", _checked(), 2, CHECKED_X_NEGATIVE, np.zeros(8, np.float32))


def test_allocations_on_the_stack_and_the_heap_per_thread(run, unit):
    (_, _, out) = outputs(run, CHECKED)
    np.testing.assert_array_equal(out, np.sqrt(CHECKED_X) + np.arange(8) * 3)
    outer = unit.source[unit.source.index("int32_t checked("):]
    outer = outer[:outer.index("\n}\n")]
    assert outer.count("ph_alloc(") == 1 and outer.count("free(") == 1  # big
    # the parallel loop's body, outlined: its memory is each task's own
    task = unit.source[unit.source.index("static void checked_par1_body("):]
    task = task[:task.index("\n}\n")]
    assert task.count("ph_alloc(") == 1 and task.count("free(") == 1  # scratch
    assert "float small[4] __attribute__((aligned(64)));" in task


def test_a_failing_assertion_returns_its_status_and_message(run):
    status, (_, _, out), error = run[CHECKED_N]
    assert status == STATUS_ASSERT and error == "checked: n must be positive"
    assert not out.any()  # nothing ran after the assertion


def test_an_assertion_failing_in_a_parallel_loop_fails_the_call(run):
    status, (_, _, out), error = run[CHECKED_X_BAD]
    assert status == STATUS_ASSERT and error == "checked: x must not be negative"
    ok = np.arange(8) != 5
    np.testing.assert_array_equal(out[ok], np.sqrt(CHECKED_X_NEGATIVE[ok]) + np.arange(8)[ok] * 2)


def test_out_of_memory_is_a_status_not_a_crash(tmp_path):
    """A heap allocation too large for the machine makes the call return 2."""
    if CC is None:
        pytest.skip("no C compiler (set $CC or install cc)")
    huge = decl_buffer((1 << 58,), "int8", "huge")
    (out,) = buffers("int8", ("out", (1,)))
    body = Allocate(huge.data, "int8", huge.shape, SeqStmt([
        BufferStore(huge, const(7, "int8"), [IntImm("int64", 5)]),
        BufferStore(out, huge[IntImm("int64", 5)], [0])]))
    u = print_unit({"huge": func([out], body)})
    calls = {"huge": (u.functions["huge"].symbol, u.functions["huge"].argtypes,
                      [np.zeros(1, np.int8)], 0)}
    status, _, error = run_here(compile_unit(u, NATIVE, tmp_path), calls)["huge"]
    assert status == STATUS_NO_MEMORY and error.startswith("huge: out of memory")


# -- constants: exact values, special floats and NaN payloads ---------------------------------
def _bits(values: list[int], dtype: str) -> np.ndarray:
    view = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}[dtype]
    return np.array(values, view).view(dtype)


CONSTANTS: dict[str, np.ndarray] = {
    "float64": np.concatenate([np.array([
        0.0, -0.0, np.inf, -np.inf, np.nan, 1.7976931348623157e308, -1.7976931348623157e308,
        5e-324, 2.2250738585072014e-308, 1 / 3, 0.1, -1e-300]),
        _bits([0xFFF8000000000000, 0x7FF0000000000001, 0x7FF8000000000123], "float64")]),
    "float32": np.concatenate([np.array([
        0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028235e38, 1e-45, 1.1754944e-38,
        1 / 3, 0.1, 16777217.0], np.float32),
        _bits([0xFFC00000, 0x7F800001, 0x7FC00123], "float32")]),
    "float16": np.concatenate([np.array([
        0.0, -0.0, np.inf, -np.inf, np.nan, 65504, -65504, 6e-8, 1 / 3, 0.1], np.float16),
        _bits([0xFE00, 0x7C01, 0x7E12], "float16")]),
    "bfloat16": np.array([0.0, -0.0, np.inf, np.nan, 3e38, 1e-40, 1 / 3], np.float32).astype(BF16),
    "int64": np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0], np.int64),
    "uint64": np.array([0, np.iinfo(np.uint64).max, 1 << 63], np.uint64),
    "int32": np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max, -7], np.int32),
    "uint32": np.array([0, np.iinfo(np.uint32).max], np.uint32),
    "int8": np.array([-128, 127, 0], np.int8),
    "uint16": np.array([65535, 1], np.uint16),
    "bool": np.array([True, False, True], bool),
}


def _constants() -> PrimFunc:
    outs, body = [], []
    for dtype, data in CONSTANTS.items():
        c = decl_buffer(data.shape, dtype, f"c_{dtype}")
        out = decl_buffer(data.shape, dtype, f"out_{dtype}")
        outs.append(out)
        i = Var("i")
        body.append(AllocateConst(c.data, dtype, data.shape, data,
                                  loop(i, len(data), BufferStore(out, c[i], [i]))))
    unused = decl_buffer((3,), "int32", "unused")
    body.append(AllocateConst(unused.data, "int32", (3,), np.arange(3, dtype=np.int32),
                              Evaluate(0)))
    return func(outs, SeqStmt(body))


CONSTS = case("constants", _constants(), *[np.zeros_like(d) for d in CONSTANTS.values()])


def test_constants_are_reproduced_bit_for_bit(run):
    got = outputs(run, CONSTS)
    for (dtype, data), out in zip(CONSTANTS.items(), got):
        np.testing.assert_array_equal(out.view(np.uint8), data.view(np.uint8), err_msg=dtype)


def test_unused_constants_are_left_out(unit):
    assert "constants_c_float64[" in unit.source and "constants_unused" not in unit.source


# -- buffers viewing other memory: reshaped, reinterpreted, through handles ------------------
def _views() -> PrimFunc:
    (x,) = buffers("float32", ("x", (2, 3)))
    (out,) = buffers("float32", ("out", (6,)))
    bits = decl_buffer((6,), "int32", "bits")
    flat = decl_buffer((6,), "float32", "flat", data=x.data)
    as_int = decl_buffer((6,), "int32", "as_int", data=x.data)
    h = Var("h", "handle")
    through = decl_buffer((4,), "float64", "through", data=h)
    alias = Var("alias", "handle")
    aliased = decl_buffer((6,), "float32", "aliased", data=alias)
    i = Var("i")
    body = DeclBuffer(flat, DeclBuffer(through, LetStmt(alias, out.data, SeqStmt([
        loop(i, 6, BufferStore(out, flat[i] + const(1.0), [i])),
        loop(i, 6, BufferStore(bits, as_int[i], [i])),  # as_int: a view no statement declares
        loop(i, 4, BufferStore(through, through[i] * const(2.0, "float64"), [i])),
        BufferStore(aliased, aliased[0] + aliased[5], [0]),
    ]))))
    return func([x, out, bits, h], body)


VIEW_X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
VIEW_H = np.array([1.5, -2, 3, 4], np.float64)
VIEWS = case("views", _views(), VIEW_X, np.zeros(6, np.float32), np.zeros(6, np.int32), VIEW_H)


def test_buffers_view_other_memory(run, unit):
    (_, out, bits, h) = outputs(run, VIEWS)
    want = VIEW_X.reshape(-1) + 1
    want[0] += want[5]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(bits, VIEW_X.reshape(-1).view(np.int32))
    np.testing.assert_array_equal(h, VIEW_H * 2)
    assert unit.functions["views"].params[3].declaration == "void *h"
    assert "-fno-strict-aliasing" in unit.flags  # int32 elements read float32 memory


# -- scalar parameters of every dtype ----------------------------------------------------------
def _scalars() -> PrimFunc:
    params = [Var(f"s_{d}", d) for d in ALL_DTYPES]
    outs = [decl_buffer((1,), d, f"out_{d}") for d in ALL_DTYPES]
    body = SeqStmt([BufferStore(o, p, [0]) for p, o in zip(params, outs)])
    return PrimFunc([*params, *(o.data for o in outs)], {o.data: o for o in outs}, body)


SCALAR_VALUES = {"bool": True, "int8": -100, "uint8": 200, "int16": -30000, "uint16": 60000,
                 "int32": -(1 << 31), "uint32": (1 << 32) - 1, "int64": -(1 << 63),
                 "uint64": (1 << 64) - 1, "float16": 0.1, "bfloat16": 0.1, "float32": 0.1,
                 "float64": 0.1}
SCALARS = case("scalars", _scalars(), *SCALAR_VALUES.values(),
               *[zeros(1, d) for d in ALL_DTYPES])


def test_scalar_parameters_of_every_dtype(run, unit):
    got = outputs(run, SCALARS)[len(ALL_DTYPES):]
    for (dtype, value), out in zip(SCALAR_VALUES.items(), got):
        want = np.array([value]).astype(BF16 if dtype == "bfloat16" else dtype)
        np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8), err_msg=dtype)
    params = unit.functions["scalars"].params
    assert [p.kind for p in params] == ["scalar"] * 13 + ["buffer"] * 13
    assert params[ALL_DTYPES.index("bfloat16")].declaration == "float s_bfloat16"
    assert params[-1].declaration == "double *restrict out_float64"


# -- statements that evaluate: intrinsics, external functions, kernels ------------------------
def _effects() -> PrimFunc:
    x, out, scaled = buffers("float32", ("x", (5,)), ("out", (5,)), ("scaled", (5,)))
    i = Var("i")
    return func([x, out, scaled], SeqStmt([
        Evaluate(intrinsic_call("tir.exp", x[0])),  # no effect
        Evaluate(0),  # does nothing
        loop(i, 5, Evaluate(call_extern("record", out, i, x[i] * const(10.0)))),
        Evaluate(call_kernel("scale", scaled, x, const(0.5), const(5))),
    ]))


EFFECT_X = np.array([1, -2, 3.5, 0, 8], np.float32)
EFFECTS = case("effects", _effects(), EFFECT_X, np.zeros(5, np.float32), np.zeros(5, np.float32))


def test_call_extern_and_call_kernel_run_their_c(run, unit):
    (_, out, scaled) = outputs(run, EFFECTS)
    np.testing.assert_array_equal(out, EFFECT_X * 10)
    np.testing.assert_array_equal(scaled, EFFECT_X * 0.5)
    text = unit.source
    assert "(void)ph_exp_f32(x[0]);" in text and "(scale_impl(scaled, x, 0.5f, 5));" in text
    # x goes to a kernel that may write it: not const
    assert unit.functions["effects"].params[0].declaration == "float *restrict x"


def test_call_kernel_without_a_kernel_printer_is_a_clear_error():
    with pytest.raises(CCodegenError, match=r"PrimFunc 'effects': call_kernel of 'scale': a "
                                            r"kernel call is not C.*kernel_printer"):
        print_unit({"effects": _effects()})


def test_the_kernel_printer_gets_the_arguments_as_c():
    seen = []

    def printer(call: Call, args: Any) -> str:
        seen.append((call.args[0].value, args.texts, args.function))
        return "0"

    print_unit({"f.x": _effects()}, kernel_printer=printer)
    assert seen == [("scale", ("scaled", "x", "0.5f", "5"), "f_x")]


# -- names: anything TIR allows becomes a valid, distinct C identifier ------------------------
def _names(offset: float) -> PrimFunc:
    bufs = [decl_buffer((3,), "float32", name) for name in ("in.put", "float", "NAN", "ph_x")]
    (out,) = buffers("float32", ("1st out", (3,)))
    i, expf, again = Var("int"), Var("expf", "float32"), Var("int", "float32")
    value = LetStmt(expf, intrinsic_call("tir.exp", bufs[0][i]), LetStmt(
        again, expf + bufs[1][i] + bufs[2][i] + bufs[3][i] + const(offset),
        BufferStore(out, again, [i])))
    return func([*bufs, out], loop(i, 3, value))


NAME_IN = [np.array([0.0, 1.0, -1.0], np.float32) + k for k in range(4)]
NAMES_A = case("fused.add-relu", _names(0.0), *NAME_IN, np.zeros(3, np.float32))
NAMES_B = case("fused_add_relu", _names(100.0), *NAME_IN, np.zeros(3, np.float32))


def test_names_are_sanitised_and_made_distinct(run, unit):
    want = np.exp(NAME_IN[0]) + NAME_IN[1] + NAME_IN[2] + NAME_IN[3]
    np.testing.assert_allclose(outputs(run, NAMES_A)[-1], want, rtol=1e-6)
    np.testing.assert_allclose(outputs(run, NAMES_B)[-1], want + 100, rtol=1e-6)
    a, b = unit.functions["fused.add-relu"], unit.functions["fused_add_relu"]
    assert (a.symbol, b.symbol) == ("fused_add_relu", "fused_add_relu_1")
    assert [p.name for p in a.params] == ["in_put", "float_1", "NAN_1", "v_ph_x", "v_1st_out"]
    text = unit.source[unit.source.index("int32_t fused_add_relu("):]
    assert "const float expf_1 = ph_exp_f32(in_put[int_1]);" in text


# -- depth: nothing recurses over the IR, and C compilers get bounded nesting ------------------
def _int_chain(start: PrimExpr, length: int) -> PrimExpr:
    for _ in range(length):
        start = start * const(1) + const(3)
    return start


def _deep() -> PrimFunc:
    x, out = buffers("float32", ("x", (1,)), ("out", (3,)))
    p, iout = buffers("int32", ("p", (1,)), ("iout", (2,)))
    left = x[0]
    right = x[0]
    for _ in range(10_000):
        left = left + const(1.0)
        right = const(1.0) + right
    doubled = x[0]
    for _ in range(60):  # one node used twice at every level: 2**60 leaves as a tree
        doubled = doubled + doubled
    ints = _int_chain(p[0], 1000)
    return func([x, out, p, iout], SeqStmt([
        BufferStore(out, left, [0]), BufferStore(out, right, [1]),
        BufferStore(out, doubled, [2]), BufferStore(iout, ints, [0]),
        # deep under a condition, reading memory: temporaries inside the side taken
        BufferStore(iout, Select(GT(p[0], 0), ints, const(-1)), [1])]))


DEEP = case("deep", _deep(), np.array([0.5], np.float32), np.zeros(3, np.float32),
            np.array([7], np.int32), np.zeros(2, np.int32))


def test_deep_and_shared_expressions_print_and_compute(run, unit):
    (_, out, _, iout) = outputs(run, DEEP)
    np.testing.assert_array_equal(out, [10000.5, 10000.5, 0.5 * 2.0**60])
    np.testing.assert_array_equal(iout, [3007, 3007])
    text = unit.source[unit.source.index("int32_t deep("):]
    text = text[:text.index("\n}\n")]
    assert nesting(text) < 128  # Clang allows 256
    assert "iout[1] = p[0] > 0 ? ({ const int32_t ph_t" in text


def test_ten_thousand_nested_operations_print_without_recursion():
    (p, out) = buffers("int32", ("p", (1,)), ("out", (1,)))
    deep = Select(GT(p[0], 0), _int_chain(p[0], 10_000), const(0))
    text = print_unit({"f": func([p, out], BufferStore(out, deep, [0]))}).source
    assert sys.getrecursionlimit() < 10_000 and nesting(text) < 128


def nesting(text: str) -> int:
    """The deepest nesting of brackets in C source ``text``."""
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


# -- threads ---------------------------------------------------------------------------------
def _threads() -> PrimFunc:
    (out,) = buffers("int32", ("out", (64,)))
    i = Var("i")
    return func([out], For(i, 0, 64, "parallel",
                           BufferStore(out, call_extern("thread_id"), [i])))


THREADS_1 = case("threads", _threads(), np.full(64, -1, np.int32), threads=1)
THREADS_2 = case("threads", _threads(), np.full(64, -1, np.int32), threads=2)


def test_parallel_loops_use_the_threads_asked_for(run):
    assert set(outputs(run, THREADS_1)[0].tolist()) == {0}
    assert set(outputs(run, THREADS_2)[0].tolist()) == {0, 1}


# -- the same functions print the same unit ------------------------------------------------
def test_printing_is_deterministic():
    funcs = {name: fn for name, fn in CASES.funcs.items() if name != "deep"}  # deep is slow
    first = print_unit(funcs, PREAMBLE, kernel_printer=scale_kernel)
    second = print_unit(funcs, PREAMBLE, kernel_printer=scale_kernel)
    assert first.source == second.source and first.functions == second.functions
