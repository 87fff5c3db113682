"""FuseOps' one rule with two anchors: a depthwise convolution takes in the group of the 1x1
convolution producing its data (config option ``relay.FuseOps.chain_depthwise``), epilogues
included, and only that: shared values, other convolutions and other layouts stay apart."""

from __future__ import annotations

import numpy as np
import pytest

from fuse_helpers import HEADER, fused, groups
from passhost import text
from passhost.errors import OptionError
from passhost.relay.interpreter import evaluate

X = "Tensor[(1, 4, 8, 8), float32]"
W1 = "Tensor[(6, 4, 1, 1), float32]"
B = "Tensor[(6, 1, 1), float32]"
W2 = "Tensor[(6, 1, 3, 3), float32]"


def _block(pointwise: str = "kernel_size=[1, 1]", depthwise: str = "groups=6",
           pointwise_weight: str = W1, depthwise_weight: str = W2, x: str = X,
           tail: str = "") -> str:
    """A 1x1 convolution with a bias and relu6, then a 3x3 depthwise one with a bias."""
    return f"""
def @main(%x: {x}, %w1: {pointwise_weight}, %b1: {B}, %w2: {depthwise_weight}, %b2: {B}) {{
  %0 = nn.conv2d(%x, %w1, {pointwise});
  %1 = add(%0, %b1);
  %2 = clip(%1, a_min=0.0, a_max=6.0);
  %3 = nn.conv2d(%2, %w2, padding=[1, 1, 1, 1], {depthwise});
  %4 = add(%3, %b2);
  {tail or "nn.relu(%4)"}
}}"""


CHAIN = ["nn.conv2d", "add", "clip", "nn.conv2d", "add", "nn.relu"]


def test_a_depthwise_convolution_takes_in_the_pointwise_group_before_it():
    assert groups(fused(_block())) == [CHAIN]


def test_the_chained_group_computes_what_the_graph_does():
    mod = text.parse_module(HEADER + _block())
    rng = np.random.default_rng(1)
    args = {p.name_hint: rng.uniform(-1, 1, [int(d) for d in p.type_annotation.shape])
            .astype("float32") for p in mod["main"].params}
    np.testing.assert_allclose(evaluate(fused(_block()), **args), evaluate(mod, **args),
                               rtol=1e-6)


def test_the_option_turns_the_chain_off():
    assert groups(fused(_block(), **{"relay.FuseOps.chain_depthwise": False})) == [
        CHAIN[:3], CHAIN[3:]]


def test_the_option_must_be_a_bool():
    with pytest.raises(OptionError, match="chain_depthwise' expects bool, found str"):
        fused(_block(), **{"relay.FuseOps.chain_depthwise": "often"})


@pytest.mark.parametrize(("pointwise", "weight"), [
    ("kernel_size=[1, 1], strides=[2, 2]", W1),
    ("kernel_size=[1, 1], padding=[1, 1, 1, 1]", W1),
    ("kernel_size=[3, 3], padding=[1, 1, 1, 1]", "Tensor[(6, 4, 3, 3), float32]"),
    ("kernel_size=[1, 1], groups=2", "Tensor[(6, 2, 1, 1), float32]"),
])
def test_only_a_1x1_stride_1_unpadded_ungrouped_producer_is_chained(pointwise, weight):
    assert groups(fused(_block(pointwise, pointwise_weight=weight))) == [CHAIN[:3],
                                                                          CHAIN[3:]]


def test_a_grouped_convolution_that_is_not_depthwise_takes_nothing():
    grouped = _block(depthwise="groups=3", depthwise_weight="Tensor[(6, 2, 3, 3), float32]")
    assert groups(fused(grouped)) == [CHAIN[:3], CHAIN[3:]]


def test_a_pointwise_result_used_twice_stays_apart():
    shared = _block(tail="%5 = nn.relu(%4);\n  (%5, %2)")
    assert groups(fused(shared)) == [CHAIN[:3], CHAIN[3:]]


def test_nhwc_convolutions_are_not_chained():
    nhwc = """
def @main(%x: Tensor[(1, 8, 8, 4), float32], %w1: Tensor[(1, 1, 4, 6), float32],
          %w2: Tensor[(3, 3, 6, 1), float32]) {
  %0 = nn.conv2d(%x, %w1, data_layout="NHWC", kernel_layout="HWIO");
  nn.conv2d(%0, %w2, padding=[1, 1, 1, 1], groups=6, data_layout="NHWC",
            kernel_layout="HWOI")
}"""
    assert groups(fused(nhwc)) == [["nn.conv2d"], ["nn.conv2d"]]


def test_max_depth_bounds_the_chain():
    assert groups(fused(_block(), **{"relay.FuseOps.max_depth": 3})) == [
        CHAIN[:3], CHAIN[3:]]


def test_the_depthwise_output_still_takes_its_epilogue():
    (group,) = groups(fused(_block(tail="%5 = add(%4, %b2);\n  nn.relu(%5)")))
    assert group == [*CHAIN[:5], "add", "nn.relu"]
