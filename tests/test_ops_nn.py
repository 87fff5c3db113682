"""Tests of the nn.* operators: type relations, reference kernels (against naive loops written
from the definitions), errors and builders."""

from __future__ import annotations

import math

import numpy as np
import pytest

from naive import naive_conv2d
from passhost import relay
from passhost.errors import AttrError, IRTypeError
from passhost.ir.types import TensorType, TupleType
from passhost.relay.op import activation, nn, norm, pool
from passhost.relay.op.registry import ArgTypes, LayoutInfo, OpPattern, get_op
from passhost.relay.testing import examples_nn
from passhost.workloads import random_inputs

RNG = np.random.default_rng(1234)


# -- helpers -----------------------------------------------------------------------------------
def _vars(*specs):
    """Variables ``v0, v1, ...`` of the given (shape, dtype) specs."""
    return [relay.var(f"v{i}", shape=shape, dtype=dtype) for i, (shape, dtype) in
            enumerate(specs)]


def _type_of(op, specs, **attrs):
    return relay.infer_type(op(*_vars(*specs), **attrs))


def _run(op, arrays, **attrs):
    """Run ``op`` on ``arrays`` through the interpreter (which checks dtype and shape)."""
    params = _vars(*[(a.shape, a.dtype.name) for a in arrays])
    func = relay.Function(params, op(*params, **attrs))
    relay.infer_type(func)
    return relay.Interpreter().run(func, arrays)


def _rand(shape, dtype="float32", lo=-3, hi=3):
    if dtype.startswith("float"):
        return RNG.uniform(lo, hi, size=shape).astype(dtype)
    return RNG.integers(lo, hi + 1, size=shape).astype(dtype)


def _type_error(op, specs, **attrs) -> IRTypeError:
    with pytest.raises(IRTypeError) as info:
        _type_of(op, specs, **attrs)
    return info.value


def _nhwc(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def _nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


# -- conv2d --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("data", "weight", "attrs", "expected"), [
    ((1, 3, 8, 8), (4, 3, 3, 3), {"padding": (1, 1)}, (1, 4, 8, 8)),
    ((1, 3, 8, 8), (4, 3, 3, 3), {"strides": 2, "padding": (1, 0, 2, 1)}, (1, 4, 5, 4)),
    ((2, 9, 7, 3), (3, 2, 3, 5),
     {"strides": (2, 1), "padding": (1, 0, 2, 1), "data_layout": "NHWC", "kernel_layout": "HWIO"},
     (2, 5, 7, 5)),
    ((1, 4, 9, 9), (6, 2, 2, 3), {"groups": 2, "dilation": (2, 1), "padding": 1}, (1, 6, 9, 9)),
    ((1, 6, 6, 4), (3, 3, 8, 1),
     {"groups": 4, "padding": 1, "data_layout": "NHWC", "kernel_layout": "HWOI",
      "out_layout": "NCHW"}, (1, 8, 6, 6)),
    ((1, 4, 6, 6), (2, 3, 1, 4), {"kernel_layout": "OHWI"}, (1, 2, 4, 6)),
    ((1, 4, 6, 6), (2, 4, 3, 3), {"out_layout": "NHWC", "dilation": 2}, (1, 2, 2, 2)),
    ((1, 4, 6, 6), (4, 1, 3, 3), {"groups": 4, "channels": 4, "kernel_size": 3}, (1, 4, 4, 4)),
])
def test_conv2d_type(data, weight, attrs, expected):
    ty = _type_of(nn.conv2d, [(data, "float32"), (weight, "float32")], **attrs)
    assert ty == TensorType(expected, "float32")


def test_conv2d_out_dtype():
    ty = _type_of(nn.conv2d, [((1, 2, 4, 4), "int8"), ((3, 2, 1, 1), "int8")], out_dtype="int32")
    assert ty == TensorType((1, 3, 4, 4), "int32")
    ty = _type_of(nn.conv2d, [((1, 2, 4, 4), "float16"), ((3, 2, 1, 1), "float16")])
    assert ty.dtype == "float16"


