"""Epilogues: the elementwise calls after a convolution or dense layer that its native
kernel applies while writing the output. Which calls are absorbed (per-channel bias,
residual, a relu or clip, a final sigmoid or SiLU) and which are not; fused functions give
the numbers of the same calls run one by one with the reference kernels (the activations:
NumPy's in float64) on every path of the convolution kernels, full tiles and edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cpu_helpers import assert_same, compile_funcs, prim_func

from passhost.relay.op.registry import get_op
from passhost.runtime.kernel_call import KernelCall, kernel_call
from passhost.tir.function import decl_buffer
from passhost.tir.stmt import SeqStmt
from passhost_cpu_target.epilogue import Epilogue, match_epilogue

RNG = np.random.default_rng(5)
OUT = decl_buffer((1, 4, 3, 3), "float32", "T")
BIAS = decl_buffer((4, 1, 1), "float32", "bias")
RESIDUAL = decl_buffer((1, 4, 3, 3), "float32", "res")


def _call(name, outputs, inputs, attrs=None):
    op = get_op(name)
    return KernelCall(name, op.make_attrs(attrs or {}), tuple(outputs), tuple(inputs))


def _relu():
    return _call("nn.relu", [OUT], [OUT])


def test_bias_residual_and_clip_are_absorbed_in_order():
    calls = [_call("add", [OUT], [OUT, BIAS]), _call("add", [OUT], [RESIDUAL, OUT]),
             _call("clip", [OUT], [OUT], {"a_min": 0.0, "a_max": 6.0})]
    assert match_epilogue(OUT, calls, 1) == Epilogue(BIAS, RESIDUAL, 0.0, 6.0, 3)


def test_a_residual_may_come_before_the_bias_and_relu_ends_the_epilogue():
    calls = [_call("add", [OUT], [OUT, RESIDUAL]), _call("add", [OUT], [OUT, BIAS]), _relu(),
             _call("add", [OUT], [OUT, BIAS])]
    assert match_epilogue(OUT, calls, 1) == Epilogue(BIAS, RESIDUAL, 0.0, math.inf, 3)


def test_bias_add_along_the_channel_axis_is_a_bias():
    bias = decl_buffer((4,), "float32", "b")
    calls = [_call("nn.bias_add", [OUT], [OUT, bias], {"axis": 1})]
    assert match_epilogue(OUT, calls, 1) == Epilogue(bias, calls=1)
    assert match_epilogue(OUT, [_call("nn.bias_add", [OUT], [OUT, bias], {"axis": 3})],
                          1) == Epilogue()


@pytest.mark.parametrize("call", [
    _call("multiply", [OUT], [OUT, BIAS]),
    _call("add", [OUT], [OUT, decl_buffer((3,), "float32", "not_per_channel")]),
    _call("add", [OUT], [OUT, OUT]),
    _call("add", [decl_buffer((1, 4, 3, 3), "float32", "other")], [OUT, BIAS]),
    _call("nn.relu", [OUT], [decl_buffer((1, 4, 3, 3), "float32", "other")]),
    _call("add", [decl_buffer((1, 4, 3, 3), "float64", "T64")],
          [decl_buffer((1, 4, 3, 3), "float64", "T64"), decl_buffer((4, 1, 1), "float64", "b")]),
])
def test_calls_that_are_not_epilogues_stop_the_match(call):
    assert match_epilogue(OUT, [call, _relu()], 1) == Epilogue()


@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
def test_an_activation_ends_the_epilogue_after_the_sums_or_a_clamp(activation):
    act = _call(activation, [OUT], [OUT])
    bias = _call("add", [OUT], [OUT, BIAS])
    assert match_epilogue(OUT, [bias, act, bias], 1) == Epilogue(
        BIAS, calls=2, activation=activation)
    assert match_epilogue(OUT, [act], 1) == Epilogue(calls=1, activation=activation)
    assert match_epilogue(OUT, [bias, _relu(), act, _relu()], 1) == Epilogue(
        BIAS, None, 0.0, math.inf, 3, activation=activation)


def test_after_a_clamp_only_an_activation_is_absorbed():
    bias = _call("add", [OUT], [OUT, BIAS])
    assert match_epilogue(OUT, [_relu(), bias], 1) == Epilogue(lo=0.0, calls=1)
    assert match_epilogue(OUT, [_relu(), _relu()], 1) == Epilogue(lo=0.0, calls=1)


@pytest.mark.parametrize("call", [
    _call("sigmoid", [decl_buffer((1, 4, 3, 3), "float32", "other")], [OUT]),
    _call("nn.silu", [OUT], [decl_buffer((1, 4, 3, 3), "float32", "other")]),
    _call("nn.silu", [decl_buffer((1, 4, 3, 3), "float64", "T64")],
          [decl_buffer((1, 4, 3, 3), "float64", "T64")]),
    _call("tanh", [OUT], [OUT]),
])
def test_activations_not_in_place_on_the_output_are_not_absorbed(call):
    assert match_epilogue(OUT, [_call("add", [OUT], [OUT, BIAS]), call], 1) == Epilogue(
        BIAS, calls=1)


def test_a_second_bias_and_a_residual_the_kernel_cannot_take_stop_the_match():
    calls = [_call("add", [OUT], [OUT, BIAS]), _call("add", [OUT], [OUT, BIAS])]
    assert match_epilogue(OUT, calls, 1) == Epilogue(BIAS, calls=1)
    assert match_epilogue(OUT, [_call("add", [OUT], [OUT, RESIDUAL])], 1,
                          residual=False) == Epilogue()


def activated(values, activation):
    """``values`` through ``activation`` ("sigmoid" or "nn.silu") in float64, cast back."""
    wide = values.astype(np.float64)
    with np.errstate(over="ignore"):
        sigmoid = 1 / (1 + np.exp(-wide))
    return (sigmoid if activation == "sigmoid" else wide * sigmoid).astype(values.dtype)


def _fused(producer, producer_attrs, inputs, steps, num_threads=0, activation=None):
    """Compile one PrimFunc calling ``producer`` then ``steps`` ((name, attrs, extra input
    or None, output first?)) in place on its output, then ``activation`` when given; run
    it and the reference kernels one by one (the activation in float64, see
    :func:`activated`). Returns (generated output, reference output, source)."""
    op = get_op(producer)
    attrs = op.make_attrs(producer_attrs)
    expected = op.evaluate(attrs, *inputs)
    bufs = [decl_buffer(a.shape, a.dtype.name, f"x{i}") for i, a in enumerate(inputs)]
    out = decl_buffer(expected.shape, expected.dtype.name, "T")
    body = [kernel_call(producer, attrs, [out], bufs)]
    arrays = list(inputs)
    for i, (name, step_attrs, extra, extra_first) in enumerate(steps):
        step_op = get_op(name)
        step = step_op.make_attrs(step_attrs or {})
        if extra is None:
            body.append(kernel_call(name, step, [out], [out]))
            expected = step_op.evaluate(step, expected)
            continue
        buf = decl_buffer(extra.shape, extra.dtype.name, f"e{i}")
        bufs.append(buf)
        arrays.append(extra)
        operands = [buf, out] if extra_first else [out, buf]
        body.append(kernel_call(name, step, [out], operands))
        values = [extra, expected] if extra_first else [expected, extra]
        expected = step_op.evaluate(step, *values)
    if activation is not None:
        body.append(kernel_call(activation, None, [out], [out]))
        expected = activated(expected, activation)
    module = compile_funcs({"f": prim_func([*bufs, out], SeqStmt(body))}, num_threads)
    got = np.full(out.shape, 7, out.dtype)
    module.get_function("f")(*arrays, got)
    return got, expected, module.get_source()


def _body(source):
    """The parameters and body of ``def f`` (without its ``f__bind`` companion)."""
    return source.split("def f(")[1].split("\n\n\ndef ")[0]


@pytest.mark.parametrize("threads", [0, 1, 2])
def test_conv_bias_residual_relu_run_as_one_native_call(threads):
    data, weight = RNG.uniform(-1, 1, (1, 6, 9, 9)), RNG.uniform(-1, 1, (70, 6, 3, 3))
    bias, res = RNG.uniform(-1, 1, (70, 1, 1)), RNG.uniform(-1, 1, (1, 70, 9, 9))
    got, expected, source = _fused(
        "nn.conv2d", {"padding": (1, 1, 1, 1)},
        [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), ("add", None, res.astype("float32"), True),
         ("nn.relu", None, None, False)], threads)
    body = _body(source)
    assert body.count("\n    ") == 1 and "_conv2d_nchw(T, x0, x1, e0, e1," in body
    assert_same([got], [expected], atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "hw"), [(1, 300, 40, 7), (2, 256, 70, 10),
                                                 (1, 260, 32, 5), (1, 256, 17, 3),
                                                 (2, 384, 64, 14), (1, 160, 33, 14)])
def test_pointwise_conv_on_small_planes_applies_bias_residual_and_clip(threads, n, c, o, hw):
    """1x1 convolutions with long reductions over planes that whole column blocks would
    overshoot by an eighth or more (taken transposed, vectors along the output channels):
    7x7 to 14x14 (MobileNetV2's 384 -> 64 projection), planes that tiles divide and do not,
    a partial panel of output channels, batches; the epilogue applied after the transpose."""
    data, weight = RNG.uniform(-1, 1, (n, c, hw, hw)), RNG.uniform(-1, 1, (o, c, 1, 1))
    bias, res = RNG.uniform(-1, 1, (o, 1, 1)), RNG.uniform(-1, 1, (n, o, hw, hw))
    got, expected, source = _fused(
        "nn.conv2d", {}, [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), ("add", None, res.astype("float32"), True),
         ("clip", {"a_min": -4.0, "a_max": 4.0}, None, False)], threads)
    assert _body(source).count("\n    ") == 1 and "_conv2d_nchw(" in source
    assert_same([got], [expected], atol=1e-4)


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "hw", "k", "stride", "pad"),
                         [(1, 16, 20, 14, 3, 1, 1), (1, 40, 70, 7, 3, 1, 1), (1, 8, 9, 6, 3, 1, 0),
                          (2, 12, 24, 14, 3, 1, 1), (1, 8, 12, 15, 2, 1, 0),
                          (1, 130, 17, 7, 3, 1, 1), (1, 16, 24, 28, 3, 2, 1),
                          (2, 8, 12, 14, 3, 2, 1), (1, 6, 10, 27, 5, 2, 2),
                          (1, 3, 8, 160, 7, 2, 3), (2, 5, 9, 70, 3, 1, 1),
                          (1, 29, 12, 62, 3, 2, 1), (2, 11, 12, 80, 5, 1, 2)])
def test_conv_on_the_wide_grid_applies_bias_residual_and_clip(threads, n, c, o, hw, k, stride,
                                                              pad, residual):
    """Convolutions whose wide grid (output rows x the padded phase planes' width) rounds up
    to about as many column blocks as the plane, at strides 1 and 2. Reductions of more than
    one slab or so (c * k * k > 256): the columns copied from the planes block by block,
    blocks within one output row stored from the registers and the others with their
    dropped outputs skipped (without a residual, from a staged tile). Shorter ones (stems):
    row tiles read in place, odd output rows and partial vectors of columns at the end. A
    partial panel of output channels, batches."""
    data, weight = RNG.uniform(-1, 1, (n, c, hw, hw)), RNG.uniform(-1, 1, (o, c, k, k))
    out = (hw + 2 * pad - k) // stride + 1
    bias, res = RNG.uniform(-1, 1, (o, 1, 1)), RNG.uniform(-1, 1, (n, o, out, out))
    added = [("add", None, res.astype("float32"), True)] if residual else []
    got, expected, source = _fused(
        "nn.conv2d", {"padding": (pad,) * 4, "strides": (stride, stride)},
        [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), *added,
         ("clip", {"a_min": -4.0, "a_max": 4.0}, None, False)], threads)
    assert _body(source).count("\n    ") == 1 and "_conv2d_nchw(" in source
    assert_same([got], [expected], atol=1e-4)


def test_depthwise_bias_and_clip_fuse_in_nhwc():
    data, weight = RNG.uniform(-1, 1, (2, 7, 7, 20)), RNG.uniform(-2, 2, (3, 3, 20, 1))
    bias = RNG.uniform(-1, 1, (20,))
    got, expected, source = _fused(
        "nn.conv2d", {"groups": 20, "padding": (1, 1, 1, 1), "data_layout": "NHWC",
                      "kernel_layout": "HWOI"},
        [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False),
         ("clip", {"a_min": -0.5, "a_max": 0.5}, None, False)])
    assert _body(source).count("\n    ") == 1
    assert_same([got], [expected], atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("h", "w", "stride", "pad"),
                         [(19, 37, 1, 1), (21, 70, 1, 1), (30, 10, 1, 1), (17, 64, 1, 1),
                          (24, 40, 1, 0), (40, 75, 2, 1), (20, 160, 2, 1), (33, 45, 2, 1),
                          (40, 40, 2, 1), (30, 56, 2, 1), (30, 30, 2, 0)])
def test_nchw_depthwise_on_large_planes_applies_bias_residual_and_clip(threads, h, w, stride,
                                                                       pad):
    """Planes of more than 256 outputs: the row-reuse paths of padded 3x3 stride-1 and
    stride-2 layers (odd sizes need the bottom and right padding) and the phase-plane path of
    the others; blocks of four rows and a tail of single rows; rows
    of whole and partial vectors, narrower than a vector and of more than one 64-output
    segment; the epilogue applied from the registers."""
    c = 5
    data, weight = RNG.uniform(-1, 1, (2, c, h, w)), RNG.uniform(-2, 2, (c, 1, 3, 3))
    oh, ow = (h + 2 * pad - 3) // stride + 1, (w + 2 * pad - 3) // stride + 1
    bias, res = RNG.uniform(-1, 1, (c, 1, 1)), RNG.uniform(-1, 1, (2, c, oh, ow))
    got, expected, source = _fused(
        "nn.conv2d", {"groups": c, "padding": (pad,) * 4, "strides": (stride, stride)},
        [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), ("add", None, res.astype("float32"), True),
         ("clip", {"a_min": -0.5, "a_max": 1.5}, None, False)], threads)
    assert _body(source).count("\n    ") == 1 and "depthwise_conv2d" in source
    assert_same([got], [expected], atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("h", "w", "k"), [(13, 28, 5), (29, 33, 5), (30, 45, 7), (9, 100, 7),
                                           (14, 14, 7), (20, 27, 5)])
def test_nchw_depthwise_5x5_and_7x7_apply_bias_residual_and_clip(threads, h, w, k):
    """Padded 5x5 and 7x7 stride-1 layers: the row-reuse path for rows of at least two
    vectors less a quarter (blocks of four rows and a last block of fewer, summed from the
    zero rows below the plane; whole and partial vectors; more than one 64-output segment),
    the tap-by-tap path of the phase planes for narrower rows."""
    c, pad = 6, k // 2
    data, weight = RNG.uniform(-1, 1, (2, c, h, w)), RNG.uniform(-2, 2, (c, 1, k, k))
    bias, res = RNG.uniform(-1, 1, (c, 1, 1)), RNG.uniform(-1, 1, (2, c, h, w))
    got, expected, source = _fused(
        "nn.conv2d", {"groups": c, "padding": (pad,) * 4},
        [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), ("add", None, res.astype("float32"), True),
         ("clip", {"a_min": -0.5, "a_max": 1.5}, None, False)], threads)
    assert _body(source).count("\n    ") == 1 and "depthwise_conv2d" in source
    assert_same([got], [expected], atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("hw", "stride", "pad"), [(14, 1, 1), (7, 1, 1), (13, 2, 1), (14, 2, 0),
                                                   (4, 1, 1), (28, 2, 1), (27, 2, 1)])
def test_nchw_depthwise_on_small_planes_applies_bias_residual_and_clip(threads, hw, stride,
                                                                        pad):
    """Planes of at most 256 outputs (channels transposed in blocks, except padded 3x3
    planes with output rows of 14, which take the row paths of strides 1 and 2): a partial
    block of channels, inputs the windows use in full or in part, outputs in whole and
    partial vectors of positions."""
    c = 21
    data, weight = RNG.uniform(-1, 1, (2, c, hw, hw)), RNG.uniform(-2, 2, (c, 1, 3, 3))
    out = (hw + 2 * pad - 3) // stride + 1
    bias, res = RNG.uniform(-1, 1, (c, 1, 1)), RNG.uniform(-1, 1, (2, c, out, out))
    got, expected, source = _fused(
        "nn.conv2d", {"groups": c, "padding": (pad,) * 4, "strides": (stride, stride)},
        [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), ("add", None, res.astype("float32"), True),
         ("clip", {"a_min": -0.5, "a_max": 1.5}, None, False)], threads)
    assert _body(source).count("\n    ") == 1 and "depthwise_conv2d" in source
    assert_same([got], [expected], atol=1e-5)


def test_dense_bias_relu_fuse_and_what_follows_the_clamp_stays():
    x, w, b = RNG.uniform(-1, 1, (2, 40)), RNG.uniform(-1, 1, (9, 40)), RNG.uniform(-1, 1, (9,))
    got, expected, source = _fused(
        "nn.dense", {}, [x.astype("float32"), w.astype("float32")],
        [("nn.bias_add", {"axis": 1}, b.astype("float32"), False), ("nn.relu", None, None, False),
         ("add", None, b.astype("float32"), False)])
    body = _body(source)
    assert "_dense(T, x0, x1, e0," in body and "_add(T, T, e2)" in body
    assert_same([got], [expected], atol=1e-5)


def test_without_native_kernels_every_call_is_emitted(numpy_kernels):
    data, weight = RNG.uniform(-1, 1, (1, 3, 5, 5)), RNG.uniform(-1, 1, (4, 3, 3, 3))
    bias = RNG.uniform(-1, 1, (4, 1, 1))
    got, expected, source = _fused(
        "nn.conv2d", {}, [data.astype("float32"), weight.astype("float32")],
        [("add", None, bias.astype("float32"), False), ("nn.relu", None, None, False)])
    body = _body(source)
    assert "_conv2d_gemm(" in body and "_add(" in body and "_relu(" in body
    assert_same([got], [expected], atol=1e-5)


#: Convolutions taking each path of the NCHW kernel (n, c, o, hw, k, stride, pad, dilation,
#: groups): partial panels of output channels, and planes that whole column blocks (or
#: Winograd tiles, or transposed tiles) do and do not divide.
CONV_PATHS = {
    "winograd": (1, 16, 20, 21, 3, 1, 1, 1, 1),
    # 7 tiles across, whole blocks of channels: through the channel-blocked Winograd
    "winograd-blocked": (2, 32, 48, 14, 3, 1, 1, 1, 1),
    # 10x10 with 256 outputs: the transposed form fits too, and Winograd is taken
    "winograd-where-transposed-fits": (1, 16, 256, 10, 3, 1, 1, 1, 1),
    # every tile of the plane in one vector of columns: transposed products
    "winograd-narrow": (1, 264, 136, 7, 3, 1, 1, 1, 1),
    "winograd-narrow-5x5": (2, 20, 130, 5, 3, 1, 1, 1, 1),
    "transposed": (2, 260, 40, 7, 1, 1, 0, 1, 1),
    "transposed-short-reduction": (1, 150, 33, 7, 1, 1, 0, 1, 1),
    # gathered columns: strided 1x1 and dilated layers (the wide grid takes strided 3x3 ones)
    "transposed-gathered": (2, 130, 256, 13, 1, 2, 0, 1, 1),
    "transposed-gathered-stride-3": (1, 140, 257, 19, 1, 3, 0, 1, 1),
    "transposed-gathered-dilated": (1, 29, 256, 5, 3, 1, 2, 2, 1),
    # a strided 3x3 layer that the transposed form fits too: the wide grid
    "implicit-where-transposed-fits": (1, 30, 257, 13, 3, 2, 1, 1, 1),
    # reductions of at most 256 (stems): row tiles
    "implicit": (1, 8, 12, 15, 3, 1, 1, 1, 1),
    "implicit-stride-2": (1, 6, 10, 27, 5, 2, 2, 1, 1),
    "implicit-long-reduction": (1, 29, 12, 62, 3, 2, 1, 1, 1),
    # a 2x2 stride-2 layer (ConvNeXt's downsampling): the wide grid is the output grid
    "implicit-2x2-stride-2": (1, 7, 20, 46, 2, 2, 0, 1, 1),
    "packed": (1, 5, 9, 12, 3, 1, 2, 2, 1),
    "packed-grouped": (2, 8, 12, 10, 3, 1, 1, 1, 2),
    "pointwise": (1, 16, 20, 10, 1, 1, 0, 1, 1),
    "shared-columns": (1, 4, 140, 9, 3, 1, 2, 2, 1),
}
#: Depthwise convolutions taking each path (n, c, h, w, k, stride, pad, layout); pad is one
#: size for every side, or (top, left, bottom, right).
DEPTHWISE_PATHS = {
    "rows-3x3": (2, 5, 19, 37, 3, 1, 1, "NCHW"),
    "rows-3x3-stride-2": (2, 5, 40, 75, 3, 2, 1, "NCHW"),
    # TensorFlow's "same" padding (Hugging Face's EfficientNet): K // 2 - 1 at the top and
    # left, the rest at the bottom and right; and PyTorch's K // 2 on every side
    "rows-3x3-stride-2-same": (1, 3, 41, 44, 3, 2, (0, 0, 1, 1), "NCHW"),
    "rows-5x5-stride-2": (1, 3, 27, 56, 5, 2, 2, "NCHW"),
    "rows-5x5-stride-2-same": (2, 3, 56, 57, 5, 2, (1, 1, 2, 2), "NCHW"),
    "rows-5x5": (1, 3, 13, 30, 5, 1, 2, "NCHW"),
    "rows-7x7": (2, 4, 30, 45, 7, 1, 3, "NCHW"),
    "phase-planes": (1, 3, 20, 23, 5, 1, 2, "NCHW"),
    "small-planes": (2, 21, 7, 7, 3, 1, 1, "NCHW"),
    "small-planes-narrow": (1, 17, 6, 3, 3, 1, 1, "NCHW"),
    "small-planes-stride-2": (1, 19, 14, 14, 5, 2, 2, "NCHW"),
    "nhwc": (2, 20, 7, 7, 3, 1, 1, "NHWC"),
}
EXTRAS = ["none", "bias", "bias-residual-clip"]


def _epilogue_steps(extras, channels, out_shape, channel_axis=1):
    """The calls before the activation: nothing, a bias, or a bias, a residual and a clip."""
    if extras == "none":
        return []
    shape = [1] * (len(out_shape) - channel_axis)
    shape[0] = channels
    steps = [("add", None, _uniform(tuple(shape)), False)]
    if extras == "bias-residual-clip":
        steps += [("add", None, _uniform(out_shape), True),
                  ("clip", {"a_min": -1.5, "a_max": 2.0}, None, False)]
    return steps


def _uniform(shape, scale=1.0):
    return RNG.uniform(-scale, scale, shape).astype("float32")


@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
@pytest.mark.parametrize("extras", EXTRAS)
@pytest.mark.parametrize("path", CONV_PATHS)
def test_conv_applies_the_activation_last_on_every_path(path, extras, activation):
    n, c, o, hw, k, stride, pad, dilation, groups = CONV_PATHS[path]
    out = (hw + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    attrs = {"padding": (pad,) * 4, "strides": (stride, stride),
             "dilation": (dilation, dilation), "groups": groups}
    data, weight = _uniform((n, c, hw, hw), 2.0), _uniform((o, c // groups, k, k))
    got, expected, source = _fused(
        "nn.conv2d", attrs, [data, weight], _epilogue_steps(extras, o, (n, o, out, out)),
        2 if path in ("shared-columns", "transposed-gathered") else 1, activation)
    assert _body(source).count("\n    ") == 1 and "_conv2d_nchw(" in source
    assert_same([got], [expected], atol=1e-4 if c * k * k > 100 else 1e-5)


@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
@pytest.mark.parametrize("extras", EXTRAS)
@pytest.mark.parametrize("path", DEPTHWISE_PATHS)
def test_depthwise_applies_the_activation_last_on_every_path(path, extras, activation):
    n, c, h, w, k, stride, pad, layout = DEPTHWISE_PATHS[path]
    top, left, bottom, right = (pad,) * 4 if isinstance(pad, int) else pad
    oh, ow = (h + top + bottom - k) // stride + 1, (w + left + right - k) // stride + 1
    attrs = {"padding": (top, left, bottom, right), "strides": (stride, stride), "groups": c}
    if layout == "NCHW":
        data, weight, out = _uniform((n, c, h, w), 2.0), _uniform((c, 1, k, k)), (n, c, oh, ow)
    else:
        attrs.update(data_layout="NHWC", kernel_layout="HWOI")
        data, weight, out = _uniform((n, h, w, c), 2.0), _uniform((k, k, c, 1)), (n, oh, ow, c)
    steps = _epilogue_steps(extras, c, out, 1 if layout == "NCHW" else 3)
    got, expected, source = _fused("nn.conv2d", attrs, [data, weight], steps, 1, activation)
    assert _body(source).count("\n    ") == 1 and "depthwise_conv2d" in source
    assert_same([got], [expected], atol=1e-5)


@pytest.mark.parametrize("kernel_layout", ["OIHW", "OHWI", "HWIO"])
@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
def test_a_1x1_convolution_of_a_1x1_plane_is_a_dense_layer(activation, kernel_layout):
    # a squeeze-and-excitation gate: (2, 40, 1, 1) data, 1x1 kernel, bias, activation; with
    # the output channels outermost the weights are a dense layer's, else a convolution's
    data, weight = _uniform((2, 40, 1, 1), 2.0), _uniform((24, 40, 1, 1))
    weight = weight.transpose(["OIHW".index(d) for d in kernel_layout]).copy()
    got, expected, source = _fused("nn.conv2d", {"kernel_layout": kernel_layout},
                                   [data, weight], _epilogue_steps("bias", 24, (2, 24, 1, 1)),
                                   1, activation)
    assert _body(source).count("\n    ") == 1
    assert ("_dense(" in source) == (kernel_layout != "HWIO")
    assert_same([got], [expected], atol=1e-5)


@pytest.mark.parametrize("activation", ["sigmoid", "nn.silu"])
@pytest.mark.parametrize("threads", [1, 2])
def test_dense_applies_the_activation_last(threads, activation):
    # large enough for two threads (the kernel runs small layers on one)
    x, w, b = _uniform((3, 1200), 0.1), _uniform((301, 1200)), _uniform((301,))
    got, expected, source = _fused("nn.dense", {}, [x, w], [("nn.bias_add", {"axis": 1}, b,
                                                             False)], threads, activation)
    assert _body(source).count("\n    ") == 1 and "_dense(T, x0, x1, e0," in source
    assert_same([got], [expected], atol=2e-5)
