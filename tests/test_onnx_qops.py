"""Quantised ONNX operators with computed scales and zero points, uint16, float16 scales,
block quantisation, DynamicQuantizeLinear, MatMulInteger and ConvInteger: against onnxruntime,
and bit for bit against ONNX's reference where onnxruntime computes differently or not at
all."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost import text  # noqa: E402
from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.ir import structural_equal  # noqa: E402
from test_frontend_onnx import make_model, node, run_onnxruntime, run_passhost  # noqa: E402

RNG = np.random.default_rng(20261203)


def rand(*shape: int, scale: float = 1.0, dtype: str = "float32") -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def ints(dtype: str, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)


def run_reference(model, inputs):
    return ReferenceEvaluator(model).run(None, inputs)


def exact(model, inputs, oracle=run_onnxruntime):
    """passhost's outputs equal the oracle's exactly (dtype, shape and values)."""
    want = oracle(model, inputs)
    got = run_passhost(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    return want


def one_node(op, names, inputs, init=None, opset=21, outputs=("y",), **attrs):
    model = make_model([node(op, list(names), list(outputs), **attrs)], inputs, init,
                       tuple(outputs), opset)
    model.ir_version = 10
    return model


# -- QuantizeLinear / DequantizeLinear ----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16"])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_and_dequantize_with_computed_parameters(dtype, per_axis):
    """Scales and zero points that are graph inputs (as in ONNX's own tests) rather than
    initializers."""
    x = rand(2, 3, 4, scale=300.0 if dtype.endswith("16") else 3.0)
    n = 3 if per_axis else 1
    scale = RNG.uniform(0.01, 0.05, size=n).astype("float32")
    zp = ints(dtype, n) // 2
    if not per_axis:
        scale, zp = scale.reshape(()), zp.reshape(())
    inputs = {"x": x, "s": scale, "z": zp}
    q = exact(one_node("QuantizeLinear", ["x", "s", "z"], inputs, axis=1), inputs)[0]
    assert len(np.unique(q)) > 10
    inputs = {"q": q, "s": scale, "z": zp}
    exact(one_node("DequantizeLinear", ["q", "s", "z"], inputs, axis=1), inputs)


def test_uint16_quantisation_rounding_to_even_round_trips_through_the_text_format():
    inputs = {"x": rand(2, 3)}
    init = {"s": np.array(0.5, "float32"), "z": np.array(9, "uint16")}
    mod, _ = from_onnx(one_node("QuantizeLinear", ["x", "s", "z"], inputs, init))
    printed = text.print_module(mod)
    assert 'rounding="even"' in printed and "uint16" in printed
    assert structural_equal(text.parse_module(printed), mod)


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
@pytest.mark.parametrize("axis, block", [(1, 2), (0, 3), (-1, 4), (1, 4)])
@pytest.mark.parametrize("with_zero_point", [False, True])
def test_block_quantisation(op, axis, block, with_zero_point):
    """Each block of ``block`` elements along ``axis`` has its own scale and zero point; the
    last block may be shorter."""
    shape = (5, 6, 7)
    blocks = list(shape)
    blocks[axis] = math.ceil(shape[axis] / block)
    scale = RNG.uniform(0.02, 0.2, size=blocks).astype("float32")
    x = rand(*shape, scale=5.0) if op == "QuantizeLinear" else ints("int8", *shape)
    inputs = {"x": x, "s": scale}
    if with_zero_point:
        inputs["z"] = ints("int8", *blocks) // 4
    model = one_node(op, list(inputs), inputs, axis=axis, block_size=block,
                     **({"output_dtype": TensorProto.INT8} if op == "QuantizeLinear" else {}))
    exact(model, inputs, oracle=run_reference)


@pytest.mark.parametrize("precision", [None, TensorProto.FLOAT])
def test_float16_quantize_divides_in_its_precision(precision):
    x = rand(4, 50, scale=10.0, dtype="float16")
    inputs = {"x": x, "s": np.array(0.07, "float16"), "z": np.array(3, "int8")}
    attrs = {} if precision is None else {"precision": precision}
    exact(one_node("QuantizeLinear", ["x", "s", "z"], inputs, opset=23, **attrs), inputs,
          oracle=run_reference)


@pytest.mark.parametrize("output_dtype", [None, TensorProto.FLOAT, TensorProto.FLOAT16])
def test_dequantize_output_type(output_dtype):
    inputs = {"x": ints("uint8", 3, 8), "s": np.array(0.013, "float16"),
              "z": np.array(117, "uint8")}
    attrs = {} if output_dtype is None else {"output_dtype": output_dtype}
    y = exact(one_node("DequantizeLinear", ["x", "s", "z"], inputs, opset=23, **attrs),
              inputs, oracle=run_reference)[0]
    assert y.dtype == (np.float32 if output_dtype == TensorProto.FLOAT else np.float16)


# -- QLinearConv / QLinearMatMul ----------------------------------------------------------------
def test_qlinear_conv_with_computed_parameters_is_onnx_exact():
    x, w = ints("uint8", 1, 4, 9, 9), ints("int8", 6, 2, 3, 3)
    inputs = {"x": x, "xs": np.array(0.02, "float32"), "xz": np.array(120, "uint8"),
              "w": w, "ws": RNG.uniform(0.002, 0.01, size=6).astype("float32"),
              "wz": np.zeros(6, "int8"), "ys": np.array(0.5, "float32"),
              "yz": np.array(130, "uint8"), "b": RNG.integers(-900, 900, 6).astype("int32")}
    model = one_node("QLinearConv", list(inputs), inputs, opset=10, group=2,
                     pads=[1, 0, 1, 2], strides=[2, 1])
    y = exact(model, inputs, oracle=run_reference)[0]
    assert len(np.unique(y)) > 20


@pytest.mark.parametrize("scale_dtype, opset", [("float32", 10), ("float16", 21)])
@pytest.mark.parametrize("a_shape, b_shape", [((4, 16), (16, 5)), ((2, 3, 16), (2, 16, 5)),
                                              ((3, 16), (2, 16, 5))])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_matmul_is_onnx_exact(scale_dtype, opset, a_shape, b_shape, dtype):
    mid = 128 if dtype == "uint8" else 0
    inputs = {"a": ints(dtype, *a_shape), "as": np.array(0.02, scale_dtype),
              "az": np.array(mid + 3, dtype), "b": ints(dtype, *b_shape),
              "bs": np.array(0.01, scale_dtype), "bz": np.array(mid - 7, dtype),
              "ys": np.array(0.05, scale_dtype), "yz": np.array(mid + 10, dtype)}
    y = exact(one_node("QLinearMatMul", list(inputs), inputs, opset=opset), inputs,
              oracle=run_reference)[0]
    assert len(np.unique(y)) > 10


# -- DynamicQuantizeLinear ----------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
# Values whose scale would underflow float32 (|x| < 4e-43) are left out: onnxruntime then
# divides by a zero scale. Zero itself is in (the scale is then 1).
@given(low=st.floats(-50, 50, width=32, allow_subnormal=False),
       spread=st.one_of(st.just(0.0), st.floats(1e-6, 100)),
       size=st.integers(1, 40))
def test_dynamic_quantize_linear(low, spread, size):
    x = (low + RNG.random(size) * spread).astype("float32")
    inputs = {"x": x}
    model = one_node("DynamicQuantizeLinear", ["x"], inputs, opset=11,
                     outputs=("y", "y_scale", "y_zero_point"))
    exact(model, inputs)


def test_dynamic_quantize_linear_of_zeros():
    inputs = {"x": np.zeros((3, 4), "float32")}
    model = one_node("DynamicQuantizeLinear", ["x"], inputs, opset=11,
                     outputs=("y", "y_scale", "y_zero_point"))
    y, scale, zero_point = exact(model, inputs)
    assert np.all(y == 0) and scale == 1 and zero_point == 0


# -- MatMulInteger / ConvInteger ----------------------------------------------------------------
@pytest.mark.parametrize("a_shape, b_shape", [((4, 6), (6, 3)), ((2, 4, 6), (6, 3)),
                                              ((2, 4, 6), (2, 6, 3)), ((6,), (6, 3))])
@pytest.mark.parametrize("zero_points", ["none", "scalar", "per column"])
@pytest.mark.parametrize("dtypes", [("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")])
def test_matmul_integer(a_shape, b_shape, zero_points, dtypes):
    a_dtype, b_dtype = dtypes
    inputs = {"A": ints(a_dtype, *a_shape), "B": ints(b_dtype, *b_shape)}
    names = ["A", "B"]
    if zero_points != "none":
        inputs["az"] = ints(a_dtype, 1).reshape(())
        inputs["bz"] = ints(b_dtype, 3) if zero_points == "per column" \
            else ints(b_dtype, 1).reshape(())
        names += ["az", "bz"]
    # onnxruntime takes a per-column zero point of a 2-D B only
    oracle = run_reference if zero_points == "per column" and len(b_shape) > 2 \
        else run_onnxruntime
    exact(one_node("MatMulInteger", names, inputs, opset=10), inputs, oracle=oracle)


def test_matmul_integer_with_a_zero_point_per_row():
    a, b = ints("uint8", 4, 6), ints("uint8", 6, 3)
    init = {"az": np.array([1, 50, 100, 200], "uint8")}
    model = one_node("MatMulInteger", ["A", "B", "az"], {"A": a, "B": b}, init, opset=10)
    got = run_passhost(model, {"A": a, "B": b})[0]
    want = (a.astype(np.int32) - init["az"].astype(np.int32)[:, None]) @ b.astype(np.int32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs", [{}, {"pads": [1, 1, 1, 1]}, {"strides": [2, 2]},
                                   {"auto_pad": "SAME_UPPER"},
                                   {"dilations": [2, 1], "pads": [2, 0, 1, 1]},
                                   {"group": 2}])
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("w_zero_point", ["none", "scalar", "per channel"])
def test_conv_integer(attrs, dtype, w_zero_point):
    inputs = {"x": ints(dtype, 2, 4, 7, 8), "w": ints(dtype, 6, 4 // attrs.get("group", 1),
                                                      3, 3)}
    names = ["x", "w"]
    oracle = run_onnxruntime
    if w_zero_point != "none":
        inputs["xz"] = ints(dtype, 1).reshape(())
        inputs["wz"] = ints(dtype, 6) if w_zero_point == "per channel" \
            else ints(dtype, 1).reshape(())
        names += ["xz", "wz"]
        if w_zero_point == "per channel":
            oracle = run_reference  # onnxruntime takes a scalar weight zero point only
    exact(one_node("ConvInteger", names, inputs, opset=10, **attrs), inputs, oracle=oracle)


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("op, names, inputs, attrs, message", [
    ("DynamicQuantizeLinear", ["x"], {"x": np.zeros(3, "float16")}, {"outputs": ("y", "s", "z")},
     r"x \(input 0\) of type float32, found float16"),
    ("MatMulInteger", ["A", "B", "az"], {"A": np.zeros((4, 6), "uint8"),
                                         "B": np.zeros((6, 3), "uint8"),
                                         "az": np.zeros(6, "uint8")}, {},
     r"a_zero_point to be a scalar or one value per row of A \(shape \[4, 6\]\)"),
    ("MatMulInteger", ["A", "B", "", "bz"], {"A": np.zeros((4, 6), "uint8"),
                                             "B": np.zeros((6, 3), "uint8"),
                                             "bz": np.zeros(3, "int8")}, {},
     r"B's zero point \(input 3\) of input 1's type uint8, found int8"),
    ("MatMulInteger", ["A", "B"], {"A": np.zeros((4, 6), "float32"),
                                   "B": np.zeros((6, 3), "uint8")}, {},
     r"A of type int8, uint8, found float32"),
    ("ConvInteger", ["x", "w"], {"x": np.zeros((1, 2, 9), "uint8"),
                                 "w": np.zeros((3, 2, 3), "uint8")}, {},
     r"expected 4-D data \(N, C, \*spatial\), found shape \(1, 2, 9\)"),
    ("ConvInteger", ["x", "w", "xz", "wz"], {"x": np.zeros((1, 2, 5, 5), "uint8"),
                                             "w": np.zeros((3, 2, 3, 3), "uint8"),
                                             "xz": np.zeros((), "uint8"),
                                             "wz": np.zeros(2, "uint8")}, {},
     r"1-D tensor of 3 values \(the weight's output channels\), found shape \[2\]"),
    ("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"],
     {"a": np.zeros((2, 3), "int8"), "as": np.ones((), "float32"), "az": np.zeros((), "int8"),
      "b": np.zeros((3, 2), "int8"), "bs": np.ones((), "float16"), "bz": np.zeros((), "int8"),
      "ys": np.ones((), "float32"), "yz": np.zeros((), "int8")}, {},
     r"a_scale, b_scale and y_scale of one type, found \['float16', 'float32'\]"),
    ("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
     {"x": np.zeros((1, 2, 5, 5), "uint8"), "xs": np.ones((), "float32"),
      "xz": np.zeros((), "uint8"), "w": np.zeros((3, 2, 3, 3), "uint8"),
      "ws": np.ones(2, "float32"), "wz": np.zeros((), "uint8"), "ys": np.ones((), "float32"),
      "yz": np.zeros((), "uint8")}, {},
     r"1-D tensor of 3 values \(the weight's output channels\), found shape \[2\]"),
    ("QuantizeLinear", ["x", "s"], {"x": np.zeros((2, 4), "float32"),
                                    "s": np.ones((2, 2, 2), "float32")}, {},
     r"scalar or 1-D scale \(or block_size > 0\), found shape \[2, 2, 2\]"),
    ("QuantizeLinear", ["x", "s"], {"x": np.zeros((2, 4), "float32"),
                                    "s": np.ones((), "float32")}, {"block_size": -1},
     r"block_size of at least 0, found -1"),
    ("DequantizeLinear", ["x", "s", "z"], {"x": np.zeros(3, "int8"),
                                           "s": np.ones((), "float32"),
                                           "z": np.zeros((), "uint8")}, {},
     r"int8 zero point \(x's type\), found uint8"),
])
def test_malformed_quantised_nodes_name_the_node(op, names, inputs, attrs, message):
    model = one_node(op, names, inputs, opset=21, **attrs)
    with pytest.raises(OnnxImportError, match=rf"{op} node .*" + message):
        from_onnx(model)