CONV_CASES = [
    dict(x=(1, 3, 5, 5), w=(4, 3, 3, 3)),
    dict(x=(2, 2, 6, 5), w=(3, 2, 2, 3), strides=(2, 1), padding=(1, 0, 2, 1)),
    dict(x=(1, 4, 7, 6), w=(6, 2, 2, 2), groups=2, dilation=(2, 3), padding=(1, 2)),
    dict(x=(1, 3, 5, 5), w=(6, 1, 3, 3), groups=3, padding=1),  # depthwise, multiplier 2
    dict(x=(1, 4, 6, 6), w=(4, 1, 3, 3), groups=4, strides=2, padding=1, dilation=2),
    dict(x=(1, 2, 3, 4), w=(2, 2, 3, 3), padding=(2, 0, 0, 3), strides=(1, 2)),
]


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize(("data_layout", "kernel_layout"),
                         [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NHWC", "HWOI"),
                          ("NCHW", "OHWI")])
def test_conv2d_kernel(case, data_layout, kernel_layout):
    case = dict(case)
    x, w = _rand(case.pop("x")), _rand(case.pop("w"))
    expected = naive_conv2d(x, w, **case)
    xd = _nhwc(x) if data_layout == "NHWC" else x
    perm = tuple("OIHW".index(d) for d in kernel_layout)
    wk = np.ascontiguousarray(w.transpose(perm))
    out = _run(nn.conv2d, [xd, wk], data_layout=data_layout, kernel_layout=kernel_layout, **case)
    if data_layout == "NHWC":
        out = _nchw(out)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_conv2d_out_layout_and_int8():
    x = _rand((1, 3, 6, 5), "int8", -128, 127)
    w = _rand((4, 3, 3, 2), "int8", -128, 127)
    out = _run(nn.conv2d, [x, w], padding=(1, 1), strides=2, out_dtype="int32",
               out_layout="NHWC")
    expected = naive_conv2d(x, w, strides=(2, 2), padding=(1, 1))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(_nchw(out), expected)


def test_conv2d_int32_wraps_like_int32_accumulation():
    x = np.full((1, 1, 1, 2), 2**30, dtype="int32")
    w = np.full((1, 1, 1, 2), 4, dtype="int32")
    out = _run(nn.conv2d, [x, w])
    total = 2 * (2**30) * 4
    wrapped = (total + 2**31) % 2**32 - 2**31
    assert out.dtype == np.int32 and out.item() == wrapped


def test_conv2d_float16_and_float_out_dtype():
    x, w = _rand((1, 2, 4, 4), "float16"), _rand((3, 2, 3, 3), "float16")
    out = _run(nn.conv2d, [x, w], padding=1)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, naive_conv2d(x, w, padding=1), rtol=1e-2, atol=2e-2)
    xi, wi = _rand((1, 2, 4, 4), "int8"), _rand((3, 2, 3, 3), "int8")
    out = _run(nn.conv2d, [xi, wi], out_dtype="float32")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, naive_conv2d(xi, wi))


def test_conv2d_helpers_for_qnn():
    attrs = nn.Conv2DAttrs(padding=1, groups=2)
    x = _rand((1, 4, 5, 5), "int8", -128, 127).astype(np.float64)
    w = _rand((6, 2, 3, 3), "int8", -128, 127).astype(np.float64)
    out = nn.conv2d_compute(attrs, x, w)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, naive_conv2d(x, w, padding=1, groups=2))
    args = ArgTypes(nn.conv2d, [TensorType((1, 4, 5, 5), "int8"), TensorType((6, 2, 3, 3),
                                                                            "int8")])
    assert nn.conv2d_out_type(args, attrs) == (1, 6, 5, 5)
    shifted = ArgTypes(nn.conv2d, [TensorType((1,), "int8"), TensorType((1, 4, 5, 5), "int8"),
                                   TensorType((6, 2, 3, 3), "int8")])
    assert nn.conv2d_out_type(shifted, attrs, data_index=1, weight_index=2) == (1, 6, 5, 5)


def test_conv2d_does_not_modify_inputs():
    x, w = _rand((1, 2, 4, 4)), _rand((2, 2, 3, 3))
    x0, w0 = x.copy(), w.copy()
    x.flags.writeable = False
    w.flags.writeable = False
    nn.conv2d.evaluate(nn.Conv2DAttrs(padding=1), x, w)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(w, w0)


