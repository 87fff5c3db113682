"""The TIR -> C printer (passhost.backend.c): hand-built PrimFuncs and random expression
trees printed, compiled with the system C compiler and run, against NumPy.

Every hand-built function goes into one unit, compiled twice per module: with ASan and
UBSan (``-Werror``, run in a subprocess with ASan preloaded) and with ``-O3 -march=native
-fopenmp`` (run in this process). Each test compares the arrays a call left with values it
computes with NumPy (or Python integers) from the inputs.
"""

from __future__ import annotations

import copy
import ctypes
import math
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c_unit_helpers import CC, compile_unit, needs_cc
from passhost.backend.c import (
    STATUS_ASSERT,
    STATUS_NO_MEMORY,
    CCodegenError,
    CPrinter,
    CUnit,
    print_unit,
)
from passhost.backend.c import expr as c_expr
from passhost.errors import IRTypeError, UnknownNameError
from passhost.ir.types import INT_DTYPES
from passhost.tir import (
    EQ,
    GE,
    GT,
    INTRINSICS,
    LT,
    NE,
    Add,
    Allocate,
    AllocateConst,
    And,
    AssertStmt,
    Buffer,
    BufferStore,
    Call,
    Cast,
    DeclBuffer,
    Div,
    Evaluate,
    FloorDiv,
    FloorMod,
    For,
    IfThenElse,
    IntImm,
    LetStmt,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    PrimFunc,
    Select,
    SeqStmt,
    Stmt,
    Sub,
    Var,
    call_extern,
    call_kernel,
    const,
    decl_buffer,
    intrinsic_call,
)

WARNINGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror"]
SANITIZED = ["-O1", *WARNINGS, "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", "-fopenmp", "-shared", "-fPIC"]
# -ffp-contract=off: no fused multiply-add, so float results equal NumPy's bit for bit.
NATIVE = ["-O3", "-march=native", "-fopenmp", "-ffp-contract=off", *WARNINGS, "-shared",
          "-fPIC"]
BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(20)

#: Runs the calls of a unit; executed in a subprocess (sanitised builds) or in this process.
RUNNER = '''
import ctypes
import pickle
import sys

import ml_dtypes  # noqa: F401 - unpickles bfloat16 arrays
import numpy as np


def run_cases(lib, calls):
    last_error = lib.ph_last_error
    last_error.restype = ctypes.c_char_p
    threads = ctypes.c_int32.in_dll(lib, "ph_num_threads")
    out = {}
    for key, (symbol, argtypes, args, num_threads) in calls.items():
        fn = getattr(lib, symbol)
        fn.restype = ctypes.c_int32
        fn.argtypes = argtypes
        threads.value = num_threads
        status = fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])
        error = last_error()
        out[key] = (status, args, None if error is None else error.decode())
    return out


if __name__ == "__main__":
    with open(sys.argv[2], "rb") as f:
        calls = pickle.load(f)
    result = run_cases(ctypes.CDLL(sys.argv[1]), calls)
    with open(sys.argv[3], "wb") as f:
        pickle.dump(result, f)
'''


