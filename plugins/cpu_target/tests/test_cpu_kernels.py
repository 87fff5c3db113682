"""The NumPy elementwise, matrix, softmax and data-movement kernels (native kernels off)
agree with each operator's reference kernel, including when the output is an input
(in-place work)."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import assert_same, run_op, uses_fast_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytestmark = pytest.mark.usefixtures("numpy_kernels")

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

FLOATS = st.sampled_from(["float32", "float64"])
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide", "power"]
UNARY = ["nn.relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "nn.silu", "negative",
         "abs"]


def _array(draw, shape, dtype, lo=-10.0, hi=10.0):
    if np.dtype(dtype).kind == "f":
        elements = st.floats(lo, hi, width=np.dtype(dtype).itemsize * 8)
    else:
        elements = st.integers(-100, 100)
    return draw(hnp.arrays(dtype, shape, elements=elements))


@st.composite
def broadcast_pair(draw, dtype):
    """Two arrays broadcasting together; the first has the result's shape."""
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    other = tuple(1 if draw(st.booleans()) else d for d in shape)
    other = other[draw(st.integers(0, len(other) - 1)):]
    return _array(draw, shape, dtype), _array(draw, other, dtype)


@pytest.mark.parametrize("name", BINARY)
@SETTINGS
@given(data=st.data(), dtype=FLOATS, in_place=st.booleans())
def test_binary_float_kernels(name, data, dtype, in_place):
    a, b = data.draw(broadcast_pair(dtype))
    got, expected, source = run_op(name, None, [a, b], alias=0 if in_place else None)
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(["int8", "int32", "int64"]))
def test_binary_int_kernels_wrap_like_the_reference(name, data, dtype):
    a, b = data.draw(broadcast_pair(dtype))
    got, expected, source = run_op(name, None, [a, b])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum"])
def test_an_output_may_be_the_second_input(name):
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    b = np.linspace(3, -1, 12, dtype=np.float32).reshape(3, 4)
    got, expected, _ = run_op(name, None, [a, b], alias=1)
    assert_same(got, expected)


@pytest.mark.parametrize("name", UNARY)
@SETTINGS
@given(data=st.data(), dtype=FLOATS, in_place=st.booleans())
def test_unary_float_kernels(name, data, dtype, in_place):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, max_side=5))
    x = _array(data.draw, shape, dtype, -100.0, 100.0)
    got, expected, source = run_op(name, None, [x], alias=0 if in_place else None)
    assert uses_fast_kernel(source)
    assert_same(got, expected)


def test_sigmoid_keeps_tiny_values_of_very_negative_inputs():
    x = np.array([-80.0, -30.0, 0.0, 30.0], dtype=np.float32)
    got, expected, _ = run_op("sigmoid", None, [x], alias=0)
    assert got[0][0] > 0
    assert_same(got, expected, rtol=1e-6, atol=0)


@SETTINGS
@given(data=st.data(), dtype=FLOATS, in_place=st.booleans(),
       bounds=st.tuples(st.floats(-5, 5), st.floats(0, 5)))
def test_clip(data, dtype, in_place, bounds):
    lo, width = bounds
    x = _array(data.draw, data.draw(hnp.array_shapes(max_dims=3, max_side=5)), dtype)
    got, expected, source = run_op("clip", {"a_min": lo, "a_max": lo + width}, [x],
                                   alias=0 if in_place else None)
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@SETTINGS
@given(data=st.data(), source_dtype=st.sampled_from(["float32", "float64", "int32"]),
       dtype=st.sampled_from(["float32", "int8", "int64", "float16"]))
def test_cast(data, source_dtype, dtype):
    x = _array(data.draw, data.draw(hnp.array_shapes(max_dims=3, max_side=5)), source_dtype,
               -100.0, 100.0)
    got, expected, source = run_op("cast", {"dtype": dtype}, [x])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


@SETTINGS
@given(data=st.data(), in_place=st.booleans())
def test_bias_add_along_any_axis(data, in_place):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = _array(data.draw, shape, "float32")
    bias = _array(data.draw, (shape[axis],), "float32")
    got, expected, source = run_op("nn.bias_add", {"axis": axis}, [x, bias],
                                   alias=0 if in_place else None)
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@SETTINGS
@given(data=st.data(), dtype=FLOATS)
def test_dense(data, dtype):
    lead = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
    k, units = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    x = _array(data.draw, (*lead, k), dtype, -1, 1)
    w = _array(data.draw, (units, k), dtype, -1, 1)
    got, expected, source = run_op("nn.dense", {"units": units}, [x, w])
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@SETTINGS
@given(data=st.data(), dtype=FLOATS, batch=st.sampled_from([(), (3,), (2, 1)]),
       other_batch=st.sampled_from([(), (1,), (2, 3)]))
