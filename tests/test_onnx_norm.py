"""The ONNX normalisations and losses against onnxruntime (against NumPy where onnxruntime
cannot run a case)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

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

RNG = np.random.default_rng(20261125)


def check_close(nodes, inputs, initializers=None, outputs=("y",), opset=17, *, rtol=1e-4,
                atol=1e-5):
    """Like ``check``, with a tolerance."""
    model = make_model(nodes, inputs, initializers, outputs, opset)
    want = run_onnxruntime(model, inputs)
    got = run_passhost(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.astype("float64"), w.astype("float64"), rtol=rtol,
                                   atol=atol)


def op_names(model) -> set[str]:
    """The names of the operators the imported model calls."""
    mod, _ = from_onnx(model)
    nodes = post_order(mod["main"].body, include_ops=True)
    return {n.name for n in nodes if getattr(n, "name", None) is not None}


# -- instance and group normalisation --------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 3, 6), (2, 2, 3, 2, 4)])
@pytest.mark.parametrize("opset", [6, 22])
def test_instance_normalization(shape, opset):
    c = shape[1]
    check([node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-3)], {"x": rand(*shape)},
          {"s": rand(c), "b": rand(c)}, opset=opset)


@pytest.mark.parametrize("shape, groups", [((2, 4, 3, 3), 2), ((1, 6, 5), 3), ((2, 4, 2, 3), 4),
                                           ((1, 3, 2, 2, 2), 1)])
def test_group_normalization_21_scales_each_channel(shape, groups):
    c = shape[1]
    check([node("GroupNormalization", ["x", "s", "b"], num_groups=groups, epsilon=1e-3)],
          {"x": rand(*shape)}, {"s": rand(c), "b": rand(c)}, opset=21)


@pytest.mark.parametrize("shape, groups", [((2, 4, 3, 3), 2), ((1, 6, 5), 3)])
def test_group_normalization_18_scales_each_group(shape, groups):
    check([node("GroupNormalization", ["x", "s", "b"], num_groups=groups)], {"x": rand(*shape)},
          {"s": rand(groups), "b": rand(groups)}, opset=18)


def test_group_normalization_in_float64_stash():
    check([node("GroupNormalization", ["x", "s", "b"], num_groups=2, stash_type=11)],
          {"x": rand(2, 4, 3)}, {"s": rand(4), "b": rand(4)}, opset=21)


# -- layer normalisation ---------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_layer_normalization_over_any_trailing_axes(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    trailing = shape[axis:]
    init = {"s": rand(*trailing)}
    if data.draw(st.booleans()):
        init["b"] = rand(*trailing)
    check([node("LayerNormalization", ["x", *init], axis=axis, epsilon=1e-3)],
          {"x": rand(*shape)}, init)


@pytest.mark.parametrize("scale_shape, bias_shape", [((4, 3), (1,)), ((1, 3), (4, 3)),
                                                    ((3,), (3,)), ((1, 1, 3), None)])
def test_layer_normalization_with_broadcast_scale_and_bias(scale_shape, bias_shape):
    init = {"s": rand(*scale_shape)}
    if bias_shape:
        init["b"] = rand(*bias_shape)
    check([node("LayerNormalization", ["x", *init], axis=1)], {"x": rand(2, 4, 3)}, init)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_layer_normalization_mean_and_inv_std_dev_outputs(axis):
    check([node("LayerNormalization", ["x", "s", "b"], ["y", "m", "i"], axis=axis)],
          {"x": rand(2, 4, 3)}, {"s": rand(*(2, 4, 3)[axis:]), "b": rand(*(2, 4, 3)[axis:])},
          outputs=("y", "m", "i"))


@pytest.mark.parametrize("dtype, tol", [("float16", 3e-3), ("float64", 1e-6)])
def test_layer_normalization_half_and_double(dtype, tol):
    x = rand(2, 4, 6).astype(dtype)
    init = {"s": rand(6).astype(dtype), "b": rand(6).astype(dtype)}
    check_close([node("LayerNormalization", ["x", "s", "b"], ["y", "m", "i"])], {"x": x}, init,
                outputs=("y", "m", "i"), rtol=tol, atol=tol)


def test_layer_normalization_only_reshapes_when_it_must():
    model = make_model([node("LayerNormalization", ["x", "s"])], {"x": rand(2, 3)},
                       {"s": rand(3)})
    assert op_names(model) == {"nn.layer_norm"}
    model = make_model([node("LayerNormalization", ["x", "s"], axis=0)], {"x": rand(2, 3)},
                       {"s": rand(2, 3)})
    assert op_names(model) == {"nn.layer_norm", "reshape"}


# -- RMS normalisation -----------------------------------------------------------------------
@pytest.mark.parametrize("shape, axis", [((2, 3, 8), -1), ((2, 3, 4), 1), ((3, 4), 0),
                                         ((2, 3, 4, 5), -2)])
def test_rms_normalization(shape, axis):
    check([node("RMSNormalization", ["x", "s"], axis=axis, epsilon=1e-4)], {"x": rand(*shape)},
          {"s": rand(*shape[axis:])}, opset=23)


def test_rms_normalization_with_a_broadcast_scale():
    check([node("RMSNormalization", ["x", "s"], axis=1)], {"x": rand(2, 3, 4)},
          {"s": rand(1, 4)}, opset=23)


def test_rms_normalization_of_half_data_with_a_float_scale_gives_float():
    # onnxruntime cannot run this model (its expansion multiplies float16 by float).
    x, s = rand(2, 3, 8).astype("float16"), rand(8)
    model = make_model([node("RMSNormalization", ["x", "s"])], {"x": x}, {"s": s}, opset=23)
    (got,) = run_passhost(model, {"x": x})
    x32 = x.astype("float32")
    want = x32 / np.sqrt(np.mean(x32 * x32, axis=-1, keepdims=True) + 1e-5) * s
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- Lp, mean-variance and local response normalisation --------------------------------------
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_normalization(p, axis):
    x = rand(3, 4, 5)
    x[1, 2] = 0.0  # a zero vector along the last axis: 0, not NaN
    check([node("LpNormalization", ["x"], axis=axis, p=p)], {"x": x}, opset=22)


@pytest.mark.parametrize("axes", [None, [1], [0, 1], [-1, 2]])
def test_mean_variance_normalization(axes):
    attrs = {} if axes is None else {"axes": axes}
    check([node("MeanVarianceNormalization", ["x"], **attrs)], {"x": rand(2, 3, 4, 5)},
          opset=13)


@pytest.mark.parametrize("attrs", [{"size": 3}, {"size": 5, "alpha": 0.01, "beta": 0.5,
                                                 "bias": 2.0}, {"size": 1}])
@pytest.mark.parametrize("opset", [12, 13])
def test_lrn(attrs, opset):
    check([node("LRN", ["x"], **attrs)], {"x": rand(2, 6, 3, 4)}, opset=opset)


def test_lrn_with_an_even_window():
    # onnxruntime takes odd windows only: channel c sums channels c - 1 .. c + 2 here.
    x = rand(2, 6, 3, 3)
    model = make_model([node("LRN", ["x"], size=4, alpha=0.1)], {"x": x}, opset=13)
    (got,) = run_passhost(model, {"x": x})
    sums = np.stack([np.sum(x[:, max(0, c - 1):c + 3] ** 2, axis=1) for c in range(6)], 1)
    np.testing.assert_allclose(got, x / (1.0 + 0.1 / 4 * sums) ** 0.75, rtol=1e-5, atol=1e-6)


# -- losses ----------------------------------------------------------------------------------
def _targets(shape, classes, ignore=None, dtype="int64"):
    t = RNG.integers(0, classes, size=shape)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return t.astype(dtype)


LOSS_CASES = [  # (input shape, reduction, weight, ignore_index)
    ((4, 5), "mean", False, None),
    ((4, 5), "sum", True, None),
    ((4, 5), "none", True, 2),
    ((3, 5, 2), "mean", True, 0),
    ((3, 5, 2), "mean", False, -1),
    ((2, 4, 3, 2), "none", False, None),
    ((2, 4, 3, 2), "sum", False, 7),
    ((2, 3, 2, 2, 2), "mean", True, 1),
]


@pytest.mark.parametrize("shape, reduction, weighted, ignore", LOSS_CASES)
@pytest.mark.parametrize("opset", [12, 13, 22])
def test_negative_log_likelihood_loss(shape, reduction, weighted, ignore, opset):
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    inits = {"w": rand(shape[1], positive=True)} if weighted else {}
    target = _targets((shape[0], *shape[2:]), shape[1], ignore)
    check([node("NegativeLogLikelihoodLoss", ["x", "t", *inits], **attrs)],
          {"x": rand(*shape), "t": target}, inits, opset=min(opset, 22))


@pytest.mark.parametrize("shape, reduction, weighted, ignore", LOSS_CASES)
@pytest.mark.parametrize("opset", [12, 13])
def test_softmax_cross_entropy_loss_and_log_prob(shape, reduction, weighted, ignore, opset):
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    inits = {"w": rand(shape[1], positive=True)} if weighted else {}
    target = _targets((shape[0], *shape[2:]), shape[1], ignore, dtype="int32")
    check([node("SoftmaxCrossEntropyLoss", ["x", "t", *inits], ["y", "lp"], **attrs)],
          {"x": rand(*shape), "t": target}, inits, outputs=("y", "lp"), opset=opset)


def test_softmax_cross_entropy_loss_without_log_prob():
    check([node("SoftmaxCrossEntropyLoss", ["x", "t"])],
          {"x": rand(3, 4), "t": _targets((3,), 4)}, opset=13)


# -- malformed nodes -------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, inputs, init, opset, message", [
    ([node("InstanceNormalization", ["x", "s", "b"])], {"x": rand(2, 3)},
     {"s": rand(3), "b": rand(3)}, 17, r"InstanceNormalization node .*rank >= 3"),
    ([node("InstanceNormalization", ["x", "s", "b"])], {"x": rand(2, 3, 4)},
     {"s": rand(4), "b": rand(3)}, 17, r"InstanceNormalization node .*input 1 of shape \(3,\)"),
    ([node("GroupNormalization", ["x", "s", "b"], num_groups=2)], {"x": rand(1, 3, 4)},
     {"s": rand(3), "b": rand(3)}, 21, r"GroupNormalization node .*num_groups dividing the 3"),
    ([node("GroupNormalization", ["x", "s", "b"], num_groups=2)], {"x": rand(1, 4, 4)},
     {"s": rand(4), "b": rand(4)}, 18, r"GroupNormalization node .*shape \(2,\) \(one value "
                                       r"per group\)"),
    ([node("GroupNormalization", ["x", "s", "b"])], {"x": rand(1, 4, 4)},
     {"s": rand(4), "b": rand(4)}, 21, r"GroupNormalization node .*'num_groups'"),
    ([node("LayerNormalization", ["x", "s"], stash_type=16)], {"x": rand(2, 3)},
     {"s": rand(3)}, 17, r"LayerNormalization node .*stash_type 1 \(float32\) or 11"),
    ([node("LayerNormalization", ["x", "s"], axis=0)], {"x": rand(2, 3)}, {"s": rand(3, 2)},
     17, r"LayerNormalization node .*broadcasts to the input \(2, 3\), found \(3, 2\)"),
    ([node("RMSNormalization", ["x", "s"], axis=-3)], {"x": rand(2, 3)}, {"s": rand(3)}, 23,
     r"RMSNormalization node .*axis in \[-2, 2\)"),
    ([node("LpNormalization", ["x"], p=3)], {"x": rand(2, 3)}, {}, 22,
     r"LpNormalization node .*p 1 or 2, found 3"),
    ([node("MeanVarianceNormalization", ["x"], axes=[1, -1])], {"x": rand(2, 3)}, {}, 13,
     r"MeanVarianceNormalization node .*distinct axes"),
    ([node("LRN", ["x"])], {"x": rand(1, 3, 2, 2)}, {}, 13, r"LRN node .*'size'"),
    ([node("LRN", ["x"], size=0)], {"x": rand(1, 3, 2, 2)}, {}, 13, r"LRN node .*size >= 1"),
    ([node("NegativeLogLikelihoodLoss", ["x", "t"], reduction="avg")],
     {"x": rand(3, 4), "t": np.zeros(3, "int64")}, {}, 13,
     r"NegativeLogLikelihoodLoss node .*reduction none, sum or mean, found 'avg'"),
    ([node("NegativeLogLikelihoodLoss", ["x", "t"])],
     {"x": rand(3, 4, 2), "t": np.zeros(3, "int64")}, {}, 13,
     r"NegativeLogLikelihoodLoss node .*targets \(input 1\) of shape \(3, 2\)"),
    ([node("NegativeLogLikelihoodLoss", ["x", "t", "w"])],
     {"x": rand(3, 4), "t": np.zeros(3, "int64")}, {"w": rand(3)}, 13,
     r"NegativeLogLikelihoodLoss node .*input 2 of shape \(4,\)"),
    ([node("SoftmaxCrossEntropyLoss", ["x", "t"])],
     {"x": rand(3), "t": np.zeros(3, "int64")}, {}, 13,
     r"SoftmaxCrossEntropyLoss node .*rank >= 2"),
])
def test_malformed_nodes_name_the_node(nodes, inputs, init, opset, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(make_model(nodes, inputs, init, opset=opset))
