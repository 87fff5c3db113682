"""ONNX GridSample, AffineGrid, RoiAlign, Col2Im and CenterCropPad against onnxruntime, and
against ONNX's reference implementation where onnxruntime cannot run a case (GridSample of
one spatial axis, cubic in 3-D, data other than float32; Col2Im beyond 2-D, where
onnxruntime folds several channels wrongly)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost import relay  # noqa: E402
from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.frontend.errors import OnnxUnknownOperandError  # noqa: E402
from passhost.relay.op.movement import IndexRangeError  # noqa: E402
from passhost.relay.op.windows import window_out_sizes  # noqa: E402
from passhost.relay.visitor import post_order  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    check,
    make_model,
    node,
    rand,
    run_onnxruntime,
    run_passhost,
)

RNG = np.random.default_rng(7)
PADDINGS = ("zeros", "border", "reflection")


def i64(*values: int) -> np.ndarray:
    return np.array(values, "int64")


def positions(*shape: int, snap: bool = False) -> np.ndarray:
    """Normalised grid positions, some beyond [-1, 1]; ``snap`` puts them on quarters, so
    that coordinates fall on elements, halfway between them and on the edges."""
    g = RNG.uniform(-1.7, 1.7, shape)
    return (np.round(g * 4) / 4 if snap else g).astype("float32")


def check_reference(nodes, inputs, initializers=None, opset=20, atol=1e-5):
    """Compile with passhost and compare with ONNX's reference implementation."""
    model = make_model(nodes, inputs, initializers, opset=opset)
    want = ReferenceEvaluator(model).run(None, inputs)
    got = run_passhost(model, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


def op_names(model) -> list[str]:
    mod, _ = from_onnx(model)
    return [n.op.name for n in post_order(mod["main"].body) if hasattr(n, "op")]


# -- GridSample ------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(mode=st.sampled_from(["linear", "nearest", "cubic"]), padding=st.sampled_from(PADDINGS),
       align=st.integers(0, 1), snap=st.booleans(), h=st.integers(1, 5), w=st.integers(1, 5),
       oh=st.integers(1, 4), ow=st.integers(1, 4))
def test_grid_sample_2d(mode, padding, align, snap, h, w, oh, ow):
    check([node("GridSample", ["x", "g"], mode=mode, padding_mode=padding,
                align_corners=align)],
          {"x": rand(2, 3, h, w), "g": positions(2, oh, ow, 2, snap=snap)}, opset=20)


@settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(["linear", "nearest"]), padding=st.sampled_from(PADDINGS),
       align=st.integers(0, 1), snap=st.booleans(),
       spatial=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)))
def test_grid_sample_3d(mode, padding, align, snap, spatial):
    check([node("GridSample", ["x", "g"], mode=mode, padding_mode=padding,
                align_corners=align)],
          {"x": rand(1, 2, *spatial), "g": positions(1, 2, 3, 2, 3, snap=snap)}, opset=22)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", PADDINGS)
def test_grid_sample_16_names_its_modes_bilinear_and_bicubic(mode, padding):
    check([node("GridSample", ["x", "g"], mode=mode, padding_mode=padding, align_corners=1)],
          {"x": rand(1, 2, 4, 3), "g": positions(1, 3, 5, 2, snap=True)}, opset=16)


def test_grid_sample_defaults_are_bilinear_zeros_not_aligned():
    x, g = rand(1, 1, 3, 4), positions(1, 2, 3, 2)
    for opset in (16, 20):
        check([node("GridSample", ["x", "g"])], {"x": x, "g": g}, opset=opset)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", PADDINGS)
def test_grid_sample_of_one_spatial_axis(mode, padding):
    # ONNX's reference clamps (or reflects) a cubic coordinate before reading its neighbours,
    # onnxruntime and PyTorch only each neighbour: the cases agree within the data.
    g = positions(2, 5, 1, snap=True)
    if mode == "cubic" and padding != "zeros":
        g = np.clip(g, -0.5, 0.5)
    check_reference([node("GridSample", ["x", "g"], mode=mode, padding_mode=padding)],
                    {"x": rand(2, 3, 6), "g": g})