@pytest.mark.parametrize(("data", "weight", "attrs", "argument", "needle"), [
    ((1, 4, 5, 5), (2, 3, 3, 3), {}, "weight", "input channels"),
    ((1, 4, 5, 5), (2, 3, 3, 3), {"groups": 2}, "weight", "input channels"),
    ((1, 4, 5, 5), (3, 2, 3, 3), {"groups": 2}, "weight", "output channels"),
    ((1, 5, 5, 5), (2, 1, 3, 3), {"groups": 2}, "data", "groups=2"),
    ((1, 4, 5, 5), (2, 4, 3, 3), {"channels": 3}, "channels", "output channels"),
    ((1, 4, 5, 5), (2, 4, 3, 3), {"kernel_size": (3, 1)}, "kernel_size", "kernel size"),
    ((4, 5, 5), (2, 4, 3, 3), {}, "data", "4-D"),
    ((1, 4, 5, 5), (2, 4, 3), {}, "weight", "4-D"),
    ((1, 4, 2, 2), (2, 4, 3, 3), {}, "data", "dilated kernel"),
    ((1, 4, 5, 5), (2, 4, 3, 3), {"dilation": 3}, "data", "dilated kernel"),
    ((1, 5, 5, 4), (3, 3, 3, 2), {"data_layout": "NHWC", "kernel_layout": "HWIO"},
     "weight", "input channels"),
    ((1, 2, 5, 5, 8), (8, 32, 3, 3), {"data_layout": "NCHW16c"}, "data",
     "NCHW16c data whose last axis is 16, found Tensor[(1, 2, 5, 5, 8), float32]"),
    ((1, 32, 5, 5), (8, 32, 3, 3), {"data_layout": "NCHW16c"}, "data", "5-D"),
    ((1, 2, 5, 5, 8), (8, 8, 3, 3), {"data_layout": "NCHW8c"}, "weight", "I=16 input channels"),
    ((1, 3, 5, 5), (8, 3, 3, 3), {"out_layout": "NCHW16c"}, "out_layout",
     "blocks of 16 channels divide the 8 output channels, found NCHW16c"),
    ((1, 2, 5, 5, 16), (8, 32, 3, 3), {"data_layout": "NCHW16c"}, "data_layout",
     "the 8 output channels"),
])
def test_conv2d_type_errors(data, weight, attrs, argument, needle):
    err = _type_error(nn.conv2d, [(data, "float32"), (weight, "float32")], **attrs)
    assert err.op == "nn.conv2d"
    assert err.argument == argument
    assert "nn.conv2d" in str(err) and argument in str(err) and needle in str(err)


def test_conv2d_dtype_mismatch():
    err = _type_error(nn.conv2d, [((1, 2, 4, 4), "float32"), ((2, 2, 1, 1), "float16")])
    assert err.op == "nn.conv2d" and err.argument == "weight"
    assert "float16" in str(err) and "float32" in str(err)


@pytest.mark.parametrize(("attrs", "name"), [
    ({"strides": "x"}, "strides"),
    ({"strides": (0, 1)}, "strides"),
    ({"strides": (1, 1, 1)}, "strides"),
    ({"padding": (1, 2, 3)}, "padding"),
    ({"padding": -1}, "padding"),
    ({"padding": (1, "a")}, "padding"),
    ({"dilation": 0}, "dilation"),
    ({"groups": 0}, "groups"),
    ({"groups": 1.5}, "groups"),
    ({"data_layout": "NCWH"}, "data_layout"),
    ({"kernel_layout": "IOHW"}, "kernel_layout"),
    ({"out_layout": "CHWN"}, "out_layout"),
    ({"data_layout": "NCHW0c"}, "data_layout"),
    ({"data_layout": "NCHW16"}, "data_layout"),
    ({"data_layout": "NCHWc16"}, "data_layout"),
    ({"data_layout": "NCHW016c"}, "data_layout"),
    ({"data_layout": "NHWC16c"}, "data_layout"),
    ({"out_layout": "NCHW16c8c"}, "out_layout"),
    ({"out_layout": "NCHW16C"}, "out_layout"),
    ({"out_dtype": "int4"}, "out_dtype"),
    ({"kernel_size": (3, 0)}, "kernel_size"),
])
def test_conv2d_attr_errors(attrs, name):
    x, w = _vars(((1, 2, 4, 4), "float32"), ((2, 2, 1, 1), "float32"))
    with pytest.raises(AttrError) as info:
        nn.conv2d(x, w, **attrs)
    assert "nn.conv2d" in str(info.value) and name in str(info.value)


