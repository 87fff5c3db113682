"""The elementwise and broadcast operators' TE computes equal their NumPy reference kernels.

Hypothesis draws shapes (NumPy-broadcast together), dtypes, attributes and values over each
dtype's whole range: NaN, infinities, signed zeros, subnormals and integer extremes among
them. Each example lowers one function applying every operator of a family to the same
inputs (one loop nest per output), runs the loops and compares every output with the
reference kernels, exactly for integers and bools, to the dtype's rounding for floats (and
with the reference's sign where both give zero).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from passhost import relay
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES
from passhost.relay.op import get_op
from passhost.tir.stmt import Allocate
from passhost.tir.visitor import post_order
from te_harness import loops_of, reference, run_as_loops

NUMERIC = ANY_FLOAT_DTYPES + INT_DTYPES
EVERY_DTYPE = (*NUMERIC, "bool")
EXAMPLES = settings(max_examples=25, deadline=None)
#: The relative error a float result may have: for float16 and bfloat16 one rounding of the
#: narrow dtype (the float32 intermediate may fall on either side of a rounding boundary).
RTOL = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
#: The operators whose zero results may differ in sign: of -0.0 and 0.0, NumPy's maximum and
#: minimum give the first for float16 and the second for float32 (IEEE leaves it open).
ZERO_TIES = ("maximum", "minimum", "nn.relu")

UNARY_FLOAT = ("sqrt", "rsqrt", "exp", "erf", "sigmoid", "tanh", "log", "floor", "ceil",
               "round", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
               "acosh", "atanh", "nn.softplus", "nn.silu", "isnan", "isinf")
UNARY_NUMERIC = ("negative", "abs", "sign", "nn.relu")
ARITHMETIC = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "mod",
              "floor_mod")
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
SHAPE = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)


# -- running and comparing --------------------------------------------------------------------
def _function(types: Sequence[tuple[tuple[int, ...], str]],
              outputs: Callable[..., list[relay.Expr]]) -> relay.Function:
    """The function of parameters of ``types`` returning the tuple ``outputs(*params)``."""
    params = [relay.var(f"x{i}", shape=shape, dtype=dtype)
              for i, (shape, dtype) in enumerate(types)]
    return relay.Function(params, relay.Tuple(outputs(*params)))


def _check(func: relay.Function, inputs: Sequence[np.ndarray], labels: Sequence[str]) -> None:
    """The loops give every output the reference gives (``labels`` name them)."""
    with np.errstate(all="ignore"):
        got = run_as_loops(func, inputs)
        want = reference(func, inputs)
    assert len(got) == len(want) == len(labels)
    for label, g, w in zip(labels, got, want):
        assert (g.dtype, g.shape) == (w.dtype, w.shape), label
        if g.dtype.name in ANY_FLOAT_DTYPES:
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            np.testing.assert_allclose(g64, w64, rtol=RTOL.get(g.dtype.name, 1e-5), atol=1e-6,
                                       equal_nan=True, err_msg=label)
            if label in ZERO_TIES:
                continue
            zeros = (g64 == 0) & (w64 == 0)
            np.testing.assert_array_equal(np.signbit(g64[zeros]), np.signbit(w64[zeros]),
                                          err_msg=f"{label}: the signs of zeros")
        else:
            np.testing.assert_array_equal(g, w, err_msg=label)


@st.composite
def _values(draw: st.DrawFn, dtype: str, shape: tuple[int, ...],
            elements: st.SearchStrategy | None = None) -> np.ndarray:
    """An array of ``dtype``: by default over the dtype's whole range (floats with NaN,
    infinities, signed zeros and subnormals)."""
    if dtype == "bfloat16":
        return draw(_values("float32", shape, elements)).astype("bfloat16")
    return draw(hnp.arrays(dtype, shape, elements=elements))


def _broadcast_shapes(count: int) -> st.SearchStrategy:
    return hnp.mutually_broadcastable_shapes(num_shapes=count, max_dims=3, max_side=4)


# -- unary operators --------------------------------------------------------------------------
@EXAMPLES
@given(st.data(), st.sampled_from(ANY_FLOAT_DTYPES), SHAPE)
def test_unary_float_operators(data, dtype, shape):
    func = _function([(shape, dtype)], lambda x: [get_op(n)(x) for n in UNARY_FLOAT])
    _check(func, [data.draw(_values(dtype, shape))], UNARY_FLOAT)


@EXAMPLES
@given(st.data(), st.sampled_from(NUMERIC), SHAPE)
def test_unary_numeric_operators(data, dtype, shape):
    func = _function([(shape, dtype)], lambda x: [get_op(n)(x) for n in UNARY_NUMERIC])
    _check(func, [data.draw(_values(dtype, shape))], UNARY_NUMERIC)


def test_relu_of_bools_is_the_identity():
    func = _function([((5,), "bool")], lambda x: [relay.nn.relu(x)])
    _check(func, [np.array([True, False, True, True, False])], ["nn.relu"])


@EXAMPLES
@given(st.data(), st.sampled_from(NUMERIC), SHAPE,
       st.lists(st.floats(allow_nan=False), min_size=2, max_size=2).map(sorted))
def test_clip(data, dtype, shape, bounds):
    func = _function([(shape, dtype)], lambda x: [relay.clip(x, *bounds)])
    _check(func, [data.draw(_values(dtype, shape))], [f"clip{bounds}"])


@pytest.mark.parametrize("dtype", ANY_FLOAT_DTYPES)
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-1.0, -0.0), (-np.inf, 0.0), (1e10, np.inf)])
def test_clip_at_its_bounds(dtype, bounds):
    x = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.0, -1.0], dtype)
    func = _function([(x.shape, dtype)], lambda v: [relay.clip(v, *bounds)])
    _check(func, [x], [f"clip{bounds}"])


@EXAMPLES
@given(st.data(), st.sampled_from(ANY_FLOAT_DTYPES), SHAPE,
       st.floats(-1e40, 1e40, allow_nan=False))
def test_leaky_relu(data, dtype, shape, alpha):
    func = _function([(shape, dtype)], lambda x: [relay.nn.leaky_relu(x, alpha=alpha)])
    _check(func, [data.draw(_values(dtype, shape))], [f"leaky_relu({alpha})"])


# -- binary operators -------------------------------------------------------------------------
@EXAMPLES
@given(st.data(), st.sampled_from(NUMERIC), _broadcast_shapes(2))
def test_arithmetic(data, dtype, shapes):
    names = ARITHMETIC + (("power",) if dtype in ANY_FLOAT_DTYPES else ())
    a, b = (data.draw(_values(dtype, s)) for s in shapes.input_shapes)
    func = _function([(a.shape, dtype), (b.shape, dtype)],
                     lambda x, y: [get_op(n)(x, y) for n in names])
    _check(func, [a, b], names)


def test_add_multiply_maximum_minimum_of_bools():
    names = ("add", "multiply", "maximum", "minimum", *COMPARISONS)
    a = np.array([[False], [True]])
    b = np.array([False, True])
    func = _function([((2, 1), "bool"), ((2,), "bool")],
                     lambda x, y: [get_op(n)(x, y) for n in names])
    _check(func, [a, b], names)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_quotients_and_remainders_at_the_edges(dtype):
    info = np.iinfo(dtype)
    edges = sorted(v for v in {int(info.min), int(info.min) + 1, -7, -1, 0, 1, 2, 7,
                               int(info.max)} if info.min <= v <= info.max)
    a = np.array(edges, dtype).reshape(-1, 1)
    b = np.array(edges, dtype)
    names = ("divide", "mod", "floor_mod")
    func = _function([(a.shape, dtype), (b.shape, dtype)],
                     lambda x, y: [get_op(n)(x, y) for n in names])
    _check(func, [a, b], names)


@EXAMPLES
@given(st.data(), st.sampled_from(EVERY_DTYPE), _broadcast_shapes(2))
def test_comparisons(data, dtype, shapes):
    a, b = (data.draw(_values(dtype, s)) for s in shapes.input_shapes)
    func = _function([(a.shape, dtype), (b.shape, dtype)],
                     lambda x, y: [get_op(n)(x, y) for n in COMPARISONS])
    _check(func, [a, b], COMPARISONS)


@EXAMPLES
@given(st.data(), st.sampled_from(EVERY_DTYPE), _broadcast_shapes(3))
def test_where(data, dtype, shapes):
    c, x, y = shapes.input_shapes
    inputs = [data.draw(_values("bool", c)), data.draw(_values(dtype, x)),
              data.draw(_values(dtype, y))]
    func = _function([(c, "bool"), (x, dtype), (y, dtype)], lambda *p: [relay.where(*p)])
    _check(func, inputs, ["where"])


# -- logic and bits ---------------------------------------------------------------------------
@EXAMPLES
@given(st.data(), _broadcast_shapes(2))
def test_logic(data, shapes):
    names = ("logical_and", "logical_or", "logical_xor")
    a, b = (data.draw(_values("bool", s)) for s in shapes.input_shapes)
    func = _function([(a.shape, "bool"), (b.shape, "bool")],
                     lambda x, y: [relay.logical_not(x)] + [get_op(n)(x, y) for n in names])
    _check(func, [a, b], ("logical_not", *names))


def _shift_amounts(dtype: str) -> st.SearchStrategy:
    """Shift amounts: mostly around the valid range [0, bits), sometimes anything."""
    info = np.iinfo(dtype)
    near = st.integers(max(int(info.min), -3), min(int(info.max), info.bits + 3))
    return st.one_of(near, st.integers(int(info.min), int(info.max)))


@EXAMPLES
@given(st.data(), st.sampled_from(INT_DTYPES), _broadcast_shapes(2))
def test_bitwise(data, dtype, shapes):
    names = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
    sa, sb = shapes.input_shapes
    a = data.draw(_values(dtype, sa))
    b = data.draw(_values(dtype, sb, elements=_shift_amounts(dtype)))
    func = _function([(sa, dtype), (sb, dtype)],
                     lambda x, y: [relay.bitwise_not(x)] + [get_op(n)(x, y) for n in names])
    _check(func, [a, b], ("bitwise_not", *names))


# -- conversions ------------------------------------------------------------------------------
def _in_range_floats(source: str, target: str, shape: tuple[int, ...]) -> st.SearchStrategy:
    """``source`` floats that truncate into the integer dtype ``target`` (the reference leaves
    the others unspecified)."""
    info = np.iinfo(target)
    finite = st.floats(float(info.min), float(info.max) * 0.99, allow_nan=False)

    def into_range(values: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            narrow = values.astype(source)
        wide = narrow.astype(np.float64)
        return np.where((wide > info.min - 1) & (wide < info.max * 0.99), narrow, 0)

    return hnp.arrays(np.float64, shape, elements=finite).map(into_range)


@EXAMPLES
@given(st.data(), st.sampled_from(EVERY_DTYPE), st.sampled_from(EVERY_DTYPE), SHAPE)
def test_cast(data, source, target, shape):
    if source in ANY_FLOAT_DTYPES and target in INT_DTYPES:
        x = data.draw(_in_range_floats(source, target, shape))
    else:
        x = data.draw(_values(source, shape))
    func = _function([(shape, source)], lambda v: [relay.cast(v, target)])
    _check(func, [x], [f"cast {source} -> {target}"])


_SAME_WIDTH = [(a, b) for a in (*INT_DTYPES, "bool") for b in INT_DTYPES
               if np.dtype(a).itemsize == np.dtype(b).itemsize]


@EXAMPLES
@given(st.data(), st.sampled_from(_SAME_WIDTH), SHAPE)
def test_bitcast_between_integers(data, pair, shape):
    source, target = pair
    func = _function([(shape, source)], lambda v: [relay.bitcast(v, dtype=target)])
    _check(func, [data.draw(_values(source, shape))], [f"bitcast {source} -> {target}"])


@pytest.mark.parametrize(("source", "target", "op"), [
    ("float32", "int32", "bitcast"), ("int16", "float16", "bitcast"),
    ("uint8", "bool", "bitcast"), ("int32", None, "power"), ("uint8", None, "power")])
def test_uncovered_calls_fall_back_to_the_kernels(source, target, op):
    # Floats' bits need a reinterpreting intrinsic; a byte read as a bool may be no bool;
    # integer powers wrap through repeated products: these calls keep their kernels.
    if op == "bitcast":
        func = _function([((3,), source)], lambda v: [relay.bitcast(v, dtype=target)])
    else:
        func = _function([((3,), source)] * 2, lambda x, y: [relay.power(x, y)])
    assert loops_of(func) is None


# -- along an axis, and fused --------------------------------------------------------------
@EXAMPLES
@given(st.data(), st.sampled_from(EVERY_DTYPE),
       hnp.array_shapes(min_dims=1, max_dims=4, max_side=3))
def test_bias_add(data, dtype, shape):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    bias_shape = (shape[axis],)
    func = _function([(shape, dtype), (bias_shape, dtype)],
                     lambda x, b: [relay.nn.bias_add(x, b, axis=axis)])
    _check(func, [data.draw(_values(dtype, shape)), data.draw(_values(dtype, bias_shape))],
           [f"bias_add(axis={axis})"])


def test_an_elementwise_chain_is_one_loop_nest_with_no_buffer():
    x = relay.var("x", shape=(2, 3, 4), dtype="float16")
    b = relay.var("b", shape=(3,), dtype="float16")
    y = relay.nn.bias_add(relay.multiply(x, relay.sigmoid(x)), b, axis=1)
    func = relay.Function([x, b], relay.clip(relay.nn.leaky_relu(y, alpha=0.1), -1.0, 2.0))
    prim = loops_of(func)
    assert prim is not None
    assert not any(isinstance(n, Allocate) for n in post_order([prim.body]))
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-4, 4, (2, 3, 4)).astype("float16"),
              rng.uniform(-1, 1, 3).astype("float16")]
    _check(relay.Function(func.params, relay.Tuple([func.body])), inputs, ["chain"])


def test_a_bfloat16_scalar_constant_is_converted_from_float32():
    x = relay.var("x", shape=(3,), dtype="bfloat16")
    two_and_a_half = relay.const(np.array(2.5, "bfloat16"))
    func = relay.Function([x], relay.Tuple([relay.multiply(x, two_and_a_half)]))
    _check(func, [np.array([1.0, -3.0, np.nan], "bfloat16")], ["multiply"])