def test_grid_sample_cubic_in_3d():
    check_reference([node("GridSample", ["x", "g"], mode="cubic", align_corners=1)],
                    {"x": rand(1, 2, 3, 4, 3), "g": positions(1, 2, 2, 3, 3)})


def test_grid_sample_cubic_reads_each_neighbour_at_the_border():
    # Near an edge, cubic weights neighbours beyond it (read as the edge element): a
    # coordinate clamped first would give the edge element itself.
    x = np.array([[[[0.0, 1.0, 4.0, 9.0]]]], "float32")
    g = np.array([[[[-0.9, 0.0]]]], "float32")
    model = make_model([node("GridSample", ["x", "g"], mode="cubic", padding_mode="border")],
                       {"x": x, "g": g}, opset=20)
    got = run_passhost(model, {"x": x, "g": g})[0]
    np.testing.assert_allclose(got, run_onnxruntime(model, {"x": x, "g": g})[0], atol=1e-6)
    assert got.item() != 0.0


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_grid_sample_of_other_floats_is_the_float32_sampling(dtype):
    x, g = rand(1, 2, 4, 5), positions(1, 3, 3, 2)
    model = make_model([node("GridSample", ["x", "g"], mode="cubic")], {"x": x, "g": g},
                       opset=20)
    want = run_onnxruntime(model, {"x": x, "g": g})[0]
    xd, gd = x.astype(dtype), g.astype(dtype)
    got = run_passhost(make_model([node("GridSample", ["x", "g"], mode="cubic")],
                                  {"x": xd, "g": gd}, opset=20), {"x": xd, "g": gd})[0]
    assert got.dtype == dtype
    tol = 1e-5 if dtype == "float64" else 2e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_grid_sample_of_integers():
    xf, g = np.round(rand(1, 2, 4, 5) * 40), positions(1, 3, 3, 2)
    x = xf.astype("int16")
    near = make_model([node("GridSample", ["x", "g"], mode="nearest")], {"x": x, "g": g},
                      opset=20)
    want = run_onnxruntime(make_model([node("GridSample", ["x", "g"], mode="nearest")],
                                      {"x": xf, "g": g}, opset=20), {"x": xf, "g": g})[0]
    got = run_passhost(near, {"x": x, "g": g})[0]
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, want)
    linear = make_model([node("GridSample", ["x", "g"])], {"x": x, "g": g}, opset=20)
    want = run_onnxruntime(make_model([node("GridSample", ["x", "g"])], {"x": xf, "g": g},
                                      opset=20), {"x": xf, "g": g})[0]
    np.testing.assert_array_equal(run_passhost(linear, {"x": x, "g": g})[0], np.rint(want))


def test_grid_sample_of_non_finite_positions_does_not_fail():
    x = rand(1, 1, 3, 3)
    g = np.array([[[[np.nan, 0.0], [np.inf, 0.5], [-np.inf, 1e30]]]], "float32")
    for padding in PADDINGS:
        model = make_model([node("GridSample", ["x", "g"], padding_mode=padding)],
                           {"x": x, "g": g}, opset=20)
        assert run_passhost(model, {"x": x, "g": g})[0].shape == (1, 1, 1, 3)


def test_grid_sample_of_far_positions_reflects_again_and_again():
    x = rand(1, 1, 1, 3)
    g = np.array([[[[9.3, 0.0], [-13.7, 0.0], [4.9, 0.0]]]], "float32")
    for mode in ("linear", "nearest", "cubic"):
        check([node("GridSample", ["x", "g"], mode=mode, padding_mode="reflection")],
              {"x": x, "g": g}, opset=20)


@pytest.mark.parametrize(("opset", "attrs", "message"), [
    (16, {"mode": "linear"}, "expected mode bilinear, nearest, bicubic, found 'linear'"),
    (20, {"mode": "bilinear"}, "expected mode linear, nearest, cubic, found 'bilinear'"),
    (20, {"padding_mode": "wrap"}, "expected padding_mode zeros, border, reflection"),
    (20, {"align_corners": 2}, "expected align_corners 0 or 1, found 2"),
])
def test_grid_sample_rejects_bad_attributes(opset, attrs, message):
    model = make_model([node("GridSample", ["x", "g"], **attrs)],
                       {"x": rand(1, 1, 2, 2), "g": positions(1, 2, 2, 2)}, opset=opset)
    with pytest.raises(OnnxImportError, match=f"GridSample node 'GridSample_\\d+': {message}"):
        from_onnx(model)


