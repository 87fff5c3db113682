"""passhost's ONNX backend (onnx.backend.base.Backend): prepare, run, and the graph inputs it
binds while compiling when the importer needs their values."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")

from onnx import TensorProto

from passhost.frontend import OnnxUnknownOperandError, from_onnx
from passhost.frontend.onnx_backend import PasshostBackend
from test_frontend_onnx import make_model, node

RNG = np.random.default_rng(7)


def test_a_model_with_static_operands_compiles_in_prepare():
    x = RNG.standard_normal((2, 3)).astype("float32")
    rep = PasshostBackend.prepare(make_model([node("Relu", ["x"])], {"x": x}))
    assert rep.bound_inputs == ()
    (y,) = rep.run([x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    (y,) = rep.run({"x": -x})
    np.testing.assert_array_equal(y, np.maximum(-x, 0))


def test_a_graph_input_the_importer_needs_is_bound_per_value():
    x = RNG.standard_normal((2, 3, 4)).astype("float32")
    axes = np.array([1], "int64")
    model = make_model([node("ReduceSum", ["x", "axes"])], {"x": x, "axes": axes}, opset=18)
    with pytest.raises(OnnxUnknownOperandError) as info:
        from_onnx(model)
    assert info.value.input_name == "axes"
    rep = PasshostBackend.prepare(model)
    (y,) = rep.run([x, axes])
    assert rep.bound_inputs == ("axes",)
    np.testing.assert_allclose(y, x.sum(axis=1, keepdims=True), rtol=1e-6)
    (y,) = rep.run([x, np.array([0, 2], "int64")])
    np.testing.assert_allclose(y, x.sum(axis=(0, 2), keepdims=True), rtol=1e-6)
    (y,) = rep.run([x * 2, axes])
    np.testing.assert_allclose(y, 2 * x.sum(axis=1, keepdims=True), rtol=1e-6)
    assert len(rep._executors) == 2


def test_a_needed_value_computed_from_graph_inputs_binds_those_inputs():
    x = RNG.standard_normal((6,)).astype("float32")
    shape = np.array([2, 3], "int32")
    nodes = [node("Cast", ["s"], ["s64"], to=TensorProto.INT64),
             node("Reshape", ["x", "s64"])]
    model = make_model(nodes, {"x": x, "s": shape})
    rep = PasshostBackend.prepare(model)
    (y,) = rep.run([x, shape])
    assert rep.bound_inputs == ("s",)
    np.testing.assert_array_equal(y, x.reshape(2, 3))


def test_a_data_dependent_shape_is_computed_for_the_values_given():
    x = np.array([[0, 1.5], [2, 0]], "float32")
    rep = PasshostBackend.prepare(make_model([node("NonZero", ["x"])], {"x": x}))
    (y,) = rep.run([x])
    np.testing.assert_array_equal(y, np.array(np.nonzero(x)))


def test_inputs_are_checked_and_devices_named():
    x = RNG.standard_normal((2,)).astype("float32")
    rep = PasshostBackend.prepare(make_model([node("Relu", ["x"])], {"x": x}))
    with pytest.raises(ValueError, match=r"expected 1 inputs \['x'\], found 2"):
        rep.run([x, x])
    assert PasshostBackend.supports_device("CPU")
    assert not PasshostBackend.supports_device("CUDA")
    with pytest.raises(ValueError, match="expected device CPU"):
        PasshostBackend.prepare(make_model([node("Relu", ["x"])], {"x": x}), "CUDA")


def test_an_operand_no_graph_input_feeds_is_still_an_error():
    # The shape comes from a float initializer (a parameter, not folded while importing):
    # no graph input can be bound to make it known.
    x = RNG.standard_normal((6,)).astype("float32")
    nodes = [node("Cast", ["f"], ["s"], to=TensorProto.INT64), node("Reshape", ["x", "s"])]
    model = make_model(nodes, {"x": x}, {"f": np.array([2.0, 3.0], "float32")})
    with pytest.raises(OnnxUnknownOperandError, match=r"Reshape node .*input 1, 's'"):
        PasshostBackend.prepare(model)
