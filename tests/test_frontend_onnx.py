"""The ONNX importer against onnxruntime: single operators, small networks, and errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import passhost  # noqa: E402
from passhost.errors import PasshostError  # noqa: E402
from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.ir import structural_equal  # noqa: E402
from passhost.relay import evaluate  # noqa: E402
from passhost.relay.visitor import post_order  # noqa: E402
from passhost.transform import PassContext  # noqa: E402

RNG = np.random.default_rng(20261122)
INT64_MAX = np.iinfo(np.int64).max


def rand(*shape: int, positive: bool = False) -> np.ndarray:
    x = RNG.standard_normal(shape).astype("float32")
    return np.abs(x) + 0.1 if positive else x


def make_model(nodes, inputs, initializers=None, outputs=("y",), opset=17):
    """A model whose data inputs are ``inputs`` (name -> array: shape and dtype)."""
    infos = [helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for name, a in inputs.items()]
    inits = [numpy_helper.from_array(np.asarray(a), name)
             for name, a in (initializers or {}).items()]
    outs = [helper.make_empty_tensor_value_info(name) for name in outputs]
    graph = helper.make_graph(nodes, "test", infos, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def run_onnxruntime(model, inputs):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def run_passhost(model, inputs):
    mod, params = from_onnx(model)
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, "cpu", params)
    return compiled.executor()(**inputs)


def run_reference(model, inputs):
    """ONNX's reference implementation, for what onnxruntime rejects or computes wrongly."""
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, inputs)


