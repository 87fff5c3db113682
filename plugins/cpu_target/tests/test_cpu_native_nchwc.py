"""The native channel-blocked convolution (``conv2d_nchwc``: ``NCHW16c`` or NCHW data into
``NCHW16c`` output) agrees with the reference kernel over strides, padding, dilation,
kernel layouts and output channels around its tiles (64 channels, 7 positions), at 1, 2
and all threads: the direct sums on each way a tile reads its taps (evenly spaced along a
row or the plane, looked up across rows and in the padding, a stem's one-channel blocks),
the Winograd path of 3x3 stride-1 layers, and the epilogue (a blocked bias, a residual, a
clamp, then the activation) on each. Blocked max pooling runs the NHWC kernel over the
blocks; geometries the kernel does not take go to the reference, and the kernel itself
refuses them."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import assert_same, run_op, uses_native_kernel
from hypothesis import given
from hypothesis import strategies as st
from test_cpu_native_fusion import _body, _fused, _uniform
from test_cpu_native_kernels import (
    KERNEL_LAYOUTS,
    SETTINGS,
    THREADS,
    _size,
    _weight,
    window_attrs,
)

from passhost_cpu_target import native

#: Channels per block of the layouts these tests use.
BLOCK = 16


def _blocked(x: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """NCHW ``x`` in NCHW{block}c, written out here rather than with the code under test."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


@st.composite
def blocked_conv_case(draw):
    """An ungrouped convolution into NCHW16c: blocked data (1-3 blocks) or a stem's few
    NCHW channels; output channels of 1-5 vectors (tile groups of 4 and a partial one)."""
    kh, kw, attrs = draw(window_attrs(most=7))
    (dh, dw), pad = attrs["dilation"], attrs["padding"]
    h, w = _size(draw, kh, dh, pad[0], pad[2], 13), _size(draw, kw, dw, pad[1], pad[3], 13)
    stem = draw(st.booleans())
    c = draw(st.integers(1, 4)) if stem else BLOCK * draw(st.integers(1, 3))
    o = BLOCK * draw(st.integers(1, 5))
    layout = draw(st.sampled_from(KERNEL_LAYOUTS))
    n = draw(st.integers(1, 2))
    data = _uniform((n, c, h, w))
    attrs.update(kernel_layout=layout, out_layout=f"NCHW{BLOCK}c",
                 data_layout="NCHW" if stem else f"NCHW{BLOCK}c")
    return attrs, data if stem else _blocked(data), _weight(o, c, kh, kw, layout)


@SETTINGS
@given(case=blocked_conv_case(), threads=THREADS)
def test_blocked_conv2d(case, threads):
    attrs, data, weight = case
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert "native_kernels.conv2d_nchwc" in source
    # sums of up to 2352 products of values up to 1 (outputs up to ~20) in another order
    assert_same(got, expected, atol=2e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("c", "o", "h", "w", "padding"), [
    (16, 64, 14, 14, (1, 1, 1, 1)), (32, 80, 7, 7, (1, 1, 1, 1)), (48, 16, 9, 5, (0, 0, 0, 0)),
    (16, 32, 6, 11, (2, 0, 1, 1)), (64, 64, 28, 28, (1, 1, 1, 1)),
])
def test_3x3_stride_1_blocked_convolutions_take_winograd(threads, c, o, h, w, padding):
    """Odd and even planes, padding on some sides or none, one chunk of tile rows or several
    (28x28); Winograd rounds differently from the direct sums, hence the tolerance."""
    attrs = {"padding": padding, "data_layout": "NCHW16c"}
    got, expected, source = run_op("nn.conv2d", attrs, [_blocked(_uniform((2, c, h, w))),
                                                        _uniform((o, c, 3, 3))],
                                   num_threads=threads)
    assert "native_kernels.conv2d_nchwc" in source
    assert_same(got, expected, atol=1e-4)


