"""Elementwise, reduction and shape operators: type inference, reference kernels, errors.

Expected values come from plain Python (loops, list slicing, the math module) on tiny inputs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from op_helpers import FAST, floats, ints, run, tvar, type_error, type_of
from passhost import relay
from passhost.errors import AttrError
from passhost.ir.types import TensorType
from passhost.relay.op import OpPattern, get_op
from passhost.relay.testing.examples_tensor import EXAMPLES
from passhost.tir.numpy_math import erf_float64
from passhost.workloads import random_inputs


# -- helpers ------------------------------------------------------------------------------------
def bcast_index(index: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index into an operand of ``shape`` that an output index broadcasts from."""
    offset = len(index) - len(shape)
    return tuple(0 if d == 1 else index[offset + k] for k, d in enumerate(shape))


def loop_broadcast(fn, *arrays: np.ndarray) -> tuple[tuple[int, ...], dict]:
    """Apply ``fn`` to Python scalars over the broadcast output shape, computed by hand."""
    ndim = max(a.ndim for a in arrays)
    shape = []
    for k in range(1, ndim + 1):
        dims = {a.shape[-k] for a in arrays if k <= a.ndim} - {1}
        assert len(dims) <= 1
        shape.append(dims.pop() if dims else 1)
    shape = tuple(reversed(shape))
    out = {}
    for index in itertools.product(*(range(d) for d in shape)):
        out[index] = fn(*(a[bcast_index(index, a.shape)].item() for a in arrays))
    return shape, out


def check_elementwise(result: np.ndarray, shape, expected: dict, rel: float = 0.0) -> None:
    """Compare an array with a dict of expected Python values."""
    assert result.shape == shape
    for index, want in expected.items():
        got = result[index].item()
        if isinstance(want, float) and (math.isnan(want) or math.isinf(want)):
            assert (math.isnan(got) and math.isnan(want)) or got == want, (index, got, want)
        else:
            assert got == pytest.approx(want, rel=rel, abs=rel), (index, got, want)


# -- registry facts and examples ----------------------------------------------------------------
ELEMWISE = ["sqrt", "rsqrt", "exp", "erf", "negative", "sigmoid", "tanh", "abs", "log",
            "clip", "cast"]
BROADCAST = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal",
             "not_equal", "less", "less_equal", "greater", "greater_equal", "where",
             "expand_dims"]
INJECTIVE = ["reshape", "transpose", "squeeze", "concatenate", "split", "strided_slice",
             "take", "layout_transform"]
REDUCE = ["sum", "mean", "max", "min"]


def test_patterns_and_exports():
    for names, pattern in [(ELEMWISE, OpPattern.ELEMWISE), (BROADCAST, OpPattern.BROADCAST),
                           (INJECTIVE, OpPattern.INJECTIVE), (REDUCE, OpPattern.COMM_REDUCE)]:
        for name in names:
            assert get_op(name).pattern == pattern, name
            assert getattr(relay, name) is get_op(name)
    assert get_op("matmul").pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    assert get_op("layout_transform").layout.layout_attrs == ("src_layout", "dst_layout")
    assert get_op("concatenate").tuple_inputs == frozenset({"data"})
    for op in [*ELEMWISE, *BROADCAST, *INJECTIVE, *REDUCE, "matmul"]:
        assert get_op(op).description


