"""ConvertLayout: exact rewrites of small graphs, numbers on the zoo models, option errors,
immutability and linear cost."""

from __future__ import annotations

import sys
import time
from collections import Counter

import numpy as np
import pytest

from passhost.errors import IRTypeError, OptionError, UnknownNameError
from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal
from passhost.relay.expr import Call, Constant, Function, Tuple, const, var
from passhost.relay.interpreter import evaluate
from passhost.relay.op import nn, qnn
from passhost.relay.transform import (
    CanonicalizeOps,
    ConvertLayout,
    FoldConstant,
    InferType,
    SimplifyInference,
    bind_params_by_name,
)
from passhost.relay.visitor import post_order
from passhost.text import parse_module
from passhost.transform.context import PassContext
from passhost.transform.pipeline import build_pipeline
from passhost.transform.registry import get_pass
from passhost.workloads.zoo import get_model

NHWC = {"nn.conv2d": ["NHWC", "HWIO"]}
NHWC_POOLS = {"nn.conv2d": ["NHWC", "default"], "nn.max_pool2d": ["NHWC"]}
BLOCKED = {"nn.conv2d": ["NCHW16c", "OIHW"]}
HEADER = '#[version = "passhost.text/1"]\n'


def convert(mod: IRModule, desired: dict) -> IRModule:
    """Run the pass with the immutability check on."""
    with PassContext(config={"testing.immutable_module": True}):
        return ConvertLayout(desired)(mod)


def check_rewrite(before: str, desired: dict, after: str) -> IRModule:
    out = convert(parse_module(HEADER + before), desired)
    expected = parse_module(HEADER + after)
    assert structural_equal(out, expected), out.astext()
    return out


def op_counts(mod: IRModule) -> Counter:
    return Counter(n.op.name for n in post_order(mod["main"].body)
                   if isinstance(n, Call) and hasattr(n.op, "name"))