@pytest.mark.parametrize(("padding", "stored"), [
    (2, (2, 2, 2, 2)), ((3,), (3, 3, 3, 3)), ((1, 2), (1, 2, 1, 2)), ([1, 2, 3, 4], (1, 2, 3, 4)),
])
def test_conv2d_padding_normalised(padding, stored):
    assert nn.Conv2DAttrs(padding=padding).padding == stored
    assert nn.MaxPool2DAttrs(padding=padding).padding == stored


def test_builder_keywords_and_positional_attrs():
    x, w = _vars(((1, 3, 8, 8), "float32"), ((64, 3, 3, 3), "float32"))
    call = relay.nn.conv2d(data=x, weight=w, channels=64, kernel_size=(3, 3), padding=(1, 1))
    assert relay.infer_type(call) == TensorType((1, 64, 8, 8), "float32")
    call = relay.nn.conv2d(x, w, (2, 2), 1)
    assert call.attrs.strides == (2, 2) and call.attrs.padding == (1, 1, 1, 1)
    assert relay.infer_type(relay.nn.relu(data=x)) == x.checked_type
    gamma, beta, mean, var = _vars(*[((3,), "float32")] * 4)
    out = relay.nn.batch_norm(x, gamma, beta, mean, var, epsilon=2e-5)[0]
    assert relay.infer_type(out) == x.checked_type
    call = relay.nn.batch_norm(data=x, gamma=gamma, beta=beta, moving_mean=mean,
                               moving_var=var)
    assert isinstance(relay.infer_type(call), TupleType)
    assert relay.infer_type(relay.nn.pad(data=x, pad_width=((0, 0),) * 4)) == x.checked_type


# -- dense / batch_matmul -----------------------------------------------------------------------
def naive_matmul(a, b):
    m, k = a.shape
    k2, n = b.shape
    assert k == k2
    return np.array([[sum(a[i, t].item() * b[t, j].item() for t in range(k)) for j in range(n)]
                     for i in range(m)])


def test_dense_type_and_kernel():
    ty = _type_of(nn.dense, [((2, 3, 5), "float32"), ((4, 5), "float32")], units=4)
    assert ty == TensorType((2, 3, 4), "float32")
    x, w = _rand((3, 5)), _rand((4, 5))
    np.testing.assert_allclose(_run(nn.dense, [x, w]), naive_matmul(x, w.T), rtol=1e-5,
                               atol=1e-5)
    x, w = _rand((2, 3, 5), "int8", -128, 127), _rand((4, 5), "int8", -128, 127)
    out = _run(nn.dense, [x, w], out_dtype="int32")
    assert out.dtype == np.int32
    for b in range(2):
        np.testing.assert_array_equal(out[b], naive_matmul(x[b], w.T))


def test_dense_errors():
    err = _type_error(nn.dense, [((2, 5), "float32"), ((4, 6), "float32")])
    assert (err.op, err.argument) == ("nn.dense", "weight")
    assert "5" in err.expected and "(4, 6)" in str(err)
    err = _type_error(nn.dense, [((2, 5), "float32"), ((4, 5), "float32")], units=3)
    assert (err.op, err.argument) == ("nn.dense", "units")
    err = _type_error(nn.dense, [((2, 5), "float32"), ((5,), "float32")])
    assert err.argument == "weight" and "2-D" in str(err)
    with pytest.raises(AttrError, match="units"):
        nn.dense(*_vars(((2, 5), "float32"), ((4, 5), "float32")), units=-1)


@pytest.mark.parametrize(("xs", "ys", "ta", "tb", "expected"), [
    ((2, 3, 4), (2, 5, 4), False, True, (2, 3, 5)),
    ((1, 3, 4), (2, 5, 4), False, True, (2, 3, 5)),
    ((2, 4, 3), (1, 4, 5), True, False, (2, 3, 5)),
    ((3, 3, 4), (3, 4, 5), False, False, (3, 3, 5)),
    ((2, 4, 3), (2, 5, 4), True, True, (2, 3, 5)),
])
def test_batch_matmul(xs, ys, ta, tb, expected):
    ty = _type_of(nn.batch_matmul, [(xs, "float32"), (ys, "float32")], transpose_a=ta,
                  transpose_b=tb)
    assert ty == TensorType(expected, "float32")
    x, y = _rand(xs), _rand(ys)
    out = _run(nn.batch_matmul, [x, y], transpose_a=ta, transpose_b=tb)
    for b in range(expected[0]):
        a = x[b if xs[0] > 1 else 0]
        c = y[b if ys[0] > 1 else 0]
        ref = naive_matmul(a.T if ta else a, c.T if tb else c)
        np.testing.assert_allclose(out[b], ref, rtol=1e-5, atol=1e-5)


