"""The TIR -> C printer's arithmetic (passhost.backend.c): integer wrapping and the
division kinds for every integer dtype, IEEE float arithmetic, conversions, bfloat16 and
float16, Select and short-circuit logic, and every intrinsic, in hand-built PrimFuncs
printed into one unit, compiled and run (see c_printer_harness), against NumPy and Python
integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from c_printer_harness import (
    ALL_DTYPES,
    BF16,
    UnitCases,
    assert_floats_equal,
    buffers,
    func,
    int_reference,
    loop,
    outputs,
    unit_fixtures,
    wrap,
    zeros,
)
from passhost.ir.types import INT_DTYPES
from passhost.tir import (
    EQ,
    GE,
    GT,
    INTRINSICS,
    LT,
    NE,
    Add,
    And,
    BufferStore,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
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
    Sub,
    Var,
    call_extern,
    const,
    decl_buffer,
    intrinsic_call,
)

RNG = np.random.default_rng(20)
CASES = UnitCases()
case = CASES.case
unit, run = unit_fixtures(CASES)


# -- integer arithmetic: wrapping, the division kinds, min/max, for every integer dtype --------
_INT_OPS: list[tuple[str, Callable[[PrimExpr, PrimExpr], PrimExpr]]] = [
    ("add", Add), ("sub", Sub), ("mul", Mul), ("div", Div), ("mod", Mod),
    ("floordiv", FloorDiv), ("floormod", FloorMod), ("min", Min), ("max", Max),
    ("div_by_7", lambda a, b: Div(a, 7)), ("mod_by_3", lambda a, b: Mod(a, 3)),
    ("floordiv_by_4", lambda a, b: FloorDiv(a, 4)), ("floormod_by_4", lambda a, b: FloorMod(a, 4)),
]


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
        want = wrap([int_reference(name, int(x), int(y)) for x, y in zip(a, b)], dtype)
        np.testing.assert_array_equal(out[k], want, err_msg=f"{name} on {dtype}")


def test_integer_operations_match_numpy_where_numpy_has_them():
    """The Python-integer reference above agrees with NumPy's own floor division,
    remainder and wrapping arithmetic (away from division by zero)."""
    a, b = _int_values("int32")
    ok = b != 0
    with np.errstate(all="ignore"):
        for name, numpy_op in (("floordiv", np.floor_divide), ("floormod", np.remainder),
                               ("mod", np.fmod), ("add", np.add), ("mul", np.multiply)):
            want = wrap([int_reference(name, int(x), int(y)) for x, y in zip(a, b)], "int32")
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


CASTS = {}
for _src in ALL_DTYPES:
    _x = _cast_values(_src)
    CASTS[_src] = (_x, case(f"cast_from_{_src}", _cast_all(_src, len(_x)), _x,
                            *[zeros(len(_x), d) for d in ALL_DTYPES]))


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
NARROW = case("narrow_floats", _narrow_floats(), BF16_A, zeros(12, "bfloat16"),
              zeros(12, "bfloat16"), F16_H, F16_G, np.zeros(12, np.float16))


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
