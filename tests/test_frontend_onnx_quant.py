"""The quantised ONNX operators, a QDQ CNN and a transformer encoder layer against onnxruntime.

QuantizeLinear rounds halves to even as ONNX does. QLinearConv and QLinearMatMul requantise
as ONNX's reference does (in float64), where onnxruntime multiplies in float32, so their
results may differ from onnxruntime's by one unit.
"""

from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")  # onnx's own dependency (float8 arrays)
ort = pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.relay.visitor import post_order  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    CONV_CASES,
    make_model,
    node,
    run_onnxruntime,
    run_passhost,
)

RNG = np.random.default_rng(20261123)


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def ints(dtype: str, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)


def f32(value) -> np.ndarray:
    return np.asarray(value, dtype="float32")


def compare(model, inputs, *, exact: bool = False) -> list[np.ndarray]:
    """Run ``model`` with passhost and onnxruntime; integer outputs agree within one unit
    (exactly when ``exact``), float outputs to rtol 1e-4. Returns onnxruntime's outputs."""
    want = run_onnxruntime(model, inputs)
    got = run_passhost(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        if w.dtype.kind in "iu":
            diff = np.abs(g.astype(np.int64) - w.astype(np.int64))
            assert diff.max(initial=0) <= (0 if exact else 1)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    return want


def ops_of(model) -> set[str]:
    mod, _ = from_onnx(model)
    return {n.op.name for n in post_order(mod["main"].body) if hasattr(n, "op")}


def assert_no_ties(x: np.ndarray, scale: np.ndarray, axis: int = 1) -> None:
    """Guard for exact comparisons: no ``x / scale`` (float32) lies exactly half-way."""
    s = scale if scale.ndim == 0 else scale.reshape([-1 if i == axis % x.ndim else 1
                                                      for i in range(x.ndim)])
    ratio = x / s
    assert not np.any(np.abs(ratio - np.trunc(ratio)) == 0.5)


# -- QuantizeLinear ------------------------------------------------------------------------------
@pytest.mark.parametrize("scale, zero_point, attrs, opset", [
    (f32(0.05), None, {}, 13),                                                # default uint8
    (f32(0.03), np.array(-7, "int8"), {}, 13),
    (f32(0.02), np.array(200, "uint8"), {}, 19),                              # saturates
    (f32([0.01, 0.05, 0.2]), np.array([0, 3, -9], "int8"), {}, 13),           # axis 1
    (f32([0.01, 0.02, 0.03, 0.04, 0.05]), np.array([1, 2, 3, 4, 250], "uint8"),
     {"axis": -1}, 13),
    (f32([0.1, 0.02]), np.array([-5, 5], "int8"), {"axis": 0}, 21),
    (f32(0.0007), np.array(-300, "int16"), {}, 21),
    (f32(0.04), None, {"output_dtype": onnx.TensorProto.INT8}, 21),
])
def test_quantize_linear_is_exact_without_ties(scale, zero_point, attrs, opset):
    x = rand(2, 3, 4, 5, scale=4.0)
    axis = attrs.get("axis", 1)
    assert_no_ties(x, scale, axis)
    init = {"s": scale} if zero_point is None else {"s": scale, "z": zero_point}
    model = make_model([node("QuantizeLinear", ["x", *init], **attrs)], {"x": x}, init,
                       opset=opset)
    want = compare(model, {"x": x}, exact=True)[0]
    assert len(np.unique(want)) > 20


def test_quantize_linear_rounds_ties_to_even():
    """x / scale = k + 0.5 exactly: ONNX (and passhost) give the even neighbour."""
    scale = f32(0.25)
    x = np.concatenate([(np.arange(-6, 6) + 0.5) * 0.25, rand(20)]).astype("float32")
    init = {"s": scale, "z": np.array(0, "int8")}
    model = make_model([node("QuantizeLinear", ["x", "s", "z"])], {"x": x}, init)
    got = compare(model, {"x": x}, exact=True)[0]
    ratio = x / scale
    ties = np.abs(ratio - np.trunc(ratio)) == 0.5
    assert ties.sum() == 12
    np.testing.assert_array_equal(got[ties] % 2, 0)


# -- DequantizeLinear ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, scale, zero_point, attrs", [
    ("int8", f32(0.07), np.array(-4, "int8"), {}),
    ("uint8", f32(0.02), np.array(131, "uint8"), {}),
    ("uint8", f32(0.5), None, {}),
    ("int8", f32([0.5, 0.01, 0.2]), np.array([1, 0, -3], "int8"), {}),
    ("uint8", f32([0.1, 0.2, 0.3, 0.4]), np.array([0, 10, 128, 255], "uint8"), {"axis": 2}),
    ("int32", f32(0.0003), np.array(0, "int32"), {}),
    ("int32", f32([0.001, 0.002, 0.003, 0.004, 0.005]), None, {"axis": -1}),
])
def test_dequantize_linear(dtype, scale, zero_point, attrs):
    x = ints(dtype, 2, 3, 4, 5) if dtype != "int32" else RNG.integers(
        -(2**20), 2**20, size=(2, 3, 4, 5)).astype("int32")
    init = {"s": scale} if zero_point is None else {"s": scale, "z": zero_point}
    model = make_model([node("DequantizeLinear", ["x", *init], **attrs)], {"x": x}, init)
    compare(model, {"x": x})