def test_batch_matmul_errors():
    err = _type_error(nn.batch_matmul, [((2, 3, 4), "float32"), ((2, 5, 3), "float32")])
    assert (err.op, err.argument) == ("nn.batch_matmul", "y")
    err = _type_error(nn.batch_matmul, [((2, 3, 4), "float32"), ((3, 5, 4), "float32")])
    assert err.argument == "y" and "batch" in str(err)
    err = _type_error(nn.batch_matmul, [((3, 4), "float32"), ((3, 5, 4), "float32")])
    assert err.argument == "x" and "3-D" in str(err)
    ty = _type_of(nn.batch_matmul, [((1, 3, 4), "int8"), ((1, 5, 4), "int8")],
                  out_dtype="int32")
    assert ty.dtype == "int32"


# -- bias_add / batch_norm / layer_norm ---------------------------------------------------------
@pytest.mark.parametrize(("shape", "axis"), [((2, 3, 4), 1), ((2, 3, 4), -1), ((5,), 0),
                                             ((2, 2, 2, 3), 3)])
def test_bias_add(shape, axis):
    x, b = _rand(shape), _rand((shape[axis],))
    out = _run(nn.bias_add, [x, b], axis=axis)
    ax = axis % len(shape)
    for idx in np.ndindex(*shape):
        assert out[idx] == pytest.approx(x[idx] + b[idx[ax]], rel=1e-6)


def test_bias_add_errors():
    err = _type_error(nn.bias_add, [((2, 3, 4), "float32"), ((4,), "float32")])
    assert (err.op, err.argument) == ("nn.bias_add", "bias")
    err = _type_error(nn.bias_add, [((2, 3, 4), "float32"), ((3,), "float32")], axis=3)
    assert (err.op, err.argument) == ("nn.bias_add", "axis")
    err = _type_error(nn.bias_add, [((2, 3, 4), "float32"), ((3,), "float16")])
    assert err.argument == "bias"


@pytest.mark.parametrize(("shape", "axis", "center", "scale"), [
    ((2, 3, 2, 2), 1, True, True), ((2, 2, 2, 3), 3, True, False),
    ((2, 3, 4), -2, False, True), ((4, 3), 1, False, False),
])
def test_batch_norm(shape, axis, center, scale):
    ch = shape[axis]
    x, gamma, beta, mean = _rand(shape), _rand((ch,)), _rand((ch,)), _rand((ch,))
    var = RNG.uniform(0.1, 2, size=(ch,)).astype("float32")
    ty = _type_of(nn.batch_norm, [(shape, "float32")] + [((ch,), "float32")] * 4, axis=axis)
    assert ty == TupleType([TensorType(shape, "float32"), TensorType((ch,), "float32"),
                            TensorType((ch,), "float32")])
    out, m, v = _run(nn.batch_norm, [x, gamma, beta, mean, var], axis=axis, epsilon=1e-3,
                     center=center, scale=scale)
    np.testing.assert_array_equal(m, mean)
    np.testing.assert_array_equal(v, var)
    ax = axis % len(shape)
    for idx in np.ndindex(*shape):
        c = idx[ax]
        ref = (x[idx].item() - mean[c].item()) / math.sqrt(var[c].item() + 1e-3)
        if scale:
            ref *= gamma[c].item()
        if center:
            ref += beta[c].item()
        assert out[idx] == pytest.approx(ref, rel=1e-4, abs=1e-5)


def test_batch_norm_errors():
    specs = [((2, 3, 4), "float32")] + [((3,), "float32")] * 4
    specs[3] = ((4,), "float32")
    err = _type_error(nn.batch_norm, specs)
    assert (err.op, err.argument) == ("nn.batch_norm", "moving_mean")
    err = _type_error(nn.batch_norm, [((2, 3), "int32")] + [((3,), "int32")] * 4)
    assert err.argument == "data"
    with pytest.raises(AttrError, match="epsilon"):
        nn.batch_norm(*_vars(*specs), epsilon="small")