@pytest.mark.parametrize("name, builder", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_examples_run(name, builder):
    func = builder()
    calls = [n for n in relay.post_order(func) if isinstance(n, relay.Call)]
    assert name in {c.op.name for c in calls}
    for seed in range(2):
        out = relay.evaluate(func, *random_inputs(func, seed))
        for arr in out if isinstance(out, tuple) else (out,):
            if arr.dtype.kind == "f":
                assert np.all(np.isfinite(arr))


# -- binary broadcasting ------------------------------------------------------------------------
def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


BINARY_FLOAT = [
    (relay.add, lambda a, b: a + b),
    (relay.subtract, lambda a, b: a - b),
    (relay.multiply, lambda a, b: a * b),
    (relay.divide, lambda a, b: a / b),
    (relay.maximum, max),
    (relay.minimum, min),
]


@pytest.mark.parametrize("op, ref", BINARY_FLOAT, ids=lambda v: getattr(v, "name", ""))
def test_binary_float_kernels(op, ref):
    a, b = floats((2, 1, 3)), floats((4, 1), 0.5, 2.0)
    out = run(op, a, b)
    assert out.dtype == np.float32
    shape, expected = loop_broadcast(ref, a, b)
    check_elementwise(out, shape, expected, rel=1e-6)


def test_power_float():
    a, b = floats((3, 2), 0.1, 3.0), floats((2,), -2.0, 2.0)
    shape, expected = loop_broadcast(lambda x, y: x ** y, a, b)
    check_elementwise(run(relay.power, a, b), shape, expected, rel=1e-5)
    nan = run(relay.power, np.array([-2.0], "float32"), np.array([0.5], "float32"))
    assert math.isnan(nan[0])


def test_integer_divide_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 6, -1, 0, 5, -5], dtype="int32")
    b = np.array([2, 2, -2, -2, 3, 4, 3, 0, 0], dtype="int32")
    out = run(relay.divide, a, b)
    assert out.dtype == np.int32
    assert out.tolist() == [_trunc_div(x, y) for x, y in zip(a.tolist(), b.tolist())]
    assert out.tolist()[:4] == [3, -3, -3, 3]
    a8, b8 = ints((4, 5), -100, 100, "int8"), ints((5,), -9, 9, "int8")
    shape, expected = loop_broadcast(_trunc_div, a8, b8)
    check_elementwise(run(relay.divide, a8, b8), shape, expected)
    u = run(relay.divide, np.array([7, 9], "uint8"), np.array([2, 0], "uint8"))
    assert u.dtype == np.uint8 and u.tolist() == [3, 0]


def test_integer_power():
    a = np.array([2, -3, 1, -1, -1, 0, 5, 2], dtype="int32")
    b = np.array([3, 3, -4, -3, -2, -1, 0, -1], dtype="int32")
    out = run(relay.power, a, b)
    assert out.dtype == np.int32
    assert out.tolist() == [8, -27, 1, -1, 1, 0, 1, 0]


def test_integer_arithmetic_keeps_dtype_and_wraps():
    a = np.array([100, -100], dtype="int8")
    b = np.array([100, 100], dtype="int8")
    assert run(relay.add, a, b).tolist() == [(200 + 128) % 256 - 128, 0]
    assert run(relay.multiply, a, b).dtype == np.int8
    assert run(relay.subtract, a, b).tolist() == [0, (-200 + 128) % 256 - 128]


COMPARE = [
    (relay.equal, lambda a, b: a == b), (relay.not_equal, lambda a, b: a != b),
    (relay.less, lambda a, b: a < b), (relay.less_equal, lambda a, b: a <= b),
    (relay.greater, lambda a, b: a > b), (relay.greater_equal, lambda a, b: a >= b),
]


@pytest.mark.parametrize("op, ref", COMPARE, ids=lambda v: getattr(v, "name", ""))
def test_comparisons(op, ref):
    a, b = ints((3, 1), -2, 2), ints((1, 4), -2, 2)
    out = run(op, a, b)
    assert out.dtype == np.bool_
    shape, expected = loop_broadcast(ref, a, b)
    check_elementwise(out, shape, expected)
    assert type_of(op, ((2, 3), "float16"), ((3,), "float16")) == TensorType((2, 3), "bool")


@FAST
@given(st.lists(st.integers(1, 3), max_size=4), st.lists(st.integers(1, 3), max_size=4),
       st.sampled_from(["subtract", "maximum", "less", "power"]))
def test_broadcast_shapes_match_numpy(sa, sb, name):
    sa, sb = tuple(sa), tuple(sb)
    try:
        want = np.broadcast_shapes(sa, sb)
    except ValueError:
        err = type_error(get_op(name), (sa, "float32"), (sb, "float32"))
        assert err.op == name and err.argument == "rhs"
        return
    ty = type_of(get_op(name), (sa, "float32"), (sb, "float32"))
    assert ty.shape == want


def test_binary_type_errors():
    err = type_error(relay.subtract, ((2, 3), "float32"), ((4,), "float32"))
    assert (err.op, err.argument) == ("subtract", "rhs")
    assert "Tensor[(4), float32]" in str(err)
    err = type_error(relay.multiply, ((2,), "float32"), ((2,), "int32"))
    assert (err.op, err.argument) == ("multiply", "rhs") and "dtype float32" in str(err)
    err = type_error(relay.divide, ((2,), "bool"), ((2,), "bool"))
    assert (err.op, err.argument) == ("divide", "lhs")


