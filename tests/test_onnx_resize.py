"""ONNX Resize and Upsample against onnxruntime, and against ONNX's reference implementation
where onnxruntime cannot run a case (linear and cubic beyond 3 spatial axes or on outer
axes) or computes it otherwise: with ``scales`` whose output length ``scale * in`` is not a
whole number, ONNX's reference (and so the conformance suite) uses that fractional length in
``align_corners``, ``pytorch_half_pixel`` and ``tf_crop_and_resize``, where onnxruntime uses
the rounded one.

ONNX defines the coordinates in exact arithmetic, and passhost computes them so that a
coordinate that is a whole or a half number comes out exact, which decides where ``nearest``
rounds to. onnxruntime (in float32) and ONNX's reference (in float64) can land a rounding off
such a coordinate; the tests below compare those outputs with the one that computes them
exactly, or with the exact definition itself (``coordinate`` with fractions)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost import relay  # noqa: E402
from passhost.errors import IRTypeError  # noqa: E402
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


# -- ONNX's coordinates in exact arithmetic --------------------------------------------------
def coordinate(mode, x, n, m, scale, start=0.0, end=1.0, kind=Fraction):
    """ONNX's input coordinate of output index ``x`` of an axis resized from ``n`` to ``m`` at
    ``scale`` (region ``start`` .. ``end``), computed as written in ONNX's definition in the
    numbers ``kind``: Fraction for the definition itself, float as ONNX's reference does."""
    x, n, m, scale, start, end = (kind(v) for v in (x, n, m, scale, start, end))
    zero, half = kind(0), kind(1) / 2
    out = scale * n
    if mode == "half_pixel_symmetric":
        adjustment = m / out
        return n / 2 * (1 - adjustment) + (x + half) / scale - half
    if mode in ("half_pixel", "pytorch_half_pixel"):
        return zero if mode == "pytorch_half_pixel" and out == 1 else (x + half) / scale - half
    if mode == "asymmetric":
        return x / scale
    if mode == "align_corners":
        return zero if out == 1 else x * (n - 1) / (out - 1)
    if out == 1:  # tf_crop_and_resize
        return (end - start) * (n - 1) / 2 + start * (n - 1)
    return x * (end - start) * (n - 1) / (out - 1) + start * (n - 1)


def axis_geometry(shape, attrs, inits):
    """Each resized axis as ``(n, m, scale, start, end)`` by ONNX's definition: the given
    (float32) scales and ``floor(n * scale)``, or ``m / n`` of sizes, or with a
    keep_aspect_ratio_policy their min or max and the lengths ``n * scale`` rounded half up."""
    axes = attrs.get("axes", range(len(shape)))
    if "scales" in inits:
        scales = [Fraction(float(s)) for s in inits["scales"]]
        sizes = [math.floor(shape[a] * s) for a, s in zip(axes, scales)]
    else:
        sizes = [int(m) for m in inits["sizes"]]
        scales = [Fraction(m, shape[a]) for a, m in zip(axes, sizes)]
        policy = attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            common = min(scales) if policy == "not_larger" else max(scales)
            scales = [common] * len(axes)
            sizes = [math.floor(shape[a] * common + Fraction(1, 2)) for a in axes]
    roi = [float(r) for r in inits.get("roi", [0.0] * len(axes) + [1.0] * len(axes))]
    return [(shape[a], m, s, roi[i], roi[len(axes) + i])
            for i, (a, m, s) in enumerate(zip(axes, sizes, scales))
            if (shape[a], s, roi[i], roi[len(axes) + i]) != (m, 1, 0.0, 1.0)]


def on_rounding_boundary(mode, nearest_mode, n, m, scale):
    """Which outputs of an axis have a coordinate exactly where ``nearest_mode`` decides: a
    whole number for floor and ceil, a half for the round modes."""
    boundary = Fraction(0) if nearest_mode in ("floor", "ceil") else Fraction(1, 2)
    return np.array([coordinate(mode, x, n, m, scale) % 1 == boundary for x in range(m)])