@pytest.mark.parametrize(("shape", "axis", "center", "scale"), [
    ((2, 3, 5), -1, True, True), ((2, 4, 3), 1, False, True), ((3, 4), 0, True, False),
])
def test_layer_norm(shape, axis, center, scale):
    ax = axis % len(shape)
    n = shape[ax]
    x, gamma, beta = _rand(shape), _rand((n,)), _rand((n,))
    out = _run(nn.layer_norm, [x, gamma, beta], axis=axis, epsilon=1e-4, center=center,
               scale=scale)
    for idx in np.ndindex(*shape):
        line = [x[(*idx[:ax], j, *idx[ax + 1:])].item() for j in range(n)]
        mu = sum(line) / n
        var = sum((v - mu) ** 2 for v in line) / n
        ref = (x[idx].item() - mu) / math.sqrt(var + 1e-4)
        if scale:
            ref *= gamma[idx[ax]].item()
        if center:
            ref += beta[idx[ax]].item()
        assert out[idx] == pytest.approx(ref, rel=1e-4, abs=1e-4)


def test_layer_norm_errors():
    err = _type_error(nn.layer_norm, [((2, 3), "float32"), ((2,), "float32"),
                                      ((3,), "float32")])
    assert (err.op, err.argument) == ("nn.layer_norm", "gamma")


# -- softmax / log_softmax / leaky_relu ---------------------------------------------------------
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize(("shape", "axis"), [((2, 5), -1), ((3, 4, 2), 1), ((4,), 0)])
def test_softmax(log, shape, axis):
    op = nn.log_softmax if log else nn.softmax
    x = _rand(shape, lo=-5, hi=5)
    x.flat[0] = 500.0  # large values must not overflow
    out = _run(op, [x], axis=axis)
    ax = axis % len(shape)
    for idx in np.ndindex(*shape):
        line = [x[(*idx[:ax], j, *idx[ax + 1:])].item() for j in range(shape[ax])]
        top = max(line)
        total = sum(math.exp(v - top) for v in line)
        ref = (x[idx].item() - top - math.log(total) if log
               else math.exp(x[idx].item() - top) / total)
        assert out[idx] == pytest.approx(ref, rel=1e-5, abs=1e-6)


def test_softmax_errors():
    err = _type_error(nn.softmax, [((2, 3), "float32")], axis=2)
    assert (err.op, err.argument) == ("nn.softmax", "axis")
    err = _type_error(nn.log_softmax, [((2, 3), "int32")])
    assert (err.op, err.argument) == ("nn.log_softmax", "data")


def test_leaky_relu():
    x = _rand((3, 4))
    out = _run(nn.leaky_relu, [x], alpha=0.2)
    for idx in np.ndindex(*x.shape):
        v = x[idx].item()
        assert out[idx] == pytest.approx(v if v > 0 else 0.2 * v, rel=1e-6)
    with pytest.raises(AttrError, match="alpha"):
        nn.leaky_relu(*_vars(((2,), "float32")), alpha="big")


def test_relu_ints():
    x = _rand((2, 3), "int8")
    np.testing.assert_array_equal(_run(nn.relu, [x]), [[max(v, 0) for v in r] for r in
                                                       x.tolist()])


# -- pad / batch_flatten / dropout --------------------------------------------------------------
def naive_pad(x, pad_width, mode, value=0.0):
    shape = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, pad_width))
    out = np.zeros(shape, dtype=x.dtype)
    for idx in np.ndindex(*shape):
        src, outside = [], False
        for i, (size, (lo, _)) in zip(idx, zip(x.shape, pad_width)):
            j = i - lo
            if not 0 <= j < size:
                outside = True
                if mode == "edge":
                    j = min(max(j, 0), size - 1)
                elif mode == "reflect":
                    j = -j if j < 0 else 2 * (size - 1) - j
                elif mode == "wrap":
                    j %= size
            src.append(j)
        out[idx] = value if outside and mode == "constant" else x[tuple(src)]
    return out


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_pad(mode, dtype):
    x = _rand((3, 4, 2), dtype)
    width = ((1, 2), (0, 3), (1, 1))
    out = _run(nn.pad, [x], pad_width=width, pad_value=7.0, pad_mode=mode)
    np.testing.assert_array_equal(out, naive_pad(x, width, mode, 7.0))
    assert _type_of(nn.pad, [((3, 4, 2), dtype)], pad_width=width) == TensorType((6, 7, 4),
                                                                                  dtype)