@pytest.mark.parametrize(("x", "g", "opset", "message"), [
    ((1, 1, 2, 2, 2), (1, 2, 2, 2, 3), 16, "expected 4-D data"),
    ((1, 1, 2, 2), (1, 2, 2, 3), 20, "argument 'grid' expected a grid"),
    ((1, 1, 2, 2), (2, 2, 2, 2), 20, "argument 'grid' expected a grid"),
    ((1, 1, 2, 2), (1, 2, 2), 20, "argument 'grid' expected a grid"),
    ((1, 1, 0, 2), (1, 2, 2, 2), 20, "non-empty spatial axes"),
])
def test_grid_sample_rejects_mismatched_shapes(x, g, opset, message):
    model = make_model([node("GridSample", ["x", "g"])],
                       {"x": rand(*x), "g": positions(*g)}, opset=opset)
    with pytest.raises(OnnxImportError, match=f"GridSample node .*{message}"):
        from_onnx(model)


def test_grid_sample_of_an_empty_grid():
    check([node("GridSample", ["x", "g"])], {"x": rand(2, 3, 2, 2), "g": positions(2, 0, 3, 2)},
          opset=20)


# -- AffineGrid ------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(spatial=st.lists(st.integers(2, 5), min_size=2, max_size=3), align=st.integers(0, 1),
       n=st.integers(1, 2))
def test_affine_grid(spatial, align, n):
    rank = len(spatial)
    check([node("AffineGrid", ["theta", "size"], align_corners=align)],
          {"theta": rand(n, rank, rank + 1)}, {"size": i64(n, 3, *spatial)}, opset=20)


def test_affine_grid_is_a_matmul_that_feeds_grid_sample():
    theta, x = rand(2, 2, 3), rand(2, 3, 4, 5)
    nodes = [node("AffineGrid", ["theta", "size"], ["grid"]), node("GridSample", ["x", "grid"])]
    check(nodes, {"theta": theta, "x": x}, {"size": i64(2, 3, 6, 7)}, opset=20)
    model = make_model(nodes, {"theta": theta, "x": x}, {"size": i64(2, 3, 6, 7)}, opset=20)
    assert op_names(model) == ["transpose", "matmul", "reshape", "image.grid_sample"]


def test_affine_grid_axis_of_one_element_is_at_zero_when_aligned():
    # As PyTorch's affine_grid (onnxruntime puts it at 1, ONNX's reference at -1).
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], "float32")
    model = make_model([node("AffineGrid", ["theta", "size"], align_corners=1)],
                       {"theta": theta}, {"size": i64(1, 1, 1, 3)}, opset=20)
    got = run_passhost(model, {"theta": theta})[0]
    np.testing.assert_allclose(got[0, 0], [[-1, 0], [0, 0], [1, 0]])


@pytest.mark.parametrize(("theta", "size", "message"), [
    ((1, 2, 3), (1, 1, 4), "expected size \\(N, C, H, W\\) or"),
    ((1, 2, 3), (1, 1, 2, 3, 4), "expected theta of shape \\[1, 3, 4\\]"),
    ((2, 2, 3), (1, 1, 2, 3), "expected theta of shape \\[1, 2, 3\\]"),
    ((1, 2, 3), (1, 1, -2, 3), "of lengths >= 0"),
])
def test_affine_grid_rejects_mismatched_sizes(theta, size, message):
    model = make_model([node("AffineGrid", ["theta", "size"])], {"theta": rand(*theta)},
                       {"size": i64(*size)}, opset=20)
    with pytest.raises(OnnxImportError, match=f"AffineGrid node .*{message}"):
        from_onnx(model)