def run_sanitized(library: Path, calls: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Run ``calls`` in a subprocess with ASan preloaded."""
    (directory / "runner.py").write_text(RUNNER, encoding="utf-8")
    (directory / "calls.pkl").write_bytes(pickle.dumps(calls))
    asan = subprocess.run([CC, "-print-file-name=libasan.so"], capture_output=True,
                          text=True, check=True).stdout.strip()
    env = {**os.environ, "LD_PRELOAD": asan, "ASAN_OPTIONS": "detect_leaks=0",
           "UBSAN_OPTIONS": "print_stacktrace=1"}
    result = subprocess.run([sys.executable, str(directory / "runner.py"), str(library),
                             str(directory / "calls.pkl"), str(directory / "out.pkl")],
                            capture_output=True, text=True, env=env, check=False,
                            timeout=300)
    if result.returncode != 0:
        pytest.fail(f"the sanitised run failed ({result.returncode}):\n{result.stderr[-6000:]}")
    return pickle.loads((directory / "out.pkl").read_bytes())


def run_here(library: Path, calls: dict[str, Any]) -> dict[str, Any]:
    """Run ``calls`` in this process."""
    namespace: dict[str, Any] = {"__name__": "runner"}
    exec(RUNNER, namespace)
    return namespace["run_cases"](ctypes.CDLL(str(library)), calls)


# -- building PrimFuncs ------------------------------------------------------------------------
FUNCS: dict[str, PrimFunc] = {}
CALLS: dict[str, tuple[str, list[Any], int]] = {}


def func(params: list[Buffer | Var], body: Stmt) -> PrimFunc:
    """A PrimFunc over buffers (by their data pointers) and scalar Vars."""
    return PrimFunc([p.data if isinstance(p, Buffer) else p for p in params],
                    {p.data: p for p in params if isinstance(p, Buffer)}, body)


def case(name: str, fn: PrimFunc, *args: Any, threads: int = 0) -> str:
    """Add ``fn`` (once) to the unit and a call of it with ``args`` (arrays are passed by
    pointer); returns the call's key."""
    FUNCS.setdefault(name, fn)
    key = f"{name}#{sum(k.startswith(name + '#') for k in CALLS)}"
    CALLS[key] = (name, list(args), threads)
    return key


def loop(var: Var, extent: int | PrimExpr, body: Stmt, kind: str = "serial") -> For:
    return For(var, 0, extent, kind, body)


def buffers(dtype: str, *specs: tuple[str, tuple[int, ...]]) -> list[Buffer]:
    return [decl_buffer(shape, dtype, name) for name, shape in specs]


def wrap(values: list[int], dtype: str) -> np.ndarray:
    """Python integers wrapped into ``dtype`` (two's complement)."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return np.array([(v - int(info.min)) % span + int(info.min) for v in values], dtype)


def assert_floats_equal(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit (so -0.0 differs from 0.0), any NaN equal to any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(got.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(want.astype(np.float64)))
    view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(view), want[~nan].view(view))


# -- fixtures: the unit of every function below, compiled twice and run ----------------------
PREAMBLE = """\
static inline int32_t bump(int32_t *counter)
{
    return ++*counter;
}

static inline void record(float *out, int32_t i, float value)
{
    out[i] = value;
}

static inline int32_t scale_impl(float *out, float *in, float s, int32_t n)
{
    for (int32_t i = 0; i < n; ++i)
        out[i] = in[i] * s;
    return 0;
}

#ifdef _OPENMP
#include <omp.h>
static inline int32_t thread_id(void)
{
    return omp_get_thread_num();
}
#else
static inline int32_t thread_id(void)
{
    return 0;
}
#endif
"""


def scale_kernel(call: Call, args: Any) -> str:
    """Prints ``call_kernel("scale", out, in, s, n)`` as a call of ``scale_impl``."""
    return f"{call.args[0].value}_impl({', '.join(args.texts)})"


@pytest.fixture(scope="module")
def unit() -> CUnit:
    """The unit of every function of this module."""
    return print_unit(FUNCS, PREAMBLE, kernel_printer=scale_kernel)


@pytest.fixture(scope="module", params=["sanitized", "native"])
def run(request: pytest.FixtureRequest, unit: CUnit,
        tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Call key -> (status, the arguments after the call, last error message), from the
    unit built with sanitizers (run in a subprocess) or natively (run here)."""
    if CC is None:
        pytest.skip("no C compiler (set $CC or install cc)")
    directory = tmp_path_factory.mktemp(request.param)
    calls = {}
    for key, (name, args, threads) in CALLS.items():
        cfunc = unit.functions[name]
        calls[key] = (cfunc.symbol, cfunc.argtypes, copy.deepcopy(args), threads)
    if request.param == "sanitized":
        return run_sanitized(compile_unit(unit, SANITIZED, directory), calls, directory)
    return run_here(compile_unit(unit, NATIVE, directory), calls)


def outputs(run: dict[str, Any], key: str) -> list[Any]:
    """The arguments of a call that succeeded, after it."""
    status, args, error = run[key]
    assert status == 0, error
    return args


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


# -- integer arithmetic: wrapping, the division kinds, min/max, for every integer dtype --------
_INT_OPS: list[tuple[str, Callable[[PrimExpr, PrimExpr], PrimExpr]]] = [
    ("add", Add), ("sub", Sub), ("mul", Mul), ("div", Div), ("mod", Mod),
    ("floordiv", FloorDiv), ("floormod", FloorMod), ("min", Min), ("max", Max),
    ("div_by_7", lambda a, b: Div(a, 7)), ("mod_by_3", lambda a, b: Mod(a, 3)),
    ("floordiv_by_4", lambda a, b: FloorDiv(a, 4)), ("floormod_by_4", lambda a, b: FloorMod(a, 4)),
]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_reference(name: str, a: int, b: int) -> int:
    """TIR's meaning of an integer operation on Python integers (before wrapping); division
    and remainder by zero are 0."""
    if name.endswith("_by_7"):
        b = 7
    elif name.endswith("_by_3"):
        b = 3
    elif name.endswith("_by_4"):
        b = 4
    op = name.split("_by_")[0]
    if op in ("div", "mod", "floordiv", "floormod") and b == 0:
        return 0
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "div": lambda: _trunc_div(a, b), "mod": lambda: a - _trunc_div(a, b) * b,
            "floordiv": lambda: a // b, "floormod": lambda: a % b, "min": lambda: min(a, b),
            "max": lambda: max(a, b)}[op]()