def reference_misses_exact(shape, attrs, inits):
    """Whether ONNX's reference computes, in float64, a rounding off some coordinate that is
    a whole or a half number in exact arithmetic (half_pixel_symmetric's adjustment, the
    rounded scale of a keep_aspect_ratio_policy)."""
    mode = attrs["coordinate_transformation_mode"]
    for n, m, scale, start, end in axis_geometry(shape, attrs, inits):
        for x in range(m):
            exact = coordinate(mode, x, n, m, scale, start, end)
            if exact % Fraction(1, 2) == 0 and \
                    coordinate(mode, x, n, m, scale, start, end, kind=float) != exact:
                return True
    return False


# -- against onnxruntime ---------------------------------------------------------------------
def check_reference_where(from_reference, nodes, inputs, initializers, opset=19):
    """Compare with onnxruntime, except the outputs selected by ``from_reference`` (a mask
    broadcast over the output): those with ONNX's reference."""
    model = make_model(nodes, inputs, initializers, opset=opset)
    want = np.where(from_reference, ReferenceEvaluator(model).run(None, inputs)[0],
                    run_onnxruntime(model, inputs)[0])
    (got,) = run_passhost(model, inputs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


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
    nodes = [resize(("x", "roi" if "roi" in inits else "", "", "sizes"), **attrs)]
    if attrs["mode"] == "nearest":
        # onnxruntime computes the coordinates in float32, so one that is exactly a whole
        # number (floor, ceil) or a half (round_*) can land a rounding below or above it and
        # round the other way (w=5 to 3 with half_pixel_symmetric: 2 for x=1, where
        # onnxruntime takes 1). Those outputs are compared with ONNX's reference, which
        # computes them exactly for the lengths drawn here.
        rows, cols = (on_rounding_boundary(attrs["coordinate_transformation_mode"],
                                           attrs["nearest_mode"], n, int(m), Fraction(int(m), n))
                      for n, m in ((h, sizes[2]), (w, sizes[3])))
        check_reference_where(rows[:, None] | cols[None, :], nodes, {"x": rand(2, 3, h, w)},
                              inits)
    else:
        check(nodes, {"x": rand(2, 3, h, w)}, inits, opset=19)


@pytest.mark.parametrize("nearest_mode, want", [
    ("floor", [0, 2, 3]), ("ceil", [1, 2, 4]), ("round_prefer_floor", [0, 2, 4]),
    ("round_prefer_ceil", [0, 2, 4])])
def test_resize_nearest_half_pixel_symmetric_on_a_whole_coordinate(nearest_mode, want):
    # Width 5 to 3: coordinates 1/3, 2 and 11/3; onnxruntime's float32 lands below 2 and
    # floor takes 1 there.
    x = np.arange(5, dtype="float32").reshape(1, 1, 1, 5)
    nodes = [resize(("x", "", "", "sizes"), mode="nearest", nearest_mode=nearest_mode,
                    coordinate_transformation_mode="half_pixel_symmetric")]
    model = make_model(nodes, {"x": x}, {"sizes": i64(1, 1, 1, 3)}, opset=19)
    (got,), (ref,) = run_passhost(model, {"x": x}), ReferenceEvaluator(model).run(None, {"x": x})
    assert got.reshape(-1).tolist() == ref.reshape(-1).tolist() == want


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
    # ONNX's reference computes half_pixel_symmetric's adjustment, and divides by a rounded
    # scale (sizes / in, or their min or max under a keep_aspect_ratio_policy), in float64:
    # a coordinate that is a whole or a half number can come out a rounding off it. Its
    # nearest then rounds the other way, and just above a whole number it takes every
    # mode's taps one element too low (it finds them from x_ori + pad, where the rounding
    # is lost). The tests below check such cases against the exact definition.
    assume(not reference_misses_exact(shape, attrs, inits))
    names = ("x", "roi" if "roi" in inits else "", "scales" if "scales" in inits else "",
             "sizes" if "sizes" in inits else "")
    check_reference([resize(names, **attrs)], {"x": rand(*shape)}, inits)


def nearest_indices(mode, nearest_mode, n, m, scale):
    """ONNX's nearest input index of each output of an axis, in exact arithmetic."""
    rounded = {"floor": math.floor, "ceil": math.ceil,
               "round_prefer_floor": lambda c: math.ceil(c - Fraction(1, 2)),
               "round_prefer_ceil": lambda c: math.floor(c + Fraction(1, 2))}[nearest_mode]
    return [min(max(rounded(coordinate(mode, x, n, m, scale)), 0), n - 1) for x in range(m)]


@pytest.mark.parametrize("nearest_mode, want", [
    ("round_prefer_floor", [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]),
    ("round_prefer_ceil", [0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]),
    ("floor", [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4]),
    ("ceil", [0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4])])
def test_resize_nearest_half_pixel_symmetric_with_an_aspect_ratio_policy(nearest_mode, want):
    # Sizes (1, 1, 7, 1) of (1, 5, 2, 1), not_smaller: scale 7 / 2 on every axis, axis 1 of
    # length round(17.5) = 18. Its coordinates (2x - 3) / 7 are whole at x = 5 and 12, where
    # ONNX's reference lands a rounding above (1 + 2**-52) and, but for ceil, takes the
    # element before: its taps start from the rounded x_ori + 1, a whole number.
    x = np.arange(10, dtype="float32").reshape(1, 5, 2, 1)
    nodes = [resize(("x", "", "", "sizes"), mode="nearest", nearest_mode=nearest_mode,
                    coordinate_transformation_mode="half_pixel_symmetric",
                    keep_aspect_ratio_policy="not_smaller", axes=[0, 1, 2, 3])]
    (got,) = run_passhost(make_model(nodes, {"x": x}, {"sizes": i64(1, 1, 7, 1)}, opset=19),
                          {"x": x})
    assert got.shape == (4, 18, 7, 4)
    assert (got[0, :, 0, 0] / 2).tolist() == want
    if nearest_mode != "floor":  # onnxruntime's float32 coordinate lands below 1 at x = 5
        check(nodes, {"x": x}, {"sizes": i64(1, 1, 7, 1)}, opset=19)


@pytest.mark.parametrize("mode, n, m", [
    ("half_pixel", 7, 9), ("half_pixel", 7, 17), ("half_pixel", 10, 14), ("asymmetric", 7, 18),
    ("align_corners", 7, 29), ("half_pixel_symmetric", 9, 21)])
@pytest.mark.parametrize("nearest_mode", NEAREST)
def test_resize_nearest_rounds_exact_coordinates(mode, n, m, nearest_mode):
    # Sizes m / n: float64 coordinates divided by the rounded m / n miss whole and half
    # numbers (7 to 9, half_pixel: 3 at x = 4 comes out 2.9999999999999996).
    x = np.arange(n, dtype="float32").reshape(1, n)
    nodes = [resize(("x", "", "", "sizes"), mode="nearest", nearest_mode=nearest_mode,
                    coordinate_transformation_mode=mode)]
    (got,) = run_passhost(make_model(nodes, {"x": x}, {"sizes": i64(1, m)}, opset=19), {"x": x})
    assert got[0].tolist() == nearest_indices(mode, nearest_mode, n, m, Fraction(m, n))


@pytest.mark.parametrize("attrs, message", [
    ({"scale_divisors": (1, 2)}, r"scale_divisors.*none, or 2 positive ints with scales"),
    ({"scales": (1.0, 3.0), "scale_divisors": (1, 0)}, r"scale_divisors"),
    ({"scales": (1.0, 3.0), "scale_divisors": (2,)}, r"scale_divisors")])
def test_resize_scale_divisors_are_checked(attrs, message):
    with pytest.raises(IRTypeError, match=message):
        relay.infer_type(relay.resize(relay.var("x", shape=(2, 4)), size=(2, 6), **attrs))


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
