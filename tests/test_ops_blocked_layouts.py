"""Convolutions and pools in the channel-blocked layouts ``NCHW{k}c``: type relations and
errors, attribute validation, and the reference kernels against plain NumPy convolution
and pooling with the blocks written out in the test (``naive.in_layout``)."""

from __future__ import annotations

import numpy as np
import pytest

from naive import in_layout, naive_conv2d, naive_pool2d
from passhost.errors import AttrError
from passhost.relay.op import nn
from test_ops_nn import _rand, _run, _type_error, _type_of, _vars
from test_ops_pool import POOL_CASES


def test_data_layout_errors_list_the_accepted_layouts():
    with pytest.raises(AttrError, match=r"attribute 'data_layout': expected 'NCHW', 'NHWC' or "
                       r"'NCHW\{k\}c' \(k >= 1 .*found 'NCHW0c'"):
        nn.Conv2DAttrs(data_layout="NCHW0c")
    with pytest.raises(AttrError, match=r"'out_layout': expected '' \(the data layout\), 'NCHW'"):
        nn.GlobalPool2DAttrs(out_layout="NCHW16")
    attrs = nn.Conv2DAttrs(data_layout="NCHW1c", out_layout="NCHW128c")
    assert (attrs.data_layout, attrs.out_layout) == ("NCHW1c", "NCHW128c")


#: (data layout, out layout, data shape, OIHW weight shape, attributes)
BLOCKED_CONV_CASES = [
    ("NCHW8c", "", (1, 16, 6, 5), (8, 16, 3, 2), dict(strides=(2, 1), padding=(1, 0, 2, 1))),
    ("NCHW16c", "NCHW8c", (2, 16, 5, 5), (8, 16, 3, 3), dict(dilation=2, padding=2)),
    ("NCHW", "NCHW16c", (1, 3, 6, 6), (16, 3, 3, 3), dict(strides=2, padding=1)),  # a stem
    ("NCHW8c", "NCHW", (1, 16, 5, 5), (16, 8, 3, 3), dict(groups=2, padding=1)),
    ("NCHW4c", "NHWC", (1, 8, 6, 6), (8, 1, 3, 3), dict(groups=8, strides=2, padding=1)),
    ("NCHW4c", "", (1, 8, 5, 6), (8, 2, 2, 3), dict(groups=4, dilation=(2, 1))),
    ("NHWC", "NCHW1c", (1, 3, 4, 4), (2, 3, 1, 1), {}),
]


@pytest.mark.parametrize(("data_layout", "out_layout", "xs", "ws", "attrs"), BLOCKED_CONV_CASES)
@pytest.mark.parametrize("kernel_layout", ["OIHW", "HWIO"])
def test_conv2d_blocked_layouts(data_layout, out_layout, xs, ws, attrs, kernel_layout):
    x, w = _rand(xs), _rand(ws)
    expected = in_layout(naive_conv2d(x, w, **attrs), out_layout or data_layout)
    wk = np.ascontiguousarray(w.transpose(tuple("OIHW".index(d) for d in kernel_layout)))
    out = _run(nn.conv2d, [in_layout(x, data_layout), wk], data_layout=data_layout,
               kernel_layout=kernel_layout, out_layout=out_layout, **attrs)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize(("layout", "out_layout"),
                         [("NCHW8c", ""), ("NCHW16c", "NCHW"), ("NCHW", "NCHW4c"),
                          ("NHWC", "NCHW8c"), ("NCHW4c", "NCHW16c")])
def test_pools_blocked_layouts(case, layout, out_layout):
    x = _rand((2, 16, 5, 6), "float32")
    for op, kind in ((nn.max_pool2d, "max"), (nn.avg_pool2d, "avg")):
        expected = in_layout(naive_pool2d(x, kind, **case), out_layout or layout)
        out = _run(op, [in_layout(x, layout)], layout=layout, out_layout=out_layout, **case)
        assert out.shape == expected.shape
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int32"])
@pytest.mark.parametrize(("layout", "out_layout"),
                         [("NCHW8c", ""), ("NCHW16c", "NCHW"), ("NCHW", "NCHW16c"),
                          ("NHWC", "NCHW4c"), ("NCHW16c", "NCHW8c"), ("NCHW8c", "NHWC")])
def test_global_avg_pool2d_blocked_layouts(dtype, layout, out_layout):
    x = _rand((2, 16, 3, 4), dtype, -100, 100)
    expected = in_layout(naive_pool2d(x, "avg", pool_size=(3, 4)), out_layout or layout)
    xin = in_layout(x, layout)
    ty = _type_of(nn.global_avg_pool2d, [(xin.shape, dtype)], layout=layout,
                  out_layout=out_layout)
    assert ty.shape == expected.shape
    out = _run(nn.global_avg_pool2d, [xin], layout=layout, out_layout=out_layout)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)  # means near zero


@pytest.mark.parametrize(("op", "shape", "attrs", "argument", "needle"), [
    (nn.max_pool2d, (1, 2, 4, 4, 8), {"layout": "NCHW16c"}, "data",
     "NCHW16c data whose last axis is 16"),
    (nn.avg_pool2d, (1, 16, 4, 4), {"layout": "NCHW8c"}, "data", "5-D"),
    (nn.global_avg_pool2d, (1, 2, 4, 4, 4), {"layout": "NCHW8c"}, "data", "last axis is 8"),
    (nn.global_avg_pool2d, (1, 3, 4, 4), {"out_layout": "NCHW16c"}, "out_layout",
     "blocks of 16 channels divide the 3 output channels"),
    (nn.max_pool2d, (1, 4, 4, 12), {"layout": "NHWC", "out_layout": "NCHW8c"}, "out_layout",
     "the 12 output channels"),
])
def test_pool_blocked_type_errors(op, shape, attrs, argument, needle):
    err = _type_error(op, [(shape, "float32")], **attrs)
    assert (err.op, err.argument) == (op.name, argument) and needle in str(err)
    x = _vars(((1, 16, 4, 4), "float32"))[0]
    for bad in ("NCHW0c", "NCHW16", "NCHWc16"):
        with pytest.raises(AttrError, match=f"{op.name}: attribute 'layout'"):
            op(x, layout=bad)
