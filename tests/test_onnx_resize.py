"""ONNX Resize and Upsample against onnxruntime, and against ONNX's reference implementation
where onnxruntime cannot run a case (linear and cubic beyond 3 spatial axes or on outer
axes) or computes it otherwise: with ``scales`` whose output length ``scale * in`` is not a
whole number, ONNX's reference (and so the conformance suite) uses that fractional length in
``align_corners``, ``pytorch_half_pixel`` and ``tf_crop_and_resize``, where onnxruntime uses
the rounded one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.relay.visitor import post_order  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    check,
    make_model,
    node,
    rand,
    run_onnxruntime,
    run_passhost,
)

MODES = ("nearest", "linear", "cubic")
COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def f32(*values: float) -> np.ndarray:
    return np.array(values, "float32")


def i64(*values: int) -> np.ndarray:
    return np.array(values, "int64")


def resize(inputs=("x", "roi", "scales", "sizes"), **attrs):
    return node("Resize", inputs, **attrs)


def check_reference(nodes, inputs, initializers, opset=19, atol=1e-5):
    """Compile with passhost and compare with ONNX's reference implementation."""
    model = make_model(nodes, inputs, initializers, opset=opset)
    want = ReferenceEvaluator(model).run(None, inputs)
    got = run_passhost(model, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


@st.composite
def resize_options(draw, modes=MODES):
    """Attributes of a Resize node: mode and its options."""
    mode = draw(st.sampled_from(modes))
    attrs = {"mode": mode,
             "coordinate_transformation_mode": draw(st.sampled_from(COORDINATES))}
    if mode == "nearest":
        attrs["nearest_mode"] = draw(st.sampled_from(NEAREST))
    else:
        attrs["antialias"] = draw(st.integers(0, 1))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = draw(st.sampled_from([-0.75, -0.5]))
        attrs["exclude_outside"] = draw(st.integers(0, 1))
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        attrs["extrapolation_value"] = draw(st.sampled_from([0.0, -3.5]))
    return attrs


def _roi(draw, count):
    """Region starts and ends exact in binary, so that no coordinate lands on an edge by a
    rounding (ONNX's reference subtracts them in float32, passhost in float64)."""
    starts = draw(st.lists(st.sampled_from([-0.25, 0.0, 0.125, 0.375]), min_size=count,
                           max_size=count))
    ends = draw(st.lists(st.sampled_from([0.625, 0.875, 1.0, 1.25]), min_size=count,
                         max_size=count))
    return f32(*starts, *ends)


# -- against onnxruntime ---------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(data=st.data(), attrs=resize_options())
def test_resize_of_nchw_images_to_sizes(data, attrs):
    h, w = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    sizes = i64(2, 3, data.draw(st.integers(1, 9)), data.draw(st.integers(1, 9)))
    inits = {"sizes": sizes}
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        # onnxruntime's nearest extrapolates only where the rounded coordinate is outside
        # (ONNX: where the coordinate is), and onnxruntime ignores the roi of an axis that
        # keeps its length; ONNX's reference checks both cases below.
        assume(attrs["mode"] != "nearest" and sizes[2] != h and sizes[3] != w)
        inits["roi"] = np.concatenate([f32(0, 0), _roi(data.draw, 2)[:2], f32(1, 1),
                                       _roi(data.draw, 2)[2:]])
    check([resize(("x", "roi" if "roi" in inits else "", "", "sizes"), **attrs)],
          {"x": rand(2, 3, h, w)}, inits, opset=19)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("coordinates", COORDINATES[:-1])
@pytest.mark.parametrize("scales", [(2.0, 0.5), (1.5, 3.0), (0.25, 1.0)])
def test_resize_of_nchw_images_by_scales(mode, coordinates, scales):
    check([resize(("x", "", "scales"), mode=mode, coordinate_transformation_mode=coordinates)],
          {"x": rand(1, 2, 4, 6)}, {"scales": f32(1, 1, *scales)}, opset=19)


@pytest.mark.parametrize("opset", [11, 13, 18])
@pytest.mark.parametrize("mode", MODES)
def test_resize_11_13_18(opset, mode):
    inits = {"roi": f32(), "scales": f32(1, 1, 2, 1.5)}
    check([resize(("x", "roi", "scales"), mode=mode, coordinate_transformation_mode="asymmetric",
                  exclude_outside=int(mode == "cubic"))],
          {"x": rand(1, 2, 3, 4)}, inits, opset=opset)


def test_resize_11_with_sizes_and_empty_scales():
    inits = {"roi": f32(), "scales": f32(), "sizes": i64(1, 2, 5, 7)}
    check([resize(mode="linear")], {"x": rand(1, 2, 3, 4)}, inits, opset=11)


def test_resize_11_tf_half_pixel_for_nn():
    check([resize(("x", "roi", "scales"), coordinate_transformation_mode="tf_half_pixel_for_nn")],
          {"x": rand(1, 2, 3, 4)}, {"roi": f32(), "scales": f32(1, 1, 2, 1.5)}, opset=11)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [(1, 1, 2, 2.5), (1, 1, 0.6, 0.5), (1, 1, 0.6, 2.5)])