def test_affine_grid_theta_must_be_floats():
    model = make_model([node("AffineGrid", ["theta", "size"])],
                       {"theta": np.ones((1, 2, 3), "int32")}, {"size": i64(1, 1, 2, 2)},
                       opset=20)
    with pytest.raises(OnnxImportError, match="expected theta of dtype float16, float32, "
                                              "float64, bfloat16, found int32"):
        from_onnx(model)


def test_affine_grid_size_must_be_known():
    model = make_model([node("AffineGrid", ["theta", "size"])],
                       {"theta": rand(1, 2, 3), "size": i64(1, 1, 2, 2)}, opset=20)
    with pytest.raises(OnnxUnknownOperandError, match="size \\(input 1, 'size'\\) must be known"):
        from_onnx(model)


# -- RoiAlign --------------------------------------------------------------------------------
def boxes(count: int, h: int, w: int) -> np.ndarray:
    """Boxes (x1, y1, x2, y2), some partly outside an h x w image, some reversed."""
    start = RNG.uniform(-3, [w + 1, h + 1], (count, 2))
    return np.concatenate([start, start + RNG.uniform(-1, 8, (count, 2))], 1).astype("float32")


@settings(max_examples=40, deadline=None)
@given(opset=st.sampled_from([10, 16]), mode=st.sampled_from(["avg", "max"]),
       transform=st.sampled_from(["half_pixel", "output_half_pixel"]),
       ratio=st.integers(0, 3), scale=st.sampled_from([1.0, 0.5, 0.25]),
       out=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       image=st.tuples(st.integers(1, 8), st.integers(1, 8)), count=st.integers(1, 5))
def test_roi_align(opset, mode, transform, ratio, scale, out, image, count):
    attrs = {"mode": mode, "output_height": out[0], "output_width": out[1],
             "sampling_ratio": ratio, "spatial_scale": scale}
    if opset == 16:
        attrs["coordinate_transformation_mode"] = transform
    check([node("RoiAlign", ["x", "rois", "index"], **attrs)],
          {"x": rand(2, 3, *image), "rois": boxes(count, *image),
           "index": RNG.integers(0, 2, count).astype("int64")}, opset=opset)


def test_roi_align_defaults():
    inputs = {"x": rand(1, 2, 5, 5), "rois": boxes(3, 5, 5), "index": i64(0, 0, 0)}
    for opset in (10, 16):
        check([node("RoiAlign", ["x", "rois", "index"])], inputs, opset=opset)


def test_roi_align_of_large_boxes_samples_adaptively():
    x = rand(2, 4, 32, 24)
    rois = np.array([[0, 0, 23, 31], [2.5, 3.5, 20.25, 9.0], [10, 10, 11, 30]], "float32")
    for mode in ("avg", "max"):
        check([node("RoiAlign", ["x", "rois", "index"], mode=mode, output_height=3,
                    output_width=2, spatial_scale=1.0)],
              {"x": x, "rois": rois, "index": i64(1, 0, 1)}, opset=16)


def test_roi_align_of_double_and_half_floats():
    x, rois, index = rand(1, 2, 6, 6), boxes(4, 6, 6), i64(0, 0, 0, 0)
    model = make_model([node("RoiAlign", ["x", "rois", "index"], output_height=2,
                             output_width=3)], {"x": x, "rois": rois, "index": index}, opset=16)
    want = run_onnxruntime(model, {"x": x, "rois": rois, "index": index})[0]
    for dtype, tol in (("float64", 1e-5), ("float16", 2e-2)):
        xd, rd = x.astype(dtype), rois.astype(dtype)
        got = run_passhost(make_model([node("RoiAlign", ["x", "rois", "index"], output_height=2,
                                            output_width=3)],
                                      {"x": xd, "rois": rd, "index": index}, opset=16),
                           {"x": xd, "rois": rd, "index": index})[0]
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_roi_align_batch_index_out_of_range_fails_when_run():
    x = relay.var("x", shape=(2, 1, 3, 3))
    rois = relay.const(np.array([[0, 0, 2, 2]], "float32"))
    func = relay.Function([x], relay.roi_align(x, rois, relay.const(i64(2))))
    with pytest.raises(IndexRangeError, match="batch index 2 is out of range \\[0, 2\\)"):
        relay.evaluate(func, rand(2, 1, 3, 3))


