"""TFLite's fixed-point primitives (passhost.relay.op.fixed_point): QuantizeMultiplier,
SaturatingRoundingDoublingHighMul, RoundingDivideByPOT, MultiplyByQuantizedMultiplier,
activation ranges, effective scales and the softmax primitives, against the independent
Python oracles of tests/qnn_oracles.py."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passhost.relay.op import fixed_point as fp
from qnn_oracles import (
    MAX32,
    MIN32,
    py_add_params,
    py_exp_on_negative_values,
    py_mbqm,
    py_one_over_one_plus_x,
    py_quantize_multiplier,
    py_rdbpot,
    py_softmax_params,
    py_srdhm,
    round_away,
)

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