def random_inputs(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        ty = p.checked_type
        if ty.dtype.startswith("int"):
            out.append(rng.integers(-20, 20, ty.shape).astype(ty.dtype))
        else:
            values = rng.standard_normal(ty.shape)
            if p.name_hint == "v":  # batch_norm variances
                values = np.abs(values) + 0.5
            out.append(values.astype(ty.dtype))
    return out


def assert_same_numbers(a: IRModule, b: IRModule, seed: int = 0) -> None:
    inputs = random_inputs(a, seed)
    expected, found = evaluate(a, *inputs), evaluate(b, *inputs)
    if isinstance(expected, tuple):
        for e, f in zip(expected, found, strict=True):
            np.testing.assert_allclose(f, e, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(found, expected, rtol=1e-5, atol=1e-5)


# -- pass registration and options ----------------------------------------------------------
def test_pass_info_matches_registry():
    p = ConvertLayout(NHWC)
    assert (p.info.name, p.info.opt_level) == ("ConvertLayout", 3)
    assert tuple(p.info.required) == ("InferType", "CanonicalizeOps")
    assert get_pass("ConvertLayout", {"desired_layouts": NHWC}).desired_layouts == {
        "nn.conv2d": ("NHWC", "HWIO")}


def test_text_pipeline_form():
    seq = build_pipeline('ConvertLayout{desired_layouts="nn.conv2d:NHWC:default;'
                         'nn.max_pool2d:NHWC"}')
    assert seq.passes[0].desired_layouts == {"nn.conv2d": ("NHWC", "default"),
                                             "nn.max_pool2d": ("NHWC",)}


def test_split_layouts_are_options():
    assert ConvertLayout(BLOCKED).desired_layouts == {"nn.conv2d": ("NCHW16c", "OIHW")}
    seq = build_pipeline('ConvertLayout{desired_layouts="nn.conv2d:NCHW8c:default;'
                         'nn.avg_pool2d:NCHW4c"}')
    assert seq.passes[0].desired_layouts == {"nn.conv2d": ("NCHW8c", "default"),
                                             "nn.avg_pool2d": ("NCHW4c",)}


def test_unknown_operator_lists_close_matches():
    with pytest.raises(UnknownNameError, match=r"unknown operator 'nn.conv2x' in ConvertLayout"
                       r".*'nn.conv2d'"):
        ConvertLayout({"nn.conv2x": ["NHWC", "HWIO"]})


@pytest.mark.parametrize("desired, message", [
    ({"nn.relu": ["NHWC"]}, r"ConvertLayout: operator nn.relu has no layout attributes.*"
                            r"nn.conv2d.*nn.max_pool2d"),
    ({"layout_transform": ["NHWC"]}, "layout_transform has no layout attributes to convert"),
    ({"nn.conv2d": ["NHWD", "HWIO"]}, "nn.conv2d data_layout 'NHWD' is not a permutation "
                                       "of 'NCHW'"),
    ({"nn.conv2d": ["NHWC", "HWOO"]}, "kernel_layout 'HWOO' is not a permutation of 'OIHW'"),
    ({"nn.conv2d": ["NWHC", "HWIO"]}, "nn.conv2d does not support data_layout 'NWHC'"),
    ({"nn.conv2d": ["default", "HWIO"]}, "data_layout 'default' is not a permutation"),
    ({"nn.conv2d": ["NHWC"]}, r"nn.conv2d takes 2 desired layout\(s\) \(data_layout, "
                              r"kernel_layout\), found \['NHWC'\]"),
    ({"nn.max_pool2d": ["NHWC", "HWIO"]}, r"nn.max_pool2d takes 1 desired layout"),
    ({"nn.conv2d": 4}, "the layouts of nn.conv2d are a list of strings, found int 4"),
    ({"nn.conv2d": ["NCHW16C", "OIHW"]}, "data_layout 'NCHW16C' is not a permutation of "
                                         "'NCHW', its axes possibly split"),
    ({"nn.conv2d": ["NCHW16d", "OIHW"]}, "data_layout 'NCHW16d' is not a permutation"),
    ({"nn.conv2d": ["NHWC16c", "OIHW"]}, "nn.conv2d does not support data_layout 'NHWC16c'"),
    ({"nn.conv2d": ["NCHW016c", "OIHW"]}, "nn.conv2d does not support data_layout"),
    ({"nn.conv2d": ["NCHW16c", "OIHW16o"]}, "nn.conv2d does not support kernel_layout"),
    (["nn.conv2d"], "desired_layouts maps operator names to layouts, found list"),
])
def test_bad_options(desired, message):
    with pytest.raises(OptionError, match=message):
        ConvertLayout(desired)


def test_ill_typed_input_raises_type_error():
    x, w = var("x", shape=(1, 3, 8, 8)), var("w", shape=(4, 2, 3, 3))
    mod = IRModule.from_expr(Function([x, w], nn.conv2d(x, w)))
    with pytest.raises(IRTypeError, match=r"nn\.conv2d: argument 'weight'"):
        ConvertLayout(NHWC)(mod)


# -- exact rewrites -------------------------------------------------------------------------
def test_conv_bias_relu():
    check_rewrite("""
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32],
          %b: Tensor[(3, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = add(%0, %b);
  nn.relu(%1)
}""", NHWC, """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 1, 1), float32],
          %b: Tensor[(3, 1, 1), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
  %1 = layout_transform(%w, src_layout="OIHW", dst_layout="HWIO");
  %2 = nn.conv2d(%0, %1, data_layout="NHWC", kernel_layout="HWIO");
  %3 = expand_dims(%b, axis=0, num_newaxis=1);
  %4 = layout_transform(%3, src_layout="NCHW", dst_layout="NHWC");
  %5 = add(%2, %4);
  %6 = nn.relu(%5);
  layout_transform(%6, src_layout="NHWC", dst_layout="NCHW")
}""")


CLASSIFIER = """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32],
          %g: Tensor[(2), float32], %b: Tensor[(2), float32], %m: Tensor[(2), float32],
          %v: Tensor[(2), float32], %dw: Tensor[(3, 2), float32], %db: Tensor[(3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.batch_norm(%0, %g, %b, %m, %v);
  %2 = %1.0;
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = nn.global_avg_pool2d(%3);
  %5 = nn.batch_flatten(%4);
  %6 = nn.dense(%5, %dw);
  add(%6, %db)
}"""


def test_pools_follow_axis_remapped_dense_fixed():
    out = check_rewrite(CLASSIFIER, NHWC, """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32],
          %g: Tensor[(2), float32], %b: Tensor[(2), float32], %m: Tensor[(2), float32],
          %v: Tensor[(2), float32], %dw: Tensor[(3, 2), float32], %db: Tensor[(3), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
  %1 = layout_transform(%w, src_layout="OIHW", dst_layout="HWIO");
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="HWIO");
  %3 = nn.batch_norm(%2, %g, %b, %m, %v, axis=3);
  %4 = %3.0;
  %5 = nn.max_pool2d(%4, pool_size=[2, 2], strides=[2, 2], layout="NHWC");
  %6 = nn.global_avg_pool2d(%5, layout="NHWC");
  %7 = layout_transform(%6, src_layout="NHWC", dst_layout="NCHW");
  %8 = nn.batch_flatten(%7);
  %9 = nn.dense(%8, %dw);
  %10 = expand_dims(%db, axis=0);
  add(%9, %10)
}""")
    assert_same_numbers(parse_module(HEADER + CLASSIFIER), out)


def test_pool_desired_conv_pinned():
    check_rewrite("""
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = nn.max_pool2d(%0, pool_size=[2, 2]);
  %2 = nn.relu(%1);
  nn.conv2d(%2, %w)
}""", {"nn.max_pool2d": ["NHWC"]}, """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = layout_transform(%0, src_layout="NCHW", dst_layout="NHWC");
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], layout="NHWC");
  %3 = nn.relu(%2);
  %4 = layout_transform(%3, src_layout="NHWC", dst_layout="NCHW");
  nn.conv2d(%4, %w)
}""")


def test_depthwise_default_kernel_and_shared_input_transformed_once():
    before = """
def @main(%x: Tensor[(1, 4, 5, 5), float32], %dw: Tensor[(4, 1, 3, 3), float32],
          %pw: Tensor[(4, 4, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %dw, padding=[1, 1, 1, 1], groups=4);
  %1 = nn.conv2d(%x, %pw);
  add(%0, %1)
}"""
    out = check_rewrite(before, {"nn.conv2d": ["NHWC", "default"]}, """
def @main(%x: Tensor[(1, 4, 5, 5), float32], %dw: Tensor[(4, 1, 3, 3), float32],
          %pw: Tensor[(4, 4, 1, 1), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
  %1 = layout_transform(%dw, src_layout="OIHW", dst_layout="HWOI");
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], groups=4, data_layout="NHWC",
                 kernel_layout="HWOI");
  %3 = layout_transform(%pw, src_layout="OIHW", dst_layout="HWIO");
  %4 = nn.conv2d(%0, %3, data_layout="NHWC", kernel_layout="HWIO");
  %5 = add(%2, %4);
  layout_transform(%5, src_layout="NHWC", dst_layout="NCHW")
}""")
    # structural equality does not see sharing: count the distinct calls
    assert op_counts(out)["layout_transform"] == 4
    assert_same_numbers(parse_module(HEADER + before), out)


BROADCASTS = """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32],
          %p: Tensor[(1, 2, 4, 4), float32], %hw: Tensor[(4, 4), float32],
          %d: Tensor[(1, 8), float32], %dw: Tensor[(4, 8), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = multiply(%0, const(2.0, float32));
  %2 = subtract(%p, %1);
  %3 = add(%2, %hw);
  %4 = nn.dense(%d, %dw);
  maximum(%3, %4)
}"""


def test_broadcast_operands():
    out = check_rewrite(BROADCASTS, NHWC, """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32],
          %p: Tensor[(1, 2, 4, 4), float32], %hw: Tensor[(4, 4), float32],
          %d: Tensor[(1, 8), float32], %dw: Tensor[(4, 8), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
  %1 = layout_transform(%w, src_layout="OIHW", dst_layout="HWIO");
  %2 = nn.conv2d(%0, %1, data_layout="NHWC", kernel_layout="HWIO");
  %3 = multiply(%2, const(2.0, float32));
  %4 = layout_transform(%p, src_layout="NCHW", dst_layout="NHWC");
  %5 = subtract(%4, %3);
  %6 = expand_dims(%hw, axis=0, num_newaxis=2);
  %7 = layout_transform(%6, src_layout="NCHW", dst_layout="NHWC");
  %8 = add(%5, %7);
  %9 = nn.dense(%d, %dw);
  %10 = expand_dims(%9, axis=0, num_newaxis=2);
  %11 = layout_transform(%10, src_layout="NCHW", dst_layout="NHWC");
  %12 = maximum(%8, %11);
  layout_transform(%12, src_layout="NHWC", dst_layout="NCHW")
}""")
    assert_same_numbers(parse_module(HEADER + BROADCASTS), out)


TUPLES = """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = (%0, %1);
  %3 = concatenate(%2, axis=1);
  (%3, %1)
}"""


def test_unaware_inputs_and_tuple_result_restored_once():
    out = check_rewrite(TUPLES, NHWC, """
def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
  %1 = layout_transform(%w, src_layout="OIHW", dst_layout="HWIO");
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="HWIO");
  %3 = layout_transform(%2, src_layout="NHWC", dst_layout="NCHW");
  %4 = nn.relu(%2);
  %5 = layout_transform(%4, src_layout="NHWC", dst_layout="NCHW");
  %6 = (%3, %5);
  %7 = concatenate(%6, axis=1);
  (%7, %5)
}""")
    assert op_counts(out)["layout_transform"] == 4
    assert_same_numbers(parse_module(HEADER + TUPLES), out)


def test_back_to_nchw():
    out = check_rewrite("""
def @main(%x: Tensor[(1, 4, 4, 2), float32], %w: Tensor[(1, 1, 2, 3), float32],
          %b: Tensor[(3), float32]) {
  %0 = nn.conv2d(%x, %w, data_layout="NHWC", kernel_layout="HWIO");
  %1 = add(%0, %b);
  %2 = nn.softmax(%1, axis=-1);
  nn.avg_pool2d(%2, pool_size=[2, 2], layout="NHWC")
}""", {"nn.conv2d": ["NCHW", "default"]}, """
def @main(%x: Tensor[(1, 4, 4, 2), float32], %w: Tensor[(1, 1, 2, 3), float32],
          %b: Tensor[(3), float32]) {
  %0 = layout_transform(%x, src_layout="NHWC", dst_layout="NCHW");
  %1 = layout_transform(%w, src_layout="HWIO", dst_layout="OIHW");
  %2 = nn.conv2d(%0, %1);
  %3 = expand_dims(%b, axis=0, num_newaxis=3);
  %4 = layout_transform(%3, src_layout="NHWC", dst_layout="NCHW");
  %5 = add(%2, %4);
  %6 = nn.softmax(%5, axis=1);
  %7 = nn.avg_pool2d(%6, pool_size=[2, 2]);
  layout_transform(%7, src_layout="NCHW", dst_layout="NHWC")
}""")
    x = var("x", shape=(1, 4, 4, 2))
    assert out["main"].params[0].checked_type == x.checked_type


def test_qnn_conv_and_per_channel_requantize():
    x, w = var("x", shape=(1, 3, 5, 5), dtype="int8"), var("w", shape=(4, 3, 3, 3), dtype="int8")
    scales = const(np.array([0.5, 0.25, 0.125, 1.0], "float32"))
    conv = qnn.conv2d(x, w, const(1, "int32"), const(np.zeros(4, "int32")),
                      const(0.5), scales, padding=1)
    out_expr = qnn.requantize(conv, const(np.array([0.25, 0.125, 0.0625, 0.5], "float32")),
                              const(0, "int32"), const(2.0), const(0, "int32"), axis=1)
    mod = IRModule.from_expr(Function([x, w], out_expr))
    out = convert(mod, {"qnn.conv2d": ["NHWC", "HWIO"]})
    calls = {n.op.name: n for n in post_order(out["main"].body) if isinstance(n, Call)}
    assert calls["qnn.conv2d"].attrs.data_layout == "NHWC"
    assert calls["qnn.requantize"].attrs.axis == 3
    assert op_counts(out)["layout_transform"] == 3
    assert_same_numbers(mod, out)


GLOBAL_CALL = """
def @helper(%y: Tensor[(1, 2, 4, 4), float32]) -> Tensor[(1, 2, 4, 4), float32] {
  nn.softmax(%y, axis=1)
}

def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = nn.relu(%0);
  @helper(%1)
}"""


def test_global_function_call_gets_original_layout():
    mod = parse_module(HEADER + GLOBAL_CALL)
    out = convert(mod, NHWC)
    assert out["helper"] is mod["helper"]
    call = out["main"].body
    assert call.op is mod.get_global_var("helper")
    assert call.args[0].op.name == "layout_transform"
    assert call.args[0].attrs.dst_layout == "NCHW"


# -- split layouts --------------------------------------------------------------------------
RESNET_LIKE = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(16, 3, 3, 3), float32],
          %b1: Tensor[(16, 1, 1), float32], %w2: Tensor[(16, 16, 3, 3), float32],
          %b2: Tensor[(16, 1, 1), float32], %dw: Tensor[(10, 16), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]);
  %1 = add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = nn.conv2d(%3, %w2, padding=[1, 1, 1, 1]);
  %5 = add(%4, %b2);
  %6 = add(%5, %3);
  %7 = nn.relu(%6);
  %8 = nn.global_avg_pool2d(%7);
  %9 = nn.batch_flatten(%8);
  nn.dense(%9, %dw)
}"""


def test_channel_blocks_stem_writes_blocks_pools_follow():
    # The stem's 3 channels do not divide into blocks of 16: it reads NCHW, writes NCHW16c.
    out = check_rewrite(RESNET_LIKE, BLOCKED, """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(16, 3, 3, 3), float32],
          %b1: Tensor[(16, 1, 1), float32], %w2: Tensor[(16, 16, 3, 3), float32],
          %b2: Tensor[(16, 1, 1), float32], %dw: Tensor[(10, 16), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], out_layout="NCHW16c");
  %1 = expand_dims(%b1, axis=0);
  %2 = layout_transform(%1, src_layout="NCHW", dst_layout="NCHW16c");
  %3 = add(%0, %2);
  %4 = nn.relu(%3);
  %5 = nn.max_pool2d(%4, pool_size=[2, 2], strides=[2, 2], layout="NCHW16c");
  %6 = nn.conv2d(%5, %w2, padding=[1, 1, 1, 1], data_layout="NCHW16c");
  %7 = expand_dims(%b2, axis=0);
  %8 = layout_transform(%7, src_layout="NCHW", dst_layout="NCHW16c");
  %9 = add(%6, %8);
  %10 = add(%9, %5);
  %11 = nn.relu(%10);
  %12 = nn.global_avg_pool2d(%11, layout="NCHW16c");
  %13 = layout_transform(%12, src_layout="NCHW16c", dst_layout="NCHW");
  %14 = nn.batch_flatten(%13);
  nn.dense(%14, %dw)
}""")
    before = parse_module(HEADER + RESNET_LIKE)
    assert_same_numbers(before, out)
    assert convert(out, BLOCKED) is out


def test_channel_blocks_constant_biases_fold():
    before = parse_module(HEADER + RESNET_LIKE)
    rng = np.random.default_rng(3)
    params = {p.name_hint: rng.standard_normal(p.checked_type.shape).astype("float32")
              for p in before["main"].params[1:]}
    bound = InferType()(IRModule({"main": bind_params_by_name(before["main"], params)}))
    folded = FoldConstant()(convert(bound, BLOCKED))
    assert op_counts(folded) == op_counts(bound) + Counter({"layout_transform": 1})
    biases = [n.args[1].data.shape for n in post_order(folded["main"].body)
              if isinstance(n, Call) and n.op.name == "add" and isinstance(n.args[1], Constant)]
    assert biases == [(1, 1, 1, 1, 16)] * 2
    assert_same_numbers(bound, folded)


def test_channel_blocks_from_nhwc_and_to_whole_output():
    # NHWC data of 3 channels goes to NCHW for the stem; 16 -> 4 channels writes NCHW.
    before = """