# -- unary --------------------------------------------------------------------------------------
UNARY = [
    (relay.sqrt, math.sqrt, (0.0, 4.0)),
    (relay.rsqrt, lambda v: 1.0 / math.sqrt(v), (0.1, 4.0)),
    (relay.exp, math.exp, (-3.0, 3.0)),
    (relay.erf, math.erf, (-3.0, 3.0)),
    (relay.negative, lambda v: -v, (-2.0, 2.0)),
    (relay.sigmoid, lambda v: 1.0 / (1.0 + math.exp(-v)), (-6.0, 6.0)),
    (relay.tanh, math.tanh, (-3.0, 3.0)),
    (relay.abs, abs, (-2.0, 2.0)),
    (relay.log, math.log, (0.1, 5.0)),
]


@pytest.mark.parametrize("op, ref, interval", UNARY, ids=lambda v: getattr(v, "name", ""))
@pytest.mark.parametrize("dtype, rel", [("float32", 2e-6), ("float64", 1e-12)])
def test_unary_kernels(op, ref, interval, dtype, rel):
    x = floats((3, 4), *interval, dtype=dtype)
    out = run(op, x)
    assert out.dtype == np.dtype(dtype) and out.shape == x.shape
    for index in np.ndindex(*x.shape):
        assert out[index].item() == pytest.approx(ref(x[index].item()), rel=rel, abs=rel)


@pytest.mark.parametrize("op", [u[0] for u in UNARY], ids=lambda v: v.name)
def test_unary_float16_keeps_dtype(op):
    x = floats((5,), 0.5, 2.0, dtype="float16")
    out = run(op, x)
    assert out.dtype == np.float16
    ref = dict((u[0].name, u[1]) for u in UNARY)[op.name]
    for got, v in zip(out.tolist(), x.tolist()):
        assert got == pytest.approx(ref(v), rel=2e-3, abs=1e-3)


def test_erf_accuracy_against_math_erf():
    xs = np.concatenate([np.linspace(-7.0, 7.0, 2801), [0.0, -0.0, 1e-30, -1e-8, 2.4999999,
                                                        2.5, 2.5000001, 40.0]])
    got = erf_float64(xs)
    for g, v in zip(got.tolist(), xs.tolist()):
        want = math.erf(v)
        assert abs(g - want) <= 1e-14 * abs(want) + 1e-300, (v, g, want)
    special = erf_float64(np.array([np.inf, -np.inf, np.nan]))
    assert special[0] == 1.0 and special[1] == -1.0 and math.isnan(special[2])
    x32 = floats((200,), -4.0, 4.0)
    out = run(relay.erf, x32)
    for g, v in zip(out.tolist(), x32.tolist()):
        assert g == pytest.approx(math.erf(v), rel=1e-7, abs=1e-30)


def test_sigmoid_is_stable_for_large_inputs():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype="float32")
    with np.errstate(all="raise"):
        out = run(relay.sigmoid, x)
    assert out.tolist()[2] == 0.5 and out.tolist()[-1] == 1.0 and out.tolist()[0] == 0.0
    assert np.all(np.isfinite(out))


def test_unary_integer_ops_and_errors():
    x = np.array([-3, 0, 4, -128], dtype="int8")
    assert run(relay.negative, x).tolist() == [3, 0, -4, -128]
    assert run(relay.abs, x).tolist() == [3, 0, 4, -128]
    for op in (relay.sqrt, relay.rsqrt, relay.exp, relay.erf, relay.sigmoid, relay.tanh,
               relay.log):
        err = type_error(op, ((2,), "int32"))
        assert (err.op, err.argument) == (op.name, "data")
        assert "float32" in err.expected
    err = type_error(relay.negative, ((2,), "bool"))
    assert (err.op, err.argument) == ("negative", "data")


def test_unary_ieee_specials():
    x = np.array([-1.0, 0.0], dtype="float32")
    log = run(relay.log, x)
    assert math.isnan(log[0]) and log[1] == -math.inf
    assert run(relay.rsqrt, x)[1] == math.inf