def _int_values(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    edge = [lo, lo + 1, -7, -1, 0, 1, 7, hi - 1, hi]
    edge = [v for v in edge if lo <= v <= hi]
    pairs = [(x, y) for x in edge for y in edge]
    pairs += [(int(x), int(y)) for x, y in RNG.integers(lo, hi, (40, 2), dtype, True)]
    a, b = zip(*pairs)
    return np.array(a, dtype), np.array(b, dtype)


def _int_arith(dtype: str, n: int) -> PrimFunc:
    a, b = buffers(dtype, ("a", (n,)), ("b", (n,)))
    (out,) = buffers(dtype, ("out", (len(_INT_OPS), n)))
    i = Var("i")
    stores = [BufferStore(out, op(a[i], b[i]), [k, i]) for k, (_, op) in enumerate(_INT_OPS)]
    return func([a, b, out], loop(i, n, SeqStmt(stores)))


INT_ARITH = {}
for _dtype in INT_DTYPES:
    _a, _b = _int_values(_dtype)
    INT_ARITH[_dtype] = (_a, _b, case(f"int_arith_{_dtype}", _int_arith(_dtype, len(_a)), _a, _b,
                                      np.zeros((len(_INT_OPS), len(_a)), _dtype)))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_arithmetic_wraps_and_divides_as_tir_says(run, dtype):
    a, b, key = INT_ARITH[dtype]
    (_, _, out) = outputs(run, key)
    for k, (name, _) in enumerate(_INT_OPS):
        want = wrap([_int_reference(name, int(x), int(y)) for x, y in zip(a, b)], dtype)
        np.testing.assert_array_equal(out[k], want, err_msg=f"{name} on {dtype}")


def test_integer_operations_match_numpy_where_numpy_has_them():
    """The Python-integer reference above agrees with NumPy's own floor division,
    remainder and wrapping arithmetic (away from division by zero)."""
    a, b = _int_values("int32")
    ok = b != 0
    with np.errstate(all="ignore"):
        for name, numpy_op in (("floordiv", np.floor_divide), ("floormod", np.remainder),
                               ("mod", np.fmod), ("add", np.add), ("mul", np.multiply)):
            want = wrap([_int_reference(name, int(x), int(y)) for x, y in zip(a, b)], "int32")
            np.testing.assert_array_equal(want[ok], numpy_op(a, b)[ok], err_msg=name)


def test_constant_divisors_print_as_c_operators(unit):
    body = unit.source[unit.source.index("int32_t int_arith_int32("):]
    body = body[:body.index("\n}\n")]
    assert "a[i] / 7" in body and "a[i] % 3" in body
    assert "ph_div_i32(a[i], b[i])" in body and "ph_floordiv_i32(a[i], 4)" in body
    assert "ph_add_i32(a[i], b[i])" in body


# -- floating point: IEEE arithmetic, NumPy's floor division and remainder, NaN in min/max ----
_FLOAT_OPS: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("add", Add, np.add), ("sub", Sub, np.subtract), ("mul", Mul, np.multiply),
    ("div", Div, np.divide), ("mod", Mod, np.fmod), ("floordiv", FloorDiv, np.floor_divide),
    ("floormod", FloorMod, np.remainder), ("min", Min, np.minimum), ("max", Max, np.maximum),
]
_SPECIAL = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 7.0, -7.0, 1e-3, 3.0, -3.0, 0.1,
            5.5, 1e30, -1e-30]


def _float_values(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(x, y) for x in _SPECIAL for y in _SPECIAL]
    pairs += [tuple(v) for v in RNG.normal(0, 10, (60, 2))]
    a, b = zip(*pairs)
    with np.errstate(over="ignore"):
        return np.array(a).astype(dtype), np.array(b).astype(dtype)


def _float_arith(dtype: str, n: int) -> PrimFunc:
    a, b = buffers(dtype, ("a", (n,)), ("b", (n,)))
    (out,) = buffers(dtype, ("out", (len(_FLOAT_OPS), n)))
    i = Var("i")
    stores = [BufferStore(out, op(a[i], b[i]), [k, i]) for k, (_, op, _) in enumerate(_FLOAT_OPS)]
    return func([a, b, out], loop(i, n, SeqStmt(stores), "vectorized"))


FLOAT_ARITH = {}
for _dtype in ("float16", "float32", "float64"):
    _a, _b = _float_values(_dtype)
    FLOAT_ARITH[_dtype] = (_a, _b, case(f"float_arith_{_dtype}", _float_arith(_dtype, len(_a)),
                                        _a, _b, np.zeros((len(_FLOAT_OPS), len(_a)), _dtype)))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_arithmetic_equals_numpy_bit_for_bit(run, dtype):
    a, b, key = FLOAT_ARITH[dtype]
    (_, _, out) = outputs(run, key)
    for k, (name, _, numpy_op) in enumerate(_FLOAT_OPS):
        with np.errstate(all="ignore"):
            want = numpy_op(a, b)
        if name in ("min", "max"):  # which of 0.0 and -0.0 NumPy returns varies
            np.testing.assert_array_equal(out[k], want, err_msg=f"{name} on {dtype}")
            continue
        try:
            assert_floats_equal(out[k], want)
        except AssertionError as err:
            raise AssertionError(f"{name} on {dtype}: {err}") from None


def test_float_min_max_propagate_nan_both_ways(run):
    a, b, key = FLOAT_ARITH["float32"]
    (_, _, out) = outputs(run, key)
    either = np.isnan(a) | np.isnan(b)
    assert either.any() and np.isnan(out[7][either]).all() and np.isnan(out[8][either]).all()


# -- conversions ---------------------------------------------------------------------------
ALL_DTYPES = ["bool", *INT_DTYPES, "float16", "bfloat16", "float32", "float64"]
_FLOAT_SOURCES = ("float16", "bfloat16", "float32", "float64")


def _cast_values(src: str) -> np.ndarray:
    """Values every destination dtype converts with a defined result (floats: in the range
    of every integer dtype; integers: anything, they wrap)."""
    if src == "bool":
        return np.array([True, False, True], bool)
    if src in _FLOAT_SOURCES:
        values = [0.0, -0.0, 0.4, 1.0, 2.5, 3.5, 99.9, 126.99, 127.0, 1e-3]
        return np.array(values).astype(BF16 if src == "bfloat16" else src)
    info = np.iinfo(src)
    values = [int(info.min), -1, 0, 1, 100, 255, 2049, 65519, 65520, 16777217, int(info.max)]
    return np.array([v for v in values if info.min <= v <= info.max], src)


def _cast_all(src: str, n: int) -> PrimFunc:
    (x,) = buffers(src, ("x", (n,)))
    outs = [decl_buffer((n,), dst, f"to_{dst}") for dst in ALL_DTYPES]
    i = Var("i")
    stores = [BufferStore(o, Cast(o.dtype, x[i]), [i]) for o in outs]
    return func([x, *outs], loop(i, n, SeqStmt(stores)))


