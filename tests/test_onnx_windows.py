"""The ONNX windowed operators (Conv, ConvTranspose, pools, MaxUnpool, DeformConv,
CausalConvWithState) in 1-D, 2-D and 3-D against onnxruntime (or ONNX's reference where
onnxruntime lacks the operator), the operators they become, and their errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx.reference import ReferenceEvaluator

from passhost import relay
from passhost.errors import IRTypeError
from passhost.frontend import OnnxImportError, from_onnx
from passhost.relay import evaluate, infer_type
from passhost.relay.expr import Call
from passhost.relay.visitor import post_order
from test_frontend_onnx import check, make_model, node, rand, run_passhost

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def ops_of(model) -> list[str]:
    """The graph operators a model imports to, in order."""
    mod, _ = from_onnx(model)
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call)]


# -- Conv -------------------------------------------------------------------------------------
CONV_CASES = [
    # 1-D
    ({}, (2, 3, 9), (4, 3, 3)),
    ({"strides": [2], "pads": [1, 2], "dilations": [2], "group": 2}, (2, 4, 11), (6, 2, 3)),
    ({"group": 2, "auto_pad": "SAME_UPPER", "strides": [2]}, (1, 4, 10), (4, 2, 4)),
    ({"auto_pad": "SAME_LOWER", "strides": [3]}, (1, 2, 8), (3, 2, 2)),
    ({"auto_pad": "VALID", "kernel_shape": [3]}, (2, 2, 7), (3, 2, 3)),
    # 3-D
    ({}, (1, 2, 4, 5, 6), (3, 2, 3, 3, 3)),
    ({"strides": [1, 2, 2], "pads": [1, 0, 1, 2, 1, 0], "dilations": [1, 2, 1]},
     (2, 3, 5, 6, 7), (4, 3, 2, 2, 3)),
    ({"group": 3, "auto_pad": "SAME_UPPER", "strides": [2, 1, 2]}, (1, 3, 5, 4, 6),
     (6, 1, 3, 2, 3)),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 2, 1]}, (1, 2, 5, 5, 4), (2, 2, 2, 2, 2)),
]


@pytest.mark.parametrize("attrs, xshape, wshape", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_in_1d_and_3d(attrs, xshape, wshape, bias):
    init = {"w": rand(*wshape)}
    if bias:
        init["b"] = rand(wshape[0])
    check([node("Conv", ["x", *init], **attrs)], {"x": rand(*xshape)}, init)


@pytest.mark.parametrize("xshape, wshape, want", [
    ((1, 3, 8, 8), (4, 3, 3, 3), ["nn.conv2d"]),
    ((1, 3, 8), (4, 3, 3), ["expand_dims", "expand_dims", "nn.conv2d", "squeeze"]),
    ((1, 3, 4, 4, 4), (4, 3, 3, 3, 3), ["nn.conv3d"]),
])
def test_conv_keeps_2d_convolutions_and_puts_1d_ones_on_them(xshape, wshape, want):
    model = make_model([node("Conv", ["x", "w"])], {"x": rand(*xshape)}, {"w": rand(*wshape)})
    assert ops_of(model) == want


@pytest.mark.parametrize("op_type, xshape, want", [
    ("MaxPool", (1, 2, 6, 6), ["nn.max_pool2d"]),
    ("AveragePool", (1, 2, 6), ["expand_dims", "nn.avg_pool2d", "squeeze"]),
    ("MaxPool", (1, 2, 6, 6, 6), ["nn.max_pool3d"]),
    ("AveragePool", (1, 2, 6, 6, 6), ["nn.avg_pool3d"]),
])
def test_pools_keep_2d_pools_and_put_1d_ones_on_them(op_type, xshape, want):
    k = [2] * (len(xshape) - 2)
    model = make_model([node(op_type, ["x"], kernel_shape=k)], {"x": rand(*xshape)})
    assert ops_of(model) == want


@st.composite
def conv_case(draw):
    rank = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 2))
    c, o = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)]
    pads = [draw(st.integers(0, 2)) for _ in range(2 * rank)]
    spatial = [draw(st.integers(max(1, d * (k - 1) + 1 - pads[i] - pads[rank + i]), 6))
               for i, (k, d) in enumerate(zip(kernel, dilations))]
    attrs = {"strides": strides, "dilations": dilations, "group": groups}
    auto = draw(st.sampled_from(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto == "NOTSET":
        attrs["pads"] = pads
    else:
        attrs["auto_pad"] = auto
        if auto != "VALID":  # onnxruntime has no dilated SAME padding
            attrs["dilations"] = dilations = [1] * rank
        spatial = [max(n, d * (k - 1) + 1) for n, k, d in zip(spatial, kernel, dilations)]
    return attrs, (draw(st.integers(1, 2)), c, *spatial), (o, c // groups, *kernel)


@SETTINGS
@given(case=conv_case())
def test_conv_matches_onnxruntime(case):
    attrs, xshape, wshape = case
    check([node("Conv", ["x", "w"], **attrs)], {"x": rand(*xshape)}, {"w": rand(*wshape)})


# -- ConvTranspose ---------------------------------------------------------------------------
CONV_TRANSPOSE_CASES = [
    # 1-D
    ({}, (1, 2, 5), (2, 3, 3)),
    ({"strides": [3], "pads": [1, 2], "output_padding": [1], "dilations": [2]}, (2, 2, 4),
     (2, 2, 3)),
    ({"group": 2, "strides": [2], "output_shape": [10]}, (1, 4, 5), (4, 1, 3)),
    # 2-D
    ({"strides": [2, 3], "pads": [1, 0, 0, 2], "output_padding": [1, 0]}, (1, 3, 4, 3),
     (3, 2, 3, 3)),
    ({"group": 3, "dilations": [2, 1], "kernel_shape": [2, 3]}, (2, 6, 3, 4), (6, 1, 2, 3)),
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 2, 3, 4), (2, 2, 3, 3)),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 3]}, (1, 2, 3, 4), (2, 2, 4, 3)),
    ({"auto_pad": "VALID", "strides": [2, 1]}, (1, 1, 3, 3), (1, 2, 2, 2)),
    ({"strides": [3, 2], "output_shape": [10, 8]}, (1, 1, 3, 3), (1, 2, 3, 3)),
    ({"strides": [2, 2], "output_shape": [5, 5], "auto_pad": "SAME_UPPER"}, (1, 1, 3, 3),
     (1, 2, 3, 3)),
    # 3-D
    ({}, (1, 2, 3, 4, 2), (2, 2, 2, 2, 2)),
    ({"strides": [2, 1, 3], "pads": [0, 1, 1, 1, 0, 0], "output_padding": [1, 0, 2],
      "group": 2}, (1, 4, 3, 3, 2), (4, 1, 3, 2, 3)),
]


@pytest.mark.parametrize("attrs, xshape, wshape", CONV_TRANSPOSE_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose(attrs, xshape, wshape, bias):
    init = {"w": rand(*wshape)}
    if bias:
        init["b"] = rand(wshape[1] * attrs.get("group", 1))
    check([node("ConvTranspose", ["x", *init], **attrs)], {"x": rand(*xshape)}, init)


@st.composite
def conv_transpose_case(draw):
    rank = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 2))
    c, og = groups * draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)]
    spatial = [draw(st.integers(1, 4)) for _ in range(rank)]
    full = [(n - 1) * s + d * (k - 1) + 1
            for n, s, d, k in zip(spatial, strides, dilations, kernel)]
    pads = [draw(st.integers(0, (f - 1) // 2)) for f in full] * 2
    output_padding = [draw(st.integers(0, s - 1)) for s in strides]
    attrs = {"strides": strides, "dilations": dilations, "group": groups, "pads": pads,
             "output_padding": output_padding}
    return attrs, (1, c, *spatial), (c, og, *kernel)


@SETTINGS
@given(case=conv_transpose_case())
def test_conv_transpose_matches_onnxruntime(case):
    attrs, xshape, wshape = case
    check([node("ConvTranspose", ["x", "w"], **attrs)], {"x": rand(*xshape)},
          {"w": rand(*wshape)})


# -- MaxPool, AveragePool ---------------------------------------------------------------------
POOL_CASES = [
    ({"kernel_shape": [3]}, (2, 3, 9)),
    ({"kernel_shape": [3], "strides": [2], "pads": [1, 1], "ceil_mode": 1}, (1, 2, 10)),
    ({"kernel_shape": [2], "dilations": [3], "pads": [0, 1]}, (1, 2, 9)),
    ({"kernel_shape": [4], "strides": [3], "auto_pad": "SAME_LOWER"}, (1, 2, 11)),
    ({"kernel_shape": [2, 2, 2]}, (1, 2, 5, 4, 6)),
    ({"kernel_shape": [3, 2, 3], "strides": [2, 1, 2], "pads": [1, 0, 1, 1, 1, 0]},
     (2, 2, 6, 5, 7)),
    ({"kernel_shape": [3, 3, 2], "strides": [2, 2, 2], "ceil_mode": 1, "pads": [1, 1, 0] * 2},
     (1, 1, 6, 7, 5)),
    ({"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "strides": [1, 2, 1]},
     (1, 2, 5, 5, 6)),
    ({"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "auto_pad": "SAME_UPPER"},
     (1, 2, 5, 6, 7)),
]


@pytest.mark.parametrize("attrs, xshape", POOL_CASES)
@pytest.mark.parametrize("op_type, extra", [
    ("MaxPool", {}), ("AveragePool", {}), ("AveragePool", {"count_include_pad": 1}),
])
def test_pools_in_1d_and_3d(op_type, extra, attrs, xshape):
    if op_type == "AveragePool" and "dilations" in attrs:
        opset = 19
    else:
        opset = 17
    check([node(op_type, ["x"], **attrs, **extra)], {"x": rand(*xshape)}, opset=opset)


@st.composite
def pool_case(draw):
    rank = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [draw(st.integers(1, 2)) for _ in range(rank)]
    pads = [draw(st.integers(0, k - 1)) for k in kernel] * 2  # onnxruntime: pads < kernel
    spatial = [draw(st.integers(d * (k - 1) + 1, 7)) for k, d in zip(kernel, dilations)]
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dilations,
             "pads": pads, "ceil_mode": draw(st.integers(0, 1))}
    return attrs, (1, draw(st.integers(1, 2)), *spatial)


@SETTINGS
@given(case=pool_case(), op=st.sampled_from(["MaxPool", "AveragePool", "AveragePool+pad"]))
def test_pools_match_onnxruntime(case, op):
    attrs, xshape = case
    if op == "AveragePool+pad":
        op, attrs = "AveragePool", {**attrs, "count_include_pad": 1}
    check([node(op, ["x"], **attrs)], {"x": rand(*xshape)}, opset=19)


@pytest.mark.parametrize("xshape", [(2, 3, 9), (1, 2, 6, 5, 7)])
def test_max_pool_of_integers(xshape):
    k = [2] * (len(xshape) - 2)
    x = np.random.default_rng(3).integers(-128, 128, xshape).astype("int8")
    check([node("MaxPool", ["x"], kernel_shape=k, pads=[1] * 2 * len(k))], {"x": x})


@pytest.mark.parametrize("attrs, xshape", [
    ({"kernel_shape": [2], "strides": [2], "pads": [1, 0]}, (2, 2, 7)),
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (2, 3, 6, 7)),
    ({"kernel_shape": [2, 3], "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]},
     (1, 2, 7, 8)),
    ({"kernel_shape": [2, 2], "storage_order": 1, "strides": [1, 2]}, (1, 2, 5, 6)),
    ({"kernel_shape": [2, 2, 2], "strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0]},
     (1, 2, 4, 5, 6)),
    ({"kernel_shape": [2, 2, 2], "storage_order": 1}, (1, 1, 3, 4, 5)),
])
def test_max_pool_indices(attrs, xshape):
    check([node("MaxPool", ["x"], ["y", "i"], **attrs)], {"x": rand(*xshape)},
          outputs=("y", "i"))


@pytest.mark.parametrize("opset, op_type, attrs", [
    (7, "AveragePool", {"kernel_shape": [3], "count_include_pad": 1, "pads": [1, 1]}),
    (8, "MaxPool", {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}),
    (10, "MaxPool", {"kernel_shape": [3], "ceil_mode": 1, "strides": [2]}),
    (11, "AveragePool", {"kernel_shape": [2, 2, 2], "ceil_mode": 1, "strides": [2, 2, 2]}),
])
def test_pools_at_older_opsets(opset, op_type, attrs):
    xshape = (1, 2, *(5,) * len(attrs["kernel_shape"]))
    check([node(op_type, ["x"], **attrs)], {"x": rand(*xshape)}, opset=opset)


@pytest.mark.parametrize("opset, op_type, attrs, wshape", [
    (7, "Conv", {"strides": [2], "auto_pad": "SAME_UPPER"}, (3, 2, 3)),
    (9, "ConvTranspose", {"strides": [2, 2], "output_padding": [1, 0]}, (2, 3, 2, 2)),
    (10, "Conv", {"pads": [1, 0, 1, 0, 1, 1]}, (3, 2, 2, 2, 2)),
])
def test_convolutions_at_older_opsets(opset, op_type, attrs, wshape):
    xshape = (1, 2, *(4,) * (len(wshape) - 2))
    check([node(op_type, ["x", "w"], **attrs)], {"x": rand(*xshape)}, {"w": rand(*wshape)},
          opset=opset)


# -- LpPool and global pools ------------------------------------------------------------------
@pytest.mark.parametrize("attrs, xshape", [
    ({"kernel_shape": [3]}, (2, 3, 8)),
    ({"kernel_shape": [2, 2], "p": 1}, (1, 2, 5, 6)),
    ({"kernel_shape": [3, 2], "p": 3, "strides": [2, 1], "pads": [1, 0, 1, 1]}, (1, 2, 6, 5)),
    ({"kernel_shape": [2, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 2, 5, 7)),
    ({"kernel_shape": [2, 2], "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]},
     (1, 1, 7, 6)),
    ({"kernel_shape": [2, 2, 2], "p": 2, "strides": [1, 2, 1]}, (1, 2, 4, 5, 3)),
])
def test_lp_pool(attrs, xshape):
    check([node("LpPool", ["x"], **attrs)], {"x": rand(*xshape)}, opset=18)


@pytest.mark.parametrize("op_type, attrs", [
    ("GlobalAveragePool", {}), ("GlobalMaxPool", {}), ("GlobalLpPool", {}),
    ("GlobalLpPool", {"p": 1}), ("GlobalLpPool", {"p": 3}),
])
@pytest.mark.parametrize("xshape", [(2, 3, 7), (1, 2, 4, 5), (1, 2, 3, 4, 5)])
def test_global_pools(op_type, attrs, xshape):
    check([node(op_type, ["x"], **attrs)], {"x": rand(*xshape)})


# -- MaxUnpool -------------------------------------------------------------------------------
@pytest.mark.parametrize("xshape, k", [((1, 2, 8), [2]), ((2, 3, 6, 4), [2, 2]),
                                       ((1, 2, 4, 6, 4), [2, 3, 2])])
def test_max_unpool_undoes_a_max_pool(xshape, k):
    nodes = [node("MaxPool", ["x"], ["p", "i"], kernel_shape=k, strides=k),
             node("MaxUnpool", ["p", "i"], kernel_shape=k, strides=k)]
    check(nodes, {"x": rand(*xshape)})


def test_max_unpool_places_a_smaller_unpooling_at_the_start_of_output_shape():
    # ONNX's reference semantics: the indices address the (4, 4) unpooled shape.
    x = np.array([[[[5, 6], [7, 8]]]], dtype="float32")
    indices = np.array([[[[5, 7], [13, 15]]]], dtype="int64")
    model = make_model([node("MaxUnpool", ["x", "i", "s"], kernel_shape=[2, 2],
                             strides=[2, 2])],
                       {"x": x}, {"i": indices, "s": np.array([1, 1, 5, 5], "int64")})
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = run_passhost(model, {"x": x})[0]
    assert got.shape == (1, 1, 5, 5)
    np.testing.assert_array_equal(got, want)


# -- DeformConv ------------------------------------------------------------------------------
@pytest.mark.parametrize("attrs, xshape, wshape, offset_group", [
    ({}, (1, 2, 4, 4), (3, 2, 3, 3), 1),
    ({"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2], "group": 2},
     (2, 4, 5, 6), (6, 2, 2, 3), 2),
    ({"pads": [1, 1, 1, 1], "kernel_shape": [2, 2]}, (1, 3, 3, 4), (2, 3, 2, 2), 3),
])
@pytest.mark.parametrize("mask, bias", [(False, False), (True, True)])
def test_deform_conv(attrs, xshape, wshape, offset_group, mask, bias):
    rng = np.random.default_rng(5)
    kh, kw = wshape[2:]
    s, d = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    p = attrs.get("pads", [0] * 4)
    out = [(n + p[i] + p[i + 2] - d[i] * (k - 1) - 1) // s[i] + 1
           for i, (n, k) in enumerate(zip(xshape[2:], (kh, kw)))]
    taps = offset_group * kh * kw
    # Offsets up to a few positions away, so that samples fall inside, between and outside.
    inputs = {"x": rand(*xshape),
              "offset": rng.uniform(-3, 3, (xshape[0], 2 * taps, *out)).astype("float32")}
    if mask:
        inputs["mask"] = rng.uniform(0, 1, (xshape[0], taps, *out)).astype("float32")
    init = {"w": rand(*wshape)}
    if bias:
        init["b"] = rand(wshape[0])
    names = ["x", "w", "offset", "b" if bias else "", "mask" if mask else ""]
    check([node("DeformConv", names, offset_group=offset_group, **attrs)], inputs, init,
          opset=22)


# -- CausalConvWithState ---------------------------------------------------------------------
@pytest.mark.parametrize("k, bias, past, activation, dtype", [
    (3, False, False, "none", "float32"),
    (4, True, True, "silu", "float32"),
    (2, True, False, "swish", "float16"),
    (1, False, False, "none", "float32"),
    (5, False, True, "none", "float32"),
])
def test_causal_conv_with_state_matches_the_onnx_reference(k, bias, past, activation, dtype):
    b, c, length = 2, 3, 6
    inputs = {"x": rand(b, c, length).astype(dtype)}
    init = {"w": rand(c, 1, k).astype(dtype)}
    names = ["x", "w", "b" if bias else "", "s" if past else ""]
    if bias:
        init["b"] = rand(c).astype(dtype)
    if past:
        inputs["s"] = rand(b, c, k - 1).astype(dtype)
    model = make_model([node("CausalConvWithState", names, ["y", "state"],
                             activation=activation)],
                       inputs, init, outputs=("y", "state"), opset=27)
    got = run_passhost(model, inputs)
    want = ReferenceEvaluator(model).run(None, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-3 if dtype == "float16" else 1e-5,
                                   atol=1e-3 if dtype == "float16" else 1e-6)


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, init, message", [
    ([node("Conv", ["x", "w"], strides=[1, 1])], {"w": rand(2, 3, 3)},
     r"Conv node .*strides of 1 ints >= 1, found \[1, 1\]"),
    ([node("Conv", ["x", "w"], pads=[1])], {"w": rand(2, 3, 3)}, r"Conv node .*pads of 2"),
    ([node("Conv", ["x", "w"], auto_pad="SAME")], {"w": rand(2, 3, 3)},
     r"Conv node .*auto_pad NOTSET, VALID"),
    ([node("Conv", ["x", "w"], kernel_shape=[2])], {"w": rand(2, 3, 3)},
     r"Conv node .*kernel_shape \[3\] \(the weight's\)"),
    ([node("Conv", ["x", "w"], group=0)], {"w": rand(2, 3, 3)}, r"Conv node .*group >= 1"),
    ([node("Conv", ["x", "w"], group=2)], {"w": rand(2, 3, 3)}, r"Conv node .*groups=2"),
    ([node("Conv", ["x", "w"], dilations=[0])], {"w": rand(2, 3, 3)},
     r"Conv node .*dilations of 1 ints >= 1"),
    ([node("ConvTranspose", ["x", "w"], output_shape=[2, 2, 9])], {"w": rand(3, 2, 3)},
     r"ConvTranspose node .*output_shape of 1 ints"),
    ([node("ConvTranspose", ["x", "w"], pads=[3, 3])], {"w": rand(3, 2, 3)},
     r"ConvTranspose node .*padding"),
    ([node("ConvTranspose", ["x", "w"])], {"w": rand(2, 2, 3)},
     r"ConvTranspose node .*3 input channels"),
    ([node("MaxPool", ["x"], kernel_shape=[2], storage_order=2)], {},
     r"MaxPool node .*storage_order 0 or 1"),
    ([node("MaxPool", ["x"], kernel_shape=[2, 2])], {}, r"MaxPool node .*kernel_shape of 1"),
    ([node("AveragePool", ["x"], kernel_shape=[5])], {},
     r"AveragePool node .*padded spatial size at least"),
    ([node("LpPool", ["x"], kernel_shape=[2], p=0)], {}, r"LpPool node .*p > 0"),
    ([node("MaxUnpool", ["x", "i", "s"], kernel_shape=[2], strides=[2])],
     {"i": np.zeros((2, 3, 4), "int64"), "s": np.array([2, 3, 5], "int64")},
     r"MaxUnpool node .*at least \[8\]"),
    ([node("MaxUnpool", ["x", "i"], kernel_shape=[2])], {"i": np.zeros((2, 3, 2), "int64")},
     r"MaxUnpool node .*indices of the data's shape"),
    ([node("DeformConv", ["x", "w", "o"], offset_group=2)],
     {"w": rand(2, 3, 1, 1), "o": rand(2, 4, 4, 4)},
     r"DeformConv node .*4-D data"),
    ([node("CausalConvWithState", ["x", "w"], ["y", "state"], activation="gelu")],
     {"w": rand(3, 1, 2)},
     r"CausalConvWithState node .*activation none, silu or swish"),
    ([node("CausalConvWithState", ["x", "w"], ["y", "state"])], {"w": rand(3, 2, 2)},
     r"CausalConvWithState node .*\(3, 1, k\) weight"),
])
def test_malformed_nodes_are_named(nodes, init, message):
    opset = {"CausalConvWithState": 27, "DeformConv": 22}.get(nodes[0].op_type, 17)
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(make_model(nodes, {"x": rand(2, 3, 4)}, init, opset=opset))


@pytest.mark.parametrize("op_type, attrs, xshape, message", [
    ("Conv", {}, (2, 3), r"3-D or 4-D or 5-D data"),
    ("MaxPool", {"kernel_shape": [1] * 4}, (1, 1, 2, 2, 2, 2), r"3-D or 4-D or 5-D data"),
    ("GlobalMaxPool", {}, (2, 3), r"at least one spatial axis"),
])
def test_data_of_an_unsupported_rank_is_named(op_type, attrs, xshape, message):
    inputs = ["x", "w"] if op_type == "Conv" else ["x"]
    init = {"w": rand(2, 3)} if op_type == "Conv" else {}
    with pytest.raises(OnnxImportError, match=rf"{op_type} node .*{message}"):
        from_onnx(make_model([node(op_type, inputs, **attrs)], {"x": rand(*xshape)}, init))


# -- the operators themselves -----------------------------------------------------------------
def test_max_unpool_ignores_indices_outside_the_output():
    x = relay.var("x", shape=(1, 1, 3))
    indices = relay.const(np.array([[[0, 7, -1]]], dtype="int64"))
    func = relay.Function([x], relay.nn.max_unpool(x, indices, index_shape=(4,)))
    got = evaluate(func, np.array([[[1, 2, 3]]], dtype="float32"))
    np.testing.assert_array_equal(got, [[[1, 0, 0, 0]]])


def test_max_pool_argmax_of_a_window_of_padding_only_is_minus_one():
    x = relay.var("x", shape=(1, 1, 2))
    y = relay.nn.max_pool_argmax(x, pool_size=(1,), strides=(2,), padding=(1, 1))
    got = evaluate(relay.Function([x], y), np.array([[[5, 7]]], dtype="float32"))
    np.testing.assert_array_equal(got, [[[-1, 1]]])


@pytest.mark.parametrize("build, message", [
    (lambda x: relay.nn.conv3d(x, relay.var("w", shape=(4, 3, 1, 1, 1)), groups=2),
     r"nn.conv3d: argument 'data' expected data whose 5 channels divide into groups=2"),
    (lambda x: relay.nn.conv3d_transpose(x, relay.var("w", shape=(4, 3, 1, 1, 1))),
     r"nn.conv3d_transpose: argument 'weight' expected a weight with 5 input channels"),
    (lambda x: relay.nn.max_pool_argmax(x, pool_size=(2, 2)),
     r"nn.max_pool_argmax: attribute 'pool_size' expected 3 ints >= 1"),
    (lambda x: relay.nn.avg_pool3d(x, pool_size=(3, 3, 3), dilation=2),
     r"nn.avg_pool3d: argument 'data' expected padded spatial size at least the dilated pool "
     r"window \(5x5x5\)"),
])
def test_ill_typed_calls_name_the_operator_and_argument(build, message):
    x = relay.var("x", shape=(1, 5, 4, 4, 4))
    with pytest.raises(IRTypeError, match=message):
        infer_type(relay.Function([x], build(x)))


def test_deformable_conv2d_checks_the_offset_shape():
    x, w = relay.var("x", shape=(1, 2, 4, 4)), relay.var("w", shape=(3, 2, 3, 3))
    offset, mask = relay.var("o", shape=(1, 18, 2, 2)), relay.var("m", shape=(1, 9, 2, 2))
    with pytest.raises(IRTypeError, match=r"argument 'offset' expected a tensor of shape "
                                          r"\(1, 18, 4, 4\)"):
        infer_type(relay.Function([x, offset, w, mask],
                                  relay.nn.deformable_conv2d(x, offset, w, mask, padding=1)))


@pytest.mark.parametrize("op_type", ["AveragePool", "MaxPool"])
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("pads", [[0, 0, 0, 0], [1, 0, 2, 1]])
def test_a_ceil_mode_window_longer_than_the_input_pools_it_once(op_type, count_include_pad,
                                                                 pads):
    # transformers' EfficientNet: AvgPool2d(kernel=hidden size, ceil_mode=True) over 8x8.
    attrs = {"count_include_pad": count_include_pad} if op_type == "AveragePool" else {}
    nodes = [node(op_type, ["x"], kernel_shape=[320, 320], strides=[320, 320], ceil_mode=1,
                  pads=pads, **attrs)]
    x = rand(1, 3, 8, 8)
    check(nodes, {"x": x})
    pool = next(n for n in post_order(from_onnx(make_model(nodes, {"x": x}))[0]["main"].body)
                if isinstance(n, Call))
    assert pool.attrs.pool_size == (8 + pads[0] + pads[2], 8 + pads[1] + pads[3])