# -- clip and cast ------------------------------------------------------------------------------
def test_clip():
    x = floats((3, 4), -3.0, 3.0)
    out = run(relay.clip, x, a_min=-0.5, a_max=1.25)
    for index in np.ndindex(*x.shape):
        assert out[index].item() == min(max(x[index].item(), -0.5), 1.25)
    assert type_of(relay.clip, ((2, 5), "float16"), a_min=0, a_max=6) == TensorType((2, 5),
                                                                                   "float16")
    xi = np.array([-5, -2, -1, 0, 2, 3, 7], dtype="int32")
    out = run(lambda v: relay.clip(v, -1.5, 2.5), xi)
    assert out.dtype == np.int32
    assert out.tolist() == [min(max(v, -1), 2) for v in xi.tolist()]
    u = run(lambda v: relay.clip(v, -10.0, 300.0), np.array([0, 255], "uint8"))
    assert u.tolist() == [0, 255]
    inf = run(lambda v: relay.clip(v, -math.inf, 0.0), np.array([-3, 4], "int64"))
    assert inf.tolist() == [-3, 0]


def test_clip_attr_errors():
    x = tvar("x", (2,))
    with pytest.raises(AttrError, match=r"clip: attribute 'a_max'"):
        relay.clip(x, 1.0, 0.0)
    with pytest.raises(AttrError, match="a_min"):
        relay.clip(x, "low", 1.0)
    with pytest.raises(AttrError, match="clip"):
        relay.clip(x)
    err = type_error(relay.clip, ((2,), "bool"), a_min=0.0, a_max=1.0)
    assert (err.op, err.argument) == ("clip", "data")


def test_cast():
    x = np.array([-2.7, -0.5, 0.0, 0.5, 1.99, 3.0], dtype="float32")
    out = run(relay.cast, x, dtype="int32")
    assert out.dtype == np.int32
    assert out.tolist() == [int(v) for v in x.tolist()]
    assert type_of(relay.cast, ((2, 3), "int8"), dtype="float16") == TensorType((2, 3),
                                                                                "float16")
    b = run(lambda v: relay.cast(v, "bool"), np.array([0.0, 2.0, -0.1], "float32"))
    assert b.tolist() == [False, True, True]
    w = run(lambda v: relay.cast(v, "int8"), np.array([127, 128, 300], "int32"))
    assert w.tolist() == [127, -128, 300 - 256]


def test_cast_attr_errors():
    x = tvar("x", (2,))
    with pytest.raises(AttrError, match=r"cast: attribute 'dtype'.*'float7'"):
        relay.cast(x, "float7")
    with pytest.raises(AttrError, match="cast: attribute 'dtype'"):
        relay.cast(x)


# -- where --------------------------------------------------------------------------------------
def test_where():
    c = np.array([[True], [False]])
    x, y = floats((3,)), floats((2, 3))
    out = run(relay.where, c, x, y)
    shape, expected = loop_broadcast(lambda cv, xv, yv: xv if cv else yv, c, x, y)
    check_elementwise(out, shape, expected)
    ty = type_of(relay.where, ((4, 1, 1), "bool"), ((3, 1), "int8"), ((2,), "int8"))
    assert ty == TensorType((4, 3, 2), "int8")


def test_where_type_errors():
    err = type_error(relay.where, ((2,), "float32"), ((2,), "float32"), ((2,), "float32"))
    assert (err.op, err.argument) == ("where", "condition")
    assert "bool" in str(err) and "float32" in str(err)
    err = type_error(relay.where, ((2,), "bool"), ((2,), "float32"), ((2,), "int32"))
    assert (err.op, err.argument) == ("where", "y")
    err = type_error(relay.where, ((3,), "bool"), ((2, 2), "float32"), ((2,), "float32"))
    assert (err.op, err.argument) == ("where", "condition")


# -- matmul -------------------------------------------------------------------------------------
def _loop_matmul(a: np.ndarray, b: np.ndarray) -> tuple[tuple[int, ...], dict]:
    m, k = a.shape[-2:]
    n = b.shape[-1]
    nb = max(a.ndim, b.ndim) - 2
    ba = (1,) * (nb - (a.ndim - 2)) + a.shape[:-2]
    bb = (1,) * (nb - (b.ndim - 2)) + b.shape[:-2]
    batch = tuple(max(x, y) for x, y in zip(ba, bb))
    aa, b2 = a.reshape((*ba, m, k)), b.reshape((*bb, k, n))
    out = {}
    for bi in itertools.product(*(range(d) for d in batch)):
        ia = tuple(0 if d == 1 else i for i, d in zip(bi, ba))
        ib = tuple(0 if d == 1 else i for i, d in zip(bi, bb))
        for i in range(m):
            for j in range(n):
                out[(*bi, i, j)] = sum(aa[(*ia, i, t)].item() * b2[(*ib, t, j)].item()
                                       for t in range(k))
    return (*batch, m, n), out