def @main(%x: Tensor[(1, 6, 6, 3), float32], %w1: Tensor[(3, 3, 3, 16), float32],
          %w2: Tensor[(1, 1, 16, 4), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], data_layout="NHWC", kernel_layout="HWIO");
  %1 = nn.conv2d(%0, %w2, data_layout="NHWC", kernel_layout="HWIO");
  nn.relu(%1)
}"""
    out = check_rewrite(before, {"nn.conv2d": ["NCHW16c", "default"]}, """
def @main(%x: Tensor[(1, 6, 6, 3), float32], %w1: Tensor[(3, 3, 3, 16), float32],
          %w2: Tensor[(1, 1, 16, 4), float32]) {
  %0 = layout_transform(%x, src_layout="NHWC", dst_layout="NCHW");
  %1 = layout_transform(%w1, src_layout="HWIO", dst_layout="OIHW");
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], out_layout="NCHW16c");
  %3 = layout_transform(%w2, src_layout="HWIO", dst_layout="OIHW");
  %4 = nn.conv2d(%2, %3, data_layout="NCHW16c", out_layout="NCHW");
  %5 = nn.relu(%4);
  layout_transform(%5, src_layout="NCHW", dst_layout="NHWC")
}""")
    assert_same_numbers(parse_module(HEADER + before), out)


def test_channel_blocks_that_fit_nowhere_leave_the_call():
    before = """