def _zeros(n: int, dtype: str) -> np.ndarray:
    return np.zeros(n, BF16 if dtype == "bfloat16" else dtype)


CASTS = {}
for _src in ALL_DTYPES:
    _x = _cast_values(_src)
    CASTS[_src] = (_x, case(f"cast_from_{_src}", _cast_all(_src, len(_x)), _x,
                            *[_zeros(len(_x), d) for d in ALL_DTYPES]))


@pytest.mark.parametrize("src", ALL_DTYPES)
def test_casts_convert_as_numpy_astype(run, src):
    x, key = CASTS[src]
    (_, *outs) = outputs(run, key)
    for dst, got in zip(ALL_DTYPES, outs):
        with np.errstate(all="ignore"):
            want = x.astype(BF16 if dst == "bfloat16" else dst)
        if dst in _FLOAT_SOURCES:
            assert_floats_equal(got, want)
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")


def _saturating() -> PrimFunc:
    f32, f64 = buffers("float32", ("f32", (10,))) + buffers("float64", ("f64", (10,)))
    dsts = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]
    outs = [decl_buffer((2, 10), d, f"to_{d}") for d in dsts]
    i = Var("i")
    stores = [BufferStore(o, Cast(o.dtype, src[i]), [k, i])
              for o in outs for k, src in enumerate((f32, f64))]
    return func([f32, f64, *outs], loop(i, 10, SeqStmt(stores)))


SAT_VALUES = [np.nan, 1e30, -1e30, 300.5, -300.5, 2.5, -2.5, -0.7, 4e9, -4e9]
SATURATING = case("saturating", _saturating(), np.array(SAT_VALUES, np.float32),
                  np.array(SAT_VALUES, np.float64),
                  *[np.zeros((2, 10), d) for d in ("int8", "uint8", "int32", "uint32", "int64",
                                                   "uint64")])


def test_float_to_integer_conversion_saturates_and_maps_nan_to_zero(run):
    (f32, f64, *outs) = outputs(run, SATURATING)
    for got in outs:
        info = np.iinfo(got.dtype)
        for k, src in enumerate((f32, f64)):
            want = [0 if math.isnan(v) else min(max(math.trunc(v), int(info.min)), int(info.max))
                    for v in src.tolist()]
            np.testing.assert_array_equal(got[k], want, err_msg=f"{src.dtype} -> {got.dtype}")


# -- bfloat16 and float16: computed in float, rounded on conversion and (float16) per op -------
def _narrow_floats() -> PrimFunc:
    (a,) = buffers("bfloat16", ("a", (12,)))
    out, copied = buffers("bfloat16", ("out", (12,)), ("copied", (12,)))
    h, g = buffers("float16", ("h", (12,)), ("g", (12,)))
    (hout,) = buffers("float16", ("hout", (12,)))
    i = Var("i")
    widened = Cast("float32", a[i])
    return func([a, out, copied, h, g, hout], loop(i, 12, SeqStmt([
        BufferStore(out, Cast("bfloat16", widened * const(3.0) + const(0.1)), [i]),
        BufferStore(copied, a[i], [i]),
        BufferStore(hout, h[i] * g[i] + h[i] / g[i] - const(0.1, "float16"), [i]),
    ])))


BF16_A = np.array([1.0, -2.5, 0.1, 3.14159, 1e-3, 65504, 3e38, -np.inf, np.nan, 1 / 3, 7, 0],
                  np.float32).astype(BF16)
F16_H = RNG.normal(0, 100, 12).astype(np.float16)
F16_G = RNG.normal(0, 3, 12).astype(np.float16)
NARROW = case("narrow_floats", _narrow_floats(), BF16_A, _zeros(12, "bfloat16"),
              _zeros(12, "bfloat16"), F16_H, F16_G, np.zeros(12, np.float16))


def test_bfloat16_computes_in_float_and_rounds_on_conversion(run):
    (_, out, copied, *_) = outputs(run, NARROW)
    with np.errstate(over="ignore"):
        want = (BF16_A.astype(np.float32) * np.float32(3) + np.float32(0.1)).astype(BF16)
    assert_floats_equal(out.view(BF16).astype(np.float32), want.astype(np.float32))
    np.testing.assert_array_equal(copied.view(np.uint16), BF16_A.view(np.uint16))


def test_float16_rounds_every_operation_as_numpy_does(run):
    (*_, hout) = outputs(run, NARROW)
    with np.errstate(all="ignore"):
        want = F16_H * F16_G + F16_H / F16_G - np.float16(0.1)
    assert_floats_equal(hout, want)


