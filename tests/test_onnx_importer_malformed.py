"""What the ONNX importer refuses, and how: malformed initializers, nodes and graphs (every
one an OnnxImportError naming what is wrong), a fuzz over mutated models (each imports or
raises that error, and is left unchanged), and external data (read from the model's
directory only)."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onnx_graphs import graph_model, out_info, tensor_info  # noqa: E402
from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.frontend.onnx_registry import converter_table  # noqa: E402
from passhost.relay import evaluate  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    make_model,
    node,
    rand,
    run_onnxruntime,
    run_passhost,
)


# -- malformed models ----------------------------------------------------------------------------
def _bad_initializer(**fields):
    t = TensorProto(name="w", data_type=fields.pop("data_type", TensorProto.FLOAT))
    t.dims.extend(fields.pop("dims", [3]))
    for key, value in fields.items():
        if isinstance(value, list):
            getattr(t, key).extend(value)
        else:
            setattr(t, key, value)
    return t


@pytest.mark.parametrize("tensor, message", [
    (_bad_initializer(dims=[2, 3]), r"float_data holds 0 values, dims \[2, 3\] need 6"),
    (_bad_initializer(data_type=99, raw_data=b"\0" * 12),
     r"expected a tensor element type, found data_type 99"),
    (_bad_initializer(raw_data=b"\0" * 11), r"raw_data holds 11 bytes, dims \[3\] of "
                                            r"float32 need 12"),
    (_bad_initializer(float_data=[1.0, 2.0]), r"float_data holds 2 values"),
    (_bad_initializer(dims=[-3], float_data=[1.0, 2.0, 3.0]),
     r"expected non-negative dims, found \[-3\]"),
    (_bad_initializer(data_type=TensorProto.STRING, string_data=[b"a"] * 3),
     "passhost has no string tensors"),
])
def test_bad_initializers_are_named(tensor, message):
    model = graph_model([node("Add", ["x", "w"])], [tensor_info("x")], [out_info()], [tensor])
    with pytest.raises(OnnxImportError, match=rf"initializer 'w': {message}"):
        from_onnx(model)


def test_a_known_value_of_a_dtype_passhost_lacks_is_named_where_it_is_used():
    w = numpy_helper.from_array(np.ones(3, ml_dtypes.float8_e4m3fn), "w")
    model = graph_model([node("Add", ["x", "w"])], [tensor_info("x")], [out_info()], [w])
    with pytest.raises(OnnxImportError, match=r"Add node .*'w' is of dtype float8_e4m3fn"):
        from_onnx(model)


@pytest.mark.parametrize("nodes, message", [
    ([node("Softmax", ["x"], axis=[1])], r"Softmax node .*attribute 'axis': expected INT, "
                                         r"found INTS"),
    ([node("Concat", ["x", "x"], axis=99)], r"Concat node .*axis"),
    ([node("Slice", ["x", "b", "e"])], r"Slice node "),
    ([node("Softmax", ["x"], axes=1)], r"Softmax node .*'axes' is not one of Softmax version "
                                       r"13's attributes \(axis\)"),
    ([node("Relu", ["x", "x"])], r"Relu node .*expected 1 inputs \(Relu version 14\), found 2"),
    ([node("Relu", ["x"], ["y", "z"])], r"Relu node .*expected 1 outputs"),
    ([node("Cast", ["x"])], r"Cast node .*expected attribute 'to' \(Cast version 13 "
                            r"requires it\)"),
    ([node("Gemm", ["x", ""])], r"Gemm node .*input 1 \(B\) is required"),
    ([node("Transpose", ["x"], perm=[0, 5])], r"Transpose node "),
    ([node("Gather", ["x", "i"], axis=2.5)], r"attribute 'axis': expected INT, found FLOAT"),
    ([node("Squeeze", ["x", "b"])], r"Squeeze node "),
    ([node("Relu", ["x"], ["a"]), node("Relu", ["x"], ["a"]), node("Relu", ["a"])],
     r"Relu node 'Relu_\d+': output 'a' is already defined by Relu node 'Relu_\d+'"),
    ([node("Relu", ["x"], ["x"]), node("Relu", ["x"])],
     r"output 'x' is already defined by graph input 'x'"),
    ([node("Relu", ["a"]), node("Relu", ["x"], ["a"])],
     r"Relu node .*'a' is produced by Relu node .*which comes later.*cycle"),
    ([node("Add", ["x", "b2"], ["a"]), node("Relu", ["a"], ["b2"]), node("Relu", ["b2"])],
     r"Add node .*'b2' is produced by .*which comes later"),
    ([node("Relu", ["x"], ["a"])], r"graph output\(s\) \['y'\] are not produced"),
])
def test_malformed_nodes_and_graphs_name_what_is_wrong(nodes, message):
    init = {"b": np.array([0, 0, 0, 0], "int64"), "e": np.array([1, 1, 1, 1], "int64"),
            "i": np.array([0], "int64")}
    used = {name for n in nodes for name in n.input}
    model = make_model(nodes, {"x": rand(2, 3)}, {k: v for k, v in init.items() if k in used})
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(model)


def test_graph_level_errors():
    relu = node("Relu", ["x"])
    for inputs, outputs, message in [
        ([tensor_info("x"), tensor_info("x")], [out_info()], r"graph input names must be "
                                                             r"unique, found \['x'\]"),
        ([tensor_info("x")], [], "at least one output"),
        ([helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2])], [out_info()],
         r"graph input 'x': expected a tensor, found sequence_type"),
        ([helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], [out_info()],
         r"graph input 'x': expected a static shape, found none"),
    ]:
        with pytest.raises(OnnxImportError, match=message):
            from_onnx(graph_model([relu], inputs, outputs))
    with pytest.raises(OnnxImportError, match=r"shape\['x'\]: expected a sequence of "
                                              r"non-negative ints"):
        from_onnx(graph_model([relu], [tensor_info("x")], [out_info()]), shape={"x": (2, -3)})


def test_an_unnamed_node_is_described_by_its_outputs():
    bad = helper.make_node("Softmax", ["x"], ["y"], axis=7)
    with pytest.raises(OnnxImportError, match=r"Softmax node \(unnamed, outputs \['y'\]\)"):
        from_onnx(make_model([bad], {"x": rand(2, 3)}))


# -- a fuzz over mutated models ------------------------------------------------------------------
def _conv_net():
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c"], ["r"]),
             node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             node("Flatten", ["p"], ["f"]),
             node("Gemm", ["f", "fw", "fb"], ["g"], transB=1, alpha=0.5),
             node("Dropout", ["g"], ["y"])]
    init = {"w": rand(4, 3, 3, 3), "b": rand(4), "fw": rand(5, 16), "fb": rand(5)}
    return make_model(nodes, {"x": rand(1, 3, 8, 8)}, init)


def _attention():
    nodes = [node("MatMul", ["x", "wq"], ["q"]), node("MatMul", ["x", "wk"], ["k"]),
             node("MatMul", ["x", "wv"], ["v"]),
             node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             node("MatMul", ["q", "kt"], ["s"]), node("Div", ["s", "scale"], ["sd"]),
             node("Softmax", ["sd"], ["a"], axis=-1), node("MatMul", ["a", "v"], ["o"]),
             node("Shape", ["o"], ["shape"]), node("Gather", ["shape", "zero"], ["n"]),
             node("Unsqueeze", ["n", "axes"], ["n1"]),
             node("Concat", ["n1", "minus1"], ["newshape"], axis=0),
             node("Reshape", ["o", "newshape"], ["flat"]),
             node("Cast", ["flat"], ["y"], to=TensorProto.DOUBLE)]
    init = {"wq": rand(8, 8), "wk": rand(8, 8), "wv": rand(8, 8),
            "scale": np.array(np.sqrt(8), "float32"), "zero": np.array(0, "int64"),
            "axes": np.array([0], "int64"), "minus1": np.array([-1], "int64")}
    return make_model(nodes, {"x": rand(2, 4, 8)}, init)


BASE_MODELS = {"conv": _conv_net(), "attention": _attention()}
OTHER_OPS = [*sorted(k for k in converter_table() if "." not in k), "Loop", "HardSwish"]
ATTR_VALUES = [helper.make_attribute("v", v) for v in
               (0, 1, -1, 2, 5, -7, 0.5, [0], [1, 1], [2, 0, 1], [1, 1, 1, 1], [-1, 3],
                [0.5, 2.0], "NOTSET", "SAME_UPPER", "bogus", b"x")]


def _mutate(model, data):
    graph = model.graph
    kind = data.draw(st.sampled_from([
        "drop_input", "dup_input", "rename_input", "rename_output", "dup_output",
        "drop_output", "attr_value", "attr_add", "attr_drop", "init_dims", "init_dtype",
        "init_bytes", "init_drop", "reorder", "op_type", "graph_output", "opset"]))
    nodes = graph.node
    n = nodes[data.draw(st.integers(0, len(nodes) - 1))]
    names = sorted({i.name for i in graph.input} | {t.name for t in graph.initializer}
                   | {o for x in nodes for o in x.output} | {"", "nowhere"})
    if kind == "drop_input" and n.input:
        del n.input[data.draw(st.integers(0, len(n.input) - 1))]
    elif kind == "dup_input" and n.input:
        n.input.append(data.draw(st.sampled_from(list(n.input))))
    elif kind == "rename_input" and n.input:
        n.input[data.draw(st.integers(0, len(n.input) - 1))] = data.draw(st.sampled_from(names))
    elif kind == "rename_output" and n.output:
        n.output[0] = data.draw(st.sampled_from(names))
    elif kind == "dup_output":
        n.output.append(data.draw(st.sampled_from(names)))
    elif kind == "drop_output":
        del n.output[:]
    elif kind in ("attr_value", "attr_add"):
        if kind == "attr_value" and n.attribute:
            target = n.attribute[data.draw(st.integers(0, len(n.attribute) - 1))]
            name = target.name
            n.attribute.remove(target)
        else:
            name = data.draw(st.sampled_from(["axis", "perm", "pads", "kernel_shape", "to",
                                              "strides", "mode", "alpha", "training_mode"]))
            for a in [a for a in n.attribute if a.name == name]:
                n.attribute.remove(a)
        attr = copy.deepcopy(data.draw(st.sampled_from(ATTR_VALUES)))
        attr.name = name
        n.attribute.append(attr)
    elif kind == "attr_drop" and n.attribute:
        del n.attribute[data.draw(st.integers(0, len(n.attribute) - 1))]
    elif kind.startswith("init") and graph.initializer:
        t = graph.initializer[data.draw(st.integers(0, len(graph.initializer) - 1))]
        is_float = t.data_type == TensorProto.FLOAT
        if kind == "init_dims":
            new = data.draw(st.lists(st.integers(-1, 9), max_size=4))
            del t.dims[:]
            t.dims.extend(new)
        elif kind == "init_dtype":
            # Floats only become other floats or types passhost rejects (so that no huge
            # integer ever sizes an array); integers only narrower integers.
            choices = [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16,
                       TensorProto.UNDEFINED, TensorProto.STRING, TensorProto.FLOAT8E4M3FN,
                       TensorProto.INT4, 99] if is_float else \
                [TensorProto.INT8, TensorProto.INT32, TensorProto.BOOL, TensorProto.UINT8]
            t.data_type = data.draw(st.sampled_from(choices))
        elif kind == "init_bytes" and is_float:
            raw = t.raw_data or np.array(t.float_data, "float32").tobytes()
            cut = data.draw(st.integers(0, len(raw)))
            t.ClearField("float_data")
            t.raw_data = raw[:cut] + data.draw(st.binary(max_size=6))
        elif kind == "init_drop":
            graph.initializer.remove(t)
    elif kind == "reorder":
        i, j = (data.draw(st.integers(0, len(nodes) - 1)) for _ in range(2))
        a, b = copy.deepcopy(nodes[i]), copy.deepcopy(nodes[j])
        nodes[i].CopyFrom(b)
        nodes[j].CopyFrom(a)
    elif kind == "op_type":
        n.op_type = data.draw(st.sampled_from(OTHER_OPS))
    elif kind == "graph_output":
        graph.output[0].name = data.draw(st.sampled_from(names))
    elif kind == "opset":
        model.opset_import[0].version = data.draw(st.integers(1, 30))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(sorted(BASE_MODELS)), count=st.integers(1, 3), data=st.data())
def test_mutated_models_import_or_raise_onnx_import_error_and_stay_unchanged(base, count,
                                                                              data):
    model = copy.deepcopy(BASE_MODELS[base])
    for _ in range(count):
        _mutate(model, data)
    before = model.SerializeToString()
    try:
        mod, _ = from_onnx(model)
    except OnnxImportError:
        pass
    else:
        assert mod["main"].checked_type is not None
    assert model.SerializeToString() == before


def test_the_unmutated_fuzz_models_match_onnxruntime():
    for model in BASE_MODELS.values():
        x = {i.name: rand(*[d.dim_value for d in i.type.tensor_type.shape.dim])
             for i in model.graph.input}
        for got, want in zip(run_passhost(model, x), run_onnxruntime(model, x)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# -- external data -------------------------------------------------------------------------------
def _save_with_external_data(model, directory, location="weights.bin"):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.onnx"
    onnx.save_model(copy.deepcopy(model), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location, size_threshold=0)
    return path


def _external_model():
    w = rand(3, 4)
    model = make_model([node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "c"], ["y"])],
                       {"x": rand(2, 3)}, {"w": w})
    c = numpy_helper.from_array(rand(4), "c")
    model.graph.node.insert(0, helper.make_node("Constant", [], ["c"], value=c))
    return model


def test_a_model_with_external_data_imports_from_its_directory(tmp_path):
    model = _external_model()
    path = _save_with_external_data(model, tmp_path / "m")
    saved = onnx.load(str(path), load_external_data=False)
    assert saved.graph.initializer[0].data_location == TensorProto.EXTERNAL
    x = {"x": rand(2, 3)}
    want = run_onnxruntime(model, x)[0]
    mod, params = from_onnx(path)
    np.testing.assert_allclose(evaluate(mod, **x, **params), want, rtol=1e-5)
    mod, params = from_onnx(saved, base_dir=path.parent)
    np.testing.assert_allclose(evaluate(mod, **x, **params), want, rtol=1e-5)
    with pytest.raises(OnnxImportError, match=r"initializer 'w': its data is in an external "
                                              r"file .*base_dir"):
        from_onnx(saved)


def _retarget(path, location):
    """Point every external tensor of the model at ``path`` to ``location``."""
    model = onnx.load(str(path), load_external_data=False)
    tensors = list(model.graph.initializer) + [a.t for n in model.graph.node
                                              for a in n.attribute if a.HasField("t")]
    for t in tensors:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = location
    path.write_bytes(model.SerializeToString())


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink", "missing", "length"])
def test_external_data_outside_the_model_directory_is_refused(tmp_path, how):
    path = _save_with_external_data(_external_model(), tmp_path / "m")
    outside = tmp_path / "secret.bin"
    outside.write_bytes((path.parent / "weights.bin").read_bytes())
    if how == "dotdot":
        _retarget(path, "../secret.bin")
        message = "relative to the model's directory and inside it"
    elif how == "absolute":
        _retarget(path, str(outside))
        message = "relative to the model's directory and inside it"
    elif how == "symlink":
        os.symlink(outside, path.parent / "link.bin")
        _retarget(path, "link.bin")
        message = "leads out of the model's directory"
    elif how == "missing":
        _retarget(path, "absent.bin")
        message = "not found"
    else:
        (path.parent / "weights.bin").write_bytes(b"\0" * 8)
        message = r"holds \d+ bytes from offset \d+, expected \d+"
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(path)


def test_a_symlink_inside_the_model_directory_is_followed(tmp_path):
    path = _save_with_external_data(_external_model(), tmp_path / "m")
    (path.parent / "data").mkdir()
    (path.parent / "weights.bin").rename(path.parent / "data" / "weights.bin")
    os.symlink(path.parent / "data" / "weights.bin", path.parent / "link.bin")
    _retarget(path, "link.bin")
    from_onnx(path)
    _retarget(path, "data/weights.bin")
    from_onnx(path)