def test_matmul_broadcasts_batch_axes(data, dtype, batch, other_batch):
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    a = _array(data.draw, (*batch, m, k), dtype, -1, 1)
    b = _array(data.draw, (*other_batch, k, n), dtype, -1, 1)
    got, expected, source = run_op("matmul", None, [a, b])
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@SETTINGS
@given(data=st.data(), transpose_a=st.booleans(), transpose_b=st.booleans(),
       batches=st.sampled_from([(2, 2), (1, 3), (3, 1)]))
def test_batch_matmul(data, transpose_a, transpose_b, batches):
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    x = _array(data.draw, (batches[0], k, m) if transpose_a else (batches[0], m, k),
               "float32", -1, 1)
    y = _array(data.draw, (batches[1], n, k) if transpose_b else (batches[1], k, n),
               "float32", -1, 1)
    attrs = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    got, expected, source = run_op("nn.batch_matmul", attrs, [x, y])
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@SETTINGS
@given(data=st.data(), dtype=FLOATS)
def test_softmax(data, dtype):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=5))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = _array(data.draw, shape, dtype, -50, 50)
    got, expected, source = run_op("nn.softmax", {"axis": axis}, [x])
    assert uses_fast_kernel(source)
    assert_same(got, expected)


@SETTINGS
@given(data=st.data())
def test_reshaping_kernels(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4))
    x = _array(data.draw, shape, "int32")
    size = int(np.prod(shape))
    cases = [("reshape", {"newshape": (size,)}),
             ("reshape", {"newshape": (-1, shape[-1])}),
             ("nn.batch_flatten", None),
             ("squeeze", None),
             ("expand_dims", {"axis": data.draw(st.integers(-len(shape) - 1, len(shape))),
                              "num_newaxis": data.draw(st.integers(0, 2))})]
    for name, attrs in cases:
        got, expected, source = run_op(name, attrs, [x])
        assert uses_fast_kernel(source), name
        assert_same(got, expected, rtol=0, atol=0)


def test_expand_dims_by_nothing_in_place():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got, expected, _ = run_op("expand_dims", {"axis": 1, "num_newaxis": 0}, [x], alias=0)
    assert_same(got, expected, rtol=0, atol=0)


@SETTINGS
@given(data=st.data(), reverse=st.booleans())
def test_transpose(data, reverse):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4))
    perm = None if reverse else data.draw(st.permutations(range(len(shape))))
    if perm is not None:
        perm = [p - len(shape) if data.draw(st.booleans()) else p for p in perm]
    x = _array(data.draw, shape, "float32")
    got, expected, source = run_op("transpose", {"axes": perm}, [x])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


def test_layout_transform():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    attrs = {"src_layout": "NCHW", "dst_layout": "NHWC"}
    got, expected, source = run_op("layout_transform", attrs, [x])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


def test_split_layout_transform_takes_the_reference_kernel():
    x = np.arange(2 * 32 * 3 * 2, dtype=np.float32).reshape(2, 32, 3, 2)
    attrs = {"src_layout": "NCHW", "dst_layout": "NHWC16c"}
    got, expected, source = run_op("layout_transform", attrs, [x])
    assert not uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)
    assert got[0].shape == (2, 3, 2, 2, 16) and got[0][1, 2, 1, 1, 5] == x[1, 21, 2, 1]


@SETTINGS
@given(data=st.data(), count=st.integers(1, 4))
def test_concatenate(data, count):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    parts = []
    for _ in range(count):
        part = list(shape)
        part[axis] = data.draw(st.integers(1, 3))
        parts.append(_array(data.draw, tuple(part), "float32"))
    got, expected, source = run_op("concatenate", {"axis": axis}, [tuple(parts)])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
@SETTINGS
@given(data=st.data(), dtype=FLOATS, keepdims=st.booleans(), exclude=st.booleans())
def test_reductions(name, data, dtype, keepdims, exclude):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4))
    axis = data.draw(st.none() | st.lists(st.integers(-len(shape), len(shape) - 1),
                                          max_size=len(shape), unique_by=lambda a: a % len(
                                              shape)).map(tuple))
    x = _array(data.draw, shape, dtype)
    attrs = {"axis": axis, "keepdims": keepdims, "exclude": exclude}
    got, expected, source = run_op(name, attrs, [x])
    assert uses_fast_kernel(source)
    assert_same(got, expected)


def test_integer_max_is_fast_and_integer_mean_falls_back():
    x = np.array([[3, -7, 2], [5, 1, -1]], "int32")
    got, expected, source = run_op("max", {"axis": 1}, [x])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)
    got, expected, source = run_op("mean", {"axis": 1}, [x])
    assert not uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)
