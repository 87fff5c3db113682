"""The ONNX importer's own behaviour: opsets, dtypes (bfloat16, float64 constants), Cast and
CastLike, Constant, Identity, Dropout, data-dependent shapes, values needed while importing,
and bfloat16 in the text format (malformed models and external data are in
test_onnx_importer_malformed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from onnx_graphs import graph_model, out_info, tensor_info  # noqa: E402
from passhost.frontend import OnnxImportError, OnnxUnknownOperandError, from_onnx  # noqa: E402
from passhost.frontend.onnx_registry import OPSET_RANGE  # noqa: E402
from passhost.ir.module import IRModule  # noqa: E402
from passhost.ir.structural import structural_equal  # noqa: E402
from passhost.relay.expr import Constant  # noqa: E402
from passhost.relay.transform import InferType, bind_params_by_name  # noqa: E402
from passhost.relay.visitor import post_order  # noqa: E402
from passhost.text import parse_module, print_module  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    check,
    make_model,
    node,
    rand,
    run_onnxruntime,
    run_passhost,
)

RNG = np.random.default_rng(20261125)
BF16 = np.dtype(ml_dtypes.bfloat16)


def reference(model, inputs):
    """ONNX's reference evaluator (for dtypes onnxruntime has no CPU kernels of)."""
    return ReferenceEvaluator(model).run(None, inputs)


# -- opsets --------------------------------------------------------------------------------------
@pytest.mark.parametrize("opset", [OPSET_RANGE[0] - 1, OPSET_RANGE[1] + 1])
def test_opsets_outside_the_declared_range_are_an_error(opset):
    model = make_model([node("Relu", ["x"])], {"x": rand(2, 3)}, opset=opset)
    lo, hi = OPSET_RANGE
    with pytest.raises(OnnxImportError, match=rf"opset {lo} to {hi}, found opset {opset}"):
        from_onnx(model)


@pytest.mark.parametrize("opset", OPSET_RANGE)
def test_both_ends_of_the_opset_range_import(opset):
    model = make_model([node("Relu", ["x"])], {"x": rand(2, 3)}, opset=opset)
    from_onnx(model)


def test_a_model_without_the_default_opset_is_an_error():
    model = make_model([node("Relu", ["x"])], {"x": rand(2, 3)})
    model.opset_import[0].domain = "com.example"
    with pytest.raises(OnnxImportError, match="default ONNX opset"):
        from_onnx(model)


def test_an_operator_newer_than_the_model_opset_is_an_error():
    model = make_model([node("LayerNormalization", ["x", "g"])], {"x": rand(2, 3)},
                       {"g": rand(3)}, opset=13)
    with pytest.raises(OnnxImportError,
                       match=r"LayerNormalization node .*opset 13 has no operator"):
        from_onnx(model)


# -- dtypes --------------------------------------------------------------------------------------
def test_float64_constants_stay_float64():
    value = numpy_helper.from_array(np.array([0.1, 1e300], "float64"), "v")
    nodes = [node("Constant", [], ["c"], value=value), node("Add", ["x", "c"])]
    x = RNG.standard_normal((2, 2))
    model = make_model(nodes, {"x": x})
    mod, _ = from_onnx(model)
    consts = [n for n in post_order(mod["main"].body) if isinstance(n, Constant)]
    assert [c.data.dtype.name for c in consts] == ["float64"]
    np.testing.assert_array_equal(run_passhost(model, {"x": x})[0],
                                  run_onnxruntime(model, {"x": x})[0])


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
def test_bfloat16_arithmetic_rounds_each_result_as_onnx_does(op_type):
    a = rand(3, 4).astype(BF16)
    b = (rand(4) + 3).astype(BF16)
    model = make_model([node(op_type, ["a", "b"])], {"a": a, "b": b})
    got = run_passhost(model, {"a": a, "b": b})[0]
    want = reference(model, {"a": a, "b": b})[0]
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_bfloat16_model_compiles_saves_loads_and_runs_from_the_command_line(tmp_path,
                                                                            capsys):
    from passhost.cli import main

    x = rand(2, 4).astype(BF16)
    model = make_model([node("Gemm", ["x", "w", "b"], ["g"]), node("Relu", ["g"])], {"x": x},
                       {"w": rand(4, 3).astype(BF16), "b": rand(3).astype(BF16)})
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["compile", str(path), "--target", "cpu", "-o", str(tmp_path / "m.tar")]) == 0
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(tmp_path / "m.tar"), "--input", f"x={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")["output0"].view(BF16)
    # Gemm computes in float32 and rounds once (ONNX's reference rounds the product and the
    # sum apart; tests/test_onnx_bfloat16.py compares Gemm with it).
    want = run_passhost(model, {"x": x})[0]
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    assert main(["run", str(tmp_path / "m.tar")]) == 0  # random bfloat16 inputs
    capsys.readouterr()


