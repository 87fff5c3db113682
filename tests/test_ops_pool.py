"""Tests of the 2-D pools (nn.max_pool2d, nn.avg_pool2d, nn.global_avg_pool2d): type
relations, reference kernels against naive loops in NCHW and NHWC, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from naive import naive_pool2d
from passhost.errors import AttrError
from passhost.ir.types import TensorType
from passhost.relay.op import nn
from test_ops_nn import _nchw, _nhwc, _rand, _run, _type_error, _type_of, _vars


# -- pools --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "attrs", "expected"), [
    ((1, 2, 6, 6), {"pool_size": 3, "strides": 2, "padding": 1}, (1, 2, 3, 3)),
    ((1, 2, 6, 6), {"pool_size": 3, "strides": 2, "padding": 1, "ceil_mode": True},
     (1, 2, 4, 4)),
    ((1, 2, 5, 5), {"pool_size": 2, "strides": 2, "padding": 1, "ceil_mode": True},
     (1, 2, 3, 3)),  # the 4th window would start in the right padding
    ((1, 2, 7, 7), {"pool_size": 2, "strides": 2, "ceil_mode": True}, (1, 2, 4, 4)),
    ((1, 7, 7, 2), {"pool_size": 2, "strides": 2, "layout": "NHWC"}, (1, 3, 3, 2)),
    ((1, 7, 7, 2), {"pool_size": 2, "layout": "NHWC", "out_layout": "NCHW"}, (1, 2, 6, 6)),
    ((1, 2, 9, 8), {"pool_size": (2, 3), "dilation": (3, 2), "padding": (0, 1, 2, 0)},
     (1, 2, 8, 5)),
])
@pytest.mark.parametrize("op", [nn.max_pool2d, nn.avg_pool2d])
def test_pool_type(op, shape, attrs, expected):
    assert _type_of(op, [(shape, "float32")], **attrs) == TensorType(expected, "float32")


POOL_CASES = [
    dict(pool_size=(2, 2), strides=(2, 2)),
    dict(pool_size=(3, 3), strides=(2, 2), padding=1),
    dict(pool_size=(3, 3), strides=(2, 2), padding=1, ceil_mode=True),
    dict(pool_size=(2, 2), strides=(2, 2), padding=1, ceil_mode=True),
    dict(pool_size=(2, 3), strides=(1, 2), dilation=(2, 1), padding=(1, 0, 2, 1)),
    dict(pool_size=(3, 2), strides=(3, 1), padding=(2, 1), ceil_mode=True),
    dict(pool_size=(2, 3), strides=(2, 2), padding=(0, 1, 0, 0), ceil_mode=True),  # overhang
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_max_pool2d_kernel(case, layout, dtype):
    x = _rand((2, 2, 5, 6), dtype, -100, 100)
    x = x - np.asarray(110, dtype)  # all negative: padding (zero) must never win
    expected = naive_pool2d(x, "max", **case)
    xin = _nhwc(x) if layout == "NHWC" else x
    out = _run(nn.max_pool2d, [xin], layout=layout, **case)
    if layout == "NHWC":
        out = _nchw(out)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "int32"])
def test_avg_pool2d_kernel(case, count_include_pad, dtype):
    lo, hi = (-128, 127) if dtype == "int8" else (-1000, 1000)
    x = _rand((1, 2, 5, 6), dtype, lo, hi)
    expected = naive_pool2d(x, "avg", count_include_pad=count_include_pad, **case)
    for layout in ("NCHW", "NHWC"):
        xin = _nhwc(x) if layout == "NHWC" else x
        out = _run(nn.avg_pool2d, [xin], layout=layout, count_include_pad=count_include_pad,
                   **case)
        if layout == "NHWC":
            out = _nchw(out)
        if dtype == "float32":
            np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(out, expected)


def test_avg_pool2d_int_rounding_half_away_from_zero():
    x = np.array([[[[1, 2]], [[-1, -2]], [[3, 4]], [[-3, -4]]]], dtype="int8")  # (1,4,1,2)
    out = _run(nn.avg_pool2d, [x], pool_size=(1, 2))
    assert out.ravel().tolist() == [2, -2, 4, -4]


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_avg_pool2d(dtype, layout):
    x = _rand((2, 3, 3, 4), dtype, -100, 100)
    xin = _nhwc(x) if layout == "NHWC" else x
    ty = _type_of(nn.global_avg_pool2d, [(xin.shape, dtype)], layout=layout)
    assert ty.shape == ((2, 3, 1, 1) if layout == "NCHW" else (2, 1, 1, 3))
    out = _run(nn.global_avg_pool2d, [xin], layout=layout)
    if layout == "NHWC":
        out = _nchw(out)
    np.testing.assert_allclose(out, naive_pool2d(x, "avg", pool_size=(3, 4)), rtol=1e-5)
    out = _run(nn.global_avg_pool2d, [xin], layout=layout, out_layout="NCHW")
    assert out.shape == (2, 3, 1, 1)


def test_pool_errors():
    err = _type_error(nn.max_pool2d, [((1, 2, 2, 2), "float32")], pool_size=3)
    assert (err.op, err.argument) == ("nn.max_pool2d", "data")
    err = _type_error(nn.avg_pool2d, [((2, 2, 2), "float32")])
    assert (err.op, err.argument) == ("nn.avg_pool2d", "data") and "4-D" in str(err)
    err = _type_error(nn.global_avg_pool2d, [((1, 2, 2, 2), "bool")])
    assert err.op == "nn.global_avg_pool2d" and err.argument == "data"
    x = _vars(((1, 2, 4, 4), "float32"))[0]
    for attrs, name in [({"pool_size": 0}, "pool_size"), ({"padding": (1, 1, 1)}, "padding"),
                        ({"layout": "NCDHW"}, "layout"), ({"ceil_mode": "yes"}, "ceil_mode")]:
        with pytest.raises(AttrError) as info:
            nn.max_pool2d(x, **attrs)
        assert "nn.max_pool2d" in str(info.value) and name in str(info.value)