# -- Select, logic, short-circuit evaluation -----------------------------------------------
def _selects() -> PrimFunc:
    (a,) = buffers("float32", ("a", (8,)))
    out, nested = buffers("float32", ("out", (16,)), ("nested", (16,)))
    (flags,) = buffers("bool", ("flags", (6, 16)))
    (counter,) = buffers("int32", ("counter", (1,)))
    (picked,) = buffers("int32", ("picked", (16,)))
    i = Var("i")
    inside = i < 8
    load = a[Min(i, 7)]
    bumped = call_extern("bump", counter)
    return func([a, out, nested, flags, counter, picked], loop(i, 16, SeqStmt([
        # the load is out of bounds where the condition is false: only one side runs
        BufferStore(out, Select(inside, a[i], const(-1.0)), [i]),
        BufferStore(nested, Select(inside, Select(GT(load, 0.0), load, -load),
                                   Select(EQ(i, 9), const(9.0), Cast("float32", i))), [i]),
        BufferStore(flags, And(inside, GT(a[i], 0.0)), [0, i]),
        BufferStore(flags, Or(Not(inside), LT(a[i], 0.0)), [1, i]),
        BufferStore(flags, Not(And(inside, GE(a[Min(i, 7)], 0.0))), [2, i]),
        BufferStore(flags, EQ(inside, GT(load, 0.0)), [3, i]),
        BufferStore(flags, NE(Not(inside), Or(LT(load, -1.0), And(GT(load, 1.0), inside))),
                    [4, i]),
        BufferStore(flags, Cast("bool", load), [5, i]),
        # a side calls a function: both sides run, as TIR says
        BufferStore(picked, Select(inside, bumped, const(0)), [i]),
    ])))


SELECT_A = np.array([0.5, -1.5, 0.0, 2.0, -0.25, 3.0, -7.0, 1.25], np.float32)
SELECTS = case("selects", _selects(), SELECT_A, np.zeros(16, np.float32),
               np.zeros(16, np.float32), np.zeros((6, 16), bool), np.zeros(1, np.int32),
               np.zeros(16, np.int32))


def test_select_and_logic_evaluate_only_the_side_taken(run):
    (_, out, nested, flags, counter, picked) = outputs(run, SELECTS)
    i = np.arange(16)
    inside = i < 8
    a = np.concatenate([SELECT_A, np.full(8, np.nan, np.float32)])
    load = SELECT_A[np.minimum(i, 7)]
    np.testing.assert_array_equal(out, np.where(inside, a, -1))
    np.testing.assert_array_equal(nested, np.where(inside, np.abs(load),
                                                   np.where(i == 9, 9.0, i)))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(flags[0], inside & (a > 0))
        np.testing.assert_array_equal(flags[1], ~inside | (a < 0))
    np.testing.assert_array_equal(flags[2], ~(inside & (load >= 0)))
    np.testing.assert_array_equal(flags[3], inside == (load > 0))
    np.testing.assert_array_equal(flags[4], (~inside) != ((load < -1) | ((load > 1) & inside)))
    np.testing.assert_array_equal(flags[5], load != 0)
    assert counter[0] == 16  # called in every iteration, the condition true or not
    np.testing.assert_array_equal(picked, np.where(inside, i + 1, 0))


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
               *[_zeros(1, d) for d in ALL_DTYPES])


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


# -- intrinsics: every one, against the table's NumPy meaning ---------------------------------
UNARY = [n for n, t in INTRINSICS.items() if t.arity == 1 and not t.returns_bool]
BINARY = [n for n, t in INTRINSICS.items() if t.arity == 2 and "float32" in t.dtypes]
INT_BINARY = [n for n, t in INTRINSICS.items() if t.arity == 2 and "float32" not in t.dtypes]
PREDICATES = [n for n, t in INTRINSICS.items() if t.returns_bool]
#: Intrinsics C and NumPy both round correctly: their results are equal bit for bit.
EXACT = {"tir.sqrt", "tir.rsqrt", "tir.floor", "tir.ceil", "tir.trunc", "tir.round",
         "tir.fabs", "tir.copysign", "tir.fmod"}
INTRINSIC_X = np.array([0.0, -0.0, 0.5, -0.5, 1.0, 2.5, -2.5, 3.5, 0.999, -0.3, 1.7, 10.0,
                        -12.25, 100.0, 1e-8, np.inf, -np.inf, np.nan])
INTRINSIC_Y = np.array([1.0, -1.0, 2.0, 0.5, -3.0, 0.0, 2.0, -2.0, 3.0, 0.7, -0.1, 2.0, 1.5,
                        -0.5, 4.0, 1.0, 2.0, 1.0])


def _intrinsics(dtype: str) -> PrimFunc:
    n = len(INTRINSIC_X)
    x, y = buffers(dtype, ("x", (n,)), ("y", (n,)))
    un, bi = buffers(dtype, ("un", (len(UNARY), n)), ("bi", (len(BINARY), n)))
    pr = decl_buffer((len(PREDICATES), n), "bool", "pr")
    i = Var("i")
    stores = [BufferStore(un, intrinsic_call(name, x[i]), [k, i]) for k, name in enumerate(UNARY)]
    stores += [BufferStore(bi, intrinsic_call(name, x[i], y[i]), [k, i])
               for k, name in enumerate(BINARY)]
    stores += [BufferStore(pr, intrinsic_call(name, x[i]), [k, i])
               for k, name in enumerate(PREDICATES)]
    return func([x, y, un, bi, pr], loop(i, n, SeqStmt(stores)))


INTRINSIC_CASES = {}
for _dtype in ("float16", "float32", "float64"):
    _x, _y = INTRINSIC_X.astype(_dtype), INTRINSIC_Y.astype(_dtype)
    INTRINSIC_CASES[_dtype] = case(
        f"intrinsics_{_dtype}", _intrinsics(_dtype), _x, _y,
        np.zeros((len(UNARY), len(_x)), _dtype), np.zeros((len(BINARY), len(_x)), _dtype),
        np.zeros((len(PREDICATES), len(_x)), bool))