def test_bfloat16_initializers_stay_parameters():
    w = rand(3).astype(BF16)
    nodes = [node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT), node("Mul", ["x", "wf"])]
    x = rand(2, 3)
    model = make_model(nodes, {"x": x}, {"w": w})
    _, params = from_onnx(model)
    assert params["w"].dtype == BF16
    np.testing.assert_array_equal(run_passhost(model, {"x": x})[0],
                                  x * w.astype("float32"))


# -- Cast, CastLike ------------------------------------------------------------------------------
CAST_TYPES = {
    TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64",
    TensorProto.FLOAT16: "float16", TensorProto.INT8: "int8", TensorProto.UINT8: "uint8",
    TensorProto.INT16: "int16", TensorProto.UINT16: "uint16", TensorProto.INT32: "int32",
    TensorProto.UINT32: "uint32", TensorProto.INT64: "int64", TensorProto.UINT64: "uint64",
    TensorProto.BOOL: "bool",
}


def cast_input(src: str, dst: str, data) -> np.ndarray:
    """Values to cast from ``src`` to ``dst`` for which ONNX defines the result: floats in
    the target's range when the target is an integer type (out of range is undefined)."""
    kind_src, kind_dst = np.dtype(src).kind, np.dtype(dst).kind
    if kind_src == "b":
        return np.array(data.draw(st.lists(st.booleans(), min_size=6, max_size=6)), bool)
    if kind_src == "f":
        special = [] if kind_dst in "iu" else [np.nan, np.inf, -np.inf, 7e4]
        values = data.draw(st.lists(st.sampled_from([0.0, -0.0, 0.5, -1.5, 2.75, 99.9, -99.9,
                                                     127.0, 250.5, *special]),
                                    min_size=6, max_size=6))
        x = np.array(values, "float64")
        if kind_dst == "u":
            x = np.abs(x)
        if kind_dst in "iu":
            info = np.iinfo(dst)
            x = np.clip(x, float(info.min), float(info.max))
        return x.astype(src)
    info = np.iinfo(src)
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=6,
                                max_size=6))
    return np.array(values, src)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(src=st.sampled_from(sorted(CAST_TYPES)), dst=st.sampled_from(sorted(CAST_TYPES)),
       like=st.booleans(), data=st.data())
def test_cast_and_cast_like_match_onnxruntime(src, dst, like, data):
    x = cast_input(CAST_TYPES[src], CAST_TYPES[dst], data).reshape(2, 3)
    if like:
        target = np.zeros(1, CAST_TYPES[dst])
        model = make_model([node("CastLike", ["x", "t"])], {"x": x}, {"t": target})
    else:
        model = make_model([node("Cast", ["x"], to=dst)], {"x": x})
    got = run_passhost(model, {"x": x})[0]
    want = run_onnxruntime(model, {"x": x})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src, dst", [(TensorProto.FLOAT, TensorProto.BFLOAT16),
                                      (TensorProto.BFLOAT16, TensorProto.FLOAT),
                                      (TensorProto.BFLOAT16, TensorProto.INT32),
                                      (TensorProto.DOUBLE, TensorProto.BFLOAT16)])
