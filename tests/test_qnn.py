"""qnn.* operators against independent Python oracles (tests/qnn_oracles.py; the fixed-point
primitives they build on have tests/test_qnn_fixed_point.py).

Every expected value comes from plain Python (big-integer arithmetic, ``Fraction`` for exact
rounding, per-element loops) written here from the TFLite reference semantics, never from
the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from naive import in_layout, naive_conv2d
from passhost import relay
from passhost.errors import IRTypeError
from qnn_oracles import (
    MAX32,
    MIN32,
    RANGES,
    clamp,
    py_add_params,
    py_mbqm,
    py_quantize_multiplier,
    py_softmax_row,
    round_away,
    wrap32,
)


# -- helpers ---------------------------------------------------------------------------------------
def f32(v) -> relay.Constant:
    return relay.const(np.asarray(v, dtype=np.float32))


def i32(v) -> relay.Constant:
    return relay.const(np.asarray(v, dtype=np.int32))


def run(params, body, *inputs):
    return relay.evaluate(relay.Function(params, body), *inputs)


def rand_int(rng, shape, dtype="int8"):
    lo, hi = RANGES[dtype]
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def rand_scale(rng, n=None, lo=0.002, hi=0.2):
    return np.asarray(rng.uniform(lo, hi, size=n)).astype(np.float32)


def bcast_index(idx, shape):
    idx = idx[len(idx) - len(shape):]
    return tuple(i if d > 1 else 0 for i, d in zip(idx, shape))


# -- qnn.quantize / qnn.dequantize -----------------------------------------------------------------
def py_quantize(x: float, scale: float, zp: int, dtype: str) -> int:
    q = np.float32(x) / np.float32(scale)
    return clamp(round_away(float(q)) + zp, dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_quantize_per_tensor(dtype):
    rng = np.random.default_rng(1)
    data = rng.uniform(-3, 3, size=(3, 4)).astype(np.float32)
    data[0, :3] = [0.25, -0.25, 0.75]  # exact ties at scale 0.5
    zp = 7 if dtype != "int16" else -3
    x = relay.var("x", shape=(3, 4))
    for scale in (0.5, 0.013):
        out = run([x], relay.qnn.quantize(x, f32(scale), i32(zp), out_dtype=dtype), data)
        assert out.dtype == dtype
        exp = [[py_quantize(data[i, j], scale, zp, dtype) for j in range(4)] for i in range(3)]
        assert out.tolist() == exp
    assert out.tolist()[0][:3] != [0, 0, 0]


def test_quantize_per_channel_and_float64_input():
    rng = np.random.default_rng(2)
    data = rng.uniform(-2, 2, size=(2, 3, 2))
    scales = rand_scale(rng, 3)
    zps = np.array([-4, 0, 9], dtype=np.int32)
    x = relay.var("x", shape=(2, 3, 2), dtype="float64")
    out = run([x], relay.qnn.quantize(x, f32(scales), i32(zps), axis=1), data)
    for idx in np.ndindex(*data.shape):
        c = idx[1]
        assert out[idx] == py_quantize(data[idx], scales[c], int(zps[c]), "int8")


def test_quantize_divides_in_float32():
    # float32(x) / float32(s) is exactly 895.5 (rounds to 896) while the double quotient
    # is 895.49998...: TFLite divides in float32.
    x, scale = 2.2292988300323486, 0.0024894459638744593
    assert float(np.float32(x) / np.float32(scale)) == 895.5
    xv = relay.var("x", shape=(1,))
    out = run([xv], relay.qnn.quantize(xv, f32(scale), i32(0), out_dtype="int16"),
              np.array([x], dtype=np.float32))
    assert out.tolist() == [896] == [py_quantize(x, scale, 0, "int16")]


def test_dequantize_per_tensor_and_per_channel():
    rng = np.random.default_rng(3)
    data = rand_int(rng, (4, 3))
    x = relay.var("x", shape=(4, 3), dtype="int8")
    out = run([x], relay.qnn.dequantize(x, f32(0.037), i32(-5)), data)
    s = float(np.float32(0.037))
    assert out.dtype == np.float32
    assert out.tolist() == [[float(np.float32(s * (int(v) + 5))) for v in row] for row in data]
    scales = rand_scale(rng, 4)
    zps = np.array([1, -2, 0, 3], dtype=np.int32)
    out = run([x], relay.qnn.dequantize(x, f32(scales), i32(zps), axis=0), data)
    for (i, j), v in np.ndenumerate(data):
        assert out[i, j] == np.float32(float(scales[i]) * (int(v) - int(zps[i])))


def test_dequantize_int32_multiplies_in_double():
    rng = np.random.default_rng(31)
    data = rng.integers(-(2**30), 2**30, size=64).astype(np.int32)
    x = relay.var("x", shape=(64,), dtype="int32")
    scale = np.float32(0.0123)
    out = run([x], relay.qnn.dequantize(x, f32(scale), i32(17)), data)
    assert out.tolist() == [float(np.float32(float(scale) * (int(v) - 17))) for v in data]


# -- qnn.requantize --------------------------------------------------------------------------------
@pytest.mark.parametrize("out_dtype", ["int8", "uint8", "int16"])
def test_requantize_per_tensor(out_dtype):
    rng = np.random.default_rng(4)
    data = rng.integers(-20000, 20000, size=(3, 5)).astype(np.int32)
    data[0, :2] = [MIN32 + 10, MAX32]
    s_in, s_out = np.float32(0.0007), np.float32(0.05)
    x = relay.var("x", shape=(3, 5), dtype="int32")
    out = run([x], relay.qnn.requantize(x, f32(s_in), i32(3), f32(s_out), i32(-2),
                                        out_dtype=out_dtype), data)
    m, s = py_quantize_multiplier(float(s_in) / float(s_out))
    exp = [[clamp(py_mbqm(wrap32(int(v) - 3), m, s) - 2, out_dtype) for v in row]
           for row in data]
    assert out.dtype == out_dtype and out.tolist() == exp


def test_requantize_per_channel_float64_scale():
    rng = np.random.default_rng(5)
    data = rng.integers(-5000, 5000, size=(2, 2, 4)).astype(np.int32)
    s_in, s_w = np.float32(0.02), rand_scale(rng, 4, 0.001, 0.05)
    s_out = np.float32(0.07)
    product = np.array([float(s_in) * float(w) for w in s_w])  # exact double products
    x = relay.var("x", shape=(2, 2, 4), dtype="int32")
    body = relay.qnn.requantize(x, relay.const(product, "float64"), i32(0), f32(s_out),
                                i32([1, -1, 0, 5]), axis=-1)
    out = run([x], body, data)
    zps = [1, -1, 0, 5]
    for idx in np.ndindex(*data.shape):
        c = idx[2]
        m, s = py_quantize_multiplier(float(s_in) * float(s_w[c]) / float(s_out))
        assert out[idx] == clamp(py_mbqm(int(data[idx]), m, s) + zps[c], "int8")


# -- qnn.conv2d / qnn.dense ------------------------------------------------------------------------
CONV_CASES = [
    # data layout, kernel layout, data shape (N, C, H, W), O, kernel, strides, padding,
    # dilation, groups, per-channel
    ("NCHW", "OIHW", (1, 3, 5, 5), 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, False),
    ("NHWC", "HWIO", (2, 2, 6, 5), 3, (3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 1, True),
    ("NHWC", "OHWI", (1, 4, 5, 5), 4, (2, 2), (1, 2), (1, 1, 1, 1), (2, 1), 2, True),
    ("NCHW", "HWOI", (1, 3, 4, 4), 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3, True),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv2d_matches_python_loops(case):
    dl, kl, (n, c, h, w), o, (kh, kw), strides, padding, dilation, groups, per_ch = case
    rng = np.random.default_rng(len(dl) + o)
    dshape = tuple({"N": n, "C": c, "H": h, "W": w}[d] for d in dl)
    wshape = tuple({"O": o, "I": c // groups, "H": kh, "W": kw}[d] for d in kl)
    data, weight = rand_int(rng, dshape), rand_int(rng, wshape)
    in_zp = int(rng.integers(-20, 20))
    w_zp = rng.integers(-5, 5, size=o).astype(np.int32) if per_ch else np.int32(0)
    w_scale = rand_scale(rng, o) if per_ch else rand_scale(rng)
    x = relay.var("x", shape=dshape, dtype="int8")
    k = relay.var("k", shape=wshape, dtype="int8")
    call = relay.qnn.conv2d(x, k, i32(in_zp), i32(w_zp), f32(0.05), f32(w_scale),
                            strides=strides, padding=padding, dilation=dilation, groups=groups,
                            data_layout=dl, kernel_layout=kl)
    out = run([x, k], call, data, weight)
    expected = naive_conv2d(data, weight, strides, padding, dilation, groups, dl, kl,
                            in_zp=in_zp, w_zp=w_zp)  # NCHW
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.transpose(expected, ["NCHW".index(d) for d in dl]))


@pytest.mark.parametrize(("data_layout", "out_layout"),
                         [("NCHW8c", ""), ("NCHW", "NCHW4c"), ("NCHW4c", "NHWC")])
def test_conv2d_blocked_layouts(data_layout, out_layout):
    rng = np.random.default_rng(3)
    data, weight = rand_int(rng, (1, 8, 5, 5)), rand_int(rng, (8, 4, 3, 3))
    w_zp = rng.integers(-5, 5, size=8).astype(np.int32)
    x = relay.var("x", shape=in_layout(data, data_layout).shape, dtype="int8")
    k = relay.var("k", shape=weight.shape, dtype="int8")
    call = relay.qnn.conv2d(x, k, i32(3), i32(w_zp), f32(0.05), f32(rand_scale(rng, 8)),
                            padding=1, groups=2, data_layout=data_layout, out_layout=out_layout)
    out = run([x, k], call, in_layout(data, data_layout), weight)
    expected = naive_conv2d(data, weight, padding=1, groups=2, in_zp=3, w_zp=w_zp)  # NCHW
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, in_layout(expected, out_layout or data_layout))


def test_conv2d_padding_acts_as_zero_point():
    # With data equal to the zero point everywhere, every tap, padded or not, adds 0.
    x = relay.var("x", shape=(1, 1, 3, 3), dtype="int8")
    w = relay.const(np.full((1, 1, 3, 3), 5, dtype=np.int8))
    out = run([x], relay.qnn.conv2d(x, w, i32(-7), i32(1), f32(0.1), f32(0.1), padding=2),
              np.full((1, 1, 3, 3), -7, dtype=np.int8))
    assert out.shape == (1, 1, 5, 5) and not out.any()


@pytest.mark.parametrize("per_channel", [False, True])
def test_dense_matches_python_loops(per_channel):
    rng = np.random.default_rng(7)
    data, weight = rand_int(rng, (3, 7)), rand_int(rng, (4, 7))
    w_zp = rng.integers(-3, 3, size=4).astype(np.int32) if per_channel else np.int32(2)
    x = relay.var("x", shape=(3, 7), dtype="int8")
    k = relay.var("k", shape=(4, 7), dtype="int8")
    out = run([x, k], relay.qnn.dense(x, k, i32(-9), i32(w_zp), f32(0.1), f32(0.2)),
              data, weight)
    wz = np.broadcast_to(w_zp, (4,))
    exp = [[sum((int(data[i, j]) + 9) * (int(weight[u, j]) - int(wz[u])) for j in range(7))
            for u in range(4)] for i in range(3)]
    assert out.dtype == np.int32 and out.tolist() == exp


# -- qnn.add / qnn.mul -----------------------------------------------------------------------------
def py_binary(op, a, b, s1, z1, s2, z2, so, zo, dtype):
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.zeros(shape, dtype=np.int64)
    if op == "add":
        ls, (m1, e1), (m2, e2), (mo, eo) = py_add_params(s1, s2, so, dtype)
    else:
        m, e = py_quantize_multiplier(s1 * s2 / so)
    for idx in np.ndindex(*shape):
        x = int(a[bcast_index(idx, a.shape)]) - z1
        y = int(b[bcast_index(idx, b.shape)]) - z2
        if op == "add":
            raw = py_mbqm(x * 2**ls, m1, e1) + py_mbqm(y * 2**ls, m2, e2)
            out[idx] = clamp(py_mbqm(raw, mo, eo) + zo, dtype)
        else:
            out[idx] = clamp(py_mbqm(wrap32(x * y), m, e) + zo, dtype)
    return out


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_binary_ops_match_python_loops(op, dtype):
    rng = np.random.default_rng(11 + len(dtype))
    for trial in range(4):
        a = rand_int(rng, (2, 3, 4), dtype)
        b = rand_int(rng, (3, 1), dtype)
        if dtype == "int16":
            a, b = a // 64, b // 64
        s1, s2, so = (float(s) for s in rand_scale(rng, 3, 0.005, 0.1))
        if op == "mul":
            so = so * 0.05 if trial % 2 else so * 20
        lo, hi = RANGES[dtype]
        z1, z2, zo = (0, 0, 0) if dtype == "int16" else (int(v) for v in
                                                         rng.integers(lo // 2, hi // 2, 3))
        av = relay.var("a", shape=a.shape, dtype=dtype)
        bv = relay.var("b", shape=b.shape, dtype=dtype)
        call = getattr(relay.qnn, op)(av, bv, f32(s1), i32(z1), f32(s2), i32(z2), f32(so),
                                      i32(zo))
        out = run([av, bv], call, a, b)
        exp = py_binary(op, a, b, s1, z1, s2, z2, so, zo, dtype)
        assert out.dtype == dtype and out.shape == exp.shape
        assert out.tolist() == exp.tolist()


def test_mul_product_wraps_like_int32():
    # int16 with zero points: (32767 + 32768)^2 = 2^32 - 2^17 + 1 wraps in int32 C arithmetic.
    a = np.array([32767, -32768, 100], dtype=np.int16)
    av = relay.var("a", shape=(3,), dtype="int16")
    call = relay.qnn.mul(av, av, f32(0.01), i32(-32768), f32(0.01), i32(-32768), f32(0.5),
                         i32(0))
    out = run([av], call, a)
    exp = py_binary("mul", a, a, float(np.float32(0.01)), -32768, float(np.float32(0.01)),
                    -32768, 0.5, 0, "int16")
    assert out.tolist() == exp.tolist()
    assert out[0] < 0  # the wrapped product is negative


def test_binary_ops_saturate():
    a = np.array([127, -128, 100], dtype=np.int8)
    av, bv = relay.var("a", shape=(3,), dtype="int8"), relay.var("b", shape=(3,), dtype="int8")
    add = relay.qnn.add(av, bv, f32(0.1), i32(0), f32(0.1), i32(0), f32(0.1), i32(0))
    assert run([av, bv], add, a, a).tolist() == [127, -128, 127]
    mul = relay.qnn.mul(av, bv, f32(0.1), i32(0), f32(0.1), i32(0), f32(0.1), i32(0))
    assert run([av, bv], mul, a, a).tolist() == [127, 127, 127]


# -- qnn.softmax -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("scale", "beta"), [(0.1, 1.0), (0.5, 1.0), (0.0123, 1.0),
                                             (1 / 16, 0.7), (4.0, 1.0)])
def test_softmax_matches_python_loops(scale, beta):
    rng = np.random.default_rng(int(scale * 1000))
    data = rand_int(rng, (3, 2, 7))
    data[0, 0, :] = 5  # equal values
    data[1, 1, :] = [127, -128, 127, 0, -1, 126, -128]
    x = relay.var("x", shape=data.shape, dtype="int8")
    out = run([x], relay.qnn.softmax(x, f32(scale), i32(-3), f32(1 / 256), i32(-128),
                                     beta=beta), data)
    s = float(np.float32(scale))
    assert out.dtype == np.int8
    for idx in np.ndindex(*data.shape[:-1]):
        row = [int(v) for v in data[idx]]
        assert out[idx].tolist() == py_softmax_row(row, s, beta)
        # Sanity: close to the float softmax.
        z = np.exp(beta * s * (np.array(row) - max(row)))
        approx = np.minimum(256 * z / z.sum(), 255)
        assert np.all(np.abs(out[idx].astype(int) + 128 - approx) <= 1.01)


# -- type and value errors -------------------------------------------------------------------------
def _type_error(build):
    with pytest.raises(IRTypeError) as info:
        build().checked_type  # noqa: B018
    return info.value


def test_per_channel_scale_of_wrong_length():
    x = relay.var("x", shape=(2, 3), dtype="int32")
    err = _type_error(lambda: relay.qnn.requantize(x, f32([0.1, 0.2]), i32(0), f32(0.1),
                                                   i32(0), axis=1))
    assert (err.op, err.argument) == ("qnn.requantize", "input_scale")
    assert "qnn.requantize" in str(err) and "input_scale" in str(err) and "length 3" in str(err)


def test_conv2d_rejects_float_data_and_bad_params():
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="int8")
    xf = relay.var("x", shape=(1, 3, 5, 5))
    err = _type_error(lambda: relay.qnn.conv2d(xf, w, i32(0), i32(0), f32(0.1), f32(0.1)))
    assert (err.op, err.argument) == ("qnn.conv2d", "data")
    assert "qnn.conv2d" in str(err) and "float32" in str(err)
    x = relay.var("x", shape=(1, 3, 5, 5), dtype="int8")
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32(0), i32(0), f32(0.1),
                                               f32([0.1, 0.2, 0.3])))
    assert (err.op, err.argument) == ("qnn.conv2d", "kernel_scale")
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32([0, 1]), i32(0), f32(0.1), f32(0.1)))
    assert err.argument == "input_zero_point"
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32(0), i32(0), i32(1), f32(0.1)))
    assert err.argument == "input_scale"
    err = _type_error(lambda: relay.qnn.conv2d(x, w, i32(0), i32(0), f32(0.1), f32(0.1),
                                               out_dtype="float32"))
    assert err.argument == "out_dtype"


def test_other_type_errors():
    a8 = relay.var("a", shape=(2, 3), dtype="int8")
    b16 = relay.var("b", shape=(3,), dtype="int16")
    q = (f32(0.1), i32(0), f32(0.1), i32(0), f32(0.1), i32(0))
    assert _type_error(lambda: relay.qnn.add(a8, b16, *q)).argument == "rhs"
    err = _type_error(lambda: relay.qnn.mul(a8, a8, f32([0.1, 0.2]), *q[1:]))
    assert (err.op, err.argument) == ("qnn.mul", "lhs_scale")
    xi = relay.var("x", shape=(2, 3), dtype="int8")
    assert _type_error(lambda: relay.qnn.quantize(xi, f32(0.1), i32(0))).argument == "data"
    k = relay.var("k", shape=(4, 3), dtype="int8")
    err = _type_error(lambda: relay.qnn.dense(xi, k, i32(0), i32([1, 2]), f32(0.1), f32(0.1)))
    assert (err.op, err.argument) == ("qnn.dense", "kernel_zero_point")
    err = _type_error(lambda: relay.qnn.softmax(xi, f32(0.1), i32(0), f32(1 / 256),
                                                i32(-128), axis=0))
    assert (err.op, err.argument) == ("qnn.softmax", "axis")
    xf = relay.var("x", shape=(2, 3))
    err = _type_error(lambda: relay.qnn.dequantize(xf, f32(0.1), i32(0)))
    assert (err.op, err.argument) == ("qnn.dequantize", "data")


@pytest.mark.parametrize(("scale", "zp", "argument"), [(1 / 128, -128, "output_scale"),
                                                       (1 / 256, 0, "output_zero_point")])
def test_softmax_rejects_wrong_output_quantisation_at_type_inference(scale, zp, argument):
    x = relay.var("x", shape=(2, 3), dtype="int8")
    func = relay.Function([x], relay.qnn.softmax(x, f32(0.1), i32(0), f32(scale), i32(zp)))
    with pytest.raises(IRTypeError) as info:
        _ = func.checked_type
    assert (info.value.op, info.value.argument) == ("qnn.softmax", argument)
    assert "qnn.softmax" in str(info.value) and argument in str(info.value)


def test_softmax_kernel_checks_quantisation_given_at_run_time():
    x = relay.var("x", shape=(2, 3), dtype="int8")
    out_scale = relay.var("out_scale", shape=(), dtype="float32")
    func = relay.Function([x, out_scale],
                          relay.qnn.softmax(x, f32(0.1), i32(0), out_scale, i32(-128)))
    assert func.checked_type.ret_type == relay.TensorType((2, 3), "int8")
    with pytest.raises(IRTypeError, match="output_scale"):
        relay.evaluate(func, np.zeros((2, 3), dtype=np.int8), np.float32(1 / 128))


def test_non_positive_constant_scale_is_a_type_error():
    x = relay.var("x", shape=(2,))
    func = relay.Function([x], relay.qnn.quantize(x, f32(0.0), i32(0)))
    with pytest.raises(IRTypeError, match="output_scale"):
        _ = func.checked_type


def test_non_positive_scale_given_at_run_time_is_rejected():
    x = relay.var("x", shape=(2,))
    scale = relay.var("scale", shape=(), dtype="float32")
    func = relay.Function([x, scale], relay.qnn.quantize(x, scale, i32(0)))
    with pytest.raises(IRTypeError, match="output_scale"):
        relay.evaluate(func, np.zeros(2, dtype=np.float32), np.float32(-1.0))


def test_fusion_patterns():
    from passhost.relay.op import OpPattern, get_op

    expected = {
        "qnn.quantize": OpPattern.ELEMWISE, "qnn.dequantize": OpPattern.ELEMWISE,
        "qnn.requantize": OpPattern.ELEMWISE, "qnn.add": OpPattern.BROADCAST,
        "qnn.mul": OpPattern.BROADCAST, "qnn.conv2d": OpPattern.OUT_ELEMWISE_FUSABLE,
        "qnn.dense": OpPattern.OUT_ELEMWISE_FUSABLE, "qnn.softmax": OpPattern.OPAQUE,
    }
    assert {name: get_op(name).pattern for name in expected} == expected
    assert all(getattr(relay.qnn, name[4:]) is get_op(name) for name in expected)
