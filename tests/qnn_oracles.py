"""Independent pure-Python oracles of TFLite's fixed-point arithmetic and quantised operators,
written from the TFLite reference semantics (big-integer arithmetic, ``Fraction`` for exact
rounding), never from the code under test: for tests/test_qnn.py and
tests/test_qnn_fixed_point.py."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

MIN32, MAX32 = -(2**31), 2**31 - 1
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def wrap32(v: int) -> int:
    """v wrapped to a signed 32-bit integer (two's complement)."""
    return (v + 2**31) % 2**32 - 2**31


def round_away(x: Fraction | float) -> int:
    """x rounded to the nearest integer, ties away from zero."""
    f = Fraction(x)
    r = math.floor(abs(f) + Fraction(1, 2))
    return r if f >= 0 else -r


def c_div(a: int, b: int) -> int:
    """a / b truncated toward zero, as C's integer division."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def py_quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: (a Q0.31 multiplier, an exponent) for m."""
    if m == 0:
        return 0, 0
    q, e = math.frexp(m)
    qf = round_away(Fraction(q) * 2**31)
    if qf == 2**31:
        qf, e = qf // 2, e + 1
    if e < -31:
        return 0, 0
    return qf, e


def py_srdhm(a: int, b: int) -> int:
    """gemmlowp's SaturatingRoundingDoublingHighMul of two int32 values."""
    if a == b == MIN32:
        return MAX32
    p = a * b
    nudge = 2**30 if p >= 0 else 1 - 2**30
    return c_div(p + nudge, 2**31)


def py_rdbpot(x: int, e: int) -> int:
    """gemmlowp's RoundingDivideByPOT: x / 2**e rounded, ties away from zero."""
    return round_away(Fraction(x, 2**e))


def py_mbqm(x: int, m: int, s: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier: x times the Q0.31 m, shifted by s."""
    left, right = max(s, 0), max(-s, 0)
    return py_rdbpot(py_srdhm(wrap32(x * 2**left), m), right)


def clamp(v: int, dtype: str) -> int:
    """v saturated to dtype's range."""
    lo, hi = RANGES[dtype]
    return min(max(v, lo), hi)


def py_sat_shift_left(x: int, e: int) -> int:
    """gemmlowp's SaturatingShiftLeft of an int32 by e bits."""
    thr = 2 ** (31 - e) - 1
    if x > thr:
        return MAX32
    if x < -thr:
        return MIN32
    return wrap32(x * 2**e)


def py_exp_on_negative_values(a: int) -> int:
    """gemmlowp's exp_on_negative_values: a Q5.26 input, a Q0.31 output."""
    quarter = 2**24
    a_mod = wrap32((a & (quarter - 1)) - quarter)
    x = py_sat_shift_left(a_mod, 5) + 2**28
    x2 = py_srdhm(x, x)
    x3 = py_srdhm(x2, x)
    x4 = py_srdhm(x2, x2)
    inner = py_rdbpot(py_srdhm(py_rdbpot(x4, 2) + x3, 715827883) + x2, 1)
    result = 1895147668 + py_srdhm(1895147668, x + inner)
    remainder = wrap32(a_mod - a)
    consts = [1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242]
    for k, c in enumerate(consts):
        if remainder & (1 << (24 + k)):
            result = py_srdhm(result, c)
    return MAX32 if a == 0 else result


def py_one_over_one_plus_x(a: int) -> int:
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 (Newton-Raphson, Q0.31)."""
    s = a + MAX32
    half = c_div(s + (1 if s >= 0 else -1), 2)
    x = 1515870810 + py_srdhm(half, -1010580540)
    for _ in range(3):
        x = x + py_sat_shift_left(py_srdhm(x, 2**29 - py_srdhm(half, x)), 2)
    return py_sat_shift_left(x, 1)


def py_softmax_params(scale: float, beta: float) -> tuple[int, int, int]:
    """TFLite's int8 softmax parameters: (multiplier, shift, diff_min)."""
    real = min(float(np.float32(beta)) * scale * 2.0**26, 2.0**31 - 1)
    m, s = py_quantize_multiplier(real)
    return m, s, -math.floor(Fraction(31 * 2**26, 2**s))


def py_softmax_row(row: list[int], scale: float, beta: float = 1.0) -> list[int]:
    """TFLite's int8 softmax of one row (output scale 1/256, zero point -128)."""
    m, s, diff_min = py_softmax_params(scale, beta)
    mx = max(row)
    exps = []
    for v in row:
        d = v - mx
        exps.append(py_exp_on_negative_values(py_srdhm(wrap32(d * 2**s), m))
                    if d >= diff_min else None)
    total = sum(py_rdbpot(e, 12) for e in exps if e is not None)
    h = 32 - total.bit_length()
    scale_q = py_one_over_one_plus_x(wrap32((total << h) - 2**31))
    out = []
    for e in exps:
        if e is None:
            out.append(-128)
        else:
            out.append(min(max(py_rdbpot(py_srdhm(scale_q, e), 12 - h + 23) - 128, -128), 127))
    return out


def py_add_params(s1: float, s2: float, so: float, dtype: str):
    """TFLite's quantised add: (left shift, input multipliers, output multiplier)."""
    ls = 15 if dtype == "int16" else 20
    twice_max = 2 * max(s1, s2)
    return (ls, py_quantize_multiplier(s1 / twice_max), py_quantize_multiplier(s2 / twice_max),
            py_quantize_multiplier(twice_max / (2**ls * so)))