def test_cast_to_and_from_bfloat16_rounds_to_nearest_even(src, dst):
    values = np.array([0.47892547, 1.00390625, 1.01171875, -3.5, 65504.0, np.inf, -np.inf,
                       3.4e38, 1e-40, 0.0], "float64")
    if dst == TensorProto.INT32:
        values = values[:5]
    x = values.astype(helper.tensor_dtype_to_np_dtype(src))
    model = make_model([node("Cast", ["x"], to=dst)], {"x": x})
    got = run_passhost(model, {"x": x})[0]
    want = reference(model, {"x": x})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype("float64"), want.astype("float64"))


def test_cast_of_known_values_folds():
    nodes = [node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             node("Mul", ["x", "f"])]
    x = rand(3, 2)
    check(nodes, {"x": x})
    mod, _ = from_onnx(make_model(nodes, {"x": x}))
    assert "cast" not in {getattr(n.op, "name", "") for n in post_order(mod["main"].body)
                          if hasattr(n, "op")}


@pytest.mark.parametrize("to, message", [
    (TensorProto.STRING, "no string tensors"),
    (TensorProto.FLOAT8E4M3FN, "no tensors of ONNX type FLOAT8E4M3FN"),
    (TensorProto.INT4, "no tensors of ONNX type INT4"),
    (99, "no tensors of ONNX type <unknown element type 99>"),
])
def test_cast_to_a_type_passhost_lacks_is_an_error(to, message):
    model = make_model([node("Cast", ["x"], to=to)], {"x": rand(2, 3)})
    with pytest.raises(OnnxImportError, match=rf"Cast node 'Cast_\d+': attribute 'to': .*"
                                              rf"{message}"):
        from_onnx(model)


def test_a_string_or_float8_graph_input_is_an_error():
    for elem, message in ((TensorProto.STRING, "no string tensors"),
                          (TensorProto.FLOAT8E5M2, "FLOAT8E5M2")):
        model = graph_model([node("Identity", ["x"])], [tensor_info("x", elem)], [out_info()])
        with pytest.raises(OnnxImportError, match=rf"graph input 'x': .*{message}"):
            from_onnx(model)


# -- Constant, Identity --------------------------------------------------------------------------
@pytest.mark.parametrize("attrs", [
    {"value_float": 2.5}, {"value_floats": [1.0, 2.0, 3.0]}, {"value_int": 3},
    {"value_ints": [1, 2, 3]}, {"value": numpy_helper.from_array(rand(2, 3), "v")},
    {"value": numpy_helper.from_array(np.array([1, -2, 3], "int8"), "v")},
])
def test_constant_values_match_onnxruntime(attrs):
    nodes = [node("Constant", [], ["c"], **attrs), node("Identity", ["c"], ["y"])]
    model = make_model(nodes, {})
    got, want = run_passhost(model, {})[0], run_onnxruntime(model, {})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs, message", [
    ({"value_string": "a"}, "no string tensors"),
    ({"value_strings": ["a"]}, "no string tensors"),
    ({"sparse_value": helper.make_sparse_tensor(
        numpy_helper.from_array(np.ones(1, "float32"), "v"),
        numpy_helper.from_array(np.zeros(1, "int64"), "i"), [3])}, "sparse"),
])
def test_string_and_sparse_constants_are_errors(attrs, message):
    model = make_model([node("Constant", [], ["c"], **attrs), node("Identity", ["c"])], {})
    with pytest.raises(OnnxImportError, match=rf"Constant node .*{message}"):
        from_onnx(model)


def test_identity_passes_on_inputs_and_initializers():
    check([node("Identity", ["x"], ["a"]), node("Identity", ["w"], ["b"]),
           node("Add", ["a", "b"])], {"x": rand(2, 3)}, {"w": rand(3)})


