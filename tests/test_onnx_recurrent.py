"""ONNX LSTM, GRU and RNN against onnxruntime: directions, activations, clip, initial states,
peepholes, linear_before_reset, layouts, input_forget, sequence lengths and every output."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from test_frontend_onnx import make_model, node, run_onnxruntime, run_passhost  # noqa: E402

RNG = np.random.default_rng(20261201)
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUTS = {"LSTM": ("Y", "Y_h", "Y_c"), "GRU": ("Y", "Y_h"), "RNN": ("Y", "Y_h")}


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def layer(op, *, seq=4, batch=3, size=5, hidden=4, direction="forward", layout=0,
          bias=True, initial=False, peepholes=False, lens=None, lens_input=False,
          outputs=None, opset=22, as_initializers=True, **attrs):
    """A one-node model of ``op`` and its inputs (data inputs, initializers)."""
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    x = rand(batch, seq, size) if layout else rand(seq, batch, size)
    params = {"W": rand(dirs, g * hidden, size, scale=0.5),
              "R": rand(dirs, g * hidden, hidden, scale=0.5)}
    if bias:
        params["B"] = rand(dirs, 2 * g * hidden, scale=0.5)
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs = {"X": x}
    names = ["X", "W", "R", "B" if bias else ""]
    if lens is not None:
        names.append("L")
        (inputs if lens_input else params)["L"] = np.asarray(lens, "int32")
    else:
        names.append("")
    if initial:
        inputs["H0"] = rand(*state_shape)
        names.append("H0")
        if op == "LSTM":
            inputs["C0"] = rand(*state_shape)
            names.append("C0")
    if peepholes:
        names += [""] * (7 - len(names)) + ["P"]
        params["P"] = rand(dirs, 3 * hidden)
    while names and names[-1] == "":
        names.pop()
    outputs = outputs or OUTPUTS[op]
    attrs = {"hidden_size": hidden, "direction": direction, **attrs}
    if opset >= 14:
        attrs["layout"] = layout
    nodes = [node(op, names, outputs, **attrs)]
    graph_outputs = tuple(o for o in outputs if o)
    if as_initializers:
        return make_model(nodes, inputs, params, graph_outputs, opset), inputs
    inputs = {**inputs, **params}
    return make_model(nodes, inputs, None, graph_outputs, opset), inputs


def batchwise_reference(model, inputs):
    """onnxruntime's outputs for a layout-1 model: it runs the layout-0 model on the
    transposed inputs, and its outputs are transposed back."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    n = model.graph.node[0]
    for attr in n.attribute:
        if attr.name == "layout":
            attr.i = 0
    for info in model.graph.input:
        if info.name in ("X", "H0", "C0"):
            dims = info.type.tensor_type.shape.dim
            dims[0].dim_value, dims[1].dim_value = dims[1].dim_value, dims[0].dim_value
    swapped = {k: v.transpose(1, 0, 2) if k in ("X", "H0", "C0") else v
               for k, v in inputs.items()}
    outs = run_onnxruntime(model, swapped)
    names = [o.name for o in model.graph.output]
    return [o.transpose(2, 0, 1, 3) if name == "Y" else o.transpose(1, 0, 2)
            for name, o in zip(names, outs)]