_RTOL = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-14}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_intrinsic_means_what_its_numpy_function_computes(run, dtype):
    x, y, un, bi, pr = outputs(run, INTRINSIC_CASES[dtype])
    rows = [(name, row, INTRINSICS[name].numpy(x)) for name, row in zip(UNARY, un)]
    rows += [(name, row, INTRINSICS[name].numpy(x, y)) for name, row in zip(BINARY, bi)]
    for name, got, want in rows:
        if name in EXACT:
            assert_floats_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=_RTOL[dtype], atol=1e-300,
                                       err_msg=f"{name} on {dtype}")
    for name, got in zip(PREDICATES, pr):
        np.testing.assert_array_equal(got, INTRINSICS[name].numpy(x), err_msg=name)


def _int_abs() -> PrimFunc:
    outs, body = [], []
    for dtype in ("int8", "uint8", "int32", "int64"):
        x, out = buffers(dtype, (f"x_{dtype}", (4,)), (f"out_{dtype}", (4,)))
        i = Var("i")
        outs += [x, out]
        body.append(loop(i, 4, BufferStore(out, intrinsic_call("tir.fabs", x[i]), [i])))
    return func(outs, SeqStmt(body))


ABS_INPUTS = [np.array([np.iinfo(d).min, -1 if d[0] == "i" else 1, 0, np.iinfo(d).max], d)
              for d in ("int8", "uint8", "int32", "int64")]
INT_ABS = case("int_abs", _int_abs(), *[a for x in ABS_INPUTS for a in (x, np.zeros_like(x))])


def test_fabs_of_integers_keeps_the_most_negative(run):
    got = outputs(run, INT_ABS)
    for k, x in enumerate(ABS_INPUTS):
        np.testing.assert_array_equal(got[2 * k + 1], np.abs(x))


_BITWISE_DTYPES = ("int8", "uint8", "int32", "uint64")


def _int_bitwise() -> PrimFunc:
    args, body = [], []
    for dtype in _BITWISE_DTYPES:
        x, y = buffers(dtype, (f"x_{dtype}", (4,)), (f"y_{dtype}", (4,)))
        out = decl_buffer((len(INT_BINARY), 4), dtype, f"out_{dtype}")
        i = Var("i")
        args += [x, y, out]
        body.append(loop(i, 4, SeqStmt([BufferStore(out, intrinsic_call(name, x[i], y[i]),
                                                    [k, i])
                                        for k, name in enumerate(INT_BINARY)])))
    return func(args, SeqStmt(body))


BITWISE_INPUTS = [(np.array([np.iinfo(d).min, -5 if d[0] == "i" else 5, 6, np.iinfo(d).max], d),
                   np.array([1, 2, 3, 0], d)) for d in _BITWISE_DTYPES]
INT_BITWISE = case("int_bitwise", _int_bitwise(),
                   *[a for x, y in BITWISE_INPUTS
                     for a in (x, y, np.zeros((len(INT_BINARY), 4), x.dtype))])


def test_bitwise_intrinsics_of_integers_are_numpys(run):
    got = outputs(run, INT_BITWISE)
    for k, (x, y) in enumerate(BITWISE_INPUTS):
        for row, name in enumerate(INT_BINARY):
            np.testing.assert_array_equal(got[3 * k + 2][row], INTRINSICS[name].numpy(x, y),
                                          err_msg=f"{name} on {x.dtype}")


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


# -- what cannot be printed: clear errors ----------------------------------------------------
def _store(value: PrimExpr, dtype: str = "float32") -> PrimFunc:
    (out,) = buffers(dtype, ("out", (1,)))
    return func([out], BufferStore(out, value, [0]))


@pytest.mark.parametrize(("build", "message"), [
    (lambda: _store(Call("float32", "tir.mystery", [const(1.0)])),
     r"PrimFunc 'f': unknown intrinsic 'tir\.mystery'"),
    (lambda: _store(Call("float32", "tir.exp", [const(1)])),
     r"tir\.exp: arguments of dtype int32 are not allowed"),
    (lambda: _store(Call("float32", "tir.pow", [const(1.0)])), r"tir\.pow takes 2 argument"),
    (lambda: _store(Var("ghost", "float32")), r"variable %ghost is used where nothing"),
    (lambda: _store(Cast("int64", Var("p", "handle")), "int64"),
     r"cannot convert a handle to a int64"),
    (lambda: _store(call_extern("not a name", dtype="float32")),
     r"call_extern of 'not a name': not a C identifier"),
    (lambda: _store(call_extern("ph_secret", dtype="float32")), r"belong to the printer"),
    (lambda: func([], For(Var("u", "uint8"), IntImm("uint8", 1), IntImm("uint8", 255),
                          "serial", Evaluate(0))),
     r"loop %u runs to 255, the largest uint8; .*wider loop variable"),
])
def test_what_cannot_be_printed_is_a_ccodegen_error(build, message):
    fn = build()
    with pytest.raises(CCodegenError, match=message):
        print_unit({"f": fn})


def test_constant_data_cannot_be_stored_into():
    c = decl_buffer((2,), "float32", "c")
    body = AllocateConst(c.data, "float32", (2,), np.zeros(2, np.float32),
                         BufferStore(c, const(1.0), [0]))
    with pytest.raises(CCodegenError, match=r"buffer c is constant data"):
        print_unit({"f": func([], body)})


def test_a_buffer_over_an_undefined_pointer_is_an_error():
    (out,) = buffers("float32", ("out", (1,)))
    stray = decl_buffer((1,), "float32", "stray")
    with pytest.raises(CCodegenError, match=r"buffer stray points at %stray_data, which no"):
        print_unit({"f": func([out], BufferStore(out, stray[0], [0]))})