# -- Dropout -------------------------------------------------------------------------------------
@pytest.mark.parametrize("opset, inputs, init", [
    (13, ["x"], {}),
    (13, ["x", "r"], {"r": np.array(0.3, "float32")}),
    (13, ["x", "r", "t"], {"r": np.array(0.3, "float32"), "t": np.array(False)}),
    (13, ["x", "", "t"], {"t": np.array(False)}),
    (13, ["x", "r", "t"], {"r": np.array(0.0, "float32"), "t": np.array(True)}),
    (22, ["x", "r"], {"r": np.array(0.5, "float32")}),
])
def test_dropout_in_inference_is_the_identity_with_an_all_true_mask(opset, inputs, init):
    x = rand(3, 4)
    model = make_model([node("Dropout", inputs, ["y", "m"])], {"x": x}, init,
                       outputs=("y", "m"), opset=opset)
    y, m = run_passhost(model, {"x": x})
    np.testing.assert_array_equal(y, x)
    assert m.dtype == bool and m.all() and m.shape == x.shape
    for g, w in zip((y, m), run_onnxruntime(model, {"x": x})):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("opset, attrs", [(7, {"ratio": 0.2}), (11, {}), (6, {"is_test": 1})])
def test_dropout_before_version_12_is_the_identity(opset, attrs):
    x = rand(3, 4)
    model = make_model([node("Dropout", ["x"], **attrs)], {"x": x}, opset=opset)
    np.testing.assert_array_equal(run_passhost(model, {"x": x})[0], x)


@pytest.mark.parametrize("opset, inputs, init, outputs, message", [
    (13, ["x", "r", "t"], {"r": np.array(0.3, "float32"), "t": np.array(True)}, ["y"],
     r"training_mode is true with ratio 0\.3"),
    (13, ["x", "", "t"], {"t": np.array([True])}, ["y"], r"training_mode is true with ratio 0\.5"),
    (13, ["x", "r", "t"], {"r": np.array(0.3, "float32")}, ["y"],
     r"training_mode \(input 2, 't'\) must be known while importing"),
    (13, ["x", "x", "t"], {"t": np.array(True)}, ["y"],
     r"input 1 \('x'\) must be known while importing"),
    (6, ["x"], {}, ["y"], r"is_test=0: in training mode"),
    (9, ["x"], {}, ["y", "m"], r"mask output \('m'\) is not defined in inference"),
])
def test_dropout_in_training_or_with_an_undefined_mask_is_an_error(opset, inputs, init,
                                                                   outputs, message):
    data = {"x": rand(3, 4)}
    if "t" in inputs and "t" not in init:
        data["t"] = np.array(True)  # training_mode as a graph input
    model = make_model([node("Dropout", inputs, outputs)], data, init, outputs=outputs,
                       opset=opset)
    with pytest.raises(OnnxImportError, match=rf"Dropout node 'Dropout_\d+': .*{message}"):
        from_onnx(model)


# -- data-dependent output shapes ----------------------------------------------------------------
@pytest.mark.parametrize("nodes, outputs, message", [
    ([node("NonZero", ["x"])], ("y",), r"NonZero node .*input 0 \('x'\) must be known"),
    ([node("Unique", ["x"], ["y", "i", "v", "n"])], ("y", "i", "v", "n"),
     r"Unique node .*input 0 \('x'\) must be known"),
    ([node("Cast", ["c"], ["m"], to=TensorProto.BOOL), node("Compress", ["x", "m"], axis=1)],
     ("y",), r"Compress node .*input 1 \('m'\) must be known"),
])
def test_data_dependent_output_shapes_are_a_clear_error(nodes, outputs, message):
    model = make_model(nodes, {"x": rand(3, 4), "c": rand(4)}, outputs=outputs)
    with pytest.raises(OnnxUnknownOperandError, match=message) as info:
        from_onnx(model)
    assert "output shape depends on its values" in str(info.value)
    assert info.value.input_name == nodes[-1].input[-1]