def compare(model, inputs, rtol=1e-4, atol=1e-5, oracle=run_onnxruntime):
    """Compile ``model`` with passhost and compare every output (shape, dtype, values) with
    the oracle's; returns the oracle's outputs."""
    want = oracle(model, inputs)
    got = run_passhost(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return want


def check(nodes, inputs, initializers=None, outputs=("y",), opset=17):
    """Compile the model with passhost and compare every output with onnxruntime's."""
    compare(make_model(nodes, inputs, initializers, outputs, opset), inputs)


_NODE_IDS = itertools.count()


def node(op_type, inputs, outputs=("y",), **attrs):
    return helper.make_node(op_type, list(inputs), list(outputs),
                            name=f"{op_type}_{next(_NODE_IDS)}", **attrs)


# -- networks ----------------------------------------------------------------------------------
def test_a_small_cnn_with_every_conv_variant():
    c = 8
    weights = {
        "w0": rand(c, 3, 3, 3), "b0": rand(c),
        "bn_s": rand(c, positive=True), "bn_b": rand(c), "bn_m": rand(c),
        "bn_v": rand(c, positive=True),
        "w1": rand(c, c // 2, 3, 3),
        "w2": rand(c, 1, 3, 3), "b2": rand(c),
        "w3": rand(c, c, 2, 2), "w4": rand(c, c, 2, 3),
        "fc_w": rand(5, c), "fc_b": rand(5),
    }
    nodes = [
        node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 0, 2, 1], strides=[1, 2]),
        node("BatchNormalization", ["c0", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"],
             epsilon=1e-3),
        node("Relu", ["bn"], ["r0"]),
        node("Conv", ["r0", "w1"], ["c1"], group=2, dilations=[2, 2], pads=[2, 1, 2, 3]),
        node("Conv", ["c1", "w2", "b2"], ["c2"], group=c, strides=[2, 2],
             auto_pad="SAME_LOWER"),
        node("Conv", ["c2", "w3"], ["c3"], auto_pad="VALID"),
        node("Conv", ["c3", "w4"], ["c4"], auto_pad="SAME_UPPER", strides=[1, 2]),
        node("MaxPool", ["c4"], ["p0"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        node("AveragePool", ["p0"], ["p1"], kernel_shape=[2, 2], pads=[1, 1, 1, 1],
             count_include_pad=1),
        node("GlobalAveragePool", ["p1"], ["g"]),
        node("Flatten", ["g"], ["f"]),
        node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1),
    ]
    check(nodes, {"x": rand(2, 3, 17, 23)}, weights)


def test_an_mlp():
    weights = {"w1": rand(16, 32), "b1": rand(32), "w2": rand(32, 10), "b2": rand(10)}
    nodes = [
        node("MatMul", ["x", "w1"], ["h"]),
        node("Add", ["h", "b1"], ["hb"]),
        node("Relu", ["hb"], ["a"]),
        node("Gemm", ["a", "w2", "b2"], ["logits"], alpha=0.5, beta=2.0),
        node("Softmax", ["logits"], ["y"], axis=1),
    ]
    check(nodes, {"x": rand(4, 16)}, weights)


def test_initializers_become_params_and_other_inputs_data():
    nodes = [node("Conv", ["x", "w", "b"], ["y"])]
    model = make_model(nodes, {"x": rand(1, 2, 5, 5)}, {"w": rand(3, 2, 1, 1), "b": rand(3)})
    mod, params = from_onnx(model)
    assert sorted(params) == ["b", "w"]
    assert [p.name_hint for p in mod["main"].params] == ["x", "w", "b"]
    assert tuple(mod["main"].body.checked_type.shape) == (1, 3, 5, 5)


# -- single operators ----------------------------------------------------------------------------
#: Conv attributes and weight shapes over every padding, stride, dilation and group form
#: (also used by the QLinearConv tests).
CONV_CASES = [
    ({}, (4, 6, 3, 3)),
    ({"pads": [1, 2, 0, 1], "strides": [2, 1]}, (4, 6, 3, 3)),
    ({"dilations": [2, 3], "pads": [2, 2, 2, 2]}, (4, 6, 3, 3)),
    ({"group": 3}, (6, 2, 3, 3)),
    ({"group": 6, "auto_pad": "SAME_UPPER", "strides": [2, 2]}, (6, 1, 3, 3)),
    ({"auto_pad": "SAME_LOWER", "strides": [3, 2]}, (4, 6, 4, 2)),
    ({"auto_pad": "VALID", "strides": [2, 2]}, (4, 6, 2, 3)),
]


@pytest.mark.parametrize("attrs, wshape", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv(attrs, wshape, bias):
    init = {"w": rand(*wshape)}
    if bias:
        init["b"] = rand(wshape[0])
    check([node("Conv", ["x", *init], **attrs)], {"x": rand(2, 6, 9, 10)}, init)


@pytest.mark.parametrize("trans_a, trans_b, alpha, beta, c_shape", [
    (0, 0, 1.0, 1.0, None), (1, 0, 0.5, 1.0, (5,)), (0, 1, 1.0, 3.0, (3, 5)),
    (1, 1, 2.0, 0.5, (1, 5)), (0, 0, 1.0, 1.0, (3, 1)),
])
def test_gemm(trans_a, trans_b, alpha, beta, c_shape):
    a = rand(4, 3) if trans_a else rand(3, 4)
    init = {"b": rand(5, 4) if trans_b else rand(4, 5)}
    if c_shape is not None:
        init["c"] = rand(*c_shape)
    check([node("Gemm", ["a", *init], transA=trans_a, transB=trans_b, alpha=alpha,
                beta=beta)], {"a": a}, init)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (3, 4, 5)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
])
def test_matmul(a_shape, b_shape):
    check([node("MatMul", ["a", "b"])], {"a": rand(*a_shape), "b": rand(*b_shape)})


@pytest.mark.parametrize("op_type, attrs, positive", [
    ("Relu", {}, False), ("LeakyRelu", {}, False), ("LeakyRelu", {"alpha": 0.3}, False),
    ("Sigmoid", {}, False), ("Tanh", {}, False), ("Sqrt", {}, True), ("Erf", {}, False),
    ("Exp", {}, False), ("Identity", {}, False), ("Dropout", {}, False),
])
def test_unary(op_type, attrs, positive):
    check([node(op_type, ["x"], **attrs)], {"x": rand(2, 3, 4, positive=positive)})


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Pow"])
@pytest.mark.parametrize("a_shape, b_shape", [((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)),
                                              ((1,), (2, 3))])
def test_broadcasting_binary(op_type, a_shape, b_shape):
    positive = op_type in ("Pow", "Div")
    check([node(op_type, ["a", "b"])],
          {"a": rand(*a_shape, positive=positive), "b": rand(*b_shape, positive=positive)})


def test_pow_with_an_integer_exponent():
    check([node("Pow", ["a", "e"])], {"a": rand(2, 3)}, {"e": np.array(3, "int64")})


@pytest.mark.parametrize("bounds", [(-0.5, 0.7), (-0.2, None), (None, None)])
def test_clip_with_bounds_as_inputs(bounds):
    lo, hi = bounds
    init = {}
    names = ["x", "", ""]
    if lo is not None:
        init["lo"], names[1] = np.array(lo, "float32"), "lo"
    if hi is not None:
        init["hi"], names[2] = np.array(hi, "float32"), "hi"
    while names[-1] == "":
        names.pop()
    check([node("Clip", names)], {"x": rand(3, 4)}, init)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax(axis):
    check([node("Softmax", ["x"], axis=axis)], {"x": rand(2, 3, 4)})


def test_softmax_before_opset_13_flattens_from_the_axis():
    check([node("Softmax", ["x"], axis=1)], {"x": rand(2, 3, 4)}, opset=11)


@pytest.mark.parametrize("shape", [(0, -1), (-1, 4), (2, 0, 2, 2), (24,)])
def test_reshape(shape):
    check([node("Reshape", ["x", "s"])], {"x": rand(2, 3, 4)},
          {"s": np.array(shape, "int64")})


@pytest.mark.parametrize("perm", [None, (0, 2, 1), (2, 0, 1)])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": list(perm)}
    check([node("Transpose", ["x"], **attrs)], {"x": rand(2, 3, 4)})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    a = rand(2, 3, 4)
    b_shape = list(a.shape)
    b_shape[axis] = 5
    check([node("Concat", ["a", "b", "a"], axis=axis)], {"a": a, "b": rand(*b_shape)})


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1])
def test_flatten(axis):
    check([node("Flatten", ["x"], axis=axis)], {"x": rand(2, 3, 4)})