def @main(%x: Tensor[(1, 3, 4, 4), float32], %w: Tensor[(4, 3, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  nn.relu(%0)
}"""
    mod = parse_module(HEADER + before)
    assert convert(mod, BLOCKED) is mod


AXES_AFTER_BLOCKS = """
def @main(%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = nn.softmax(%0, axis=1);
  %2 = (%0, %1);
  concatenate(%2, axis=1)
}"""


def test_axis_operators_get_blocked_data_restored():
    out = check_rewrite(AXES_AFTER_BLOCKS, BLOCKED, """
def @main(%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(16, 16, 1, 1), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
  %1 = nn.conv2d(%0, %w, data_layout="NCHW16c");
  %2 = layout_transform(%1, src_layout="NCHW16c", dst_layout="NCHW");
  %3 = nn.softmax(%2, axis=1);
  %4 = (%2, %3);
  concatenate(%4, axis=1)
}""")
    assert op_counts(out)["layout_transform"] == 2
    assert_same_numbers(parse_module(HEADER + AXES_AFTER_BLOCKS), out)


BLOCKED_BROADCASTS = """
def @main(%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(16, 16, 1, 1), float32],
          %b: Tensor[(16, 1, 1), float32], %s: Tensor[(1, 1, 1, 1), float32],
          %v: Tensor[(1, 16, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w);
  %1 = multiply(%0, const(2.0, float32));
  %2 = add(%1, %b);
  %3 = multiply(%2, %s);
  %4 = nn.conv2d(%3, %w);
  %5 = nn.conv2d(%4, %v);
  add(%4, %5)
}"""


def test_broadcast_operands_that_cannot_be_blocked_restore():
    # (1, 1, 1, 1) and a 1-channel convolution (its output whole) cannot join blocks of 16.
    out = check_rewrite(BLOCKED_BROADCASTS, BLOCKED, """
def @main(%x: Tensor[(1, 16, 4, 4), float32], %w: Tensor[(16, 16, 1, 1), float32],
          %b: Tensor[(16, 1, 1), float32], %s: Tensor[(1, 1, 1, 1), float32],
          %v: Tensor[(1, 16, 1, 1), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW16c");
  %1 = nn.conv2d(%0, %w, data_layout="NCHW16c");
  %2 = multiply(%1, const(2.0, float32));
  %3 = expand_dims(%b, axis=0);
  %4 = layout_transform(%3, src_layout="NCHW", dst_layout="NCHW16c");
  %5 = add(%2, %4);
  %6 = layout_transform(%5, src_layout="NCHW16c", dst_layout="NCHW");
  %7 = multiply(%6, %s);
  %8 = layout_transform(%7, src_layout="NCHW", dst_layout="NCHW16c");
  %9 = nn.conv2d(%8, %w, data_layout="NCHW16c");
  %10 = layout_transform(%9, src_layout="NCHW16c", dst_layout="NCHW");
  %11 = nn.conv2d(%9, %v, data_layout="NCHW16c", out_layout="NCHW");
  add(%10, %11)
}""")
    assert_same_numbers(parse_module(HEADER + BLOCKED_BROADCASTS), out)


@pytest.mark.parametrize(("name", "desired"), [("resnet-18", "NCHW16c"),
                                               ("mobilenet-v1", "NCHW8c")])
def test_zoo_models_in_channel_blocks(name, desired):
    mod = FoldConstant()(SimplifyInference()(prepared(name)))
    out = FoldConstant()(convert(mod, {"nn.conv2d": [desired, "default"]}))
    # the stem reads NCHW, FoldConstant folds the weights' and biases' transforms
    assert op_counts(out) - op_counts(mod) == {"layout_transform": 1}
    layouts = Counter((n.attrs.data_layout, n.attrs.out_layout)
                      for n in post_order(out["main"].body)
                      if isinstance(n, Call) and n.op.name == "nn.conv2d")
    assert layouts[("NCHW", desired)] == 1
    assert layouts[(desired, "")] == sum(layouts.values()) - 1
    assert_same_numbers(mod, out)


# -- identity and immutability -------------------------------------------------------------
def test_nothing_to_convert_returns_the_same_module():
    mod = parse_module(HEADER + CLASSIFIER)
    assert ConvertLayout({})(mod) is mod
    assert ConvertLayout({"nn.avg_pool2d": ["NHWC"]})(mod) is mod


def test_second_run_changes_nothing():
    once = convert(parse_module(HEADER + CLASSIFIER), NHWC)
    assert convert(once, NHWC) is once


def test_input_module_left_unchanged():
    mod = parse_module(HEADER + CLASSIFIER)
    text = mod.astext()
    out = convert(mod, NHWC)
    assert out is not mod and mod.astext() == text


# -- zoo models -----------------------------------------------------------------------------
def prepared(name: str) -> IRModule:
    """A zoo model with its parameters bound and bias_add canonicalised."""
    mod, params = get_model(name)
    main = bind_params_by_name(mod["main"], params)
    return InferType()(CanonicalizeOps()(IRModule({"main": main})))


def test_resnet18_acceptance():
    mod = prepared("resnet-18")
    out = convert(mod, NHWC)
    assert op_counts(out) - op_counts(mod) == {"expand_dims": 1, "layout_transform": 23}
    assert not op_counts(mod) - op_counts(out)
    folded = FoldConstant()(out)
    assert op_counts(folded) - op_counts(mod) == {"layout_transform": 2}
    inputs = random_inputs(mod)
    expected = evaluate(mod, *inputs)
    for converted in (out, folded):
        np.testing.assert_allclose(evaluate(converted, *inputs), expected, rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("name, transforms", [("mobilenet-v1", 29), ("mobilenet-v2", 54)])
def test_mobilenets_with_pools(name, transforms):
    mod = prepared(name)
    out = convert(mod, NHWC_POOLS)
    assert op_counts(out)["layout_transform"] == transforms
    kernels = {n.attrs.kernel_layout for n in post_order(out["main"].body)
               if isinstance(n, Call) and n.op.name == "nn.conv2d"}
    assert kernels == {"HWIO", "HWOI"}
    assert_same_numbers(mod, out)
    back = convert(FoldConstant()(out), {"nn.conv2d": ["NCHW", "default"]})
    assert {n.attrs.data_layout for n in post_order(back["main"].body)
            if isinstance(n, Call) and n.op.name == "nn.conv2d"} == {"NCHW"}
    assert_same_numbers(mod, back)


def test_resnet50_counts():
    mod = prepared("resnet-50")
    out = convert(mod, NHWC_POOLS)
    # 53 weights, the input, the exit before batch_flatten.
    assert op_counts(out) - op_counts(mod) == {"expand_dims": 1, "layout_transform": 55}


def test_transformer_is_left_alone():
    mod = prepared("transformer")
    assert ConvertLayout(NHWC_POOLS)(mod) is mod


# -- cost -----------------------------------------------------------------------------------
def relu_chain(length: int) -> IRModule:
    x, w = var("x", shape=(1, 2, 3, 3)), var("w", shape=(2, 2, 1, 1))
    y = nn.conv2d(x, w)
    for _ in range(length):
        y = nn.relu(y)
    return IRModule.from_expr(Function([x, w], y))


def best_time(mod: IRModule, repeat: int = 3) -> float:
    p = ConvertLayout(NHWC)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        p(mod)
        times.append(time.perf_counter() - start)
    return min(times)


def test_deep_chain_no_recursion():
    mod = relu_chain(100_000)
    assert sys.getrecursionlimit() < 100_000
    out = ConvertLayout(NHWC)(mod)
    assert op_counts(out) - op_counts(mod) == {"layout_transform": 3}


def test_linear_cost():
    small, large = relu_chain(2_000), relu_chain(8_000)
    best_time(small, 1)  # warm caches
    assert best_time(large) < 8 * best_time(small)


def test_resnet50_is_fast():
    mod = prepared("resnet-50")
    assert best_time(mod, 5) < 0.05


def test_tuple_field_restore_uses_projections():
    x, w = var("x", shape=(1, 2, 4, 4)), var("w", shape=(2, 2, 1, 1))
    g, b, m, v = (var(n, shape=(2,)) for n in "gbmv")
    bn = nn.batch_norm(nn.conv2d(x, w), g, b, m, v)
    mod = IRModule.from_expr(Function([x, w, g, b, m, v], bn))
    out = convert(mod, NHWC)
    body = out["main"].body
    assert isinstance(body, Tuple) and body.fields[0].op.name == "layout_transform"
    assert body.fields[1].tuple_value is body.fields[0].args[0].tuple_value
    assert_same_numbers(mod, out)