@pytest.mark.parametrize("attrs", [{}, {"sorted": 0}, {"axis": 0}, {"axis": -1, "sorted": 0}])
def test_nonzero_and_unique_of_known_values_fold(attrs):
    c = numpy_helper.from_array(np.array([[3, 1, 3], [0, 1, 0], [3, 1, 3]], "int64"), "c")
    nodes = [node("Constant", [], ["c"], value=c), node("NonZero", ["c"], ["nz"]),
             node("Unique", ["c"], ["u", "i", "v", "n"], **attrs)]
    model = make_model(nodes, {}, outputs=("nz", "u", "i", "v", "n"))
    for got, want in zip(run_passhost(model, {}), run_onnxruntime(model, {})):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("condition, axis", [([1, 0, 1], 0), ([0, 1, 1, 0, 1], 1),
                                             ([1, 0], -1), ([0, 1, 0, 0, 0, 1, 1], None),
                                             ([0, 0, 0], 0)])
def test_compress_with_a_known_condition(condition, axis):
    attrs = {} if axis is None else {"axis": axis}
    check([node("Compress", ["x", "c"], **attrs)], {"x": rand(3, 5)},
          {"c": np.array(condition, bool)})


def test_compress_with_a_condition_longer_than_the_axis_is_an_error():
    model = make_model([node("Compress", ["x", "c"], axis=0)], {"x": rand(3, 5)},
                       {"c": np.ones(4, bool)})
    with pytest.raises(OnnxImportError, match=r"Compress node .*at most 3 values, found 4"):
        from_onnx(model)


# -- values that must be known while importing ---------------------------------------------------
@pytest.mark.parametrize("nodes, message", [
    ([node("Reshape", ["x", "s"])], r"the shape \(input 1, 's'\)"),
    ([node("Unsqueeze", ["x", "s"])], r"the axes \(input 1, 's'\)"),
    ([node("Split", ["x", "s"], ["y", "z"], axis=1)], r"the split sizes \(input 1, 's'\)"),
    ([node("Slice", ["x", "s", "s"])], r"the starts \(input 1, 's'\)"),
    ([node("ReduceSum", ["x", "s"])], r"input 1 \('s'\)"),
    ([node("ConstantOfShape", ["s"])], r"the shape \(input 0, 's'\)"),
])
def test_operands_needed_while_importing_name_the_node_and_input(nodes, message):
    inputs = {"x": rand(2, 3), "s": np.array([1, 2], "int64"), "f": np.array(0.0, "float32")}
    names = set(nodes[0].input)
    model = make_model(nodes, {k: v for k, v in inputs.items() if k in names},
                       outputs=list(nodes[0].output))
    with pytest.raises(OnnxUnknownOperandError,
                       match=rf"{nodes[0].op_type} node '{nodes[0].name}': "
                             rf"{message} must be known while importing") as info:
        from_onnx(model)
    assert info.value.input_name in nodes[0].input


# -- bfloat16 in the IR text format --------------------------------------------------------------
def test_bfloat16_constants_round_trip_through_the_text_format():
    small = np.array([1.5, -0.0, np.nan, np.inf, -np.inf, 3.4e38, 1e-40, 0.1, 123456.0],
                     "float32").astype(BF16)
    large = np.linspace(-3, 3, 300).astype(BF16)
    model = make_model([node("Add", ["x", "s"], ["a"]), node("Gather", ["l", "i"], ["g"]),
                        node("Mul", ["a", "g"])], {"x": rand(9).astype(BF16)},
                       {"s": small, "l": large, "i": np.arange(9, dtype="int64")})
    mod, params = from_onnx(model)
    mod = InferType()(IRModule.from_expr(bind_params_by_name(mod["main"], params)))
    text = print_module(mod, show_meta_data=True)
    assert "Tensor[(9), bfloat16]" in text and "meta[Constant]" in text
    back = parse_module(text)
    assert structural_equal(back, mod)
    consts = {(c.data.dtype.name, c.data.size): c.data for c in post_order(back["main"].body)
              if isinstance(c, Constant)}
    np.testing.assert_array_equal(consts["bfloat16", 9].view(np.uint16), small.view(np.uint16))
    np.testing.assert_array_equal(consts["bfloat16", 300].view(np.uint16),
                                  large.view(np.uint16))
