"""FuseOps' rule keeping a broadcast before an anchor: a 1x1 convolution takes in the lone
``multiply`` scaling its data per channel (squeeze-and-excitation's ``x * gate``; config
option ``relay.FuseOps.scale_pointwise``), and only that: other multiplies, shared values,
other convolutions stay apart."""

from __future__ import annotations

import numpy as np
import pytest

from fuse_helpers import HEADER, fused, groups
from passhost import text
from passhost.errors import OptionError
from passhost.relay.interpreter import evaluate

X = "Tensor[(1, 4, 8, 8), float32]"
W = "Tensor[(6, 4, 1, 1), float32]"
B = "Tensor[(6, 1, 1), float32]"


def _block(scale: str = "Tensor[(1, 4, 1, 1), float32]", product: str = "multiply(%x, %s)",
           conv: str = "kernel_size=[1, 1]", weight: str = W, x: str = X,
           tail: str = "") -> str:
    """The data scaled by ``%s`` (``product``), then a 1x1 convolution with a bias and relu."""
    return f"""
def @main(%x: {x}, %s: {scale}, %w: {weight}, %b: {B}) {{
  %0 = {product};
  %1 = nn.conv2d(%0, %w, {conv});
  %2 = add(%1, %b);
  {tail or "nn.relu(%2)"}
}}"""


SCALED = ["multiply", "nn.conv2d", "add", "nn.relu"]


@pytest.mark.parametrize("scale, product", [
    ("Tensor[(1, 4, 1, 1), float32]", "multiply(%x, %s)"),
    ("Tensor[(1, 4, 1, 1), float32]", "multiply(%s, %x)"),
    ("Tensor[(2, 4, 1, 1), float32]", "multiply(%x, %s)"),
])
def test_a_pointwise_convolution_takes_in_the_scale_of_its_data(scale, product):
    x = "Tensor[(2, 4, 8, 8), float32]" if scale.startswith("Tensor[(2") else X
    assert groups(fused(_block(scale, product, x=x))) == [SCALED]


def test_the_scaled_group_computes_what_the_graph_does():
    mod = text.parse_module(HEADER + _block())
    rng = np.random.default_rng(3)
    args = {p.name_hint: rng.uniform(-1, 1, [int(d) for d in p.type_annotation.shape])
            .astype("float32") for p in mod["main"].params}
    np.testing.assert_allclose(evaluate(fused(_block()), **args), evaluate(mod, **args),
                               rtol=1e-6)


def test_the_option_turns_the_rule_off():
    assert groups(fused(_block(), **{"relay.FuseOps.scale_pointwise": False})) == [
        SCALED[:1], SCALED[1:]]


def test_the_option_must_be_a_bool():
    with pytest.raises(OptionError, match="scale_pointwise' expects bool, found str"):
        fused(_block(), **{"relay.FuseOps.scale_pointwise": "often"})


@pytest.mark.parametrize("scale, product", [
    (X, "multiply(%x, %s)"),                                  # not per channel
    ("Tensor[(1, 1, 1, 1), float32]", "multiply(%x, %s)"),    # one value for every channel
    ("Tensor[(1, 1, 8, 8), float32]", "multiply(%x, %s)"),    # per position
    ("Tensor[(1, 4, 1, 1), float32]", "add(%x, %s)"),         # not a product
])
def test_only_a_per_channel_multiply_is_taken(scale, product):
    assert groups(fused(_block(scale, product))) == [[product[:product.index("(")]],
                                                       SCALED[1:]]


@pytest.mark.parametrize(("conv", "weight"), [
    ("kernel_size=[1, 1], strides=[2, 2]", W),
    ("kernel_size=[1, 1], padding=[1, 1, 1, 1]", W),
    ("kernel_size=[3, 3], padding=[1, 1, 1, 1]", "Tensor[(6, 4, 3, 3), float32]"),
    ("kernel_size=[1, 1], groups=2", "Tensor[(6, 2, 1, 1), float32]"),
])
def test_only_a_1x1_stride_1_unpadded_ungrouped_convolution_takes_it(conv, weight):
    assert groups(fused(_block(conv=conv, weight=weight))) == [SCALED[:1], SCALED[1:]]


def test_a_scaled_value_used_twice_stays_apart():
    shared = _block(tail="%3 = nn.relu(%2);\n  (%3, %0)")
    assert groups(fused(shared)) == [SCALED[:1], SCALED[1:]]


def test_a_multiply_that_took_in_more_stays_apart():
    # the sigmoid joins the multiply's group (it has its shape): no longer a lone scale
    gated = _block(product="multiply(sigmoid(%x), %s)")
    assert groups(fused(gated)) == [["sigmoid", "multiply"], SCALED[1:]]


def test_max_depth_bounds_the_rule():
    # (the convolution takes the scale first, then its epilogue while max_depth allows)
    assert groups(fused(_block(), **{"relay.FuseOps.max_depth": 1})) == [[op] for op in SCALED]
    assert groups(fused(_block(), **{"relay.FuseOps.max_depth": 3})) == [SCALED[:3],
                                                                           SCALED[3:]]


def test_squeeze_and_excitation_keeps_its_gate_apart():
    se = f"""
def @main(%x: {X}, %w1: Tensor[(4, 4, 1, 1), float32], %w: {W}, %b: {B}) {{
  %0 = mean(%x, axis=[2, 3], keepdims=true);
  %1 = nn.conv2d(%0, %w1, kernel_size=[1, 1]);
  %2 = sigmoid(%1);
  %3 = multiply(%x, %2);
  %4 = nn.conv2d(%3, %w, kernel_size=[1, 1]);
  add(%4, %b)
}}"""
    assert groups(fused(se)) == [["mean"], ["nn.conv2d", "sigmoid"],
                                   ["multiply", "nn.conv2d", "add"]]
