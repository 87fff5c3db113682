"""The native kernels agree with each operator's reference kernel (passhost's NumPy
interpreter kernels): NCHW convolution over groups, strides, padding, dilation and kernel
layouts, including the Winograd path of 3x3 stride-1 convolutions with large outputs;
depthwise convolution in NCHW and NHWC (large and small planes); NCHW max pooling; dense
layers; all at 1, 2 and all threads. The epilogue activations round as the compiled loops'
``sigmoid`` and ``nn.silu`` do, bit for bit, but where the sigmoid is subnormal: the
kernels flush it to zero."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import assert_same, run_op, uses_fast_kernel, uses_native_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cpu_native_fusion import _fused

import passhost
from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.transform import PassContext

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
RNG = np.random.default_rng(11)
THREADS = st.sampled_from([0, 1, 2])
KERNEL_LAYOUTS = ["OIHW", "HWIO", "OHWI", "HWOI"]


def _data(shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def _weight(o, i, kh, kw, layout):
    sizes = {"O": o, "I": i, "H": kh, "W": kw}
    return _data(tuple(sizes[d] for d in layout))


def _size(draw, k, dilation, pad_a, pad_b, most):
    """An input extent the window fits in."""
    return draw(st.integers(max(1, dilation * (k - 1) + 1 - pad_a - pad_b), most))


@st.composite
def window_attrs(draw, most=3):
    """Strides, dilation and padding of a window of up to ``most`` x ``most`` taps."""
    kh, kw = draw(st.integers(1, most)), draw(st.integers(1, most))
    attrs = {"strides": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
             "dilation": (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
             "padding": tuple(draw(st.integers(0, 2)) for _ in range(4))}
    return kh, kw, attrs


@st.composite
def nchw_conv_case(draw):
    kh, kw, attrs = draw(window_attrs())
    groups = draw(st.integers(1, 3))
    c, o = groups * draw(st.integers(1, 5)), groups * draw(st.integers(1, 20))
    (dh, dw), pad = attrs["dilation"], attrs["padding"]
    h, w = _size(draw, kh, dh, pad[0], pad[2], 12), _size(draw, kw, dw, pad[1], pad[3], 12)
    layout = draw(st.sampled_from(KERNEL_LAYOUTS))
    attrs.update(groups=groups, kernel_layout=layout)
    n = draw(st.integers(1, 2))
    return attrs, _data((n, c, h, w)), _weight(o, c // groups, kh, kw, layout)


@SETTINGS
@given(case=nchw_conv_case(), threads=THREADS)
def test_nchw_conv2d(case, threads):
    attrs, data, weight = case
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert uses_native_kernel(source) and uses_fast_kernel(source)
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "h", "w", "padding"), [
    (1, 16, 8, 20, 20, (1, 1, 1, 1)),
    (2, 24, 20, 21, 25, (1, 0, 0, 1)),
    (1, 17, 150, 40, 33, (2, 1, 0, 2)),
    (2, 40, 70, 14, 14, (1, 1, 1, 1)),     # 7 tiles across: 4 tile rows packed side by side
    (1, 24, 9, 11, 13, (1, 1, 1, 1)),      # 7 x 6 tiles, an odd last row and column
    (1, 16, 16, 10, 12, (1, 1, 1, 1)),     # 120 outputs: just over the Winograd minimum
    (2, 32, 48, 14, 14, (1, 1, 1, 1)),     # 7 tiles across, whole blocks: channel-blocked
    (1, 64, 80, 13, 13, (1, 0, 1, 0)),     # the same, an odd last tile row and column
])
def test_winograd_sized_3x3_convolutions(threads, n, c, o, h, w, padding):
    """3x3 stride-1 convolutions with at least 100 outputs per channel (the Winograd path),
    odd output sizes, tile rows packed side by side, more output channels than one task
    holds, and planes of 7 tiles across in whole blocks of channels (through NCHW16c)
    included."""
    data, weight = _data((n, c, h, w)), _data((o, c, 3, 3))
    got, expected, source = run_op("nn.conv2d", {"padding": padding}, [data, weight],
                                   num_threads=threads)
    assert uses_native_kernel(source)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_wide_conv_packs_columns_for_every_chunk_of_output_channels(threads):
    """More output channels per group than one task holds (the shared packed-column
    scratch), two images, two groups, a partial last column block."""
    data, weight = _data((2, 12, 9, 7)), _data((300, 6, 3, 3))
    attrs = {"padding": (1, 2, 0, 1), "strides": (1, 2), "groups": 2}
    got, expected, _ = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "h", "w", "stride", "padding", "groups"), [
    (1, 64, 136, 56, 56, 2, (0, 0, 0, 0), 1),   # to 28x28: rows read in place, two chunks
    (2, 160, 64, 14, 14, 2, (0, 0, 0, 0), 1),   # to 7x7: transposed tiles, two images
    (1, 40, 24, 15, 17, 2, (0, 0, 0, 0), 1),    # odd sizes: the last row and column dropped
    (1, 12, 20, 10, 10, 2, (1, 0, 2, 1), 2),    # outputs on the padding, two groups
    (1, 8, 16, 11, 13, 3, (0, 0, 0, 0), 1),     # stride 3
])
def test_strided_1x1_convolutions_subsample_their_input(threads, n, c, o, h, w, stride,
                                                        padding, groups):
    """Strided and padded 1x1 convolutions, taken as direct 1x1 convolutions of their input
    subsampled into the scratch (zero where an output reads the padding)."""
    data, weight = _data((n, c, h, w)), _data((o, c // groups, 1, 1))
    attrs = {"strides": (stride, stride), "padding": padding, "groups": groups}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert uses_native_kernel(source)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "h", "w", "k", "stride", "padding", "groups"), [
    (1, 3, 40, 32, 36, (4, 4), 4, (0, 0, 0, 0), 1),    # a 4x4 patch stem
    (2, 24, 36, 14, 14, (2, 2), 2, (0, 0, 0, 0), 1),   # 2x2 to 7x7: transposed tiles
    (1, 8, 20, 35, 37, (2, 3), 3, (1, 2, 0, 1), 2),    # taps shorter than the stride, padded
    (1, 3, 48, 48, 48, (16, 16), 16, (0, 0, 0, 0), 1),  # ViT's 16x16 patches
    (1, 6, 12, 13, 11, (3, 2), 3, (2, 0, 1, 1), 3),    # odd sizes, three groups
])
def test_convolutions_of_windows_that_do_not_overlap_rearrange_their_input(
        threads, n, c, o, h, w, k, stride, padding, groups):
    """Convolutions whose windows do not overlap (patch embeddings), taken as direct 1x1
    convolutions of their input rearranged into one plane per channel and tap (zero where
    a tap reads the padding)."""
    data, weight = _data((n, c, h, w)), _data((o, c // groups, *k))
    attrs = {"strides": (stride, stride), "padding": padding, "groups": groups}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert uses_native_kernel(source)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "h", "w", "k", "stride"), [
    (1, 40, 136, 15, 17, 3, 2),   # two slabs of the reduction, two chunks of output channels
    (2, 3, 20, 30, 31, 7, 2),     # a 7x7 stem: blocks across row ends, two images
    (1, 64, 24, 9, 9, 3, 1),      # three slabs at stride 1, a plane too small for Winograd
    (1, 12, 16, 12, 12, 2, 2),    # 2x2 at stride 2: the wide grid is the output grid
    (1, 3, 32, 61, 62, 3, 2),     # a 3x3 stem: row tiles, odd rows, a partial vector
    (1, 3, 13, 224, 224, 3, 2),   # MobileNetV2's stem geometry, a partial panel
])
def test_wide_grid_convolutions_copy_each_blocks_rows(threads, n, c, o, h, w, k, stride):
    """Convolutions on the wide grid of the phase planes: blocks whose rows are copied out
    of the planes one reduction slab at a time, or for reductions of at most one slab with
    dropped outputs (stems) row tiles read in place."""
    data, weight = _data((n, c, h, w)), _data((o, c, k, k))
    attrs = {"padding": (k // 2,) * 4, "strides": (stride, stride)}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert uses_native_kernel(source)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "h", "w", "k", "stride", "padding"), [
    (1, 61, 61, 3, 2, (0, 0, 1, 1)),  # TensorFlow's "same": nothing at the top and left
    (2, 62, 59, 3, 2, (1, 1, 1, 1)),  # 31 rows: three bands of eight and one of seven
    (1, 20, 90, 5, 1, (2, 2, 2, 2)),  # stride 1, bands whose windows share four rows
    (1, 37, 121, 7, 2, (3, 3, 2, 3)),  # 7x7, a last band of two rows
])
def test_stems_copy_their_input_band_by_band(threads, n, h, w, k, stride, padding):
    """Row tiles copy the phase planes of each band of output rows (and the rows their
    windows share with the next band) as they go: top and left padding of any size, the
    bottom padding the planes' rows past the data give, the last band partial."""
    data, weight = _data((n, 3, h, w)), _data((10, 3, k, k))
    attrs = {"padding": padding, "strides": (stride, stride)}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert uses_native_kernel(source)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "h", "w"), [
    (1, 64, 40, 28, 28),    # 24 whole column blocks and a partial one, one slab
    (2, 256, 24, 20, 20),   # a reduction of exactly one slab, two images
    (1, 300, 16, 20, 24),   # two slabs, read straight from the data
    (1, 24, 136, 56, 60),   # 105 blocks: several spans, two chunks of output channels
    (1, 200, 40, 14, 14),   # rows off vector boundaries, one slab: copied block by block
    (2, 300, 136, 13, 15),  # off vector boundaries, two slabs, two chunks, two images
])
def test_1x1_convolutions_over_many_column_blocks(threads, n, c, o, h, w):
    """1x1 convolutions over planes of many column blocks, whose whole blocks are read
    straight from the data where its rows start on vector boundaries, else copied: output
    channels outer over spans of blocks where the reduction fits one slab, slab by slab
    where it does not, the partial last block packed."""
    data, weight = _data((n, c, h, w)), _data((o, c, 1, 1))
    got, expected, source = run_op("nn.conv2d", {}, [data, weight], num_threads=threads)
    assert uses_native_kernel(source)
    assert_same(got, expected, rtol=1e-4, atol=1e-4)