@pytest.mark.parametrize("sa, sb", [((2, 3), (3, 4)), ((2, 1, 3, 2), (4, 2, 5)),
                                    ((3, 2, 4), (1, 4, 2)), ((1, 2), (2, 1))])
def test_matmul_kernel(sa, sb):
    a, b = floats(sa), floats(sb)
    out = run(relay.matmul, a, b)
    shape, expected = _loop_matmul(a, b)
    check_elementwise(out, shape, expected, rel=1e-5)


def test_matmul_out_dtype():
    a, b = ints((2, 3), -100, 100, "int8"), ints((3, 2), -100, 100, "int8")
    out = run(relay.matmul, a, b, out_dtype="int32")
    assert out.dtype == np.int32
    shape, expected = _loop_matmul(a, b)
    check_elementwise(out, shape, expected)
    assert type_of(relay.matmul, ((5, 2, 3), "float16"), ((3, 7), "float16")) == TensorType(
        (5, 2, 7), "float16")


def test_matmul_type_errors():
    err = type_error(relay.matmul, ((3,), "float32"), ((3, 2), "float32"))
    assert (err.op, err.argument) == ("matmul", "a") and "rank >= 2" in str(err)
    err = type_error(relay.matmul, ((2, 3), "float32"), ((3,), "float32"))
    assert (err.op, err.argument) == ("matmul", "b")
    err = type_error(relay.matmul, ((2, 3), "float32"), ((4, 2), "float32"))
    assert (err.op, err.argument) == ("matmul", "b") and "3 rows" in str(err)
    err = type_error(relay.matmul, ((2, 2, 3), "float32"), ((3, 3, 2), "float32"))
    assert (err.op, err.argument) == ("matmul", "b") and "batch" in str(err)
    err = type_error(relay.matmul, ((2, 3), "float32"), ((3, 2), "int32"))
    assert (err.op, err.argument) == ("matmul", "b")
    with pytest.raises(AttrError, match="matmul: attribute 'out_dtype'"):
        relay.matmul(tvar("a", (2, 2)), tvar("b", (2, 2)), out_dtype="int3")


# -- reductions ---------------------------------------------------------------------------------
def _loop_reduce(x: np.ndarray, axes: set[int], keepdims: bool, fn) -> tuple:
    kept = [i for i in range(x.ndim) if i not in axes]
    out = {}
    for kidx in itertools.product(*(range(x.shape[i]) for i in kept)):
        values = []
        for ridx in itertools.product(*(range(x.shape[i]) for i in sorted(axes))):
            full = [0] * x.ndim
            for i, v in zip(kept, kidx):
                full[i] = v
            for i, v in zip(sorted(axes), ridx):
                full[i] = v
            values.append(x[tuple(full)].item())
        if keepdims:
            key = tuple(kidx[kept.index(i)] if i in kept else 0 for i in range(x.ndim))
        else:
            key = kidx
        out[key] = fn(values)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else \
        tuple(x.shape[i] for i in kept)
    return shape, out


def _mean_float(values):
    return math.fsum(values) / len(values)


def _mean_int(values):
    return _trunc_div(sum(values), len(values))


REDUCTIONS = [(relay.sum, math.fsum), (relay.mean, _mean_float), (relay.max, max),
              (relay.min, min)]
AXIS_CASES = [(None, False, False, {0, 1, 2}), (1, False, False, {1}),
              ((0, 2), True, False, {0, 2}), ((-1,), False, True, {0, 1}),
              ((), True, False, {0, 1, 2}), ((0, 1, 2), False, True, set()),
              (-3, True, True, {1, 2})]


@pytest.mark.parametrize("op, ref", REDUCTIONS, ids=lambda v: getattr(v, "name", ""))
@pytest.mark.parametrize("axis, keepdims, exclude, axes", AXIS_CASES)
def test_reductions(op, ref, axis, keepdims, exclude, axes):
    x = floats((2, 3, 4), dtype="float64")
    out = run(op, x, axis=axis, keepdims=keepdims, exclude=exclude)
    shape, expected = _loop_reduce(x, axes, keepdims, ref)
    check_elementwise(out, shape, expected, rel=1e-12)