# -- QLinearConv ---------------------------------------------------------------------------------
def qlinear_conv_model(x, w, attrs, *, x_zp, w_scale, w_zp, y_zp, bias=None):
    """A QLinearConv with x_scale 0.05 and y_scale chosen so outputs spread over the range."""
    fan_in = w.shape[1] * w.shape[2] * w.shape[3]
    x_scale = f32(0.05)
    y_scale = f32(float(x_scale) * float(np.max(w_scale)) * math.sqrt(fan_in) * 40.0)
    init = {"xs": x_scale, "xz": x_zp, "w": w, "ws": w_scale, "wz": w_zp, "ys": y_scale,
            "yz": y_zp}
    if bias is not None:
        init["b"] = bias
    nodes = [node("QLinearConv", ["x", *init], **attrs)]
    return make_model(nodes, {"x": x}, init)




@pytest.mark.parametrize("attrs, wshape", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv_uint8_per_tensor(attrs, wshape, bias):
    x = ints("uint8", 2, 6, 9, 10)
    w = ints("uint8", *wshape)
    b = RNG.integers(-3000, 3000, size=wshape[0]).astype("int32") if bias else None
    model = qlinear_conv_model(x, w, attrs, x_zp=np.array(128, "uint8"), w_scale=f32(0.01),
                               w_zp=np.array(120, "uint8"), y_zp=np.array(100, "uint8"),
                               bias=b)
    want = compare(model, {"x": x})[0]
    assert len(np.unique(want)) > 20


@pytest.mark.parametrize("attrs, wshape", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv_int8_per_channel(attrs, wshape, bias):
    x = ints("int8", 1, 6, 9, 10)
    w = ints("int8", *wshape)
    w_scale = f32(RNG.uniform(0.002, 0.02, size=wshape[0]))
    b = RNG.integers(-20000, 20000, size=wshape[0]).astype("int32") if bias else None
    model = qlinear_conv_model(x, w, attrs, x_zp=np.array(-5, "int8"), w_scale=w_scale,
                               w_zp=np.zeros(wshape[0], "int8"), y_zp=np.array(3, "int8"),
                               bias=b)
    want = compare(model, {"x": x})[0]
    assert len(np.unique(want)) > 20


def test_qlinear_conv_uint8_data_with_int8_weights():
    x, w = ints("uint8", 1, 4, 7, 7), ints("int8", 5, 4, 3, 3)
    model = qlinear_conv_model(x, w, {"pads": [1, 1, 1, 1]}, x_zp=np.array(110, "uint8"),
                               w_scale=f32(0.004), w_zp=np.array(0, "int8"),
                               y_zp=np.array(128, "uint8"))
    compare(model, {"x": x})
    assert {"qnn.conv2d", "qnn.quantize"} <= ops_of(model)


# -- QLinearMatMul -------------------------------------------------------------------------------
def qlinear_matmul_model(a, b, *, a_zp, b_scale, b_zp, y_zp, b_is_input=False):
    k = b.shape[-2] if b.ndim >= 2 else b.shape[0]
    a_scale = f32(0.03)
    y_scale = f32(float(a_scale) * float(np.max(b_scale)) * math.sqrt(k) * 40.0)
    params = {"as": a_scale, "az": a_zp, "b": b, "bs": b_scale, "bz": b_zp, "ys": y_scale,
              "yz": y_zp}
    inputs = {"a": a, "b": b} if b_is_input else {"a": a}
    init = {k: v for k, v in params.items() if k not in inputs}
    return make_model([node("QLinearMatMul", ["a", *params])], inputs, init), inputs


@pytest.mark.parametrize("dtype, a_shape, per_column", [
    ("uint8", (5, 16), False), ("int8", (5, 16), True), ("uint8", (2, 3, 16), True),
    ("int8", (16,), False),
])
def test_qlinear_matmul_with_a_constant_matrix_is_a_qnn_dense(dtype, a_shape, per_column):
    a, b = ints(dtype, *a_shape), ints(dtype, 16, 7)
    b_scale = f32(RNG.uniform(0.005, 0.02, size=7)) if per_column else f32(0.01)
    zp = 0 if dtype == "int8" else 128
    model, inputs = qlinear_matmul_model(a, b, a_zp=np.array(zp + 3, dtype), b_scale=b_scale,
                                         b_zp=np.array(zp, dtype),
                                         y_zp=np.array(zp - 2, dtype))
    compare(model, inputs)
    ops = ops_of(model)
    assert "qnn.dense" in ops and "matmul" not in ops


@pytest.mark.parametrize("dtype, a_shape, b_shape", [
    ("uint8", (2, 5, 16), (2, 16, 7)), ("int8", (3, 16), (16, 4)), ("int8", (2, 4, 16), (16,)),
])
def test_qlinear_matmul_of_computed_tensors_is_an_int32_matmul(dtype, a_shape, b_shape):
    a, b = ints(dtype, *a_shape), ints(dtype, *b_shape)
    zp = 0 if dtype == "int8" else 128
    model, inputs = qlinear_matmul_model(a, b, a_zp=np.array(zp + 1, dtype),
                                         b_scale=f32(0.02), b_zp=np.array(zp, dtype),
                                         y_zp=np.array(zp, dtype), b_is_input=True)
    compare(model, inputs)
    ops = ops_of(model)
    assert {"matmul", "qnn.quantize"} <= ops and "qnn.dequantize" not in ops


# -- a QDQ CNN -----------------------------------------------------------------------------------
def qdq_cnn():
    """x -> Q/DQ -> Conv(DQ int8 per-channel weights, DQ int32 bias) -> Relu -> Q/DQ, then a
    QLinearConv on the quantised activation and a residual Add of both branches, Q/DQ ->
    GlobalAveragePool -> Q/DQ -> Flatten -> Q -> QLinearMatMul (the logits, uint8) and a
    second head DQ(weights) -> Gemm -> Q (int8)."""
    c, classes = 8, 10
    s_x, s_a, s_b, s_r, s_p = 0.03, 0.02, 0.025, 0.03, 0.01
    w0 = ints("int8", c, 3, 3, 3)
    w0_s = f32(RNG.uniform(0.004, 0.01, size=c))
    fc2 = ints("int8", classes, c)
    init = {
        "x_s": f32(s_x), "x_z": np.array(128, "uint8"),
        "w0": w0, "w0_s": w0_s, "w0_z": np.zeros(c, "int8"),
        "b0": RNG.integers(-500, 500, size=c).astype("int32"),
        "b0_s": (np.float32(s_x) * w0_s).astype("float32"), "b0_z": np.zeros(c, "int32"),
        "a_s": f32(s_a), "a_z": np.array(0, "uint8"),
        "w1": ints("int8", c, c, 3, 3) // 2, "w1_s": f32(0.003), "w1_z": np.array(0, "int8"),
        "b1": RNG.integers(-2000, 2000, size=c).astype("int32"),
        "c_s": f32(s_b), "c_z": np.array(120, "uint8"),
        "r_s": f32(s_r), "r_z": np.array(100, "uint8"),
        "p_s": f32(s_p), "p_z": np.array(90, "uint8"),
        "fcq": ints("uint8", c, classes), "fcq_s": f32(0.01), "fcq_z": np.array(128, "uint8"),
        "y_s": f32(0.02), "y_z": np.array(128, "uint8"),
        "fc2": fc2, "fc2_s": f32(0.02), "fc2_z": np.array(0, "int8"),
        "z_s": f32(0.05), "z_z": np.array(0, "int8"),
    }
    nodes = [
        node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"]),
        node("DequantizeLinear", ["w0", "w0_s", "w0_z"], ["w0d"], axis=0),
        node("DequantizeLinear", ["b0", "b0_s", "b0_z"], ["b0d"], axis=0),
        node("Conv", ["xd", "w0d", "b0d"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Relu", ["c0"], ["r0"]),
        node("QuantizeLinear", ["r0", "a_s", "a_z"], ["aq"]),
        node("DequantizeLinear", ["aq", "a_s", "a_z"], ["ad"]),
        node("QLinearConv", ["aq", "a_s", "a_z", "w1", "w1_s", "w1_z", "c_s", "c_z", "b1"],
             ["cq"], pads=[1, 1, 1, 1]),
        node("DequantizeLinear", ["cq", "c_s", "c_z"], ["cd"]),
        node("Add", ["ad", "cd"], ["res"]),
        node("QuantizeLinear", ["res", "r_s", "r_z"], ["rq"]),
        node("DequantizeLinear", ["rq", "r_s", "r_z"], ["rd"]),
        node("GlobalAveragePool", ["rd"], ["pool"]),
        node("QuantizeLinear", ["pool", "p_s", "p_z"], ["pq"]),
        node("DequantizeLinear", ["pq", "p_s", "p_z"], ["pd"]),
        node("Flatten", ["pd"], ["flat"]),
        node("QuantizeLinear", ["flat", "p_s", "p_z"], ["fq"]),
        node("QLinearMatMul", ["fq", "p_s", "p_z", "fcq", "fcq_s", "fcq_z", "y_s", "y_z"],
             ["logits"]),
        node("DequantizeLinear", ["fq", "p_s", "p_z"], ["fd"]),
        node("DequantizeLinear", ["fc2", "fc2_s", "fc2_z"], ["fc2d"]),
        node("Gemm", ["fd", "fc2d"], ["g"], transB=1),
        node("QuantizeLinear", ["g", "z_s", "z_z"], ["logits2"]),
    ]
    return make_model(nodes, {"x": rand(1, 3, 16, 16)}, init, outputs=("logits", "logits2"))


def test_a_qdq_cnn_is_within_one_unit_of_onnxruntime():
    """onnxruntime runs with its default session options: its graph optimisations fuse the
    QDQ patterns into integer kernels (onnxruntime 1.31 turns DQ -> Conv -> Relu -> Q,
    DQ -> Add -> Q and DQ -> GlobalAveragePool -> Q into QLinearConv, QLinearAdd and
    QLinearGlobalAveragePool, which requantise in float32 with ties to even; the DQ -> Gemm
    -> Q head stays in float). passhost keeps each as dequantize -> float op -> quantize, so
    the two differ where a value lies near a rounding boundary, by one unit."""
    model = qdq_cnn()
    for _ in range(3):
        x = rand(1, 3, 16, 16, scale=2.0)
        logits, logits2 = compare(model, {"x": x})
        assert len(np.unique(logits)) > 5 and len(np.unique(logits2)) > 5


# -- a transformer encoder layer -----------------------------------------------------------------
def encoder_layer(seq: int = 16, d_model: int = 64, heads: int = 4, d_ff: int = 128):
    """Post-norm encoder layer: multi-head self-attention and a GELU feed-forward block,
    each with a residual Add and a LayerNormalization."""
    dh = d_model // heads
    init = {name: rand(*shape, scale=1 / math.sqrt(shape[0]))
            for name, shape in [("wq", (d_model, d_model)), ("wk", (d_model, d_model)),
                                ("wv", (d_model, d_model)), ("wo", (d_model, d_model)),
                                ("w1", (d_model, d_ff)), ("w2", (d_ff, d_model))]}
    init.update({name: rand(n, scale=0.1) for name, n in [
        ("bq", d_model), ("bk", d_model), ("bv", d_model), ("bo", d_model), ("b1", d_ff),
        ("b2", d_model), ("ln1_b", d_model), ("ln2_b", d_model)]})
    init.update({"ln1_g": 1 + rand(d_model, scale=0.1), "ln2_g": 1 + rand(d_model, scale=0.1),
                 "heads_shape": np.array([1, seq, heads, dh], "int64"),
                 "model_shape": np.array([1, seq, d_model], "int64"),
                 "sqrt_dh": f32(math.sqrt(dh)), "sqrt2": f32(math.sqrt(2.0)),
                 "one": f32(1.0), "half": f32(0.5)})
    nodes = []
    for p in "qkv":
        nodes += [node("MatMul", ["x", f"w{p}"], [f"{p}_mm"]),
                  node("Add", [f"{p}_mm", f"b{p}"], [f"{p}_proj"]),
                  node("Reshape", [f"{p}_proj", "heads_shape"], [f"{p}_heads"])]
    nodes += [
        node("Transpose", ["q_heads"], ["q"], perm=[0, 2, 1, 3]),
        node("Transpose", ["k_heads"], ["kt"], perm=[0, 2, 3, 1]),
        node("Transpose", ["v_heads"], ["v"], perm=[0, 2, 1, 3]),
        node("MatMul", ["q", "kt"], ["scores"]),
        node("Div", ["scores", "sqrt_dh"], ["scaled"]),
        node("Softmax", ["scaled"], ["attn"], axis=-1),
        node("MatMul", ["attn", "v"], ["ctx"]),
        node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        node("Reshape", ["ctx_t", "model_shape"], ["ctx_m"]),
        node("MatMul", ["ctx_m", "wo"], ["o_mm"]),
        node("Add", ["o_mm", "bo"], ["o"]),
        node("Add", ["x", "o"], ["res1"]),
        node("LayerNormalization", ["res1", "ln1_g", "ln1_b"], ["h"], axis=-1, epsilon=1e-5),
        node("MatMul", ["h", "w1"], ["f1_mm"]),
        node("Add", ["f1_mm", "b1"], ["f1"]),
        node("Div", ["f1", "sqrt2"], ["f1_s"]),
        node("Erf", ["f1_s"], ["erf"]),
        node("Add", ["erf", "one"], ["erf1"]),
        node("Mul", ["f1", "erf1"], ["gelu2"]),
        node("Mul", ["gelu2", "half"], ["gelu"]),
        node("MatMul", ["gelu", "w2"], ["f2_mm"]),
        node("Add", ["f2_mm", "b2"], ["f2"]),
        node("Add", ["h", "f2"], ["res2"]),
        node("LayerNormalization", ["res2", "ln2_g", "ln2_b"], ["y"], axis=-1, epsilon=1e-5),
    ]
    return make_model(nodes, {"x": rand(1, seq, d_model)}, init, opset=17)


def test_a_transformer_encoder_layer():
    x = rand(1, 16, 64)
    compare(encoder_layer(), {"x": x})


# -- models exported from PyTorch ----------------------------------------------------------------
def torch_export(module, example):
    """``module`` exported with the TorchScript exporter (``dynamo=False``: the dynamo one
    needs onnxscript), opset 17, IR version 8 for onnxruntime."""
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (torch.from_numpy(example),), buffer, dynamo=False,
                          opset_version=17, input_names=["x"])
    model = onnx.load_from_string(buffer.getvalue())
    model.ir_version = 8
    return model


def test_a_torch_transformer_encoder_layer():
    torch = pytest.importorskip("torch")
    torch.manual_seed(7)

    class Encoder(torch.nn.Module):
        """The layer behind a plain forward(x): exporting the layer itself passes is_causal
        to scaled_dot_product_attention as a tensor, which torch rejects."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0,
                                                          activation="gelu", batch_first=True)

        def forward(self, x):
            return self.layer(x)

    x = rand(1, 16, 64)
    compare(torch_export(Encoder(), x), {"x": x})


def test_a_torch_cnn():
    torch = pytest.importorskip("torch")
    torch.manual_seed(8)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, groups=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(16, 5))
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 2.0)
    x = rand(2, 3, 16, 16)
    compare(torch_export(model, x), {"x": x})


# -- shape arithmetic in exported models -------------------------------------------------------
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_of_shape_values_folds(fmod):
    """Shape -> Mod -> Cast -> Add (PyTorch's exporter emits Mod on shapes): the sign of
    the result follows the divisor (fmod=0) or the dividend (fmod=1)."""
    nodes = [node("Shape", ["x"], ["s"]), node("Mod", ["s", "m"], ["r"], fmod=fmod),
             node("Cast", ["r"], ["rf"], to=onnx.TensorProto.FLOAT), node("Add", ["x", "rf"])]
    x = rand(6, 5, 3)
    model = make_model(nodes, {"x": x}, {"m": np.array([4, -3, 2], "int64")})
    compare(model, {"x": x})
    assert ops_of(model) == {"add"}


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, init, opset, message", [
    ([node("QuantizeLinear", ["x", "s", "z"], block_size=2)],
     {"s": f32(np.full((2, 3), 0.1)), "z": np.zeros((2, 3), "int8")}, 21,
     r"QuantizeLinear node .*scale of shape \[2, 2, 4\] \(block_size 2 along axis 1 .*found "
     r"\[2, 3\]"),
    ([node("QuantizeLinear", ["x", "s", "z"])], {"s": f32(0.1), "z": np.array(0, "int32")},
     21, r"QuantizeLinear node .*int8, uint8, int16, uint16, found int32"),
    ([node("QuantizeLinear", ["x", "s"])], {"s": np.array(0.1, "float64")}, 19,
     r"QuantizeLinear node .*scale \(input 1\) of type float32, float16, bfloat16, found float64"),
    ([node("QuantizeLinear", ["x", "s", "z"], axis=1)],
     {"s": f32([0.1, 0.2]), "z": np.zeros(2, "int8")}, 13,
     r"QuantizeLinear node .*scale of 3 values \(axis 1 of x, shape \[2, 3, 4\]\), found "
     r"shape \[2\]"),
    ([node("QuantizeLinear", ["x", "s", "z"], axis=1)],
     {"s": f32([0.1, 0.2, 0.3]), "z": np.zeros(2, "int8")}, 13,
     r"QuantizeLinear node .*zero point of the scale's shape \[3\], found \[2\]"),
    ([node("QuantizeLinear", ["x", "s", "z"], output_dtype=onnx.TensorProto.UINT8)],
     {"s": f32(0.1), "z": np.array(0, "int8")}, 21,
     r"QuantizeLinear node .*uint8 zero point \(output_dtype\), found int8"),
    ([node("QuantizeLinear", ["x", "s", "z"])],
     {"s": f32(0.1), "z": np.array(0, ml_dtypes.float8_e4m3fn)}, 19,
     r"QuantizeLinear node .*int8, uint8, int16, uint16, found float8_e4m3fn"),
    ([node("DequantizeLinear", ["x", "s"])], {"s": f32(0.1)}, 13,
     r"DequantizeLinear node .*x \(input 0\) of type int8, uint8, int16, uint16, int32, "
     r"found float32"),
])
def test_bad_quantised_nodes_name_the_node(nodes, init, opset, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(make_model(nodes, {"x": rand(2, 3, 4)}, init, opset=opset))


def test_quantised_operators_are_not_reported_unsupported():
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
        helper.make_node("QLinearConv", ["q", "s", "z", "w", "s", "z", "s", "z"], ["c"],
                         name="qc"),
        helper.make_node("DequantizeLinear", ["c", "s", "z"], ["d"], name="dq"),
        helper.make_node("StringNormalizer", ["d"], ["y"], name="sn"),
    ]
    init = {"s": f32(0.1), "z": np.array(0, "int8"), "w": ints("int8", 2, 2, 1, 1)}
    with pytest.raises(OnnxImportError) as info:
        from_onnx(make_model(nodes, {"x": rand(1, 2, 3, 3)}, init))
    message = str(info.value)
    assert "1 unsupported operator type" in message and "StringNormalizer x1: sn" in message
    assert "Quantize" not in message and "QLinear" not in message