@st.composite
def depthwise_case(draw):
    kh, kw, attrs = draw(window_attrs())
    c = draw(st.integers(2, 40))
    (dh, dw), pad = attrs["dilation"], attrs["padding"]
    h, w = _size(draw, kh, dh, pad[0], pad[2], 26), _size(draw, kw, dw, pad[1], pad[3], 26)
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    kernel_layout = draw(st.sampled_from(["OIHW", "HWOI", "HWIO", "OHWI"]))
    attrs.update(groups=c, data_layout=layout, kernel_layout=kernel_layout)
    n = draw(st.integers(1, 2))
    data = _data((n, c, h, w) if layout == "NCHW" else (n, h, w, c))
    return attrs, data, _weight(c, 1, kh, kw, kernel_layout)


@SETTINGS
@given(case=depthwise_case(), threads=THREADS)
def test_depthwise_conv2d(case, threads):
    attrs, data, weight = case
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert "native_kernels.depthwise_conv2d" in source
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("pads", ["even", "tf-same"])
@pytest.mark.parametrize("w", [24, 27, 28, 31, 33, 56, 57])
def test_stride_2_depthwise_rows_of_every_tail(threads, k, pads, w):
    """Stride-2 depthwise layers whose output rows are 12 or more wide split each input row
    into its even and odd columns; a row's last columns (none, or fewer than two vectors'
    worth: 24-57 columns) are read whole except at the plane's end and stored with the lanes
    past the data zero. Symmetric padding (PyTorch's) and TensorFlow's "same" (less at the
    top and left), two images."""
    before, after = (k // 2 if pads == "even" else k // 2 - 1), k // 2
    c, h = 5, 26
    data, weight = _data((2, c, h, w)), _weight(c, 1, k, k, "OIHW")
    attrs = {"groups": c, "strides": (2, 2), "padding": (before, before, after, after)}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert "native_kernels.depthwise_conv2d_nchw" in source
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("k, pad", [(5, 2), (3, 0)])
@pytest.mark.parametrize("w", [1, 3, 4, 7, 8, 9, 12, 14, 16, 17, 23, 25])
def test_small_plane_depthwise_rows_of_every_width(threads, k, pad, w):
    """Depthwise layers of at most 256 outputs take VW channels at a time, each output row in
    pieces of at most eight sums as even as they go (14 as two of seven, 17 as 6 + 6 + 5
    ending with the row's last six), rows narrower than four one output at a time: every
    width from one to past three pieces, 5x5 "same" and 3x3 unpadded, 20 channels (a
    vector and part of one), two images."""
    c, h = 20, k + 3
    data, weight = _data((2, c, h, w + 2 * (k // 2 - pad))), _weight(c, 1, k, k, "OIHW")
    attrs = {"groups": c, "padding": (pad, pad, pad, pad)}
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert "native_kernels.depthwise_conv2d_nchw" in source
    assert got[0].shape[-1] == w
    assert_same(got, expected, atol=1e-5)


@st.composite
def max_pool_case(draw):
    """A max pool in either layout; NHWC channels on both sides of a vector (16)."""
    kh, kw, attrs = draw(window_attrs())
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    attrs.update(pool_size=(kh, kw), ceil_mode=draw(st.booleans()), layout=layout)
    dh, dw = attrs["dilation"]
    h, w = draw(st.integers(dh * (kh - 1) + 1, 20)), draw(st.integers(dw * (kw - 1) + 1, 20))
    if layout == "NCHW":
        return attrs, _data((2, 3, h, w)) * 100
    return attrs, _data((2, h, w, draw(st.integers(1, 40)))) * 100


@SETTINGS
@given(case=max_pool_case(), threads=THREADS)
def test_max_pool2d(case, threads):
    attrs, data = case
    got, expected, source = run_op("nn.max_pool2d", attrs, [data], num_threads=threads)
    assert f"native_kernels.max_pool2d_{attrs['layout'].lower()}" in source
    assert_same(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool2d_propagates_nan(layout):
    data = _data((1, 2, 6, 6))
    data[0, 1, 2, 3] = np.nan
    data = data if layout == "NCHW" else data.transpose(0, 2, 3, 1).copy()
    attrs = {"pool_size": (3, 3), "padding": (1, 1, 1, 1), "layout": layout}
    got, expected, source = run_op("nn.max_pool2d", attrs, [data])
    assert f"native_kernels.max_pool2d_{layout.lower()}" in source
    channel = (0, 1) if layout == "NCHW" else (0, Ellipsis, 1)
    assert np.isnan(got[0][channel]).sum() == np.isnan(expected[0][channel]).sum() > 0
    assert_same(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_nhwc_max_pool2d_ties_and_padding_as_the_reference(threads):
    # 35 channels: two whole vectors and a partial one; -0 and +0 tie as tap by tap, an
    # all-negative channel shows a padded zero, NaN wins
    data = _data((2, 13, 11, 35))
    data[0, 4, 5, 17] = np.nan
    zeros = np.random.default_rng(5).integers(0, 2, (2, 13, 11, 35))
    data[:, :, :, 20:] = np.where(zeros, 0.0, -0.0)[:, :, :, 20:]
    data[1, :, :, 3] = -np.abs(data[1, :, :, 3]) - 1.0
    attrs = {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 0, 1, 1),
             "ceil_mode": True, "layout": "NHWC"}
    got, expected, source = run_op("nn.max_pool2d", attrs, [data], num_threads=threads)
    assert "native_kernels.max_pool2d_nhwc" in source
    assert_same(got, expected, rtol=0, atol=0)
    assert np.array_equal(np.signbit(got[0]), np.signbit(expected[0]))
    assert np.isnan(got[0][0, ..., 17]).sum() == np.isnan(expected[0][0, ..., 17]).sum() > 0


@pytest.mark.parametrize("padding", [(1, 1, 1, 1), (0, 0, 1, 1), (1, 0, 0, 1)])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_3x3_stride_2_max_pool2d_rows_are_the_taps(padding, ceil_mode):
    # outputs at least 12 wide take the split-row path (ResNet's pool): NaN wins, -0 and +0
    # tie as tap by tap, the padding never wins
    data = _data((2, 3, 31, 27))
    data[0, 1, 4, 5] = np.nan
    zeros = np.random.default_rng(5).integers(0, 2, (10, 10))  # -0 and +0 in both directions
    data[1, 2, :10, :10] = np.where(zeros, 0.0, -0.0)
    data[1, 0] = -np.abs(data[1, 0]) - 1.0  # all negative: a padded zero would show
    attrs = {"pool_size": (3, 3), "strides": (2, 2), "padding": padding,
             "ceil_mode": ceil_mode}
    got, expected, source = run_op("nn.max_pool2d", attrs, [data], num_threads=2)
    assert "native_kernels.max_pool2d_nchw" in source and got[0].shape[3] >= 12
    assert_same(got, expected, rtol=0, atol=0)
    assert np.array_equal(np.signbit(got[0]), np.signbit(expected[0]))
    assert np.isnan(got[0][0, 1]).sum() == np.isnan(expected[0][0, 1]).sum() > 0


@SETTINGS
@given(rows=st.integers(1, 8), k=st.integers(1, 70), units=st.integers(1, 21),
       threads=THREADS)
def test_dense(rows, k, units, threads):
    x, w = _data((rows, k)), _data((units, k))
    got, expected, source = run_op("nn.dense", {"units": units}, [x, w], num_threads=threads)
    assert "native_kernels.dense" in source
    assert_same(got, expected, atol=1e-5)


@SETTINGS
@given(rows=st.integers(1, 8), k=st.integers(1, 70), units=st.integers(1, 140),
       threads=THREADS, relu=st.booleans())
def test_dense_with_parameter_weights_reads_them_packed(rows, k, units, threads, relu):
    # weights that are parameters (read-only in the executor) are packed once into panels of
    # 64 units; units past a panel's end, odd k and every row count must come out right
    x, w, b = _data((rows, k)), _data((units, k)), _data((units,))
    v = relay.var("x", shape=x.shape, dtype="float32")
    y = relay.add(nn.dense(v, relay.const(w)), relay.const(b))
    body = relay.nn.relu(y) if relu else y
    with PassContext(opt_level=3):
        compiled = passhost.build(IRModule.from_expr(relay.Function([v], body)),
                                  f"cpu -num-threads={threads}")
    executor = compiled.executor()
    assert [s.func for s in compiled.plan.steps] == [compiled.plan.steps[0].func]
    expected = x.astype("float64") @ w.T.astype("float64") + b
    expected = np.maximum(expected, 0) if relu else expected
    for _ in range(2):  # the second run reads the panels packed by the first
        np.testing.assert_allclose(executor(x)[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("name", "attrs", "inputs"), [
    ("nn.conv2d", {}, [np.ones((1, 2, 3, 3), "float64"), np.ones((2, 2, 1, 1), "float64")]),
    ("nn.max_pool2d", {"pool_size": 2, "layout": "NHWC"},
     [_data((1, 4, 4, 2)).astype("float64")]),
    ("nn.dense", {}, [np.ones((9, 3), "float64"), np.ones((2, 3), "float64")]),
])
def test_calls_no_native_kernel_fits_use_the_numpy_kernels(name, attrs, inputs):
    got, expected, source = run_op(name, attrs, inputs)
    assert not uses_native_kernel(source) and uses_fast_kernel(source)
    assert_same(got, expected, atol=1e-5)


def _loops(activation, x):
    """``x`` through ``activation`` in the cpu target's compiled loops."""
    v = relay.var("x", shape=x.shape, dtype="float32")
    op = relay.sigmoid if activation == "sigmoid" else nn.silu
    with PassContext(opt_level=3):
        compiled = passhost.build(IRModule.from_expr(relay.Function([v], op(v))),
                                  "cpu -num-threads=1")
    assert "loops.c" in compiled.module.files
    return compiled.executor()(x)[0]


def _wide(shape):
    """Finite float32 values of every magnitude, both signs: the activations' whole range,
    where the sigmoid under- and overflows included (the first three where it is
    subnormal)."""
    magnitude = 10.0 ** RNG.uniform(-6, 2.3, shape)
    values = (magnitude * RNG.choice([-1.0, 1.0], shape)).astype("float32")
    values.reshape(-1)[:3] = [-88.0, -95.5, -101.0]
    return values


def _identity(n):
    return np.eye(n, dtype="float32")


@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
@pytest.mark.parametrize("case", ["conv-tiles", "conv-transposed", "depthwise-planes",
                                  "depthwise-small", "dense", "matmul"])
def test_activations_round_as_the_compiled_loops(case, activation):
    """Producers whose sums are their input exactly (identity weights), so that the
    activation alone makes the output. The kernels flush a subnormal sigmoid (below
    -87.34) to zero, and their SiLU is then zero too; the loops keep it."""
    producer, attrs, x, weight = {
        "conv-tiles": ("nn.conv2d", {}, _wide((1, 24, 9, 9)), _identity(24)[:, :, None, None]),
        "conv-transposed": ("nn.conv2d", {}, _wide((1, 256, 7, 7)),
                            _identity(256)[:, :, None, None]),
        "depthwise-planes": ("nn.conv2d", {"groups": 5}, _wide((1, 5, 20, 20)),
                             np.ones((5, 1, 1, 1), "float32")),
        "depthwise-small": ("nn.conv2d", {"groups": 5}, _wide((1, 5, 9, 9)),
                            np.ones((5, 1, 1, 1), "float32")),
        "dense": ("nn.dense", {}, _wide((3, 40)), _identity(40)),
        "matmul": ("matmul", {}, _wide((37, 48)), _identity(48)),
    }[case]
    got, _, source = _fused(producer, attrs, [x, weight], [], 1, activation)
    assert uses_native_kernel(source) and uses_fast_kernel(source)
    sigmoid = _loops("sigmoid", x)
    flushed = (sigmoid != 0) & (sigmoid < np.finfo(np.float32).tiny)
    assert flushed.any()  # the inputs reach the flushed range
    np.testing.assert_array_equal(got, np.where(flushed, np.float32(0), _loops(activation, x)))