def test_pad_errors():
    err = _type_error(nn.pad, [((3, 4), "float32")], pad_width=((1, 1),))
    assert (err.op, err.argument) == ("nn.pad", "pad_width")
    err = _type_error(nn.pad, [((3, 4), "float32")], pad_width=((3, 0), (0, 0)),
                      pad_mode="reflect")
    assert (err.op, err.argument) == ("nn.pad", "pad_width")
    x = _vars(((3, 4), "float32"))[0]
    for attrs, name in [({"pad_width": ((1, -1), (0, 0))}, "pad_width"),
                        ({"pad_width": ((1, 2, 3), (0, 0))}, "pad_width"),
                        ({"pad_width": "x"}, "pad_width"),
                        ({"pad_mode": "symmetric"}, "pad_mode")]:
        with pytest.raises(AttrError) as info:
            nn.pad(x, **attrs)
        assert "nn.pad" in str(info.value) and name in str(info.value)


@pytest.mark.parametrize(("shape", "expected"), [((2, 3, 4), (2, 12)), ((3,), (3, 1)),
                                                 ((2, 0, 3), (2, 0)), ((4, 5), (4, 5))])
def test_batch_flatten(shape, expected):
    assert _type_of(nn.batch_flatten, [(shape, "float32")]) == TensorType(expected, "float32")
    x = _rand(shape)
    out = _run(nn.batch_flatten, [x])
    flat = [np.asarray(x[n]).ravel().tolist() for n in range(shape[0])]
    assert out.tolist() == flat


def test_dropout():
    x = _rand((2, 3))
    np.testing.assert_array_equal(_run(nn.dropout, [x], rate=0.3), x)
    assert _type_of(nn.dropout, [((2, 3), "float32")]) == TensorType((2, 3), "float32")
    with pytest.raises(AttrError, match="rate"):
        nn.dropout(relay.var("x", shape=(2,)), rate=1.5)


# -- declarations and examples ------------------------------------------------------------------
NEW_OPS = {
    "nn.conv2d": OpPattern.OUT_ELEMWISE_FUSABLE, "nn.dense": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.batch_matmul": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.max_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.global_avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.softmax": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.log_softmax": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.bias_add": OpPattern.BROADCAST, "nn.relu": OpPattern.ELEMWISE,
    "nn.leaky_relu": OpPattern.ELEMWISE, "nn.pad": OpPattern.INJECTIVE,
    "nn.batch_flatten": OpPattern.INJECTIVE, "nn.batch_norm": OpPattern.OPAQUE,
    "nn.layer_norm": OpPattern.OPAQUE, "nn.dropout": OpPattern.OPAQUE,
}


def test_patterns_and_layouts():
    for name, pattern in NEW_OPS.items():
        op = get_op(name)
        assert op.pattern == pattern, name
        assert getattr(relay.nn, name[3:]) is op
        assert name[3:] in (nn.__all__ + activation.__all__ + norm.__all__
                            + pool.__all__)  # exported where it is declared
    assert get_op("nn.conv2d").layout == LayoutInfo(
        layout_attrs=("data_layout", "kernel_layout", "out_layout"))
    for name in ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d"):
        assert get_op(name).layout == LayoutInfo(layout_attrs=("layout", "out_layout"))
    for name in ("nn.batch_norm", "nn.bias_add", "nn.layer_norm", "nn.softmax",
                 "nn.log_softmax"):
        assert get_op(name).layout == LayoutInfo(axis_attrs=("axis",))


def test_every_op_has_an_example():
    assert set(NEW_OPS) <= {name for name, _ in examples_nn.EXAMPLES}
    assert sum(name == "nn.conv2d" for name, _ in examples_nn.EXAMPLES) >= 3


@pytest.mark.parametrize(("name", "build"), examples_nn.EXAMPLES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(examples_nn.EXAMPLES)])
def test_examples_run(name, build):
    func = build()
    relay.infer_type(func)
    calls = []
    relay.post_order_visit(func, lambda n: calls.append(n) if isinstance(n, relay.Call) else None)
    assert any(getattr(c.op, "name", None) == name for c in calls)
    for seed in (0, 1):
        out = relay.Interpreter().run(func, random_inputs(func, seed))
        assert np.all(np.isfinite(np.asarray(out, dtype=np.float64)))
