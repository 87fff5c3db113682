"""The TFLite importer against TFLite Micro.

int8 single-operator models with random shapes, strides, padding, dilation, per-channel or
per-tensor quantisation, zero points and fused activations, and small int8 networks, are
compiled for the cpu target and must equal TFLite Micro's reference kernels bit for bit.
float32 models are compared at rtol/atol 1e-5. Malformed files, unsupported operators and
the command line are checked too. Models are built with passhost.testing.tflite_builder
(no TensorFlow).
"""

from __future__ import annotations

import contextlib
import math
from functools import partial

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")

import passhost
from passhost.frontend import TfliteImportError, from_tflite
from passhost.relay.visitor import post_order
from passhost.testing import tflite_models as tm
from passhost.testing.tflite_builder import TfliteBuilder
from passhost.transform import PassContext

SEED = 20261122
ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
RUNS = 3  # input sets per model
rng_for = partial(tm.seeded_rng, SEED)


# -- running both engines ----------------------------------------------------------------------
def compile_tflite(buf: bytes, shape=None):
    mod, params = from_tflite(buf, shape)
    with PassContext(opt_level=3):
        return passhost.build(mod, "cpu", params).executor()


def check(b: TfliteBuilder, rng: np.random.Generator, exact: bool = True) -> None:
    """Compile ``b``'s model with passhost and compare every output with TFLM's on RUNS
    random input sets: bit-exact, or within 1e-5 for float models."""
    buf = b.to_bytes()
    executor = compile_tflite(buf)
    for _ in range(RUNS):
        inputs = tm.random_inputs(b, rng)
        want = tm.run_tflm(buf, inputs, len(b.graph_outputs))
        got = executor(*inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def window(rng, size: int, kernel: int, stride: int, dilation: int) -> str:
    fits = (kernel - 1) * dilation + 1 <= size
    return "VALID" if fits and rng.random() < 0.5 else "SAME"


def conv_window(rng: np.random.Generator, h: int, w: int,
                ) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], str]:
    """A random kernel, stride, dilation (each (h, w)) and padding for an h x w image."""
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    padding = "VALID" if window(rng, h, kh, sh, dh) == window(rng, w, kw, sw, dw) == "VALID" \
        else "SAME"
    return (kh, kw), (sh, sw), (dh, dw), padding