def test_integer_reductions():
    x = ints((3, 4), -9, 9, "int8")
    shape, expected = _loop_reduce(x, {1}, False, _mean_int)
    out = run(relay.mean, x, axis=1)
    assert out.dtype == np.int8
    check_elementwise(out, shape, expected)
    m = run(relay.mean, np.array([[-3, -4], [3, 4]], "int32"), axis=1)
    assert m.tolist() == [-3, 3]
    big = np.full((4,), 100, dtype="int8")
    assert run(relay.mean, big).tolist() == 100
    assert run(relay.sum, big).tolist() == (400 + 128) % 256 - 128
    shape, expected = _loop_reduce(x, {0}, True, max)
    check_elementwise(run(relay.max, x, axis=0, keepdims=True), shape, expected)
    b = np.array([[True, False], [True, True]])
    assert run(relay.min, b, axis=1).tolist() == [False, True]
    assert run(relay.max, b, axis=0).tolist() == [True, True]


def test_float16_sum_accumulates_in_float32():
    x = np.full((4096,), 1.0, dtype="float16")
    out = run(relay.sum, x)
    assert out.dtype == np.float16 and out.item() == 4096.0
    assert run(relay.mean, np.array([0.1] * 3000, "float16")).item() == pytest.approx(
        0.1, rel=1e-3)


def test_reduction_types():
    assert type_of(relay.sum, ((2, 3, 4), "float32"), axis=(0, 2)) == TensorType((3,))
    assert type_of(relay.mean, ((2, 3), "int32"), axis=1, keepdims=True) == TensorType(
        (2, 1), "int32")
    assert type_of(relay.max, ((2, 3, 4), "float16"), axis=1, exclude=True) == TensorType(
        (3,), "float16")
    assert type_of(relay.min, ((5,), "float32")) == TensorType(())
    assert type_of(relay.sum, ((0, 3), "float32"), axis=0) == TensorType((3,))


def test_reduction_errors():
    err = type_error(relay.sum, ((2, 3), "float32"), axis=2)
    assert (err.op, err.argument) == ("sum", "axis") and "[-2, 2)" in str(err)
    err = type_error(relay.mean, ((2, 3), "float32"), axis=(1, -1))
    assert (err.op, err.argument) == ("mean", "axis")
    err = type_error(relay.max, ((0, 3), "float32"), axis=0)
    assert (err.op, err.argument) == ("max", "data")
    err = type_error(relay.sum, ((2,), "bool"))
    assert (err.op, err.argument) == ("sum", "data")
    with pytest.raises(AttrError, match="sum: attribute 'axis'"):
        relay.sum(tvar("x", (2,)), axis="0")
    with pytest.raises(AttrError, match="min: attribute 'keepdims'"):
        relay.min(tvar("x", (2,)), keepdims=3)


# -- scalars (0-d tensors) ----------------------------------------------------------------------
def test_scalar_inputs_give_arrays():
    a, b = np.array(1.5, "float32"), np.array(-0.5, "float32")
    for op, ref in [*BINARY_FLOAT, *COMPARE, (relay.power, lambda u, v: u ** v)]:
        out = run(op, a, b)
        assert isinstance(out, np.ndarray) and out.shape == ()
        assert out.item() == pytest.approx(ref(1.5, -0.5), rel=1e-6)
    i, j = np.array(-7, "int32"), np.array(2, "int32")
    assert run(relay.divide, i, j).item() == -3
    assert run(relay.power, j, np.array(3, "int32")).item() == 8
    for op, ref, _ in UNARY:
        assert run(op, np.array(0.75, "float32")).item() == pytest.approx(ref(0.75), rel=1e-6)
    assert run(relay.mean, np.array(-5, "int32")).item() == -5
    assert run(relay.where, np.array(False), a, b).item() == -0.5
    assert run(relay.clip, a, a_min=0.0, a_max=1.0).item() == 1.0


# -- kernels leave their inputs alone -----------------------------------------------------------
def test_kernels_accept_read_only_inputs():
    x = floats((2, 3))
    x.flags.writeable = False
    before = x.copy()
    for op, attrs in [(relay.reshape, {"newshape": (3, 2)}), (relay.transpose, {}),
                      (relay.sum, {"axis": 0}), (relay.clip, {"a_min": 0.0, "a_max": 1.0}),
                      (relay.sigmoid, {}), (relay.erf, {}), (relay.cast, {"dtype": "int8"}),
                      (relay.strided_slice, {"begin": (1,), "end": (2,)})]:
        func = relay.Function([v := tvar("x", (2, 3))], op(v, **attrs))
        relay.evaluate(func, x)
    assert x.tolist() == before.tolist()