def test_resize_10(mode, scales):
    check([node("Resize", ["x", "scales"], mode=mode)], {"x": rand(1, 2, 5, 6)},
          {"scales": f32(*scales)}, opset=10)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("opset", [7, 9])
def test_upsample(mode, opset):
    scales = f32(1, 1, 2, 2.5)
    if opset == 7:
        nodes, inits = [node("Upsample", ["x"], mode=mode, scales=scales.tolist())], {}
    else:
        nodes, inits = [node("Upsample", ["x", "scales"], mode=mode)], {"scales": scales}
    check(nodes, {"x": rand(2, 3, 4, 5)}, inits, opset=opset)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_upsample_1_as_upsample_7(mode):
    # onnxruntime has no Upsample-1: the same resize as Upsample-7 is the expectation.
    x = rand(1, 2, 3, 4)
    old = make_model([node("Upsample", ["x"], mode=mode, height_scale=2.0, width_scale=2.5)],
                     {"x": x}, opset=6)
    new = make_model([node("Upsample", ["x"], mode=mode.replace("bi", ""),
                           scales=[1.0, 1.0, 2.0, 2.5])], {"x": x}, opset=7)
    (got,), (want,) = run_passhost(old, {"x": x}), run_onnxruntime(new, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scales", [(1, 1, 2, 2, 2), (1, 1, 0.5, 2, 1.5)])
def test_resize_of_three_spatial_axes(scales):
    check([resize(("x", "", "scales"), mode="linear")], {"x": rand(1, 2, 4, 3, 4)},
          {"scales": f32(*scales)}, opset=19)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8"])
def test_resize_nearest_of_integers(dtype):
    x = (rand(1, 2, 3, 4) * 50).astype(dtype)
    check([resize(("x", "", "scales"), nearest_mode="ceil")], {"x": x},
          {"scales": f32(1, 1, 2, 0.75)}, opset=19)


def test_resize_of_half_floats():
    x = rand(1, 2, 3, 4).astype("float16")
    model = make_model([resize(("x", "", "scales"), mode="cubic")], {"x": x},
                       {"scales": f32(1, 1, 2, 2)}, opset=19)
    (got,), (want,) = run_passhost(model, {"x": x}), run_onnxruntime(model, {"x": x})
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("axes, mode", [([-1, -2], "linear"), ([3, -2], "cubic"),
                                        ([-4], "nearest")])
def test_resize_of_negative_axes(axes, mode):
    sizes = i64(*[(2, 3, 5, 7)[a] for a in axes])
    check([resize(("x", "", "", "sizes"), mode=mode, axes=axes)], {"x": rand(1, 2, 3, 4)},
          {"sizes": sizes}, opset=19)


def test_resize_keeps_a_single_operator():
    model = make_model([resize(("x", "", "scales"), mode="linear")], {"x": rand(1, 2, 3, 4)},
                       {"scales": f32(1, 1, 2, 2)})
    mod, _ = from_onnx(model)
    calls = [n.op.name for n in post_order(mod["main"].body) if hasattr(n, "op")]
    assert calls == ["image.resize"]


# -- against ONNX's reference ----------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(data=st.data(), attrs=resize_options())
def test_resize_of_any_axes_by_scales_or_sizes(data, attrs):
    # ONNX's reference maps an output of length 1 to -0.5 in pytorch_half_pixel, where
    # ONNX's operator definition (and onnxruntime, checked above) says 0.
    assume(attrs["coordinate_transformation_mode"] != "pytorch_half_pixel")
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    rank = len(shape)
    axes = sorted(data.draw(st.sets(st.integers(0, rank - 1), min_size=1)))
    if len(axes) < rank or data.draw(st.booleans()):
        attrs["axes"] = axes  # not negative: ONNX's reference takes them as given
    inits = {}
    if data.draw(st.booleans()):
        inits["scales"] = f32(*data.draw(st.lists(
            st.sampled_from([0.3, 0.5, 0.6, 0.8, 1.0, 1.5, 2.0, 2.5]), min_size=len(axes),
            max_size=len(axes))))
    else:
        inits["sizes"] = i64(*data.draw(st.lists(st.integers(1, 8), min_size=len(axes),
                                                 max_size=len(axes))))
        if len(axes) > 1:
            attrs["keep_aspect_ratio_policy"] = data.draw(
                st.sampled_from(["stretch", "not_larger", "not_smaller"]))
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        inits["roi"] = _roi(data.draw, len(axes))
    names = ("x", "roi" if "roi" in inits else "", "scales" if "scales" in inits else "",
             "sizes" if "sizes" in inits else "")
    check_reference([resize(names, **attrs)], {"x": rand(*shape)}, inits)


@pytest.mark.parametrize("dtype", ["uint8", "int16"])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_interpolates_integers_rounding_half_to_even(dtype, mode):
    x = np.arange(24).reshape(1, 2, 3, 4).astype(dtype) * 9
    check_reference([resize(("x", "", "scales"), mode=mode)], {"x": x},
                    {"scales": f32(1, 1, 2, 2.5)}, atol=0)


# -- malformed nodes -------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, init, opset, message", [
    ([resize(("x", "", "scales", "sizes"))], {"scales": f32(1, 1, 2), "sizes": i64(2, 3, 4)},
     19, r"Resize node .*exactly one of scales \(input 2\) and sizes \(input 3\), found both"),
    ([resize(("x",))], {}, 19, r"Resize node .*exactly one of .* found neither"),
    ([resize(("x", "", "scales"))], {"scales": f32(1, 2)}, 19,
     r"Resize node .*3 finite scales > 0, found \[1.0, 2.0\]"),
    ([resize(("x", "", "scales"))], {"scales": f32(1, 0, 2)}, 19,
     r"Resize node .*scales > 0"),
    ([resize(("x", "", "", "sizes"))], {"sizes": i64(2, -3, 4)}, 19,
     r"Resize node .*3 sizes >= 0"),
    ([resize(("x", "", "scales"), mode="bilinear")], {"scales": f32(1, 1, 2)}, 19,
     r"Resize node .*mode nearest, linear, cubic, found 'bilinear'"),
    ([resize(("x", "", "scales"), coordinate_transformation_mode="corners")],
     {"scales": f32(1, 1, 2)}, 19, r"Resize node .*coordinate_transformation_mode half_pixel"),
    ([resize(("x", "", "scales"), nearest_mode="round")], {"scales": f32(1, 1, 2)}, 19,
     r"Resize node .*nearest_mode round_prefer_floor"),
    ([resize(("x", "", "", "sizes"), keep_aspect_ratio_policy="fit")], {"sizes": i64(2, 3, 4)},
     19, r"Resize node .*keep_aspect_ratio_policy stretch"),
    ([resize(("x", "", "scales"), axes=[1, -2])], {"scales": f32(2, 2)}, 19,
     r"Resize node .*distinct axes"),
    ([resize(("x", "", "scales"), axes=[3])], {"scales": f32(2)}, 19,
     r"Resize node .*axis in \[-3, 3\), found 3"),
    ([resize(("x", "roi", "scales"), coordinate_transformation_mode="tf_crop_and_resize")],
     {"roi": f32(0, 1), "scales": f32(1, 1, 2)}, 19, r"Resize node .*roi of 6 numbers"),
    ([resize(("x", "", "x"))], {}, 19, r"Resize node .*must be known while importing"),
    ([node("Resize", ["x", "s"], mode="cubic")], {"s": f32(1, 1, 2)}, 10,
     r"Resize node .*mode nearest, linear, found 'cubic'"),
    ([node("Upsample", ["x", "s"])], {"s": f32(1, 1, 0.5)}, 9,
     r"Upsample node .*3 finite scales >= 1"),
    ([node("Upsample", ["x"], scales=[1.0, 2.0])], {}, 7,
     r"Upsample node .*3 finite scales >= 1, found \[1.0, 2.0\]"),
    ([node("Upsample", ["x"], height_scale=2.0, width_scale=2.0)], {}, 6,
     r"Upsample node .*4-D NCHW input"),
])
def test_malformed_nodes_name_the_node(nodes, init, opset, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(make_model(nodes, {"x": rand(2, 3, 4)}, init, opset=opset))