def test_unit_level_mistakes_are_errors():
    with pytest.raises(CCodegenError, match=r"prefix must be a C identifier"):
        CPrinter(prefix="my-unit")
    printer = CPrinter()
    printer.print_function(_store(const(1.0)), "free")  # a reserved name: renamed
    assert printer.functions["free"].symbol == "free_1"
    with pytest.raises(CCodegenError, match=r"'free' is already in the unit"):
        printer.print_function(_store(const(2.0)), "free")
    with pytest.raises(CCodegenError, match=r"call_extern of 'free_1', which the unit"):
        printer.print_function(_store(call_extern("free_1", dtype="float32")), "g")
    with pytest.raises(CCodegenError, match=r"prints PrimFuncs, found"):
        printer.print_function("not a function", "h")  # type: ignore[arg-type]


def test_intrinsic_call_checks_arity_and_dtypes():
    x = Var("x", "float32")
    assert intrinsic_call("tir.isnan", x).dtype == "bool"
    assert intrinsic_call("tir.pow", x, 2.0).args[1].dtype == "float32"
    assert intrinsic_call("tir.fabs", Var("i", "int8")).dtype == "int8"
    with pytest.raises(IRTypeError, match=r"tir\.exp takes 1 argument\(s\), found 2"):
        intrinsic_call("tir.exp", x, x)
    with pytest.raises(IRTypeError, match=r"tir\.sqrt: arguments of dtype int32"):
        intrinsic_call("tir.sqrt", Var("i"))
    with pytest.raises(IRTypeError, match=r"argument 1 is float64, argument 0 is float32"):
        intrinsic_call("tir.atan2", x, Var("y", "float64"))
    with pytest.raises(UnknownNameError, match=r"unknown intrinsic 'tir\.expp'.*'tir\.exp'"):
        intrinsic_call("tir.expp", x)


def test_printing_is_deterministic():
    funcs = {name: fn for name, fn in FUNCS.items() if name != "deep"}  # deep is slow
    first = print_unit(funcs, PREAMBLE, kernel_printer=scale_kernel)
    second = print_unit(funcs, PREAMBLE, kernel_printer=scale_kernel)
    assert first.source == second.source and first.functions == second.functions


# -- random expression trees, against an evaluator written with NumPy -------------------------
TREE_N = 16
_TREE_INPUTS = {
    "a": np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 7.0, -7.0, 1e-3, 3.0, -3.0,
                   0.1, 5.5, 1e30, -4.75], np.float32),
    "b": np.array([1.0, -0.5, 0.0, 2.0, 3.0, -np.inf, 2.5, -7.0, 0.1, np.nan, -3.0, 1e-30,
                   4.0, -0.0, 6.0, 8.0], np.float32),
    "p": np.array([0, -1, 1, 7, -7, 2**31 - 1, -2**31, 100, -100, 3, -3, 65536, 12, -12, 5, 9],
                  np.int32),
    "q": np.array([3, 0, -1, -2**31, 2, -1, -1, 7, 13, -4, 4, 0, 5, -5, 2**31 - 1, 1], np.int32),
    "r": np.array([-128, 127, 0, -1, 1, 50, -50, 100, -100, 3, -3, 64, -64, 7, 8, 9], np.int8),
}
_TREE_BUFFERS = {name: decl_buffer((TREE_N,), str(v.dtype), name)
                 for name, v in _TREE_INPUTS.items()}
_TREE_LOOP = Var("i")
_ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
_EXACT_UNARY = ("tir.sqrt", "tir.floor", "tir.ceil", "tir.trunc", "tir.round", "tir.fabs")
_CMP_OPS = (LT, GE, EQ, NE)


def _draw_tree(data: st.DataObject, dtype: str, depth: int,
               pool: dict[str, list[PrimExpr]]) -> PrimExpr:
    """A random expression of ``dtype`` over the tree buffers at index ``i``; it may reuse
    subexpressions drawn before (``pool``), so the trees share nodes."""
    buf = {"float32": ("a", "b"), "int32": ("p", "q"), "int8": ("r",)}
    if dtype != "bool" and (depth == 0 or data.draw(st.integers(0, 3)) == 0):
        kind = data.draw(st.sampled_from(["load", "load", "const", "loop", "reuse"]))
        if kind == "reuse" and pool[dtype]:
            return data.draw(st.sampled_from(pool[dtype]))
        if kind == "load":
            return _TREE_BUFFERS[data.draw(st.sampled_from(buf[dtype]))][_TREE_LOOP]
        if kind == "loop" and dtype == "int32":
            return _TREE_LOOP
        if dtype == "float32":
            return const(data.draw(st.sampled_from([0.0, -0.0, 0.5, -1.0, 3.0, np.inf, np.nan])))
        info = np.iinfo(dtype)
        return const(data.draw(st.sampled_from([0, 1, -1, 3, int(info.min), int(info.max)])),
                     dtype)
    tree = _draw_node(data, dtype, depth, pool)
    pool[dtype].append(tree)
    return tree


