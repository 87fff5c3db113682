"""The NumPy convolution and pooling kernels (native kernels off) agree with the reference
kernels over layouts, groups, strides, padding, dilation, ceil_mode and count_include_pad."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import assert_same, run_op, uses_fast_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passhost.relay.op.registry import get_op

pytestmark = pytest.mark.usefixtures("numpy_kernels")

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
RNG = np.random.default_rng(7)


def _data(shape, dtype="float32"):
    return RNG.uniform(-1, 1, shape).astype(dtype)


def _in_layout(n, c, h, w, layout):
    return (n, c, h, w) if layout == "NCHW" else (n, h, w, c)


def _weight_shape(o, i, kh, kw, layout):
    sizes = {"O": o, "I": i, "H": kh, "W": kw}
    return tuple(sizes[d] for d in layout)


@st.composite
def conv_case(draw):
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kernel_layout = draw(st.sampled_from(["OIHW", "HWIO", "OHWI", "HWOI"]))
    groups = draw(st.integers(1, 3))
    depthwise = draw(st.booleans())
    c = groups * (1 if depthwise else draw(st.integers(1, 3)))
    o = c if depthwise else groups * draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    attrs = {"strides": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
             "dilation": (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
             "padding": tuple(draw(st.integers(0, 2)) for _ in range(4)),
             "groups": groups, "data_layout": layout, "kernel_layout": kernel_layout}
    (dh, dw) = attrs["dilation"]
    h = draw(st.integers(max(1, dh * (kh - 1) + 1 - attrs["padding"][0] - attrs["padding"][2]),
                         8))
    w = draw(st.integers(max(1, dw * (kw - 1) + 1 - attrs["padding"][1] - attrs["padding"][3]),
                         8))
    n = draw(st.integers(1, 2))
    data = _data(_in_layout(n, c, h, w, layout))
    weight = _data(_weight_shape(o, c // groups, kh, kw, kernel_layout))
    return attrs, data, weight


@SETTINGS
@given(case=conv_case())
def test_conv2d(case):
    attrs, data, weight = case
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight])
    assert uses_fast_kernel(source)
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kernel_layout", ["OIHW", "HWIO", "OHWI"])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_1x1_stride_1_multiplies_the_data_directly(layout, kernel_layout, groups):
    data = _data(_in_layout(2, 6, 5, 4, layout))
    weight = _data(_weight_shape(4, 6 // groups, 1, 1, kernel_layout))
    attrs = {"data_layout": layout, "kernel_layout": kernel_layout, "groups": groups}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight])
    natural = kernel_layout == ("OIHW" if layout == "NCHW" else "HWIO")
    assert ("x1, None, None," if natural else "x1, None, _conv2d_gemm_scratch,") in source
    assert_same(got, expected, atol=1e-5)


def test_conv2d_depthwise_uses_the_shifted_multiply_adds():
    data = _data((1, 4, 6, 6))
    weight = _data((4, 1, 3, 3))
    attrs = {"groups": 4, "padding": (1, 1, 1, 1)}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight])
    assert "_conv2d_depthwise(" in source
    assert_same(got, expected, atol=1e-5)


def test_conv2d_scratch_keeps_its_padding_across_calls():
    """The im2col scratch is written only where taps read data: calling twice with other
    data gives the reference results both times."""
    from cpu_helpers import compile_funcs, prim_func

    from passhost.runtime.kernel_call import kernel_call
    from passhost.tir.function import decl_buffer

    op = get_op("nn.conv2d")
    attrs = op.make_attrs({"padding": (2, 1, 0, 2), "strides": (2, 1)})
    x, w, y = (decl_buffer(s, "float32", n) for s, n in
               (((1, 2, 5, 5), "x"), ((3, 2, 3, 3), "w"), ((1, 3, 3, 6), "y")))
    module = compile_funcs({"f": prim_func([x, w, y], kernel_call(op.name, attrs, [y],
                                                                  [x, w]))})
    for _ in range(2):
        data, weight = _data(x.shape), _data(w.shape)
        out = np.empty(y.shape, np.float32)
        module.get_function("f")(data, weight, out)
        assert_same([out], [op.evaluate(attrs, data, weight)], atol=1e-5)


def test_integer_conv2d_falls_back_to_the_reference_kernel():
    data = RNG.integers(-5, 5, (1, 2, 4, 4)).astype("int8")
    weight = RNG.integers(-5, 5, (3, 2, 3, 3)).astype("int8")
    got, expected, source = run_op("nn.conv2d", {"out_dtype": "int32"}, [data, weight])
    assert not uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


@st.composite
def pool_case(draw, dtypes=("float32",)):
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    attrs = {"pool_size": (kh, kw),
             "strides": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
             "dilation": (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
             "padding": tuple(draw(st.integers(0, 2)) for _ in range(4)),
             "layout": layout, "ceil_mode": draw(st.booleans())}
    dh, dw = attrs["dilation"]
    h = draw(st.integers(dh * (kh - 1) + 1, 8))
    w = draw(st.integers(dw * (kw - 1) + 1, 8))
    dtype = draw(st.sampled_from(dtypes))
    data = (_data(_in_layout(2, 3, h, w, layout), dtype) * 100).astype(dtype)
    return attrs, data


@SETTINGS
@given(case=pool_case(dtypes=("float32", "float64", "int8", "int32")))
def test_max_pool2d(case):
    attrs, data = case
    got, expected, source = run_op("nn.max_pool2d", attrs, [data])
    assert uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


@SETTINGS
@given(case=pool_case(dtypes=("float32", "float64")), count_include_pad=st.booleans())
def test_avg_pool2d(case, count_include_pad):
    attrs, data = case
    attrs["count_include_pad"] = count_include_pad
    got, expected, source = run_op("nn.avg_pool2d", attrs, [data])
    assert uses_fast_kernel(source)
    assert_same(got, expected, atol=1e-4)


def test_integer_avg_pool2d_falls_back_to_the_reference_kernel():
    data = RNG.integers(-50, 50, (1, 2, 5, 5)).astype("int32")
    got, expected, source = run_op("nn.avg_pool2d", {"pool_size": 2, "padding": 1}, [data])
    assert not uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_global_avg_pool2d(layout, dtype):
    data = _data(_in_layout(2, 3, 5, 4, layout), dtype)
    got, expected, source = run_op("nn.global_avg_pool2d", {"layout": layout}, [data])
    assert uses_fast_kernel(source)
    assert_same(got, expected)


def test_a_pool_in_another_output_layout_falls_back():
    data = _data((1, 3, 4, 4))
    got, expected, source = run_op("nn.max_pool2d", {"pool_size": 2, "out_layout": "NHWC"},
                                   [data])
    assert not uses_fast_kernel(source)
    assert_same(got, expected, rtol=0, atol=0)