@pytest.mark.parametrize("op_type, attrs", [
    ("MaxPool", {"kernel_shape": [3, 3]}),
    ("MaxPool", {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [2, 3], "strides": [2, 1], "auto_pad": "SAME_LOWER"}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "VALID"}),
    ("GlobalAveragePool", {}),
])
def test_pools(op_type, attrs):
    check([node(op_type, ["x"], **attrs)], {"x": rand(2, 3, 9, 8)})


def test_batch_normalization():
    c = 4
    init = {"s": rand(c), "b": rand(c), "m": rand(c), "v": rand(c, positive=True)}
    check([node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-2)],
          {"x": rand(2, c, 3, 3)}, init)


@pytest.mark.parametrize("with_bias", [False, True])
def test_layer_normalization(with_bias):
    init = {"g": rand(6)}
    if with_bias:
        init["b"] = rand(6)
    check([node("LayerNormalization", ["x", *init], epsilon=1e-3)], {"x": rand(2, 3, 6)},
          init)


def test_constant():
    value = numpy_helper.from_array(rand(3, 4), "c")
    check([node("Constant", [], ["c"], value=value), node("Add", ["x", "c"])],
          {"x": rand(3, 4)})


@pytest.mark.parametrize("axes", [(0,), (1, -1), (-1, 0)])
def test_unsqueeze_with_axes_as_input(axes):
    check([node("Unsqueeze", ["x", "a"])], {"x": rand(2, 3)},
          {"a": np.array(axes, "int64")})


