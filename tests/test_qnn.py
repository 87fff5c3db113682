"""qnn.* operators and the TFLite fixed-point primitives against independent Python oracles.

Every expected value comes from plain Python (big-integer arithmetic, ``Fraction`` for exact
rounding, per-element loops) written here from the TFLite reference semantics, never from
the code under test.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from naive import in_layout, naive_conv2d
from passhost import relay
from passhost.errors import IRTypeError
from passhost.relay.op import fixed_point as fp

MIN32, MAX32 = -(2**31), 2**31 - 1
RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


# -- independent pure-Python oracles ---------------------------------------------------------------
def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def round_away(x: Fraction | float) -> int:
    f = Fraction(x)
    r = math.floor(abs(f) + Fraction(1, 2))
    return r if f >= 0 else -r


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def py_quantize_multiplier(m: float) -> tuple[int, int]:
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
    if a == b == MIN32:
        return MAX32
    p = a * b
    nudge = 2**30 if p >= 0 else 1 - 2**30
    return c_div(p + nudge, 2**31)


def py_rdbpot(x: int, e: int) -> int:
    return round_away(Fraction(x, 2**e))


def py_mbqm(x: int, m: int, s: int) -> int:
    left, right = max(s, 0), max(-s, 0)
    return py_rdbpot(py_srdhm(wrap32(x * 2**left), m), right)


def clamp(v: int, dtype: str) -> int:
    lo, hi = RANGES[dtype]
    return min(max(v, lo), hi)


def py_sat_shift_left(x: int, e: int) -> int:
    thr = 2 ** (31 - e) - 1
    if x > thr:
        return MAX32
    if x < -thr:
        return MIN32
    return wrap32(x * 2**e)


def py_exp_on_negative_values(a: int) -> int:
    # gemmlowp exp_on_negative_values for Q5.26 input, Q0.31 output.
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
    s = a + MAX32
    half = c_div(s + (1 if s >= 0 else -1), 2)
    x = 1515870810 + py_srdhm(half, -1010580540)
    for _ in range(3):
        x = x + py_sat_shift_left(py_srdhm(x, 2**29 - py_srdhm(half, x)), 2)
    return py_sat_shift_left(x, 1)


def py_softmax_params(scale: float, beta: float) -> tuple[int, int, int]:
    real = min(float(np.float32(beta)) * scale * 2.0**26, 2.0**31 - 1)
    m, s = py_quantize_multiplier(real)
    return m, s, -math.floor(Fraction(31 * 2**26, 2**s))


def py_softmax_row(row: list[int], scale: float, beta: float = 1.0) -> list[int]:
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
    ls = 15 if dtype == "int16" else 20
    twice_max = 2 * max(s1, s2)
    return (ls, py_quantize_multiplier(s1 / twice_max), py_quantize_multiplier(s2 / twice_max),
            py_quantize_multiplier(twice_max / (2**ls * so)))


# -- helpers ---------------------------------------------------------------------------------------
def f32(v) -> relay.Constant:
    return relay.const(np.asarray(v, dtype=np.float32))


def i32(v) -> relay.Constant:
    return relay.const(np.asarray(v, dtype=np.int32))


def run(params, body, *inputs):
    return relay.evaluate(relay.Function(params, body), *inputs)


def rand_int(rng, shape, dtype="int8"):
    lo, hi = RANGES[dtype]
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def rand_scale(rng, n=None, lo=0.002, hi=0.2):
    return np.asarray(rng.uniform(lo, hi, size=n)).astype(np.float32)


def bcast_index(idx, shape):
    idx = idx[len(idx) - len(shape):]
    return tuple(i if d > 1 else 0 for i, d in zip(idx, shape))


int32s = st.integers(MIN32, MAX32)


# -- QuantizeMultiplier ----------------------------------------------------------------------------
def test_quantize_multiplier_powers_of_two_cover_exponents():
    for e in range(-31, 31):
        assert fp.quantize_multiplier(2.0 ** (e - 1)) == (2**30, e)
        assert py_quantize_multiplier(2.0 ** (e - 1)) == (2**30, e)


def test_quantize_multiplier_zero_flush_and_carry():
    assert fp.quantize_multiplier(0.0) == (0, 0)
    assert fp.quantize_multiplier(2.0**-32) == (2**30, -31)  # smallest kept exponent
    assert fp.quantize_multiplier(2.0**-33) == (0, 0)  # e = -32 flushes
    assert fp.quantize_multiplier(1e-30) == (0, 0)
    # q rounds up to 2^31: halve it and bump the exponent.
    assert fp.quantize_multiplier(1 - 2.0**-40) == (2**30, 1)
    assert fp.quantize_multiplier(0.75 - 2.0**-40) == (3 * 2**29, 0)
    # The carry happens before the flush: e = -32 carried to -31 is kept...
    assert fp.quantize_multiplier((1 - 2.0**-40) * 2.0**-32) == (2**30, -31)
    # ...and e = -33 carried to -32 is still flushed.
    assert fp.quantize_multiplier((1 - 2.0**-40) * 2.0**-33) == (0, 0)


def test_quantize_multiplier_rounds_ties_away_from_zero():
    m = 0.5 + 2.0**-32  # q * 2^31 = 2^30 + 0.5 exactly
    assert fp.quantize_multiplier(m) == (2**30 + 1, 0)
    assert fp.quantize_multiplier(-m) == (-(2**30 + 1), 0)
    assert fp.quantize_multiplier(0.5 + 2.0**-33) == (2**30, 0)  # below the tie


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=2.0**-45, max_value=2.0**30), min_size=1, max_size=20))
def test_quantize_multiplier_matches_python(values):
    expected = [py_quantize_multiplier(v) for v in values]
    assert [fp.quantize_multiplier(v) for v in values] == expected
    mult, shift = fp.quantize_multipliers(np.array(values))
    assert mult.dtype == np.int32 and shift.dtype == np.int32
    assert list(zip(mult.tolist(), shift.tolist())) == expected


# -- SaturatingRoundingDoublingHighMul -------------------------------------------------------------
def test_srdhm_edge_cases():
    f = fp.saturating_rounding_doubling_high_mul
    assert f(MIN32, MIN32) == MAX32
    assert f(MIN32, MAX32) == -MAX32
    assert f(MAX32, MAX32) == MAX32 - 1
    assert f(2**30, 2**30) == 2**29  # 0.5 * 0.5
    # Ties (2ab / 2^32 = k + 1/2) round half up, for both signs.
    assert f(1, 2**30) == 1
    assert f(-1, 2**30) == 0
    assert f(3, 2**30) == 2
    assert f(-3, 2**30) == -1
    assert f(0, MIN32) == 0
    for a, b in [(MIN32, MIN32), (MIN32, MAX32), (-3, 2**30), (12345, -98765)]:
        assert f(a, b) == py_srdhm(a, b)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(int32s, int32s), min_size=1, max_size=40))
def test_srdhm_vectorised_matches_python(pairs):
    a = np.array([p[0] for p in pairs], dtype=np.int32)
    b = np.array([p[1] for p in pairs], dtype=np.int32)
    out = fp.saturating_rounding_doubling_high_mul(a, b)
    assert out.tolist() == [py_srdhm(x, y) for x, y in pairs]


# -- RoundingDivideByPOT ---------------------------------------------------------------------------
def test_rdbpot_edge_cases():
    f = fp.rounding_divide_by_pot
    assert f(5, 1) == 3 and f(-5, 1) == -3  # ties away from zero
    assert f(-6, 2) == -2 and f(6, 2) == 2
    assert f(-5, 2) == -1 and f(-7, 2) == -2
    assert f(-2, 2) == -1 and f(-1, 2) == 0
    assert f(MIN32, 31) == -1 and f(MAX32, 31) == 1 and f(2**30 - 1, 31) == 0
    assert f(-(2**30), 31) == -1 and f(-(2**30) + 1, 31) == 0
    assert f(-17, 0) == -17
    arr = np.array([-6, -5, 5, 6], dtype=np.int32)
    assert f(arr, np.array([2, 2, 1, 2])).tolist() == [-2, -1, 3, 2]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(int32s, st.integers(0, 31)), min_size=1, max_size=40))
def test_rdbpot_vectorised_matches_python(pairs):
    x = np.array([p[0] for p in pairs], dtype=np.int64)
    e = np.array([p[1] for p in pairs], dtype=np.int64)
    assert fp.rounding_divide_by_pot(x, e).tolist() == [py_rdbpot(a, b) for a, b in pairs]


# -- MultiplyByQuantizedMultiplier -----------------------------------------------------------------
def test_mbqm_edge_cases():
    f = fp.multiply_by_quantized_multiplier
    assert f(100, 2**30, 0) == 50
    assert f(-3, 2**30, 0) == -1  # -1.5: SRDHM rounds half up
    assert f(-3, 2**30, -1) == -1  # -0.75
    assert f(-6, 2**30, -1) == py_mbqm(-6, 2**30, -1) == -2  # -1.5 away from zero
    assert f(2**30, 2**30, 2) == 0  # (2^30 << 2) wraps to 0 in int32, as in C
    assert f(3 * 2**29, 2**30, 1) == py_mbqm(3 * 2**29, 2**30, 1) == -(2**29)
    assert f(MIN32, MIN32, 0) == MAX32
    assert f(MAX32, MAX32, -31) == 1
    for x, m, s in [(77, 1518500250, -7), (-77, 1518500250, -7), (-255, 2**31 - 1, 30)]:
        assert f(x, m, s) == py_mbqm(x, m, s)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(int32s, st.integers(0, MAX32), st.integers(-31, 30)),
                min_size=1, max_size=40))
def test_mbqm_vectorised_matches_python(triples):
    x, m, s = (np.array(col, dtype=np.int64) for col in zip(*triples))
    out = fp.multiply_by_quantized_multiplier(x, m, s)
    assert out.tolist() == [py_mbqm(*t) for t in triples]


def test_mbqm_per_channel_broadcast():
    x = np.arange(-6, 6, dtype=np.int32).reshape(2, 3, 2)
    m = np.array([2**30, 1518500250, 2**31 - 1])
    s = np.array([0, -3, 2])
    out = fp.multiply_by_quantized_multiplier(x, m.reshape(1, 3, 1), s.reshape(1, 3, 1))
    for idx in np.ndindex(*x.shape):
        c = idx[1]
        assert out[idx] == py_mbqm(int(x[idx]), int(m[c]), int(s[c]))


# -- activation ranges and effective scales --------------------------------------------------------
def test_activation_range():
    f = fp.activation_range
    assert f("NONE", 0.1, 5, "int8") == (-128, 127)
    assert f("RELU", 0.1, -10, "int8") == (-10, 127)
    assert f("RELU6", 0.05, -10, "int8") == (-10, 110)  # -10 + 6/0.05
    assert f("RELU6", 0.01, -128, "int8") == (-128, 127)  # q(6) = 472 clipped
    assert f("RELU_N1_TO_1", 1 / 64, 3, "int8") == (-61, 67)
    assert f("RELU_N1_TO_1", 1 / 128, 0, "int8") == (-128, 127)
    assert f("RELU", 0.1, 200, "uint8") == (200, 255)
    assert f("RELU6", 6 / 65534, 0, "int16") == (0, 32767)
    # Ties of f / scale round away from zero: 6 / 0.48 = 12.5 in float32.
    scale = 0.48
    q = Fraction(float(np.float32(6) / np.float32(scale)))
    assert f("RELU6", scale, 0, "int8") == (0, round_away(q))
    with pytest.raises(ValueError, match="RELU1"):
        f("RELU1", 0.1, 0)


def test_effective_scales():
    s_in, s_out = np.float32(0.0123), np.float32(0.0871)
    s_w = np.array([0.0031, 0.0517, 0.0007], dtype=np.float32)
    conv = fp.conv_effective_scales(s_in, s_w, s_out)
    assert conv.tolist() == [float(s_in) * float(w) / float(s_out) for w in s_w]
    # FC takes the product in double as conv does (TFLite Micro; not float32 as TFLite did
    # once): find weights where the float32 product would change the bits.
    fc_diff = 0
    for w in np.random.default_rng(0).uniform(0.001, 0.1, size=50).astype(np.float32):
        fc = fp.fc_effective_scale(s_in, w, s_out)
        assert fc == float(s_in) * float(w) / float(s_out)
        fc_diff += fc != float(np.float32(s_in * w)) / float(s_out)
    assert fc_diff > 0
    assert fp.mul_effective_scale(s_in, s_w[1], s_out) == float(s_in) * float(s_w[1]) / float(
        s_out)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_add_params(dtype):
    s1, s2, so = (float(np.float32(v)) for v in (0.017, 0.043, 0.051))
    ls, (m1, e1), (m2, e2), (mo, eo) = py_add_params(s1, s2, so, dtype)
    assert ls == (15 if dtype == "int16" else 20)
    assert tuple(fp.add_params(s1, s2, so, dtype)) == (ls, m1, e1, m2, e2, mo, eo)


def test_softmax_params():
    for scale in (0.1, 0.0123, 1 / 16, 3.0, 64.0):
        s = float(np.float32(scale))
        assert tuple(fp.softmax_params(s)) == py_softmax_params(s, 1.0)
    assert fp.softmax_params(64.0) == (2**31 - 1, 31, 0)  # clamped to 2^31 - 1
    s = float(np.float32(0.05))
    assert tuple(fp.softmax_params(s, beta=0.3)) == py_softmax_params(s, 0.3)
    with pytest.raises(ValueError, match="2\\^-26"):
        fp.softmax_params(2.0**-27)


# -- softmax primitives ----------------------------------------------------------------------------
def test_exp_on_negative_values():
    assert fp.exp_on_negative_values(0) == MAX32
    points = [-1, -(2**24), -(2**24) - 1, -(2**26), -(3 * 2**25), -(5 * 2**26) - 12345,
              -(31 * 2**26), MIN32]
    out = fp.exp_on_negative_values(np.array(points))
    for a, got in zip(points, out.tolist()):
        assert got == py_exp_on_negative_values(a)
        # Within the accuracy of gemmlowp's 4th-order polynomial.
        assert abs(got - math.exp(a / 2**26) * 2**31) < 1e-6 * 2**31


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(MIN32, 0), min_size=1, max_size=30))
def test_exp_on_negative_values_matches_python(values):
    out = fp.exp_on_negative_values(np.array(values))
    assert out.tolist() == [py_exp_on_negative_values(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, MAX32), min_size=1, max_size=30))
def test_one_over_one_plus_x_matches_python(values):
    out = fp.one_over_one_plus_x_for_x_in_0_1(np.array(values))
    assert out.tolist() == [py_one_over_one_plus_x(v) for v in values]
    for v, got in zip(values, out.tolist()):
        assert abs(got - 2**31 / (1 + v / 2**31)) < 64


# -- qnn.quantize / qnn.dequantize -----------------------------------------------------------------
def py_quantize(x: float, scale: float, zp: int, dtype: str) -> int:
    q = np.float32(x) / np.float32(scale)
    return clamp(round_away(float(q)) + zp, dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_quantize_per_tensor(dtype):
    rng = np.random.default_rng(1)
    data = rng.uniform(-3, 3, size=(3, 4)).astype(np.float32)
    data[0, :3] = [0.25, -0.25, 0.75]  # exact ties at scale 0.5
    zp = 7 if dtype != "int16" else -3
    x = relay.var("x", shape=(3, 4))
    for scale in (0.5, 0.013):
        out = run([x], relay.qnn.quantize(x, f32(scale), i32(zp), out_dtype=dtype), data)
        assert out.dtype == dtype
        exp = [[py_quantize(data[i, j], scale, zp, dtype) for j in range(4)] for i in range(3)]
        assert out.tolist() == exp
    assert out.tolist()[0][:3] != [0, 0, 0]


def test_quantize_per_channel_and_float64_input():
    rng = np.random.default_rng(2)
    data = rng.uniform(-2, 2, size=(2, 3, 2))
    scales = rand_scale(rng, 3)
    zps = np.array([-4, 0, 9], dtype=np.int32)
    x = relay.var("x", shape=(2, 3, 2), dtype="float64")
    out = run([x], relay.qnn.quantize(x, f32(scales), i32(zps), axis=1), data)
    for idx in np.ndindex(*data.shape):
        c = idx[1]
        assert out[idx] == py_quantize(data[idx], scales[c], int(zps[c]), "int8")


def test_quantize_divides_in_float32():
    # float32(x) / float32(s) is exactly 895.5 (rounds to 896) while the double quotient
    # is 895.49998...: TFLite divides in float32.
    x, scale = 2.2292988300323486, 0.0024894459638744593
    assert float(np.float32(x) / np.float32(scale)) == 895.5
    xv = relay.var("x", shape=(1,))
    out = run([xv], relay.qnn.quantize(xv, f32(scale), i32(0), out_dtype="int16"),
              np.array([x], dtype=np.float32))
    assert out.tolist() == [896] == [py_quantize(x, scale, 0, "int16")]


def test_dequantize_per_tensor_and_per_channel():
    rng = np.random.default_rng(3)
    data = rand_int(rng, (4, 3))
    x = relay.var("x", shape=(4, 3), dtype="int8")
    out = run([x], relay.qnn.dequantize(x, f32(0.037), i32(-5)), data)
    s = float(np.float32(0.037))
    assert out.dtype == np.float32
    assert out.tolist() == [[float(np.float32(s * (int(v) + 5))) for v in row] for row in data]
    scales = rand_scale(rng, 4)
    zps = np.array([1, -2, 0, 3], dtype=np.int32)
    out = run([x], relay.qnn.dequantize(x, f32(scales), i32(zps), axis=0), data)
    for (i, j), v in np.ndenumerate(data):
        assert out[i, j] == np.float32(float(scales[i]) * (int(v) - int(zps[i])))


def test_dequantize_int32_multiplies_in_double():
    rng = np.random.default_rng(31)
    data = rng.integers(-(2**30), 2**30, size=64).astype(np.int32)
    x = relay.var("x", shape=(64,), dtype="int32")
    scale = np.float32(0.0123)
    out = run([x], relay.qnn.dequantize(x, f32(scale), i32(17)), data)
    assert out.tolist() == [float(np.float32(float(scale) * (int(v) - 17))) for v in data]


# -- qnn.requantize --------------------------------------------------------------------------------
@pytest.mark.parametrize("out_dtype", ["int8", "uint8", "int16"])
def test_requantize_per_tensor(out_dtype):
    rng = np.random.default_rng(4)
    data = rng.integers(-20000, 20000, size=(3, 5)).astype(np.int32)
    data[0, :2] = [MIN32 + 10, MAX32]
    s_in, s_out = np.float32(0.0007), np.float32(0.05)
    x = relay.var("x", shape=(3, 5), dtype="int32")
    out = run([x], relay.qnn.requantize(x, f32(s_in), i32(3), f32(s_out), i32(-2),
                                        out_dtype=out_dtype), data)
    m, s = py_quantize_multiplier(float(s_in) / float(s_out))
    exp = [[clamp(py_mbqm(wrap32(int(v) - 3), m, s) - 2, out_dtype) for v in row]
           for row in data]
    assert out.dtype == out_dtype and out.tolist() == exp


def test_requantize_per_channel_float64_scale():
    rng = np.random.default_rng(5)
    data = rng.integers(-5000, 5000, size=(2, 2, 4)).astype(np.int32)
    s_in, s_w = np.float32(0.02), rand_scale(rng, 4, 0.001, 0.05)
    s_out = np.float32(0.07)
    product = np.array([float(s_in) * float(w) for w in s_w])  # exact double products
    x = relay.var("x", shape=(2, 2, 4), dtype="int32")
    body = relay.qnn.requantize(x, relay.const(product, "float64"), i32(0), f32(s_out),
                                i32([1, -1, 0, 5]), axis=-1)
    out = run([x], body, data)
    zps = [1, -1, 0, 5]
    for idx in np.ndindex(*data.shape):
        c = idx[2]
        m, s = py_quantize_multiplier(float(s_in) * float(s_w[c]) / float(s_out))
        assert out[idx] == clamp(py_mbqm(int(data[idx]), m, s) + zps[c], "int8")


# -- qnn.conv2d / qnn.dense ------------------------------------------------------------------------
CONV_CASES = [
    # data layout, kernel layout, data shape (N, C, H, W), O, kernel, strides, padding,
    # dilation, groups, per-channel
    ("NCHW", "OIHW", (1, 3, 5, 5), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, False),
    ("NHWC", "HWIO", (2, 2, 6, 5), 3, (3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 1, True),
    ("NHWC", "OHWI", (1, 4, 5, 5), 4, (2, 2), (1, 2), (1, 1, 1, 1), (2, 1), 2, True),
    ("NCHW", "HWOI", (1, 3, 4, 4), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3, True),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv2d_matches_python_loops(case):
    dl, kl, (n, c, h, w), o, (kh, kw), strides, padding, dilation, groups, per_ch = case
    rng = np.random.default_rng(len(dl) + o)
    dshape = tuple({"N": n, "C": c, "H": h, "W": w}[d] for d in dl)
    wshape = tuple({"O": o, "I": c // groups, "H": kh, "W": kw}[d] for d in kl)
    data, weight = rand_int(rng, dshape), rand_int(rng, wshape)
    in_zp = int(rng.integers(-20, 20))
    w_zp = rng.integers(-5, 5, size=o).astype(np.int32) if per_ch else np.int32(0)
    w_scale = rand_scale(rng, o) if per_ch else rand_scale(rng)
    x = relay.var("x", shape=dshape, dtype="int8")
    k = relay.var("k", shape=wshape, dtype="int8")
    call = relay.qnn.conv2d(x, k, i32(in_zp), i32(w_zp), f32(0.05), f32(w_scale),
                            strides=strides, padding=padding, dilation=dilation, groups=groups,
                            data_layout=dl, kernel_layout=kl)
    out = run([x, k], call, data, weight)
    expected = naive_conv2d(data, weight, strides, padding, dilation, groups, dl, kl,
                            in_zp=in_zp, w_zp=w_zp)  # NCHW
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.transpose(expected, ["NCHW".index(d) for d in dl]))


@pytest.mark.parametrize(("data_layout", "out_layout"),
                         [("NCHW8c", ""), ("NCHW", "NCHW4c"), ("NCHW4c", "NHWC")])
def test_conv2d_blocked_layouts(data_layout, out_layout):
    rng = np.random.default_rng(3)
    data, weight = rand_int(rng, (1, 8, 5, 5)), rand_int(rng, (8, 4, 3, 3))
    w_zp = rng.integers(-5, 5, size=8).astype(np.int32)
    x = relay.var("x", shape=in_layout(data, data_layout).shape, dtype="int8")
    k = relay.var("k", shape=weight.shape, dtype="int8")
    call = relay.qnn.conv2d(x, k, i32(3), i32(w_zp), f32(0.05), f32(rand_scale(rng, 8)),
                            padding=1, groups=2, data_layout=data_layout, out_layout=out_layout)
    out = run([x, k], call, in_layout(data, data_layout), weight)
    expected = naive_conv2d(data, weight, padding=1, groups=2, in_zp=3, w_zp=w_zp)  # NCHW
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, in_layout(expected, out_layout or data_layout))


def test_conv2d_padding_acts_as_zero_point():
    # With data equal to the zero point everywhere, every tap, padded or not, adds 0.
    x = relay.var("x", shape=(1, 1, 3, 3), dtype="int8")
    w = relay.const(np.full((1, 1, 3, 3), 5, dtype=np.int8))
    out = run([x], relay.qnn.conv2d(x, w, i32(-7), i32(1), f32(0.1), f32(0.1), padding=2),
              np.full((1, 1, 3, 3), -7, dtype=np.int8))
    assert out.shape == (1, 1, 5, 5) and not out.any()


@pytest.mark.parametrize("per_channel", [False, True])
def test_dense_matches_python_loops(per_channel):
    rng = np.random.default_rng(7)
    data, weight = rand_int(rng, (3, 7)), rand_int(rng, (4, 7))
    w_zp = rng.integers(-3, 3, size=4).astype(np.int32) if per_channel else np.int32(2)
    x = relay.var("x", shape=(3, 7), dtype="int8")
    k = relay.var("k", shape=(4, 7), dtype="int8")
    out = run([x, k], relay.qnn.dense(x, k, i32(-9), i32(w_zp), f32(0.1), f32(0.2)),
              data, weight)
    wz = np.broadcast_to(w_zp, (4,))
    exp = [[sum((int(data[i, j]) + 9) * (int(weight[u, j]) - int(wz[u])) for j in range(7))
            for u in range(4)] for i in range(3)]
    assert out.dtype == np.int32 and out.tolist() == exp


# -- qnn.add / qnn.mul -----------------------------------------------------------------------------
def py_binary(op, a, b, s1, z1, s2, z2, so, zo, dtype):
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.zeros(shape, dtype=np.int64)
    if op == "add":
        ls, (m1, e1), (m2, e2), (mo, eo) = py_add_params(s1, s2, so, dtype)
    else:
        m, e = py_quantize_multiplier(s1 * s2 / so)
    for idx in np.ndindex(*shape):
        x = int(a[bcast_index(idx, a.shape)]) - z1
        y = int(b[bcast_index(idx, b.shape)]) - z2
        if op == "add":
            raw = py_mbqm(x * 2**ls, m1, e1) + py_mbqm(y * 2**ls, m2, e2)
            out[idx] = clamp(py_mbqm(raw, mo, eo) + zo, dtype)
        else:
            out[idx] = clamp(py_mbqm(wrap32(x * y), m, e) + zo, dtype)
    return out


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_binary_ops_match_python_loops(op, dtype):
    rng = np.random.default_rng(11 + len(dtype))
    for trial in range(4):
        a = rand_int(rng, (2, 3, 4), dtype)
        b = rand_int(rng, (3, 1), dtype)
        if dtype == "int16":
            a, b = a // 64, b // 64
        s1, s2, so = (float(s) for s in rand_scale(rng, 3, 0.005, 0.1))
        if op == "mul":
            so = so * 0.05 if trial % 2 else so * 20
        lo, hi = RANGES[dtype]
        z1, z2, zo = (0, 0, 0) if dtype == "int16" else (int(v) for v in
                                                         rng.integers(lo // 2, hi // 2, 3))
        av = relay.var("a", shape=a.shape, dtype=dtype)
        bv = relay.var("b", shape=b.shape, dtype=dtype)
        call = getattr(relay.qnn, op)(av, bv, f32(s1), i32(z1), f32(s2), i32(z2), f32(so),
                                      i32(zo))
        out = run([av, bv], call, a, b)
        exp = py_binary(op, a, b, s1, z1, s2, z2, so, zo, dtype)
        assert out.dtype == dtype and out.shape == exp.shape
        assert out.tolist() == exp.tolist()


def test_mul_product_wraps_like_int32():
    # int16 with zero points: (32767 + 32768)^2 = 2^32 - 2^17 + 1 wraps in int32 C arithmetic.
    a = np.array([32767, -32768, 100], dtype=np.int16)
    av = relay.var("a", shape=(3,), dtype="int16")
    call = relay.qnn.mul(av, av, f32(0.01), i32(-32768), f32(0.01), i32(-32768), f32(0.5),
                         i32(0))
    out = run([av], call, a)
    exp = py_binary("mul", a, a, float(np.float32(0.01)), -32768, float(np.float32(0.01)),
                    -32768, 0.5, 0, "int16")
    assert out.tolist() == exp.tolist()
    assert out[0] < 0  # the wrapped product is negative


def test_binary_ops_saturate():
    a = np.array([127, -128, 100], dtype=np.int8)
    av, bv = relay.var("a", shape=(3,), dtype="int8"), relay.var("b", shape=(3,), dtype="int8")
    add = relay.qnn.add(av, bv, f32(0.1), i32(0), f32(0.1), i32(0), f32(0.1), i32(0))
    assert run([av, bv], add, a, a).tolist() == [127, -128, 127]
    mul = relay.qnn.mul(av, bv, f32(0.1), i32(0), f32(0.1), i32(0), f32(0.1), i32(0))
    assert run([av, bv], mul, a, a).tolist() == [127, 127, 127]


# -- qnn.softmax -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("scale", "beta"), [(0.1, 1.0), (0.5, 1.0), (0.0123, 1.0),
                                             (1 / 16, 0.7), (4.0, 1.0)])
def test_softmax_matches_python_loops(scale, beta):
    rng = np.random.default_rng(int(scale * 1000))
    data = rand_int(rng, (3, 2, 7))
    data[0, 0, :] = 5  # equal values
    data[1, 1, :] = [127, -128, 127, 0, -1, 126, -128]
    x = relay.var("x", shape=data.shape, dtype="int8")
    out = run([x], relay.qnn.softmax(x, f32(scale), i32(-3), f32(1 / 256), i32(-128),
                                     beta=beta), data)
    s = float(np.float32(scale))
    assert out.dtype == np.int8
    for idx in np.ndindex(*data.shape[:-1]):
        row = [int(v) for v in data[idx]]
        assert out[idx].tolist() == py_softmax_row(row, s, beta)
        # Sanity: close to the float softmax.
        z = np.exp(beta * s * (np.array(row) - max(row)))
        approx = np.minimum(256 * z / z.sum(), 255)
        assert np.all(np.abs(out[idx].astype(int) + 128 - approx) <= 1.01)


# -- type and value errors -------------------------------------------------------------------------
def _type_error(build):
    with pytest.raises(IRTypeError) as info:
        build().checked_type  # noqa: B018
    return info.value


def test_per_channel_scale_of_wrong_length():
    x = relay.var("x", shape=(2, 3), dtype="int32")
    err = _type_error(lambda: relay.qnn.requantize(x, f32([0.1, 0.2]), i32(0), f32(0.1),
                                                   i32(0), axis=1))
    assert (err.op, err.argument) == ("qnn.requantize", "input_scale")
    assert "qnn.requantize" in str(err) and "input_scale" in str(err) and "length 3" in str(err)


def test_conv2d_rejects_float_data_and_bad_params():
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    xf = relay.var("x", shape=(1, 3, 5, 5))
    err = _type_error(lambda: relay.qnn.conv2d(xf, w, i32(0), i32(0), f32(0.1), f32(0.1)))
    assert (err.op, err.argument) == ("qnn.conv2d", "data")
    assert "qnn.conv2d" in str(err) and "float32" in str(err)
    x = relay.var("x", shape=(1, 3, 5, 5), dtype="int8")
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32(0), i32(0), f32(0.1),
                                               f32([0.1, 0.2, 0.3])))
    assert (err.op, err.argument) == ("qnn.conv2d", "kernel_scale")
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32([0, 1]), i32(0), f32(0.1), f32(0.1)))
    assert err.argument == "input_zero_point"
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32(0), i32(0), i32(1), f32(0.1)))
    assert err.argument == "input_scale"
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32(0), i32(0), f32(0.1), f32(0.1),
                                               out_dtype="float32"))
    assert err.argument == "out_dtype"


def test_other_type_errors():
    a8 = relay.var("a", shape=(2, 3), dtype="int8")
    b16 = relay.var("b", shape=(3,), dtype="int16")
    q = (f32(0.1), i32(0), f32(0.1), i32(0), f32(0.1), i32(0))
    assert _type_error(lambda: relay.qnn.add(a8, b16, *q)).argument == "rhs"
    err = _type_error(lambda: relay.qnn.mul(a8, a8, f32([0.1, 0.2]), *q[1:]))
    assert (err.op, err.argument) == ("qnn.mul", "lhs_scale")
    xi = relay.var("x", shape=(2, 3), dtype="int8")
    assert _type_error(lambda: relay.qnn.quantize(xi, f32(0.1), i32(0))).argument == "data"
    k = relay.var("k", shape=(4, 3), dtype="int8")
    err = _type_error(lambda: relay.qnn.dense(xi, k, i32(0), i32([1, 2]), f32(0.1), f32(0.1)))
    assert (err.op, err.argument) == ("qnn.dense", "kernel_zero_point")
    err = _type_error(lambda: relay.qnn.softmax(xi, f32(0.1), i32(0), f32(1 / 256),
                                                i32(-128), axis=0))
    assert (err.op, err.argument) == ("qnn.softmax", "axis")
    xf = relay.var("x", shape=(2, 3))
    err = _type_error(lambda: relay.qnn.dequantize(xf, f32(0.1), i32(0)))
    assert (err.op, err.argument) == ("qnn.dequantize", "data")


@pytest.mark.parametrize(("scale", "zp", "argument"), [(1 / 128, -128, "output_scale"),
                                                       (1 / 256, 0, "output_zero_point")])
def test_softmax_rejects_wrong_output_quantisation_at_type_inference(scale, zp, argument):
    x = relay.var("x", shape=(2, 3), dtype="int8")
    func = relay.Function([x], relay.qnn.softmax(x, f32(0.1), i32(0), f32(scale), i32(zp)))
    with pytest.raises(IRTypeError) as info:
        _ = func.checked_type
    assert (info.value.op, info.value.argument) == ("qnn.softmax", argument)
    assert "qnn.softmax" in str(info.value) and argument in str(info.value)


def test_softmax_kernel_checks_quantisation_given_at_run_time():
    x = relay.var("x", shape=(2, 3), dtype="int8")
    out_scale = relay.var("out_scale", shape=(), dtype="float32")
    func = relay.Function([x, out_scale],
                          relay.qnn.softmax(x, f32(0.1), i32(0), out_scale, i32(-128)))
    assert func.checked_type.ret_type == relay.TensorType((2, 3), "int8")
    with pytest.raises(IRTypeError, match="output_scale"):
        relay.evaluate(func, np.zeros((2, 3), dtype=np.int8), np.float32(1 / 128))


def test_non_positive_constant_scale_is_a_type_error():
    x = relay.var("x", shape=(2,))
    func = relay.Function([x], relay.qnn.quantize(x, f32(0.0), i32(0)))
    with pytest.raises(IRTypeError, match="output_scale"):
        _ = func.checked_type


def test_non_positive_scale_given_at_run_time_is_rejected():
    x = relay.var("x", shape=(2,))
    scale = relay.var("scale", shape=(), dtype="float32")
    func = relay.Function([x, scale], relay.qnn.quantize(x, scale, i32(0)))
    with pytest.raises(IRTypeError, match="output_scale"):
        relay.evaluate(func, np.zeros(2, dtype=np.float32), np.float32(-1.0))


def test_fusion_patterns():
    from passhost.relay.op import OpPattern, get_op

    expected = {
        "qnn.quantize": OpPattern.ELEMWISE, "qnn.dequantize": OpPattern.ELEMWISE,
        "qnn.requantize": OpPattern.ELEMWISE, "qnn.add": OpPattern.BROADCAST,
        "qnn.mul": OpPattern.BROADCAST, "qnn.conv2d": OpPattern.OUT_ELEMWISE_FUSABLE,
        "qnn.dense": OpPattern.OUT_ELEMWISE_FUSABLE, "qnn.softmax": OpPattern.OPAQUE,
    }
    assert {name: get_op(name).pattern for name in expected} == expected
    assert all(getattr(relay.qnn, name[4:]) is get_op(name) for name in expected)