@pytest.mark.parametrize(("opset", "attrs", "message"), [
    (16, {"mode": "sum"}, "expected mode avg, max, found 'sum'"),
    (16, {"coordinate_transformation_mode": "align_corners"},
     "expected coordinate_transformation_mode half_pixel, output_half_pixel"),
    (10, {"output_height": 0}, "expected output_height and output_width >= 1, found \\[0, 1\\]"),
    (16, {"sampling_ratio": -1}, "expected sampling_ratio >= 0, found -1"),
])
def test_roi_align_rejects_bad_attributes(opset, attrs, message):
    model = make_model([node("RoiAlign", ["x", "rois", "index"], **attrs)],
                       {"x": rand(1, 1, 4, 4), "rois": boxes(2, 4, 4), "index": i64(0, 0)},
                       opset=opset)
    with pytest.raises(OnnxImportError, match=f"RoiAlign node 'RoiAlign_\\d+': {message}"):
        from_onnx(model)


@pytest.mark.parametrize(("rois", "index", "message"), [
    (np.zeros((2, 5), "float32"), i64(0, 0), "argument 'rois' expected boxes \\(R, 4\\)"),
    (np.zeros((2, 4), "float32"), i64(0), "argument 'batch_indices' expected one batch index"),
    (np.zeros((2, 4), "float64"), i64(0, 0), "argument 'rois' expected dtype float32"),
])
def test_roi_align_rejects_mismatched_inputs(rois, index, message):
    model = make_model([node("RoiAlign", ["x", "rois", "index"])],
                       {"x": rand(1, 1, 4, 4), "rois": rois, "index": index}, opset=16)
    with pytest.raises(OnnxImportError, match=f"RoiAlign node .*{message}"):
        from_onnx(model)


# -- Col2Im ----------------------------------------------------------------------------------
@st.composite
def col2im_cases(draw, ranks=(1, 2, 3)):
    """image_shape, block_shape and attributes whose blocks fit the padded image."""
    rank = draw(st.sampled_from(ranks))
    ints = lambda lo, hi, n=rank: draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))  # noqa: E731
    image, block = ints(2, 6), ints(1, 3)
    attrs = {"strides": ints(1, 3), "dilations": ints(1, 2), "pads": ints(0, 2, 2 * rank)}
    blocks = window_out_sizes(image, block, attrs["strides"], attrs["dilations"], attrs["pads"])
    if min(blocks) < 1:
        attrs = {}
        blocks = window_out_sizes(image, [1] * rank, [1] * rank, [1] * rank, [0] * 2 * rank)
        block = [1] * rank
    return image, block, attrs, int(np.prod(blocks))


@settings(max_examples=30, deadline=None)
@given(case=col2im_cases(), channels=st.integers(1, 3))
def test_col2im(case, channels):
    image, block, attrs, length = case
    x = rand(2, channels * int(np.prod(block)), length)
    nodes = [node("Col2Im", ["x", "image_shape", "block_shape"], **attrs)]
    inits = {"image_shape": i64(*image), "block_shape": i64(*block)}
    if len(image) == 2:
        check(nodes, {"x": x}, inits, opset=18)
    else:
        check_reference(nodes, {"x": x}, inits, opset=18)


def test_col2im_folds_what_im2col_unfolds():
    # Every element of a 3x4 image appears once per block covering it: folding the
    # unfolded image gives it times that count.
    image = np.arange(12, dtype="int32").reshape(1, 1, 3, 4)
    cols = np.stack([image[0, 0, i:i + 2, j:j + 2].reshape(-1)
                     for i in range(2) for j in range(3)], axis=1)[None]
    model = make_model([node("Col2Im", ["x", "image_shape", "block_shape"])], {"x": cols},
                       {"image_shape": i64(3, 4), "block_shape": i64(2, 2)}, opset=18)
    count = np.array([[1, 2, 2, 1], [2, 4, 4, 2], [1, 2, 2, 1]])
    np.testing.assert_array_equal(run_passhost(model, {"x": cols})[0], image * count)