@pytest.mark.parametrize("axes", [None, (1,), (-1, 1)])
def test_squeeze(axes):
    init = {} if axes is None else {"a": np.array(axes, "int64")}
    check([node("Squeeze", ["x", *init])], {"x": rand(2, 1, 3, 1)}, init)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("indices", [np.array(1), np.array([0, -1, 2]),
                                     np.array([[1, 0], [-2, 2]])])
def test_gather_with_known_indices(axis, indices):
    check([node("Gather", ["x", "i"], axis=axis)], {"x": rand(3, 4, 5)},
          {"i": indices.astype("int64")})


def test_gather_with_computed_indices():
    check([node("Gather", ["x", "i"], axis=1)],
          {"x": rand(3, 4), "i": np.array([[3, -1], [0, 2]], "int64")})


def test_shape_chains_fold_to_constants():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (as exported from PyTorch), and
    Shape -> ConstantOfShape: with static shapes no shape computation is left."""
    fill = numpy_helper.from_array(np.array([0.5], "float32"), "fill")
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "zero"], ["n"], axis=0),
        node("Unsqueeze", ["n", "zero_axis"], ["n1"]),
        node("Concat", ["n1", "minus_one"], ["new_shape"], axis=0),
        node("Reshape", ["x", "new_shape"], ["flat"]),
        node("Shape", ["flat"], ["fs"]),
        node("ConstantOfShape", ["fs"], ["halves"], value=fill),
        node("Add", ["flat", "halves"], ["y"]),
    ]
    init = {"zero": np.array(0, "int64"), "zero_axis": np.array([0], "int64"),
            "minus_one": np.array([-1], "int64")}
    check(nodes, {"x": rand(2, 3, 4)}, init)
    mod, params = from_onnx(make_model(nodes, {"x": rand(2, 3, 4)}, init))
    ops = sorted(n.op.name for n in post_order(mod["main"].body) if hasattr(n, "op"))
    assert ops == ["add", "reshape"]
    assert params == {}


@pytest.mark.parametrize("to, dtype", [(TensorProto.INT32, "float32"),
                                       (TensorProto.FLOAT, "int64")])
def test_cast(to, dtype):
    x = (rand(3, 4) * 10).astype(dtype)
    check([node("Cast", ["x"], to=to)], {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"axes": [1]}, {"axes": [0, -1], "keepdims": 0}])
def test_reduce_mean(attrs):
    check([node("ReduceMean", ["x"], **attrs)], {"x": rand(2, 3, 4)})


def test_reduce_mean_with_axes_as_input_in_opset_18():
    check([node("ReduceMean", ["x", "a"], keepdims=0)], {"x": rand(2, 3, 4)},
          {"a": np.array([1], "int64")}, opset=18)


@pytest.mark.parametrize("axis, sizes, count", [(1, (1, 4, 1), 3), (-1, None, 2),
                                                (0, None, 2)])
def test_split(axis, sizes, count):
    init = {} if sizes is None else {"s": np.array(sizes, "int64")}
    outputs = [f"y{i}" for i in range(count)]
    check([node("Split", ["x", *init], outputs, axis=axis)], {"x": rand(4, 6, 4)}, init,
          outputs=outputs)


@pytest.mark.parametrize("starts, ends, axes, steps", [
    ((1,), (3,), None, None),
    ((0, 1), (INT64_MAX, -1), (2, 0), None),
    ((-1,), (-INT64_MAX,), (1,), (-1,)),
    ((4, 0), (0, 5), (1, 2), (-2, 2)),
])
def test_slice(starts, ends, axes, steps):
    init = {"b": np.array(starts, "int64"), "e": np.array(ends, "int64")}
    if axes is not None:
        init["a"] = np.array(axes, "int64")
    if steps is not None:
        init["st"] = np.array(steps, "int64")
    check([node("Slice", ["x", *init])], {"x": rand(4, 5, 6)}, init)


@pytest.mark.parametrize("mode, value", [("constant", None), ("constant", 1.5),
                                         ("edge", None), ("reflect", None)])
def test_pad(mode, value):
    init = {"p": np.array([0, 1, 2, 0, 2, 1], "int64")}
    if value is not None:
        init["v"] = np.array(value, "float32")
    check([node("Pad", ["x", *init], mode=mode)], {"x": rand(2, 4, 5)}, init)


@pytest.mark.parametrize("nodes, init, opset", [
    ([node("Clip", ["x"], min=-0.3, max=0.4)], {}, 6),
    ([node("Unsqueeze", ["x"], axes=[0, 3])], {}, 11),
    ([node("Unsqueeze", ["x"], ["u"], axes=[1]), node("Squeeze", ["u"], axes=[1])], {}, 11),
    ([node("Split", ["x"], ["y", "z"], axis=1, split=[1, 3])], {}, 11),
    ([node("Slice", ["x"], starts=[1, 0], ends=[3, -1], axes=[0, 2])], {}, 9),
    ([node("Pad", ["x"], pads=[0, 1, 0, 1, 0, 2], value=2.0)], {}, 10),
    ([node("Split", ["x"], ["y", "z"], axis=0, num_outputs=2)], {}, 18),
    ([node("ReduceMean", ["x"], noop_with_empty_axes=1)], {}, 18),
])
def test_attributes_that_older_or_newer_opsets_move(nodes, init, opset):
    outputs = [o for n in nodes[-1:] for o in n.output]
    check(nodes, {"x": rand(3, 4, 5)}, init, outputs=outputs, opset=opset)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_slice_matches_numpy_slicing(data):
    """Property: an imported Slice equals Python slicing (ONNX clamps like Python)."""
    shape = (4, 5, 3)
    axes = data.draw(st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
    bound = st.integers(-8, 8) | st.sampled_from([INT64_MAX, -INT64_MAX])
    starts = [data.draw(bound) for _ in axes]
    ends = [data.draw(bound) for _ in axes]
    steps = [data.draw(st.integers(-3, 3).filter(bool)) for _ in axes]
    init = {"b": np.array(starts, "int64"), "e": np.array(ends, "int64"),
            "a": np.array(axes, "int64"), "st": np.array(steps, "int64")}
    x = np.arange(60, dtype="float32").reshape(shape)
    model = make_model([node("Slice", ["x", "b", "e", "a", "st"])], {"x": x}, init)
    mod, params = from_onnx(model)
    index = [slice(None)] * 3
    for a, b, e, s in zip(axes, starts, ends, steps):
        index[a] = slice(b, e, s)
    np.testing.assert_array_equal(evaluate(mod, x=x, **params), x[tuple(index)])


# -- errors --------------------------------------------------------------------------------------
def test_unsupported_operators_are_reported_once_with_counts_and_names():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("Loop", ["a"], ["b"], name="loop1"),
        helper.make_node("StringNormalizer", ["b"], ["c"], name="sn1"),
        helper.make_node("StringNormalizer", ["c"], ["y"], name="sn2"),
    ]
    model = make_model(nodes, {"x": rand(2, 3)})
    with pytest.raises(OnnxImportError) as info:
        from_onnx(model)
    message = str(info.value)
    assert isinstance(info.value, PasshostError)
    assert "StringNormalizer x2: sn1, sn2" in message
    assert "Loop x1: loop1" in message
    assert "Relu" not in message


def test_a_truncated_file_names_the_path(tmp_path):
    model = make_model([node("Gemm", ["x", "w"])], {"x": rand(2, 3)}, {"w": rand(3, 4)})
    path = tmp_path / "cut.onnx"
    path.write_bytes(model.SerializeToString()[:-7])
    with pytest.raises(OnnxImportError, match=r"cut\.onnx"):
        from_onnx(path)


def test_bytes_that_are_not_a_model_name_the_path(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\xff\xfe not a protobuf \x00\x01")
    with pytest.raises(OnnxImportError, match=r"junk\.onnx"):
        from_onnx(str(path))


@pytest.mark.parametrize(("name", "form"), [("m.onnx", "protobuf"), ("m.txtpb", "textproto"),
                                            ("empty.onnx", None)])
def test_a_model_file_reads_as_the_model(tmp_path, name, form):
    # binary files are parsed mapped into memory; text forms go through onnx.load; an empty
    # file is an empty model (an error about its graph, naming nothing missing on disk)
    model = make_model([node("Gemm", ["x", "w"])], {"x": rand(2, 3)}, {"w": rand(3, 4)})
    path = tmp_path / name
    if form is None:
        path.write_bytes(b"")
        with pytest.raises(OnnxImportError):
            from_onnx(path)
        return
    onnx.save_model(model, path, format=form)
    got, got_params = from_onnx(path)
    expected, params = from_onnx(model)
    assert structural_equal(got, expected)
    assert all(np.array_equal(got_params[k], params[k]) for k in params)


def test_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(OnnxImportError, match=r"absent\.onnx"):
        from_onnx(tmp_path / "absent.onnx")


def test_an_undefined_input_is_a_missing_initializer():
    model = make_model([node("Add", ["x", "bias"])], {"x": rand(2, 3)})
    with pytest.raises(OnnxImportError, match=r"Add node 'Add_\d+'.*'bias'.*missing initializer"):
        from_onnx(model)


def test_symbolic_input_dims_need_a_shape():
    info = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node("Relu", ["x"])], "g", [info], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"'x'.*\['N', 3\]"):
        from_onnx(model)
    mod, _ = from_onnx(model, shape={"x": (5, 3)})
    assert tuple(mod["main"].params[0].type_annotation.shape) == (5, 3)
    with pytest.raises(OnnxImportError, match="'z'"):
        from_onnx(model, shape={"z": (1,)})


def test_an_ill_typed_node_is_named():
    model = make_model([node("MatMul", ["a", "b"])], {"a": rand(2, 3), "b": rand(4, 5)})
    with pytest.raises(OnnxImportError, match=r"MatMul node 'MatMul_\d+'"):
        from_onnx(model)


@pytest.mark.parametrize("nodes, init, message", [
    ([node("LayerNormalization", ["x", "g"], axis=3)], {"g": rand(3, 4)},
     r"LayerNormalization node .*axis in \[-3, 3\)"),
    ([node("Conv", ["x", "w"])], {"w": rand(2, 3, 3, 3)}, r"Conv node .*3-D weight"),
    ([node("Pad", ["x", "p"], mode="wrap")], {"p": np.zeros(6, "int64")},
     r"Pad node .*mode constant, edge or reflect"),
    ([node("Reshape", ["x", "s"])], {"s": np.array([5, -1], "int64")}, r"Reshape node "),
    ([node("Reshape", ["x", "x"])], {}, r"Reshape node .*must be known while importing"),
    ([node("MaxPool", ["x"])], {}, r"MaxPool node .*'kernel_shape'"),
    ([node("Concat", ["x", "x"])], {}, r"Concat node .*attribute 'axis'"),
])
def test_unsupported_attributes_and_bad_nodes_name_the_node(nodes, init, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(make_model(nodes, {"x": rand(2, 3, 4)}, init))


def test_passhost_compile_and_run_an_onnx_file(tmp_path, capsys):
    from passhost.cli import main

    x = rand(1, 3, 8, 8)
    model = make_model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                        node("Relu", ["c"])], {"x": x}, {"w": rand(4, 3, 3, 3)})
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    assert main(["compile", str(path), "--target", "cpu", "-o", str(tmp_path / "m.tar")]) == 0
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(tmp_path / "m.tar"), "--input", f"x={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "out.npz")]) == 0
    want = run_onnxruntime(model, {"x": x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output0"], want, rtol=1e-4,
                               atol=1e-5)
    capsys.readouterr()
