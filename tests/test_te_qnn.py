"""The elementwise quantised operators' TE computes equal their reference kernels bit for bit.

Hypothesis draws shapes, dtypes, attributes, scales (constants, and for quantize and
dequantize run-time tensors, per channel too) and zero points over the whole int32 range,
so saturation and int32 wrap-around are exercised as well as ordinary values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from passhost import relay
from passhost.ir.types import ANY_FLOAT_DTYPES
from te_harness import loops_of, reference, run_as_loops

EXAMPLES = settings(max_examples=40, deadline=None)
SHAPE = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)
INT32 = st.integers(-(2 ** 31), 2 ** 31 - 1)
#: Zero points: mostly ordinary, sometimes anywhere in int32 (saturating, wrapping).
ZERO_POINT = st.one_of(st.integers(-300, 300), INT32)
#: Positive scales, from tiny (every value saturates) to large (every value rounds to 0).
SCALE = st.floats(1e-30, 1e30)
MODERATE_SCALE = st.floats(1e-3, 10.0)


def _check(func: relay.Function, inputs: list[np.ndarray]) -> None:
    with np.errstate(all="ignore"):
        got = run_as_loops(func, inputs)
        want = reference(func, inputs)
    for g, w in zip(got, want):
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


@st.composite
def _array(draw: st.DrawFn, dtype: str, shape: tuple[int, ...], **kw: object) -> np.ndarray:
    if dtype == "bfloat16":
        return draw(_array("float32", shape, **kw)).astype("bfloat16")
    elements = st.floats(**kw) if kw else None
    return draw(hnp.arrays(dtype, shape, elements=elements))


@st.composite
def _params(draw: st.DrawFn, shape: tuple[int, ...], scales: st.SearchStrategy,
            ) -> tuple[int, np.ndarray, np.ndarray]:
    """An axis and a scale and zero point for it: per tensor (0-d or 1-element) or per
    channel."""
    axis = draw(st.integers(-len(shape), len(shape) - 1)) if shape else -1
    count = draw(st.sampled_from([None, 1] + ([shape[axis]] if shape else [])))
    size = () if count is None else (count,)
    scale = np.array(draw(st.lists(scales, min_size=max(count or 1, 1),
                                   max_size=max(count or 1, 1))),
                     draw(st.sampled_from(["float32", "float64"]))).reshape(size)
    zp = np.array(draw(st.lists(ZERO_POINT, min_size=max(count or 1, 1),
                                max_size=max(count or 1, 1))), "int32").reshape(size)
    return axis, scale, zp


@EXAMPLES
@given(st.data(), st.sampled_from(ANY_FLOAT_DTYPES), SHAPE,
       st.sampled_from(["int8", "uint8", "int16", "uint16", "int32"]),
       st.sampled_from(["away", "even"]), st.booleans())
def test_quantize(data, dtype, shape, out_dtype, rounding, constant):
    axis, scale, zp = data.draw(_params(shape, SCALE.filter(lambda s: np.float32(s) > 0)))
    x = relay.var("x", shape=shape, dtype=dtype)
    params = [x]
    if constant:
        s, z = relay.const(scale), relay.const(zp)
    else:
        s = relay.var("s", shape=scale.shape, dtype=scale.dtype.name)
        z = relay.var("z", shape=zp.shape, dtype="int32")
        params += [s, z]
    func = relay.Function(params, relay.qnn.quantize(x, s, z, axis=axis, out_dtype=out_dtype,
                                                     rounding=rounding))
    inputs = [data.draw(_array(dtype, shape))] + ([] if constant else [scale, zp])
    _check(func, inputs)


@pytest.mark.parametrize("rounding", ["away", "even"])
def test_quantize_rounds_ties_as_asked(rounding):
    x = relay.var("x", shape=(8,))
    func = relay.Function([x], relay.qnn.quantize(
        x, relay.const(np.float32(0.5)), relay.const(np.int32(0)), rounding=rounding))
    _check(func, [np.array([-2.25, -1.25, -0.25, 0.25, 0.75, 1.25, 2.5, 63.75], "float32")])


@pytest.mark.parametrize("zero_point", [0, -5, 2 ** 31 - 1, -(2 ** 31)])
def test_quantize_of_special_values(zero_point):
    x = relay.var("x", shape=(9,))
    func = relay.Function([x], relay.qnn.quantize(
        x, relay.const(np.float32(0.01)), relay.const(np.int32(zero_point)), out_dtype="int32"))
    _check(func, [np.array([np.nan, np.inf, -np.inf, -0.0, 1e30, -1e30, 3e38, -21474836.0,
                            21474836.5], "float32")])


@EXAMPLES
@given(st.data(), st.sampled_from(["int8", "uint8", "int16", "uint16", "int32"]), SHAPE)
def test_dequantize(data, dtype, shape):
    axis, scale, zp = data.draw(_params(shape, SCALE))
    x = relay.var("x", shape=shape, dtype=dtype)
    s = relay.var("s", shape=scale.shape, dtype=scale.dtype.name)
    z = relay.var("z", shape=zp.shape, dtype="int32")
    func = relay.Function([x, s, z], relay.qnn.dequantize(x, s, z, axis=axis))
    _check(func, [data.draw(_array(dtype, shape)), scale, zp])


@EXAMPLES
@given(st.data(), st.sampled_from(["int8", "uint8", "int16", "int32"]), SHAPE,
       st.sampled_from(["int8", "uint8", "int16", "int32"]), MODERATE_SCALE, MODERATE_SCALE,
       ZERO_POINT, ZERO_POINT)
def test_requantize(data, dtype, shape, out_dtype, in_scale, out_scale, in_zp, out_zp):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.qnn.requantize(x, relay.const(np.float32(in_scale)), relay.const(np.int32(in_zp)),
                             relay.const(np.float32(out_scale)),
                             relay.const(np.int32(out_zp)), out_dtype=out_dtype)
    func = relay.Function([x], y)
    assert loops_of(func) is not None
    _check(func, [data.draw(_array(dtype, shape))])


@EXAMPLES
@given(st.data(), st.sampled_from(["qnn.add", "qnn.mul"]),
       st.sampled_from(["int8", "uint8", "int16"]),
       hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       st.lists(MODERATE_SCALE, min_size=3, max_size=3),
       st.lists(ZERO_POINT, min_size=3, max_size=3))
def test_add_and_mul(data, name, dtype, shapes, scales, zps):
    sa, sb = shapes.input_shapes
    a = relay.var("a", shape=sa, dtype=dtype)
    b = relay.var("b", shape=sb, dtype=dtype)
    op = relay.qnn.add if name == "qnn.add" else relay.qnn.mul
    (s1, s2, so), (z1, z2, zo) = ([relay.const(np.float32(s)) for s in scales],
                                  [relay.const(np.int32(z)) for z in zps])
    func = relay.Function([a, b], op(a, b, s1, z1, s2, z2, so, zo))
    assert loops_of(func) is not None
    _check(func, [data.draw(_array(dtype, sa)), data.draw(_array(dtype, sb))])


_EDGES = np.array([-(2 ** 31), -(2 ** 31) + 1, -7, -5, -3, -2, -1, 0, 1, 2, 3, 5, 7,
                   2 ** 31 - 1], "int32")


@pytest.mark.parametrize("ratio", [0.5, 0.25, 0.125, 3.0, 2.0 ** -30])
@pytest.mark.parametrize("zero_point", [0, -3, 2 ** 31 - 1, -(2 ** 31)])
def test_requantize_ties_and_wraparound(ratio, zero_point):
    # Power-of-two ratios put the fixed-point roundings on exact ties; extreme zero points and
    # data wrap around int32.
    x = relay.var("x", shape=_EDGES.shape, dtype="int32")
    func = relay.Function([x], relay.qnn.requantize(
        x, relay.const(np.float32(ratio)), relay.const(np.int32(zero_point)),
        relay.const(np.float32(1.0)), relay.const(np.int32(-zero_point // 2)),
        out_dtype="int32"))
    _check(func, [_EDGES])


@pytest.mark.parametrize("op", [relay.qnn.add, relay.qnn.mul])
@pytest.mark.parametrize("zero_points", [(0, 0, 0), (-128, 127, 2 ** 31 - 1),
                                         (2 ** 31 - 1, -(2 ** 31), -(2 ** 31))])
def test_add_and_mul_wrap_around(op, zero_points):
    a = relay.var("a", shape=(4, 1), dtype="int8")
    b = relay.var("b", shape=(4,), dtype="int8")
    z1, z2, zo = (relay.const(np.int32(z)) for z in zero_points)
    s1, s2, so = (relay.const(np.float32(s)) for s in (0.5, 0.25, 0.125))
    func = relay.Function([a, b], op(a, b, s1, z1, s2, z2, so, zo))
    edges = np.array([-128, -1, 0, 127], "int8")
    _check(func, [edges.reshape(4, 1), edges[::-1].copy()])


def test_scales_unknown_when_the_loops_are_built_keep_the_kernels():
    # Requantize, add and mul derive their integer multipliers from constant scalar scales.
    x = relay.var("x", shape=(2, 3), dtype="int32")
    per_channel = relay.qnn.requantize(x, relay.const(np.array([0.5, 0.25, 2.0], "float32")),
                                       relay.const(np.int32(0)), relay.const(np.float32(0.1)),
                                       relay.const(np.int32(3)), axis=1)
    assert loops_of(relay.Function([x], per_channel)) is None
    a = relay.var("a", shape=(3,), dtype="int8")
    s = relay.var("s", shape=(), dtype="float32")
    z = relay.const(np.int32(0))
    assert loops_of(relay.Function([a, s], relay.qnn.add(a, a, s, z, s, z, s, z))) is None