def _draw_node(data: st.DataObject, dtype: str, depth: int,
               pool: dict[str, list[PrimExpr]]) -> PrimExpr:
    sub = max(depth - 1, 0)

    def draw(of: str) -> PrimExpr:
        return _draw_tree(data, of, sub, pool)

    if dtype == "bool":
        kind = "cmp" if depth == 0 else data.draw(st.sampled_from(["cmp", "cmp", "and", "or",
                                                                   "not"]))
        if kind == "cmp":
            of = data.draw(st.sampled_from(["float32", "int32"]))
            return data.draw(st.sampled_from(_CMP_OPS))(draw(of), draw(of))
        if kind == "not":
            return Not(draw("bool"))
        return (And if kind == "and" else Or)(draw("bool"), draw("bool"))
    kind = data.draw(st.sampled_from(["arith", "arith", "arith", "select", "cast", "call"]))
    if kind == "arith":
        return data.draw(st.sampled_from(_ARITH))(draw(dtype), draw(dtype))
    if kind == "select":
        return Select(draw("bool"), draw(dtype), draw(dtype))
    if kind == "cast":
        return Cast(dtype, draw(data.draw(st.sampled_from(
            [d for d in ("float32", "int32", "int8") if d != dtype]))))
    if dtype == "float32":
        # (not copysign: the sign of a NaN from an invalid operation is not specified)
        name = data.draw(st.sampled_from([*_EXACT_UNARY, "tir.fmod"]))
        return intrinsic_call(name, *[draw(dtype) for _ in range(INTRINSICS[name].arity)])
    return intrinsic_call("tir.fabs", draw(dtype))


def _evaluate(e: Any) -> np.ndarray:
    """``e`` at every index, computed with NumPy as TIR and the printer's documentation say."""
    if isinstance(e, Var):
        return np.arange(TREE_N, dtype=np.int32)
    if isinstance(e, PrimExpr) and type(e).__name__ in ("IntImm", "FloatImm"):
        return np.full(TREE_N, e.value, e.dtype)
    if type(e).__name__ == "BufferLoad":
        return _TREE_INPUTS[e.buffer.name]
    with np.errstate(all="ignore"):
        if isinstance(e, Cast):
            x = _evaluate(e.value)
            if e.dtype in INT_DTYPES and x.dtype.kind == "f":  # saturating, NaN to 0
                info = np.iinfo(e.dtype)
                x = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0),
                            int(info.min), int(info.max))
            return x.astype(e.dtype)
        if isinstance(e, Select):
            return np.where(_evaluate(e.condition), _evaluate(e.true_value),
                            _evaluate(e.false_value))
        if isinstance(e, Not):
            return ~_evaluate(e.a)
        if isinstance(e, Call):
            return INTRINSICS[e.op].numpy(*[_evaluate(a) for a in e.args])
        a, b = _evaluate(e.a), _evaluate(e.b)
        cls = type(e)
        if cls in (Min, Max):  # NaN when either is; b when they are equal
            first = (a < b) if cls is Min else (a > b)
            return np.where(first | (np.isnan(a) if a.dtype.kind == "f" else False), a, b)
        numpy_ops = {Add: np.add, Sub: np.subtract, Mul: np.multiply, LT: np.less,
                     GE: np.greater_equal, EQ: np.equal, NE: np.not_equal, And: np.logical_and,
                     Or: np.logical_or}
        if cls in numpy_ops:
            return numpy_ops[cls](a, b)
        if a.dtype.kind == "f":
            return {Div: np.divide, Mod: np.fmod, FloorDiv: np.floor_divide,
                    FloorMod: np.remainder}[cls](a, b)
        name = {Div: "div", Mod: "mod", FloorDiv: "floordiv", FloorMod: "floormod"}[cls]
        return wrap([_int_reference(name, int(x), int(y)) for x, y in zip(a, b)],
                    str(a.dtype))


@needs_cc
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_expression_trees_compute_what_numpy_computes(tmp_path_factory, data):
    funcs, calls, want, trees = {}, {}, {}, {}
    pool: dict[str, list[PrimExpr]] = {"float32": [], "int32": [], "int8": [], "bool": []}
    for k in range(8):
        dtype = data.draw(st.sampled_from(["float32", "int32", "int8", "bool"]))
        tree = _draw_tree(data, dtype, 4, pool)
        kind = data.draw(st.sampled_from(["serial", "vectorized", "parallel"]))
        out = decl_buffer((TREE_N,), dtype, "out")
        funcs[f"tree{k}"] = func([*_TREE_BUFFERS.values(), out],
                                 For(_TREE_LOOP, 0, TREE_N, kind,
                                     BufferStore(out, tree, [_TREE_LOOP])))
        want[f"tree{k}"] = _evaluate(tree).astype(dtype)
        trees[f"tree{k}"] = str(tree)
    # With a tiny spill depth, most subexpressions go into temporaries, in conditional sides
    # too: the same trees test that.
    with mock.patch.object(c_expr, "SPILL_DEPTH", data.draw(st.sampled_from([1, 3, 48]))):
        u = print_unit(funcs)
    for name in funcs:
        args = [*copy.deepcopy(list(_TREE_INPUTS.values())), np.zeros(TREE_N, want[name].dtype)]
        calls[name] = (u.functions[name].symbol, u.functions[name].argtypes, args, 0)
    directory = tmp_path_factory.mktemp("trees")
    got = run_sanitized(compile_unit(u, SANITIZED, directory), calls, directory)
    for name in funcs:
        status, args, _ = got[name]
        assert status == 0
        try:
            if want[name].dtype.kind == "f":
                assert_floats_equal(args[-1], want[name])
            else:
                np.testing.assert_array_equal(args[-1], want[name])
        except AssertionError as err:
            raise AssertionError(f"out[i] = {trees[name]}\n{err}") from None