def compare(model, inputs, rtol=1e-4, atol=1e-5):
    layout = [a.i for a in model.graph.node[0].attribute if a.name == "layout"]
    want = batchwise_reference(model, inputs) if layout == [1] \
        else run_onnxruntime(model, inputs)
    got = run_passhost(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return want


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts_with_initial_states(op, direction, layout):
    model, inputs = layer(op, direction=direction, layout=layout, initial=True)
    want = compare(model, inputs)
    assert np.abs(want[0]).max() > 0.1


@pytest.mark.parametrize("op, activations, alpha, beta", [
    ("RNN", ["Relu"], [], []),
    ("RNN", ["Affine"], [0.7], [0.2]),
    ("RNN", ["LeakyRelu"], [0.3], []),
    ("RNN", ["ThresholdedRelu"], [0.4], []),
    ("RNN", ["ScaledTanh"], [1.5], [0.6]),
    ("RNN", ["HardSigmoid"], [0.3], [0.4]),
    ("RNN", ["Elu"], [0.8], []),
    ("RNN", ["Softsign"], [], []),
    ("RNN", ["Softplus"], [], []),
    ("RNN", ["Sigmoid", "LeakyRelu"], [0.2], []),                 # bidirectional, per direction
    ("GRU", ["HardSigmoid", "Softsign"], [], []),                 # the defaults 0.2 and 0.5
    ("GRU", ["HardSigmoid", "ScaledTanh"], [0.25, 0.9], [0.45, 1.1]),
    ("LSTM", ["Sigmoid", "Elu", "Softsign"], [0.5], []),
    ("LSTM", ["HardSigmoid", "LeakyRelu", "Tanh"], [0.3, 0.05], [0.6]),
])
def test_activations_consume_alpha_and_beta_in_order(op, activations, alpha, beta):
    direction = "bidirectional" if op == "RNN" and len(activations) == 2 else "forward"
    attrs = {"activations": activations}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    model, inputs = layer(op, direction=direction, initial=True, **attrs)
    compare(model, inputs)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_clip_bounds_the_gate_inputs(op):
    model, inputs = layer(op, direction="bidirectional", clip=0.3, initial=True)
    compare(model, inputs)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_peepholes_and_input_forget(direction, input_forget):
    model, inputs = layer("LSTM", direction=direction, peepholes=True, initial=True,
                          input_forget=input_forget)
    compare(model, inputs)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("bias", [False, True])
def test_gru_linear_before_reset(linear_before_reset, bias):
    model, inputs = layer("GRU", direction="bidirectional", bias=bias, initial=True,
                          linear_before_reset=linear_before_reset)
    compare(model, inputs)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("lens_input", [False, True])
@pytest.mark.parametrize("layout", [0, 1])
def test_shorter_sequences_keep_their_state_and_output_zeros(op, lens_input, layout):
    """Entries of length 2 and 1 of 5 steps: Y is zero past each entry's end, the final
    states are those of its last step, and the reverse direction starts there."""
    model, inputs = layer(op, seq=5, batch=3, direction="bidirectional", lens=[5, 2, 1],
                          lens_input=lens_input, layout=layout, initial=True)
    y = compare(model, inputs)[0]
    tail = y[2:, :, 1] if layout == 0 else y[1, 2:]
    assert np.all(tail == 0)


def test_full_length_sequence_lens_are_ignored():
    model, inputs = layer("LSTM", lens=[4, 4, 4], initial=True, peepholes=True)
    compare(model, inputs)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_only_the_final_states_and_weights_as_inputs(op):
    outputs = ("", "Y_h", "Y_c") if op == "LSTM" else ("", "Y_h")
    model, inputs = layer(op, outputs=outputs, as_initializers=False)
    compare(model, inputs)


@pytest.mark.parametrize("op, opset", [("LSTM", 7), ("GRU", 7), ("RNN", 7), ("GRU", 14),
                                       ("LSTM", 14), ("RNN", 14)])
def test_older_operator_versions(op, opset):
    model, inputs = layer(op, direction="bidirectional", opset=opset)
    compare(model, inputs)


def test_hidden_size_defaults_to_the_weights():
    model, inputs = layer("GRU")
    for attr in model.graph.node[0].attribute:
        if attr.name == "hidden_size":
            model.graph.node[0].attribute.remove(attr)
            break
    got = run_passhost(model, inputs)
    assert got[1].shape == (1, 3, 4)


@settings(max_examples=12, deadline=None)
@given(op=st.sampled_from(["LSTM", "GRU", "RNN"]), seq=st.integers(1, 4),
       batch=st.integers(1, 3), size=st.integers(1, 4), hidden=st.integers(1, 4),
       direction=st.sampled_from(["forward", "reverse", "bidirectional"]),
       layout=st.sampled_from([0, 1]))
def test_random_shapes(op, seq, batch, size, hidden, direction, layout):
    model, inputs = layer(op, seq=seq, batch=batch, size=size, hidden=hidden,
                          direction=direction, layout=layout, initial=True)
    compare(model, inputs)


# -- errors ----------------------------------------------------------------------------------
def _with_attrs(model, **attrs):
    n = model.graph.node[0]
    for name, value in attrs.items():
        for attr in list(n.attribute):
            if attr.name == name:
                n.attribute.remove(attr)
        n.attribute.append(onnx.helper.make_attribute(name, value))
    return model


@pytest.mark.parametrize("op, attrs, message", [
    ("RNN", {"direction": "sideways"}, r"RNN node .*forward, reverse or bidirectional"),
    ("GRU", {"activations": ["Sigmoid", "Swish"]}, r"GRU node .*activations among .*'Swish'"),
    ("LSTM", {"activations": ["Sigmoid", "Tanh"]}, r"LSTM node .*expected 3 activations"),
    ("GRU", {"activations": ["Sigmoid", "Relu"], "direction": "bidirectional"},
     r"GRU node .*expected 4 activations \(2 per direction\)"),
    ("LSTM", {"layout": 2}, r"LSTM node .*layout 0 or 1, found 2"),
    ("GRU", {"hidden_size": 5}, r"GRU node .*W \(input 1\) of shape \[1, 15, 5\]"),
    ("RNN", {"clip": -1.0}, r"RNN node .*positive clip"),
])
def test_malformed_layers_name_the_node(op, attrs, message):
    model, _ = layer(op, direction=attrs.get("direction", "forward"))
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(_with_attrs(model, **attrs))


def test_sequence_lens_out_of_range_name_the_node():
    model, _ = layer("RNN", lens=[4, 7, 1])
    with pytest.raises(OnnxImportError, match=r"RNN node .*sequence_lens in \[0, 4\]"):
        from_onnx(model)


def test_wrong_initial_state_shape_names_the_node():
    model, _ = layer("LSTM", initial=True, layout=0)
    model = _with_attrs(model, layout=1)
    with pytest.raises(OnnxImportError, match=r"LSTM node .*initial_h \(input 5\) of shape "
                                              r"\[4, 1, 4\] \(layout 1\)"):
        from_onnx(model)