# -- int8 single operators, bit-exact ----------------------------------------------------------
@pytest.mark.parametrize("case", range(20))
def test_int8_conv2d(case):
    rng = rng_for(1, case)
    n, h, w = int(rng.integers(1, 3)), int(rng.integers(3, 13)), int(rng.integers(3, 13))
    c, o = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    groups = 2 if c % 2 == 0 and o % 2 == 0 and rng.random() < 0.25 else 1
    (kh, kw), stride, dilation, padding = conv_window(rng, h, w)
    b = TfliteBuilder()
    x, s_in = tm.q_input(b, rng, (n, h, w, c))
    wt, s_w = tm.q_weight(b, rng, (o, kh, kw, c // groups), 0, per_channel=bool(case % 2))
    bias = tm.q_bias(b, rng, o) if rng.random() < 0.8 else None
    y = b.conv2d(x, wt, bias, stride=stride, padding=padding, dilation=dilation,
                 activation=ACTIVATIONS[case % 4], zero_point=tm.zero_point(rng),
                 scale=tm.matmul_out_scale(rng, s_in, s_w, kh * kw * c // groups))
    b.outputs(y)
    check(b, rng)


@pytest.mark.parametrize("case", range(20))
def test_int8_depthwise_conv2d(case):
    rng = rng_for(2, case)
    n, h, w = int(rng.integers(1, 3)), int(rng.integers(3, 13)), int(rng.integers(3, 13))
    c, m = int(rng.integers(1, 7)), int(rng.integers(1, 4))
    (kh, kw), stride, dilation, padding = conv_window(rng, h, w)
    b = TfliteBuilder()
    x, s_in = tm.q_input(b, rng, (n, h, w, c))
    wt, s_w = tm.q_weight(b, rng, (1, kh, kw, c * m), 3, per_channel=bool(case % 2))
    bias = tm.q_bias(b, rng, c * m) if case % 5 else None
    y = b.depthwise_conv2d(x, wt, bias, stride=stride, padding=padding,
                           dilation=dilation, activation=ACTIVATIONS[case % 4],
                           zero_point=tm.zero_point(rng),
                           scale=tm.matmul_out_scale(rng, s_in, s_w, kh * kw))
    b.outputs(y)
    check(b, rng)


@pytest.mark.parametrize("case", range(20))
def test_int8_fully_connected(case):
    rng = rng_for(3, case)
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(2, 5))))
    keep = bool(case % 3 == 0)
    depth = shape[-1] if keep or case % 2 else shape[-1] * shape[-2]
    units = int(rng.integers(1, 10))
    b = TfliteBuilder()
    x, s_in = tm.q_input(b, rng, shape)
    w_zp = int(rng.integers(-10, 10)) if case % 4 == 1 else 0
    wt, s_w = tm.q_weight(b, rng, (units, depth), 0, per_channel=False, zp=w_zp)
    bias = tm.q_bias(b, rng, units) if rng.random() < 0.7 else None
    y = b.fully_connected(x, wt, bias, keep_num_dims=keep, activation=ACTIVATIONS[case % 4],
                          scale=tm.matmul_out_scale(rng, s_in, s_w, depth),
                          zero_point=tm.zero_point(rng))
    b.outputs(y)
    check(b, rng)


@pytest.mark.parametrize("op", ["average_pool2d", "max_pool2d"])
@pytest.mark.parametrize("case", range(16))
def test_int8_pools(op, case):
    rng = rng_for(4, case, len(op))
    n, h, w, c = (int(rng.integers(1, 3)), int(rng.integers(2, 10)), int(rng.integers(2, 10)),
                  int(rng.integers(1, 6)))
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    padding = "VALID" if window(rng, h, kh, sh, 1) == window(rng, w, kw, sw, 1) == "VALID" \
        else "SAME"
    b = TfliteBuilder()
    x, _ = tm.q_input(b, rng, (n, h, w, c))
    y = getattr(b, op)(x, (kh, kw), stride=(sh, sw), padding=padding,
                       activation=ACTIVATIONS[case % 4])
    b.outputs(y)
    check(b, rng)


def broadcast_pair(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast: equal, with some 1s, or of lower rank."""
    a = tuple(int(d) for d in rng.integers(1, 8, int(rng.integers(1, 5))))
    kind = rng.integers(3)
    if kind == 0:
        return a, a
    if kind == 1:
        return a, tuple(1 if rng.random() < 0.5 else d for d in a)
    return a, a[int(rng.integers(0, len(a))):]


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("case", range(16))
def test_int8_add_and_mul(op, case):
    rng = rng_for(5, case, len(op))
    sa, sb = broadcast_pair(rng)
    if case % 2:
        sa, sb = sb, sa
    b = TfliteBuilder()
    x, s1 = tm.q_input(b, rng, sa, "a")
    y, s2 = tm.q_input(b, rng, sb, "b")
    if op == "add":
        s_out = (s1 + s2) * 74 / 60 * rng.uniform(0.5, 2)
    else:
        s_out = s1 * s2 * 74 * 74 / 60 * rng.uniform(0.5, 2)
    z = getattr(b, op)(x, y, activation=ACTIVATIONS[case % 4], scale=float(s_out),
                       zero_point=tm.zero_point(rng))
    b.outputs(z)
    check(b, rng)


@pytest.mark.parametrize("case", range(16))
def test_int8_softmax(case):
    rng = rng_for(6, case)
    rows = [int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4)))]
    shape = (*rows, int(rng.integers(1, 13)))
    b = TfliteBuilder()
    x = b.input(shape, "int8", name="x", scale=float(rng.uniform(0.005, 0.1)),
                zero_point=tm.zero_point(rng))
    beta = 1.0 if case % 3 == 0 else float(rng.uniform(0.3, 2.0))
    b.outputs(b.softmax(x, beta=beta))
    check(b, rng)


@pytest.mark.parametrize("case", range(10))
def test_int8_reshape(case):
    rng = rng_for(7, case)
    dims = [int(d) for d in rng.integers(1, 5, int(rng.integers(2, 5)))]
    b = TfliteBuilder()
    x, _ = tm.q_input(b, rng, dims)
    new = list(rng.permutation(dims))
    if case % 2:
        new[int(rng.integers(len(new)))] = -1
    if case % 3 == 0:
        new = [math.prod(dims)] if case % 2 == 0 else [1, -1]
    b.outputs(b.reshape(x, new, as_tensor=bool(case % 4 < 2)))
    check(b, rng)


@pytest.mark.parametrize("op", ["CONV_2D", "FULLY_CONNECTED"])
def test_an_omitted_bias_may_be_listed_as_minus_one(op):
    rng = rng_for(3, 99, len(op))
    b = TfliteBuilder()
    if op == "CONV_2D":
        x, _ = tm.q_input(b, rng, (1, 4, 4, 2))
        w, _ = tm.q_weight(b, rng, (3, 1, 1, 2), 0, per_channel=True)
        y = b.tensor((1, 4, 4, 3), "int8", scale=0.2, zero_point=1)
        b.operator(op, [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1)
    else:
        x, _ = tm.q_input(b, rng, (2, 4))
        w, _ = tm.q_weight(b, rng, (3, 4), 0, per_channel=False)
        y = b.tensor((2, 3), "int8", scale=0.2, zero_point=1)
        b.operator(op, [x, w, -1], [y], "FullyConnectedOptions")
    b.outputs(y)
    check(b, rng)


def test_reshape_without_a_constant_shape_takes_the_declared_output_shape():
    rng = rng_for(7, 99)
    b = TfliteBuilder()
    x, _ = tm.q_input(b, rng, (2, 3, 4))
    shape = b.input((2,), "int32", name="shape")
    y, z = b.tensor((6, 4), "int8", scale=0.1), b.tensor((4, 6), "int8", scale=0.1)
    b.operator("RESHAPE", [x], [y])
    b.operator("RESHAPE", [y, shape], [z])
    b.outputs(y, z)
    buf = b.to_bytes()
    data = [tm.random_inputs(b, rng)[0], np.array([4, 6], "int32")]
    want = tm.run_tflm(buf, data, 2)
    got = compile_tflite(buf)(*data)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", range(12))
def test_int8_pad_uses_the_zero_point(case):
    rng = rng_for(8, case)
    dims = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 5))))
    b = TfliteBuilder()
    x, _ = tm.q_input(b, rng, dims)
    b.outputs(b.pad(x, rng.integers(0, 3, (len(dims), 2))))
    check(b, rng)


@pytest.mark.parametrize("case", range(12))
def test_quantize_requantize_and_dequantize(case):
    rng = rng_for(9, case)
    shape = tuple(int(d) for d in rng.integers(1, 6, int(rng.integers(1, 4))))
    b = TfliteBuilder()
    f = b.input(shape, "float32", name="f")
    q = b.quantize(f, scale=float(rng.uniform(0.005, 0.1)), zero_point=tm.zero_point(rng))
    x, _ = tm.q_input(b, rng, shape, "q")
    r = b.quantize(x, scale=float(rng.uniform(0.005, 0.1)), zero_point=tm.zero_point(rng))
    b.outputs(q, r, b.dequantize(x))
    check(b, rng)


# -- float32 models ----------------------------------------------------------------------------
def _float_model(op: str, rng: np.random.Generator) -> TfliteBuilder:
    b = TfliteBuilder()
    x = b.input((1, 7, 6, 3), "float32", name="x")
    act = ACTIVATIONS[int(rng.integers(4))]
    weight = rng.standard_normal
    if op == "conv2d":
        w = b.constant(weight((4, 3, 2, 3)).astype("float32"))
        y = b.conv2d(x, w, b.constant(weight(4).astype("float32")), stride=(2, 1),
                     dilation=(1, 2), padding="SAME", activation=act)
    elif op == "depthwise_conv2d":
        w = b.constant(weight((1, 3, 3, 6)).astype("float32"))
        y = b.depthwise_conv2d(x, w, b.constant(weight(6).astype("float32")), stride=2,
                               padding="VALID", activation=act)
    elif op == "fully_connected":
        w = b.constant(weight((5, 18)).astype("float32"))
        y = b.fully_connected(x, w, b.constant(weight(5).astype("float32")), activation=act)
    elif op in ("average_pool2d", "max_pool2d"):
        y = getattr(b, op)(x, (3, 2), stride=(2, 2), padding="SAME", activation=act)
    elif op in ("add", "mul"):
        other = b.input((1, 1, 6, 3), "float32", name="y")
        y = getattr(b, op)(x, other, activation=act)
    elif op == "softmax":
        y = b.softmax(x, beta=float(rng.uniform(0.5, 2)))
    elif op == "reshape":
        y = b.reshape(x, (7, -1))
    else:
        y = b.pad(x, [[0, 0], [1, 2], [0, 1], [0, 0]])
    b.outputs(y)
    return b


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d", "fully_connected",
                                "average_pool2d", "max_pool2d", "add", "mul", "softmax",
                                "reshape", "pad"])
@pytest.mark.parametrize("case", range(3))
def test_float32_operators(op, case):
    rng = rng_for(10, case, len(op))
    check(_float_model(op, rng), rng, exact=False)


# -- networks ----------------------------------------------------------------------------------
def test_a_quantized_cnn_from_float_input_to_float_output(tmp_path):
    """quantize -> conv -> depthwise -> avg pool -> reshape -> FC -> softmax -> dequantize,
    read from a file path."""
    rng = rng_for(11)
    b = tm.int8_cnn(rng)
    path = tmp_path / "cnn.tflite"
    path.write_bytes(b.to_bytes())
    mod, params = from_tflite(path)
    with PassContext(opt_level=3):
        executor = passhost.build(mod, "cpu", params).executor()
    for _ in range(5):
        image = tm.random_inputs(b, rng)
        want = tm.run_tflm(path.read_bytes(), image, 1)
        np.testing.assert_array_equal(executor(*image)[0], want[0])


def test_residual_network_with_constants_and_two_outputs():
    """conv -> add(x) -> pad -> max pool -> mul(constant); add of a broadcast constant."""
    rng = rng_for(12)
    b = tm.int8_residual(rng)
    check(b, rng)


def test_the_graph_has_the_shapes_a_quantized_target_matches():
    rng = rng_for(13)
    b = TfliteBuilder()
    x, s_in = tm.q_input(b, rng, (1, 5, 5, 2))
    w, s_w = tm.q_weight(b, rng, (3, 3, 3, 2), 0, per_channel=True)
    y = b.conv2d(x, w, tm.q_bias(b, rng, 3), activation="RELU", scale=0.07, zero_point=-128)
    y = b.average_pool2d(y, 2, activation="RELU6")
    y = b.reshape(y, (1, 12))
    fw, f_s = tm.q_weight(b, rng, (4, 12), 0, per_channel=False)
    b.outputs(b.fully_connected(y, fw, tm.q_bias(b, rng, 4), activation="RELU", scale=0.11,
                                zero_point=5))
    mod, params = from_tflite(b.to_bytes())
    ops = [n.op.name for n in post_order(mod["main"].body) if hasattr(n, "op")]
    assert ops == ["qnn.conv2d", "nn.bias_add", "qnn.requantize", "clip",
                   "cast", "nn.avg_pool2d", "cast", "clip", "reshape",
                   "qnn.dense", "nn.bias_add", "qnn.requantize", "clip"]
    calls = [n for n in post_order(mod["main"].body) if hasattr(n, "op")]
    conv_req, fc_req = calls[2], calls[11]
    # conv: per channel, the exact double product s_in * s_w[c]
    conv_scale = conv_req.args[1].data
    assert conv_scale.dtype == np.float64
    np.testing.assert_array_equal(conv_scale, [float(s_in) * float(s) for s in s_w])
    assert conv_req.attrs.axis == 3
    # FC: per tensor, the same exact double product (the pool keeps the scale 0.07)
    fc_scale = fc_req.args[1].data
    assert fc_scale.dtype == np.float64
    assert fc_scale == float(np.float32(0.07)) * float(f_s[0])
    assert calls[0].attrs.data_layout == "NHWC" and calls[0].attrs.kernel_layout == "OHWI"
    assert params["w"].shape == (3, 3, 3, 2)


def _product_sensitive_case(rng):
    """Scales and int32 accumulators whose int8 outputs differ between the effective scale
    ``s_in * s_w / s_out`` in double and ``float32(s_in * s_w) / s_out`` (the float32
    product older TFLite versions used). Found with passhost's fixed-point helpers; TFLM
    judges which one is right."""
    from passhost.relay.op import fixed_point as fp

    for _ in range(20):
        s_in, s_w = (float(np.float32(v)) for v in rng.uniform(1e-3, 1e-1, 2))
        # A small effective scale (about 1e-4) gives millions of in-range accumulators.
        s_out = float(np.float32(s_in * s_w / rng.uniform(5e-5, 2e-4)))
        single = float(np.float32(s_in) * np.float32(s_w)) / s_out
        double = s_in * s_w / s_out
        limit = int(120 / double)
        acc = np.arange(-limit, limit)
        outs = [fp.multiply_by_quantized_multiplier(acc, *fp.quantize_multiplier(r))
                for r in (double, single)]
        differ = acc[outs[0] != outs[1]]
        if differ.size:
            return s_in, s_w, s_out, rng.choice(differ, 4)
    pytest.fail("no accumulators found where the product's precision matters")


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d", "fully_connected"])
def test_requantize_uses_tflite_precision_of_the_scale_product(op):
    """TFLM multiplies s_in * s_w in double for convolutions and fully connected layers
    alike: with accumulators where a float32 product would round differently, the outputs
    equal TFLM's."""
    rng = rng_for(14, len(op))
    s_in, s_w, s_out, acc = _product_sensitive_case(rng)
    b = TfliteBuilder()
    bias = b.constant((acc - 1).astype("int32"), name="bias")  # x = 1, w = 1: acc = 1 + bias
    if op == "fully_connected":
        x = b.input((1, 1), "int8", name="x", scale=s_in, zero_point=0)
        w = b.constant(np.ones((4, 1), "int8"), scale=s_w)
        b.outputs(b.fully_connected(x, w, bias, scale=s_out, zero_point=0))
    else:
        x = b.input((1, 1, 1, 1), "int8", name="x", scale=s_in, zero_point=0)
        shape = (4, 1, 1, 1) if op == "conv2d" else (1, 1, 1, 4)
        w = b.constant(np.ones(shape, "int8"), scale=[s_w] * 4,
                       quantized_dimension=0 if op == "conv2d" else 3)
        b.outputs(getattr(b, op)(x, w, bias, scale=s_out, zero_point=0))
    buf = b.to_bytes()
    ones = [np.ones(b.shape(b.graph_inputs[0]), "int8")]
    want = tm.run_tflm(buf, ones, 1)[0]
    np.testing.assert_array_equal(compile_tflite(buf)(*ones)[0], want)


def test_shape_overrides_the_batch_and_names_are_kept():
    rng = rng_for(15)

    def model(batch: int) -> TfliteBuilder:
        b = TfliteBuilder()
        x = b.input((batch, 5, 5, 2), "int8", name="serving_default_x:0", scale=0.05,
                    zero_point=1)
        w = b.constant(np.arange(36, dtype="int8").reshape(2, 3, 3, 2) - 18,
                       name="model/conv;bias", scale=0.02)
        b.outputs(b.conv2d(x, w, scale=0.3, zero_point=-2))
        return b

    executor = compile_tflite(model(1).to_bytes(), shape={"serving_default_x:0": (3, 5, 5, 2)})
    x = tm.random_inputs(model(3), rng)
    want = tm.run_tflm(model(3).to_bytes(), x, 1)
    np.testing.assert_array_equal(executor(**{"serving_default_x:0": x[0]})[0], want[0])
    _, params = from_tflite(model(1).to_bytes())
    assert list(params) == ["model/conv;bias"]


def test_empty_and_repeated_tensor_names_get_index_names():
    b = TfliteBuilder()
    x = b.input((2, 3), "float32", name="")
    y = b.input((2, 3), "float32", name="v")
    k = b.constant(np.ones((2, 3), "float32"), name="v")
    b.outputs(b.add(b.add(x, y), k))
    mod, params = from_tflite(b.to_bytes())
    assert [p.name_hint for p in mod["main"].params] == ["tensor_0", "v", "tensor_2"]
    assert list(params) == ["tensor_2"]


# -- errors ------------------------------------------------------------------------------------
def _conv_model(**weight_kwargs) -> TfliteBuilder:
    b = TfliteBuilder()
    x = b.input((1, 4, 4, 2), "int8", name="x", scale=0.1, zero_point=0)
    kwargs = {"data": np.ones((3, 1, 1, 2), "int8"), "scale": 0.1, **weight_kwargs}
    w = b.tensor((3, 1, 1, 2), kwargs.pop("dtype", "int8"), name="w", **kwargs)
    b.outputs(b.conv2d(x, w, scale=0.1, zero_point=0))
    return b


def test_truncated_files_and_garbage_raise_import_errors():
    buf = _conv_model().to_bytes()
    rng = rng_for(16)
    with pytest.raises(TfliteImportError, match=r"only 5 bytes \(truncated\?\)"):
        from_tflite(buf[:5])
    for cut in (12, 64, len(buf) // 2, len(buf) - 40):
        with pytest.raises(TfliteImportError, match=r"malformed|truncated|expected"):
            from_tflite(buf[:cut])
    for _ in range(100):
        garbage = bytearray(rng.integers(0, 256, int(rng.integers(8, 2000)), dtype="uint8"))
        garbage[4:8] = b"TFL3"
        with pytest.raises(TfliteImportError):
            from_tflite(bytes(garbage))


def test_corrupted_bytes_import_or_raise_only_import_errors():
    buf = _conv_model().to_bytes()
    rng = rng_for(17)
    for _ in range(300):
        data = bytearray(buf)
        for pos in rng.integers(8, len(data), int(rng.integers(1, 4))):
            data[pos] = int(rng.integers(0, 256))
        with contextlib.suppress(TfliteImportError):
            from_tflite(bytes(data))


def test_the_file_identifier_is_checked(tmp_path):
    buf = _conv_model().to_bytes()
    with pytest.raises(TfliteImportError, match=r"identifier b'TFL3' at bytes 4..8, found "
                                                r"b'ONNX'"):
        from_tflite(buf[:4] + b"ONNX" + buf[8:])
    with pytest.raises(TfliteImportError, match="could not read"):
        from_tflite(tmp_path / "missing.tflite")


def test_unsupported_operators_are_reported_once_with_counts_and_indices():
    b = TfliteBuilder()
    x = b.input((1, 4), "float32", name="x")
    t1, t2, t3, t4, t5 = (b.tensor((1, 4)) for _ in range(5))
    b.operator("TANH", [x], [t1])
    b.operator("LOGISTIC", [t1], [t2])
    b.operator("CUSTOM", [t2], [t3], custom_code="MyOp")
    b.operator("RELU", [t3], [t4])
    b.operator("TANH", [t4], [t5])
    b.outputs(t5)
    with pytest.raises(TfliteImportError) as info:
        from_tflite(b.to_bytes())
    assert str(info.value) == (
        "the model uses 4 unsupported operator type(s):\n"
        "  CUSTOM(MyOp) x1 (custom operator): operators 2\n"
        "  LOGISTIC x1: operators 1\n"
        "  RELU x1: operators 3\n"
        "  TANH x2: operators 0, 4")


@pytest.mark.parametrize("weight, message", [
    ({"data": None}, r"operator 0 \(CONV_2D.*tensor 1 \('w'\) is not produced by any "
                     r"earlier operator, is not a graph input and its buffer 0 holds no data "
                     r"\(missing buffer data\?\)"),
    ({"data": None, "buffer": 7}, r"tensor 1 \('w'\) refers to buffer 7, the model has 1 "
                                  r"buffers"),
    ({"data": np.ones(5, "int8")}, r"buffer 1 holds 5 bytes, expected 6"),
    ({"dtype": "int16", "data": np.ones((3, 1, 1, 2), "int16")},
     r"the weight, tensor 1 \('w'\): expected int8, found int16"),
    ({"scale": None}, r"tensor 1 \('w'\): expected int8 quantisation parameters"),
    ({"scale": [0.1, 0.2], "quantized_dimension": 0},
     r"per-channel quantisation along axis 0 \(3 channels\), found 2 scales"),
    ({"zero_point": 3}, r"expected zero points 0"),
])
def test_bad_weights_name_the_operator_and_tensor(weight, message):
    with pytest.raises(TfliteImportError, match=message):
        from_tflite(_conv_model(**weight).to_bytes())


def _single(op: str, dtype: str = "int8", **kwargs) -> TfliteBuilder:
    b = TfliteBuilder()
    quant = {"scale": 0.1, "zero_point": 0} if dtype in ("int8", "int16", "uint8") else {}
    x = b.input((1, 4, 4, 2), dtype, name="x", **quant)
    b.outputs(getattr(b, op)(x, **kwargs))
    return b


@pytest.mark.parametrize("build, message", [
    (lambda: _single("max_pool2d", "int16", pool_size=2),
     r"graph input tensor 0 \('x'\): int16 quantisation is not supported; expected "
     r"float32 or int8 or int32 tensors"),
    (lambda: _single("max_pool2d", "uint8", pool_size=2), r"uint8 quantisation"),
    (lambda: _single("average_pool2d", "int8", pool_size=2, scale=0.2),
     r"TFLite's int8 pools do not rescale"),
    (lambda: _single("max_pool2d", "int8", pool_size=5), r"VALID window of 5 .* does not fit"),
    (lambda: _single("softmax", "int8", scale=0.1, zero_point=0),
     r"SOFTMAX.*output_scale.*1/256"),
    (lambda: _single("quantize", "float32", scale=[0.1, 0.2], quantized_dimension=3),
     r"QUANTIZE.*expected per-tensor quantisation, found 2 scales"),
    (lambda: _single("reshape", "int8", new_shape=(3, -1)), r"cannot reshape \[1, 4, 4, 2\]"),
    (lambda: _single("max_pool2d", "float32", pool_size=2, activation="TANH"),
     r"unsupported fused activation TANH"),
])
def test_unsupported_types_options_and_quantisation(build, message):
    with pytest.raises(TfliteImportError, match=message):
        from_tflite(build().to_bytes())


def test_an_int16_operand_names_the_operator():
    b = TfliteBuilder()
    k = b.constant(np.ones((1, 4), "int16"), name="k", scale=0.1)
    x = b.input((1, 4), "int8", name="x", scale=0.1, zero_point=0)
    b.outputs(b.add(k, x, scale=0.2, zero_point=0))
    with pytest.raises(TfliteImportError, match=r"operator 0 \(ADD, output 't2'\): tensor 0 "
                                                r"\('k'\): int16 quantisation is not "
                                                r"supported; expected float32 or int8"):
        from_tflite(b.to_bytes())


def test_hybrid_and_mismatched_models_are_rejected():
    b = TfliteBuilder()
    x = b.input((1, 4), "float32", name="x")
    w = b.constant(np.ones((2, 4), "int8"), name="w", scale=0.1)
    b.outputs(b.fully_connected(x, w))
    with pytest.raises(TfliteImportError, match=r"the weight, tensor 1 \('w'\): expected "
                                                r"float32 like the operator's input, found "
                                                r"int8 \(mixed float/int8"):
        from_tflite(b.to_bytes())
    b = TfliteBuilder()
    x = b.input((1, 4), "float32", name="x")
    y = b.tensor((1, 5), "float32", name="y")
    b.operator("ADD", [x, x], [y], "AddOptions")
    b.outputs(y)
    with pytest.raises(TfliteImportError, match=r"operator 0 \(ADD, output 'y'\): computed "
                                                r"Tensor\[\(1, 4\), float32\], but the model "
                                                r"declares tensor 1 \('y'\) as float32\[1, 5\]"):
        from_tflite(b.to_bytes())


# -- the command line --------------------------------------------------------------------------
def test_passhost_compile_and_run_a_tflite_file(tmp_path, capsys):
    from passhost.cli import main

    rng = rng_for(18)
    b = TfliteBuilder()
    x, s_in = tm.q_input(b, rng, (1, 6, 6, 3), "serving_default_x:0")
    w, s_w = tm.q_weight(b, rng, (4, 3, 3, 3), 0, per_channel=True)
    y = b.conv2d(x, w, tm.q_bias(b, rng, 4), activation="RELU",
                 scale=tm.matmul_out_scale(rng, s_in, s_w, 27), zero_point=-128)
    b.outputs(b.dequantize(b.softmax(b.reshape(y, (1, -1)))))
    buf = b.to_bytes()
    (tmp_path / "m.tflite").write_bytes(buf)
    x = tm.random_inputs(b, rng)
    np.save(tmp_path / "x.npy", x[0])
    assert main(["compile", str(tmp_path / "m.tflite"), "--target", "cpu",
                 "-o", str(tmp_path / "m.tar")]) == 0
    assert main(["run", str(tmp_path / "m.tar"),
                 "--input", f"serving_default_x:0={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "out.npz")]) == 0
    want = tm.run_tflm(buf, x, 1)[0]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["output0"], want)
    capsys.readouterr()