@pytest.mark.parametrize(("x", "image", "block", "attrs", "message"), [
    ((1, 4, 4), (3, 3), (2,), {}, "expected image_shape and block_shape of one length"),
    ((4, 4), (3, 3), (2, 2), {}, "expected 3-D input"),
    ((1, 5, 4), (3, 3), (2, 2), {}, "argument 'data' expected \\(N, C \\* 4, 4\\)"),
    ((1, 4, 5), (3, 3), (2, 2), {}, "argument 'data' expected \\(N, C \\* 4, 4\\)"),
    ((1, 4, 4), (3, 3), (2, 2), {"strides": [1]}, "expected strides of 2 ints >= 1"),
    ((1, 4, 4), (3, 3), (2, 2), {"pads": [0, 0, -1, 0]}, "expected pads of 4 ints >= 0"),
    ((1, 4, 4), (3, 3), (4, 2), {}, "attribute 'block_shape' expected a dilated block"),
])
def test_col2im_rejects_mismatched_shapes(x, image, block, attrs, message):
    model = make_model([node("Col2Im", ["x", "image_shape", "block_shape"], **attrs)],
                       {"x": rand(*x)}, {"image_shape": i64(*image), "block_shape": i64(*block)},
                       opset=18)
    with pytest.raises(OnnxImportError, match=f"Col2Im node .*{message}"):
        from_onnx(model)


def test_col2im_shapes_must_be_known():
    model = make_model([node("Col2Im", ["x", "image_shape", "block_shape"])],
                       {"x": rand(1, 4, 4), "image_shape": i64(3, 3)},
                       {"block_shape": i64(2, 2)}, opset=18)
    with pytest.raises(OnnxUnknownOperandError, match="image_shape \\(input 1"):
        from_onnx(model)


# -- CenterCropPad ---------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 6), min_size=1, max_size=4))
def test_center_crop_pad(data, shape):
    rank = len(shape)
    axes = data.draw(st.none() | st.lists(st.integers(-rank, rank - 1), min_size=1,
                                          max_size=rank, unique_by=lambda a: a % rank))
    count = rank if axes is None else len(axes)
    target = data.draw(st.lists(st.integers(0, 8), min_size=count, max_size=count))
    attrs = {} if axes is None else {"axes": axes}
    check([node("CenterCropPad", ["x", "shape"], **attrs)], {"x": rand(*shape)},
          {"shape": i64(*target)}, opset=18)


def test_center_crop_pad_of_integers_and_bools():
    for x in (np.arange(30, dtype="int8").reshape(5, 6), rand(5, 6) > 0):
        check([node("CenterCropPad", ["x", "shape"])], {"x": x}, {"shape": i64(2, 9)},
              opset=18)


def test_center_crop_pad_is_a_slice_and_a_pad():
    model = make_model([node("CenterCropPad", ["x", "shape"], axes=[0, 1])],
                       {"x": rand(6, 3, 2)}, {"shape": i64(3, 6)}, opset=18)
    assert op_names(model) == ["strided_slice", "nn.pad"]
    same = make_model([node("CenterCropPad", ["x", "shape"])], {"x": rand(6, 3)},
                      {"shape": i64(6, 3)}, opset=18)
    assert op_names(same) == []


@pytest.mark.parametrize(("attrs", "shape", "message"), [
    ({"axes": [0, -2]}, (2, 2), "expected distinct axes, found \\[0, -2\\]"),
    ({"axes": [2]}, (2,), "expected an axis in \\[-2, 2\\), found 2"),
    ({}, (2, 2, 2), "expected shape of 2 lengths >= 0 \\(one per axis\\)"),
    ({}, (2, -1), "expected shape of 2 lengths >= 0"),
])
def test_center_crop_pad_rejects_bad_axes_and_shapes(attrs, shape, message):
    model = make_model([node("CenterCropPad", ["x", "shape"], **attrs)], {"x": rand(4, 4)},
                       {"shape": i64(*shape)}, opset=18)
    with pytest.raises(OnnxImportError, match=f"CenterCropPad node .*{message}"):
        from_onnx(model)
