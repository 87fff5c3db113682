"""FoldScaleAxis: constant per-channel scales folded into the weights of the convolutions and
dense layers beside them, backward (a scale after the layer) and forward (a scale before it),
in every kernel layout, with the refusals the pass documents; numbers checked with the
reference interpreter on zoo models whose batch-norm statistics are randomised."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

import passhost.relay as relay
from folding_helpers import (
    assert_same_numbers,
    bound_model,
    calls,
    nesting_of,
    op_counts,
    run,
    sample_inputs,
)
from passhost.errors import IRTypeError
from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal
from passhost.relay.transform import (
    FoldConstant,
    FoldScaleAxis,
    SimplifyInference,
    bind_params_by_name,
)
from passhost.workloads.zoo import get_model


@pytest.fixture(autouse=True)
def _clean(clean_contexts: None) -> Iterator[None]:
    yield


# -- FoldScaleAxis -----------------------------------------------------------------------------
def _conv_module(scale: np.ndarray, *, relu: bool = False, bias: bool = False,
                 layouts: tuple[str, str] = ("NCHW", "OIHW"), groups: int = 1) -> IRModule:
    """``multiply([relu](conv2d(x, W) [+ b]), scale)`` with C = 4 channels."""
    data_layout, kernel_layout = layouts
    rng = np.random.default_rng(2)
    x_shape = (1, 4, 5, 5) if data_layout == "NCHW" else (1, 5, 5, 4)
    oihw = rng.standard_normal((4, 4 // groups, 3, 3)).astype("float32")
    weight = np.transpose(oihw, [ "OIHW".index(d) for d in kernel_layout])
    x = relay.var("x", shape=x_shape)
    value = relay.nn.conv2d(x, relay.const(weight), padding=1, groups=groups,
                            data_layout=data_layout, kernel_layout=kernel_layout)
    if bias:
        value = relay.nn.bias_add(value, relay.const(rng.standard_normal(4).astype("float32")),
                                  axis=data_layout.index("C"))
    if relu:
        value = relay.nn.relu(value)
    return IRModule.from_expr(relay.Function([x], relay.multiply(value, relay.const(scale))))


def _expected_weight(mod: IRModule, vector: np.ndarray) -> np.ndarray:
    conv = calls(mod, "nn.conv2d")[0]
    layout = conv.attrs.kernel_layout
    shape = [1] * 4
    shape[layout.index("O")] = 4
    return conv.args[1].data * vector.reshape(shape)


SCALE = np.array([0.5, 2.0, 1.5, 0.25], dtype="float32")


def test_fold_scale_axis_backward_structure() -> None:
    mod = _conv_module(SCALE.reshape(4, 1, 1))
    out = run(FoldScaleAxis(), mod)
    x = relay.var("x", shape=(1, 4, 5, 5))
    want = relay.Function([x], relay.nn.conv2d(x, relay.const(_expected_weight(mod, SCALE)),
                                               padding=1))
    assert structural_equal(out, IRModule.from_expr(want))
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("layouts, shape", [
    (("NCHW", "OIHW"), (1, 4, 1, 1)),
    (("NHWC", "HWIO"), (4,)),
    (("NHWC", "OHWI"), (1, 1, 1, 4)),
    (("NHWC", "HWOI"), (1, 4)),
])
def test_fold_scale_axis_backward_layouts(layouts: tuple[str, str], shape: tuple[int, ...],
                                          ) -> None:
    mod = _conv_module(SCALE.reshape(shape), layouts=layouts)
    out = run(FoldScaleAxis(), mod)
    assert op_counts(out) == Counter({"nn.conv2d": 1})
    np.testing.assert_array_equal(out["main"].body.args[1].data, _expected_weight(mod, SCALE))
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("options", [{"bias": True}, {"relu": True}, {"bias": True, "relu": True},
                                     {"groups": 4}, {"groups": 2, "bias": True}])
def test_fold_scale_axis_backward_through_bias_relu_groups(options: dict) -> None:
    mod = _conv_module(SCALE.reshape(4, 1, 1), **options)
    out = run(FoldScaleAxis(), mod)
    assert op_counts(out)["multiply"] == 0
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("scale, reason", [
    (np.array([0.5, -2.0, 1.5, 0.25], "float32").reshape(4, 1, 1), "negative through relu"),
    (np.ones((1, 5, 5), "float32"), "varies along space"),
    (np.ones((2, 4, 1, 1), "float32"), "broadcasts to a larger shape"),
])
def test_fold_scale_axis_backward_refusals(scale: np.ndarray, reason: str) -> None:
    mod = _conv_module(scale, relu=True)
    out = run(FoldScaleAxis(), mod)
    assert structural_equal(out, mod), reason


def test_fold_scale_axis_backward_needs_single_user() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    w = relay.const(np.ones((4, 4, 1, 1), "float32"))
    conv = relay.nn.conv2d(x, w)
    body = relay.Tuple([relay.multiply(conv, relay.const(SCALE.reshape(4, 1, 1))), conv])
    mod = IRModule.from_expr(relay.Function([x], body))
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


def test_fold_scale_axis_dense_backward() -> None:
    x = relay.var("x", shape=(2, 3))
    weight = np.arange(12, dtype="float32").reshape(4, 3)
    body = relay.multiply(relay.nn.dense(x, relay.const(weight)), relay.const(SCALE))
    mod = IRModule.from_expr(relay.Function([x], body))
    out = run(FoldScaleAxis(), mod)
    want = relay.Function([x], relay.nn.dense(x, relay.const(weight * SCALE[:, None])))
    assert structural_equal(out, IRModule.from_expr(want))


def test_fold_scale_axis_forward_structure() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    weight = np.random.default_rng(3).standard_normal((2, 4, 3, 3)).astype("float32")
    scaled = relay.multiply(x, relay.const(SCALE.reshape(4, 1, 1)))
    mod = IRModule.from_expr(relay.Function(
        [x], relay.nn.conv2d(scaled, relay.const(weight), padding=1)))
    out = run(FoldScaleAxis(), mod)
    want = relay.Function([x], relay.nn.conv2d(
        x, relay.const(weight * SCALE.reshape(1, 4, 1, 1)), padding=1))
    assert structural_equal(out, IRModule.from_expr(want))
    assert_same_numbers(mod, out)


def _forward_module(scale: np.ndarray, extra_user: bool = False, groups: int = 1) -> IRModule:
    """``relu(x * s + b)`` feeding two convolutions (and ``exp`` when ``extra_user``)."""
    rng = np.random.default_rng(4)
    x = relay.var("x", shape=(1, 4, 5, 5))
    shifted = relay.add(relay.multiply(x, relay.const(scale.reshape(4, 1, 1))),
                        relay.const(rng.standard_normal((4, 1, 1)).astype("float32")))
    act = relay.nn.relu(shifted)
    w1 = rng.standard_normal((3, 4 // groups, 3, 3)).astype("float32")
    w2 = rng.standard_normal((2, 4, 1, 1)).astype("float32")
    outs = [relay.nn.conv2d(act, relay.const(w1), padding=1, groups=1),
            relay.nn.conv2d(act, relay.const(w2))]
    if extra_user:
        outs.append(relay.exp(act))
    return IRModule.from_expr(relay.Function([x], relay.Tuple(outs)))


def test_fold_scale_axis_forward_through_add_and_relu() -> None:
    mod = _forward_module(SCALE)
    out = run(FoldScaleAxis(), mod)
    assert op_counts(out) == Counter({"nn.conv2d": 2, "add": 1, "nn.relu": 1})
    inputs = sample_inputs(mod)
    for want, got in zip(relay.evaluate(mod, *inputs), relay.evaluate(out, *inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale, extra_user", [
    (np.array([0.5, -2.0, 1.5, 0.25], "float32"), False),
    (SCALE, True),
])
def test_fold_scale_axis_forward_refusals(scale: np.ndarray, extra_user: bool) -> None:
    mod = _forward_module(scale, extra_user)
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


def test_fold_scale_axis_forward_skips_grouped_conv() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    scaled = relay.multiply(x, relay.const(SCALE.reshape(4, 1, 1)))
    conv = relay.nn.conv2d(scaled, relay.const(np.ones((4, 1, 3, 3), "float32")), groups=4)
    mod = IRModule.from_expr(relay.Function([x], conv))
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


@pytest.mark.parametrize("forward", [False, True])
def test_fold_scale_axis_leaves_channel_blocked_convs(forward: bool) -> None:
    # a scale along the blocks, (1, C / 8, 1, 1, 1), is no vector along O or I
    x = relay.var("x", shape=(1, 2, 4, 4, 8))
    weight = relay.const(np.random.default_rng(5).standard_normal((16, 16, 1, 1))
                         .astype("float32"))
    scale = relay.const(np.array([0.5, 2.0], "float32").reshape(1, 2, 1, 1, 1))
    if forward:
        body = relay.nn.conv2d(relay.multiply(x, scale), weight, data_layout="NCHW8c")
    else:
        body = relay.multiply(relay.nn.conv2d(x, weight, data_layout="NCHW8c"), scale)
    mod = IRModule.from_expr(relay.Function([x], body))
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


# Multiplies left after SimplifyInference + FoldConstant (one per batch norm) and after
# FoldScaleAxis, from the architectures (MXNet-style pre-activation ResNets):
# - ResNet-18: bn_data, bn0, 8 units x (bn1, bn2), final bn1 = 19. Backward folding takes bn0
#   (after conv0) and the 8 bn2 (after conv1); forward folding takes bn_data (-> conv0) and the
#   8 bn1 (-> relu -> conv1 and the shortcut conv); the final bn1 feeds relu -> pooling: 1 left.
#   With negative gammas the bn1 relus block forward folding: 1 + 8 = 9 left.
# - ResNet-50: 16 bottleneck units x 3 bns + 3 = 51; backward takes bn0, 16 bn2, 16 bn3;
#   forward bn_data and 16 bn1: 1 left (17 with negative gammas).
# - MobileNet v1: every one of the 27 bns directly follows a conv: backward takes all 27.
@pytest.mark.parametrize("name, negative, before, after", [
    ("resnet-18", False, 19, 1),
    ("resnet-18", True, 19, 9),
    ("resnet-50", False, 51, 1),
    ("mobilenet-v1", False, 27, 0),
])
def test_fold_scale_axis_zoo_counts_and_numbers(name: str, negative: bool, before: int,
                                                after: int) -> None:
    mod = bound_model(name, negative)
    simplified = FoldConstant()(SimplifyInference()(mod))
    assert op_counts(simplified)["multiply"] == before
    out = run(FoldScaleAxis(), simplified)
    counts = op_counts(out)
    assert counts["multiply"] == after
    assert counts["nn.conv2d"] == op_counts(mod)["nn.conv2d"]
    assert counts["add"] == op_counts(simplified)["add"]
    if name != "resnet-50":  # its interpreter run is the slowest; ResNet-18 covers the units
        assert_same_numbers(mod, out)


def test_fold_scale_axis_no_pattern_keeps_structure() -> None:
    mod, params = get_model("resnet-18")
    out = run(FoldScaleAxis(), mod)
    assert structural_equal(out, mod)
    bound = IRModule.from_expr(bind_params_by_name(mod["main"], params))
    assert structural_equal(run(FoldScaleAxis(), bound), bound)


def test_fold_scale_axis_nests_fold_constant() -> None:
    mod = _conv_module(SCALE.reshape(4, 1, 1))
    assert nesting_of(FoldScaleAxis(), mod) == ["FoldScaleAxis", "  FoldConstant",
                                                "    InferType"]


def test_fold_scale_axis_ill_typed_input_names_op() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    bad = relay.multiply(relay.nn.conv2d(x, relay.const(np.ones((4, 3, 1, 1), "float32"))),
                         relay.const(SCALE.reshape(4, 1, 1)))
    with pytest.raises(IRTypeError, match=r"nn.conv2d: argument 'weight'"):
        FoldScaleAxis()(IRModule.from_expr(relay.Function([x], bad)))