#: Blocked convolutions reading their taps each way (n, c, o, hw, k, stride, pad): a 1x1
#: layer's positions along the plane, rows in place, rows across the padding, tiles across
#: rows (strided), a stem of 3 NCHW channels, Winograd.
NCHWC_PATHS = {
    "pointwise": (2, 32, 80, 7, 1, 1, 0),
    "rows": (1, 16, 64, 12, 3, 2, 0),
    "padded": (1, 32, 48, 9, 3, 2, 1),
    "strided-1x1": (2, 48, 64, 14, 1, 2, 0),
    "stem": (1, 3, 64, 23, 7, 2, 3),
    "winograd": (1, 32, 64, 10, 3, 1, 1),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("activation", [None, "sigmoid"])
@pytest.mark.parametrize("extras", ["none", "bias", "bias-residual-relu"])
@pytest.mark.parametrize("path", NCHWC_PATHS)
def test_blocked_conv_applies_its_epilogue_on_every_path(path, extras, activation, threads):
    n, c, o, hw, k, stride, pad = NCHWC_PATHS[path]
    out = (hw + 2 * pad - k) // stride + 1
    attrs = {"padding": (pad,) * 4, "strides": (stride, stride), "out_layout": "NCHW16c",
             "data_layout": "NCHW" if c % BLOCK else "NCHW16c"}
    data = _uniform((n, c, hw, hw), 2.0)
    data = data if c % BLOCK else _blocked(data)
    steps = []
    if extras != "none":
        steps.append(("add", None, _uniform((1, o // BLOCK, 1, 1, BLOCK)), False))
    if extras == "bias-residual-relu":
        steps += [("add", None, _uniform((n, o // BLOCK, out, out, BLOCK)), True),
                  ("nn.relu", None, None, False)]
    got, expected, source = _fused("nn.conv2d", attrs, [data, _uniform((o, c, k, k), 0.5)],
                                   steps, threads, activation)
    assert _body(source).count("\n    ") == 1 and "_conv2d_nchwc(" in source
    assert_same([got], [expected], atol=2e-4 if c * k * k > 100 else 1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_blocked_max_pool2d_runs_the_nhwc_kernel_over_the_blocks(threads):
    x = _uniform((2, 48, 11, 9))
    x[1, 20, 4, 4] = np.nan
    attrs = {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1, 1, 1),
             "layout": "NCHW16c"}
    got, expected, source = run_op("nn.max_pool2d", attrs, [_blocked(x)], num_threads=threads)
    assert "native_kernels.max_pool2d_nhwc" in source
    assert np.isnan(got[0][1, 1, 2, 2, 4])
    assert_same(got, expected)


def test_blocks_the_kernel_does_not_take_use_the_reference():
    """Input blocks of 128 channels (more than the 64 a missing tap's zeros cover)."""
    attrs = {"data_layout": "NCHW128c", "out_layout": "NCHW16c", "padding": (1, 1, 1, 1)}
    data, weight = _blocked(_uniform((1, 128, 5, 5)), 128), _uniform((16, 128, 3, 3))
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight])
    assert not uses_native_kernel(source)
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize(("field", "value"), [(15, 3), (15, 80), (16, 10), (7, 65), (4, 24)])
def test_the_kernel_refuses_a_geometry_it_does_not_take(field, value):
    """Input blocks that do not divide the channels or exceed 64, output blocks not whole
    vectors, more than 64 taps: no weights to prepare, and the convolution returns -1."""
    geometry = np.array([1, 32, 8, 8, 32, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 16, 16, 1],
                        dtype=np.int64)
    geometry[field] = value
    if field == 7:
        geometry[8] = value
    lib = native.library()
    assert lib is not None
    address = geometry.ctypes.data
    assert lib.conv2d_nchwc_prepared(address) == 0
    buffers = [np.zeros(4096, np.float32) for _ in range(3)]
    bounds = np.array([-np.inf, np.inf, 0], np.float32)
    status = lib.conv2d_nchwc(*(b.ctypes.data for b in buffers), None, None, None, address,
                              bounds.ctypes.data)
    assert status == -1
