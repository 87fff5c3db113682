"""Building ONNX models as they are, malformed ones included, for the importer's tests."""

from __future__ import annotations

import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402


def graph_model(nodes, inputs, outputs, initializers=(), opset=17):
    """A model from value infos and TensorProtos as they are (for malformed models)."""
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def tensor_info(name, elem=TensorProto.FLOAT, shape=(2, 3)):
    """A value info of element type ``elem`` and ``shape``."""
    return helper.make_tensor_value_info(name, elem, shape)


def out_info(name="y"):
    """A value info with neither type nor shape (an output left to inference)."""
    return helper.make_empty_tensor_value_info(name)
