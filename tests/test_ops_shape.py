"""Shape operators (reshape, transpose, squeeze, expand_dims, concatenate, split,
strided_slice, take, layout_transform): type inference, reference kernels, errors.

Expected values come from plain Python (list slicing, loops) on tiny inputs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from op_helpers import FAST, ints, run, tvar, type_error, type_of
from passhost import relay
from passhost.errors import AttrError
from passhost.ir.types import TensorType, TupleType


# -- reshape ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, newshape, want", [
    ((2, 3, 4), (6, 4), (6, 4)),
    ((2, 3, 4), (0, -1), (2, 12)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (0, 0, 2, -1), (2, 3, 2, 2)),
    ((1, 6), (3, -1, 1), (3, 2, 1)),
    ((5,), 5, (5,)),
    ((), (1, 1), (1, 1)),
    ((0, 3), (-1, 0), (0, 3)),
])
def test_reshape(shape, newshape, want):
    assert type_of(relay.reshape, (shape, "int32"), newshape=newshape) == TensorType(
        want, "int32")
    x = ints(shape)
    out = run(relay.reshape, x, newshape=newshape)
    assert out.shape == want
    assert out.ravel().tolist() == x.ravel().tolist()
    assert not np.shares_memory(out, x)


def test_reshape_errors():
    err = type_error(relay.reshape, ((2, 3), "float32"), newshape=(4, 2))
    assert (err.op, err.argument) == ("reshape", "newshape")
    assert "6 elements" in str(err)
    err = type_error(relay.reshape, ((2, 3), "float32"), newshape=(4, -1))
    assert (err.op, err.argument) == ("reshape", "newshape")
    err = type_error(relay.reshape, ((6,), "float32"), newshape=(0, 0))
    assert (err.op, err.argument) == ("reshape", "newshape") and "rank 1" in str(err)
    err = type_error(relay.reshape, ((0, 3), "float32"), newshape=(0, -1))
    assert err.argument == "newshape"  # -1 is ambiguous when the other dimensions hold 0
    with pytest.raises(AttrError, match="reshape: attribute 'newshape'"):
        relay.reshape(tvar("x", (4,)), (-1, -1))
    with pytest.raises(AttrError, match="reshape: attribute 'newshape'"):
        relay.reshape(tvar("x", (4,)), (-2, 4))
    with pytest.raises(AttrError, match="reshape: attribute 'newshape'"):
        relay.reshape(tvar("x", (4,)))


@FAST
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_reshape_round_trip(dims, rnd):
    shape = tuple(dims)
    n = math.prod(shape)
    # A random factorisation of n with one dimension left to -1.
    factors = []
    rest = n
    for _ in range(rnd.randint(0, 3)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = rnd.choice(divisors)
        factors.append(d)
        rest //= d
    newshape = (*factors, -1)
    x = tvar("x", shape)
    y = relay.reshape(relay.reshape(x, newshape), shape)
    assert y.checked_type == TensorType(shape)
    assert relay.reshape(x, newshape).checked_type.shape == (*factors, rest)
    arr = np.arange(n, dtype="float32").reshape(shape)
    out = relay.evaluate(relay.Function([x], y), arr)
    assert out.tolist() == arr.tolist()


# -- transpose, squeeze, expand_dims ------------------------------------------------------------
@pytest.mark.parametrize("axes", [None, (0, 1, 2), (2, 0, 1), (1, 2, 0), (-1, 0, -2)])
def test_transpose(axes):
    x = ints((2, 3, 4))
    out = run(relay.transpose, x, axes=axes)
    perm = [2, 1, 0] if axes is None else [a % 3 for a in axes]
    assert out.shape == tuple(x.shape[p] for p in perm)
    for index in itertools.product(*(range(d) for d in out.shape)):
        src = [0, 0, 0]
        for k, p in enumerate(perm):
            src[p] = index[k]
        assert out[index] == x[tuple(src)]
    assert not np.shares_memory(out, x)


@FAST
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4).flatmap(
    lambda dims: st.tuples(st.just(tuple(dims)), st.permutations(range(len(dims))))))
def test_transpose_inverse_round_trip(case):
    shape, perm = case
    inverse = [perm.index(i) for i in range(len(perm))]
    x = tvar("x", shape)
    once = relay.transpose(x, perm)
    assert once.checked_type.shape == tuple(shape[p] for p in perm)
    y = relay.transpose(once, inverse)
    arr = np.arange(math.prod(shape), dtype="float32").reshape(shape)
    assert relay.evaluate(relay.Function([x], y), arr).tolist() == arr.tolist()


def test_transpose_errors():
    err = type_error(relay.transpose, ((2, 3, 4), "float32"), axes=(0, 1))
    assert (err.op, err.argument) == ("transpose", "axes")
    err = type_error(relay.transpose, ((2, 3), "float32"), axes=(0, 0))
    assert (err.op, err.argument) == ("transpose", "axes") and "distinct" in str(err)
    err = type_error(relay.transpose, ((2, 3), "float32"), axes=(0, 2))
    assert err.argument == "axes"
    with pytest.raises(AttrError, match="transpose: attribute 'axes'"):
        relay.transpose(tvar("x", (2,)), "01")


@pytest.mark.parametrize("shape, axis, want", [
    ((1, 3, 1, 2), None, (3, 2)), ((1, 3, 1, 2), (0,), (3, 1, 2)),
    ((1, 3, 1, 2), -2, (1, 3, 2)), ((1, 3, 1, 2), (2, 0), (3, 2)), ((3,), None, (3,)),
    ((1, 1), None, ()),
])
def test_squeeze(shape, axis, want):
    x = ints(shape)
    out = run(relay.squeeze, x, axis=axis)
    assert out.shape == want and out.ravel().tolist() == x.ravel().tolist()
    assert not np.shares_memory(out, x)


def test_squeeze_errors():
    err = type_error(relay.squeeze, ((1, 3), "float32"), axis=1)
    assert (err.op, err.argument) == ("squeeze", "axis") and "length 1" in str(err)
    err = type_error(relay.squeeze, ((1, 3), "float32"), axis=2)
    assert (err.op, err.argument) == ("squeeze", "axis")


@pytest.mark.parametrize("shape, axis, num, want", [
    ((3, 2), 0, 1, (1, 3, 2)), ((3, 2), 2, 1, (3, 2, 1)), ((3, 2), -1, 1, (3, 2, 1)),
    ((3, 2), -3, 2, (1, 1, 3, 2)), ((3, 2), 1, 3, (3, 1, 1, 1, 2)), ((3, 2), 1, 0, (3, 2)),
    ((), 0, 1, (1,)),
])
def test_expand_dims(shape, axis, num, want):
    x = ints(shape)
    out = run(relay.expand_dims, x, axis=axis, num_newaxis=num)
    assert out.shape == want and out.ravel().tolist() == x.ravel().tolist()
    assert not np.shares_memory(out, x)


def test_expand_dims_errors():
    err = type_error(relay.expand_dims, ((3, 2), "float32"), axis=3)
    assert (err.op, err.argument) == ("expand_dims", "axis") and "[-3, 2]" in str(err)
    err = type_error(relay.expand_dims, ((3, 2), "float32"), axis=-4)
    assert err.argument == "axis"
    with pytest.raises(AttrError, match="expand_dims: attribute 'num_newaxis'"):
        relay.expand_dims(tvar("x", (2,)), 0, -1)
    with pytest.raises(AttrError, match="expand_dims: attribute 'axis'"):
        relay.expand_dims(tvar("x", (2,)))


# -- concatenate and split ----------------------------------------------------------------------
def test_concatenate():
    a, b, c = ints((2, 3)), ints((2, 1)), ints((2, 2))
    out = run(relay.concatenate, [a, b, c], axis=1)
    want = [ra + rb + rc for ra, rb, rc in zip(a.tolist(), b.tolist(), c.tolist())]
    assert out.tolist() == want
    out0 = run(lambda t: relay.concatenate(t, 0), [a, ints((1, 3))])
    assert out0.shape == (3, 3)
    ty = type_of(relay.concatenate, [((2, 3), "int8"), ((2, 5), "int8")], axis=-1)
    assert ty == TensorType((2, 8), "int8")
    assert type_of(relay.concatenate, [((4,), "float32")]) == TensorType((4,))


def test_concatenate_errors():
    err = type_error(relay.concatenate, [((2, 3), "float32"), ((3, 2), "float32")], axis=1)
    assert (err.op, err.argument) == ("concatenate", "data")
    assert "field 1" in str(err) and "Tensor[(3, 2), float32]" in str(err)
    err = type_error(relay.concatenate, [((2, 3), "float32"), ((2, 3), "int32")])
    assert (err.op, err.argument) == ("concatenate", "data") and "dtype" in str(err)
    err = type_error(relay.concatenate, [((2, 3), "float32"), ((2, 3, 1), "float32")])
    assert err.argument == "data" and "rank" in str(err)
    err = type_error(relay.concatenate, [((2,), "float32")], axis=1)
    assert (err.op, err.argument) == ("concatenate", "axis")
    err = type_error(relay.concatenate, [])
    assert err.argument == "data"
    err = type_error(relay.concatenate, ((2,), "float32"))
    assert err.argument == "data" and "tuple" in str(err)


@pytest.mark.parametrize("ios, axis, bounds", [
    (3, 0, [(0, 2), (2, 4), (4, 6)]), ((1, 4), 0, [(0, 1), (1, 4), (4, 6)]),
    ((2,), -2, [(0, 2), (2, 6)]), (1, 0, [(0, 6)]), ((), 0, [(0, 6)]),
    (2, 1, None),
])
def test_split(ios, axis, bounds):
    x = ints((6, 2))
    rows = x.tolist()
    out = run(relay.split, x, indices_or_sections=ios, axis=axis)
    assert isinstance(out, tuple)
    if bounds is None:  # axis 1, two sections of one column
        assert [p.tolist() for p in out] == [[[r[0]] for r in rows], [[r[1]] for r in rows]]
    else:
        assert [p.tolist() for p in out] == [rows[lo:hi] for lo, hi in bounds]
    for piece in out:
        assert not np.shares_memory(piece, x)
    ty = type_of(relay.split, ((6, 2), "int32"), indices_or_sections=ios, axis=axis)
    assert ty == TupleType([TensorType(p.shape, "int32") for p in out])


@FAST
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.integers(1, n - 1), unique=True).map(sorted) if n > 1
    else st.just([]))))
def test_split_indices_property(case):
    n, indices = case
    x = tvar("x", (n, 2))
    ty = relay.split(x, tuple(indices)).checked_type
    cuts = [0, *indices, n]
    assert [f.shape for f in ty.fields] == [(b - a, 2) for a, b in itertools.pairwise(cuts)]
    arr = np.arange(2 * n, dtype="float32").reshape(n, 2)
    out = relay.evaluate(relay.Function([x], relay.split(x, tuple(indices))), arr)
    assert [row for p in out for row in p.tolist()] == arr.tolist()


def test_split_errors():
    err = type_error(relay.split, ((5, 2), "float32"), indices_or_sections=2)
    assert (err.op, err.argument) == ("split", "indices_or_sections") and "5" in str(err)
    err = type_error(relay.split, ((5, 2), "float32"), indices_or_sections=(2, 5))
    assert (err.op, err.argument) == ("split", "indices_or_sections")
    err = type_error(relay.split, ((5, 2), "float32"), indices_or_sections=2, axis=2)
    assert (err.op, err.argument) == ("split", "axis")
    err = type_error(relay.split, ((), "float32"), indices_or_sections=1)
    assert (err.op, err.argument) == ("split", "data")
    x = tvar("x", (4,))
    for bad in [0, -2, (2, 1), (0, 2), (2, 2), "3", 2.0]:
        with pytest.raises(AttrError, match="split: attribute 'indices_or_sections'"):
            relay.split(x, bad)
    with pytest.raises(AttrError, match="split: attribute 'indices_or_sections'"):
        relay.split(x)


# -- strided_slice ------------------------------------------------------------------------------
def _slice2d(rows: list, s0: slice, s1: slice) -> list:
    return [row[s1] for row in rows[s0]]


@pytest.mark.parametrize("begin, end, strides, axes, s0, s1", [
    ((1, 0), (3, 6), None, None, slice(1, 3), slice(0, 6)),
    ((4, 1), (-6, 100), (-2, 2), None, slice(4, -6, -2), slice(1, 100, 2)),
    ((-1,), (-100,), (-1,), None, slice(-1, -100, -1), slice(None)),
    ((2,), (4,), None, None, slice(2, 4), slice(None)),
    ((1,), (5,), (3,), (1,), slice(None), slice(1, 5, 3)),
    ((0, -2), (10, -1), None, (1, 0), slice(-2, -1), slice(0, 10)),
    ((3, 3), (1,), (-1, 1), None, slice(3, 1, -1), slice(3, None)),
    ((7, -9), (9, 9), None, None, slice(7, 9), slice(-9, 9)),
    ((0, 5), (5, 0), (1, -1), None, slice(0, 5), slice(5, 0, -1)),
])
def test_strided_slice(begin, end, strides, axes, s0, s1):
    x = ints((5, 6))
    out = run(relay.strided_slice, x, begin=begin, end=end, strides=strides, axes=axes)
    assert out.tolist() == _slice2d(x.tolist(), s0, s1)
    if out.size:
        assert not np.shares_memory(out, x)


def test_strided_slice_size_mode():
    x = ints((5, 6))
    out = run(relay.strided_slice, x, begin=(1, -4), end=(2, -1), slice_mode="size")
    assert out.tolist() == [row[2:6] for row in x.tolist()[1:3]]
    out = run(relay.strided_slice, x, begin=(3,), end=(10,), strides=(5,), slice_mode="size")
    assert out.tolist() == x.tolist()[3:5]


@FAST
@given(st.integers(0, 6), st.integers(-9, 9), st.integers(-9, 9),
       st.integers(-3, 3).filter(lambda s: s != 0))
def test_strided_slice_matches_python_slicing(n, b, e, s):
    values = list(range(n))
    x = tvar("x", (n,), "int32")
    call = relay.strided_slice(x, (b,), (e,), (s,))
    assert call.checked_type.shape == (len(values[b:e:s]),)
    out = relay.evaluate(relay.Function([x], call), np.array(values, "int32"))
    assert out.tolist() == values[b:e:s]


def test_strided_slice_errors():
    err = type_error(relay.strided_slice, ((3,), "float32"), begin=(0, 0), end=(1, 1))
    assert (err.op, err.argument) == ("strided_slice", "begin")
    err = type_error(relay.strided_slice, ((3, 3), "float32"), begin=(0,), end=(1, 1))
    assert (err.op, err.argument) == ("strided_slice", "end")
    err = type_error(relay.strided_slice, ((3, 3), "float32"), begin=(0,), end=(1,),
                     strides=(1, 1))
    assert err.argument == "strides"
    err = type_error(relay.strided_slice, ((3, 3), "float32"), begin=(0,), end=(1,),
                     axes=(0, 1))
    assert err.argument == "begin"
    err = type_error(relay.strided_slice, ((3, 3), "float32"), begin=(0,), end=(1,), axes=(2,))
    assert err.argument == "axes"
    x = tvar("x", (3,))
    with pytest.raises(AttrError, match="strided_slice: attribute 'strides'"):
        relay.strided_slice(x, (0,), (2,), (0,))
    with pytest.raises(AttrError, match="strided_slice: attribute 'end'"):
        relay.strided_slice(x, (0,))
    with pytest.raises(AttrError, match="strided_slice: attribute 'slice_mode'"):
        relay.strided_slice(x, (0,), (1,), slice_mode="stride")


# -- take ---------------------------------------------------------------------------------------
def _clip_index(i: int, n: int) -> int:
    return min(max(i, 0), n - 1)


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_take(mode, dtype):
    x = ints((4, 3))
    rows = x.tolist()
    fix = (lambda i: _clip_index(i, 4)) if mode == "clip" else (lambda i: i % 4)
    idx = np.array([[0, 3], [-1, 7]], dtype=dtype) if mode != "fast" else \
        np.array([[0, 3], [1, 2]], dtype=dtype)
    out = run(lambda d, i: relay.take(d, i, axis=0, mode=mode), x, idx)
    assert out.tolist() == [[rows[fix(i)] for i in r] for r in idx.tolist()]
    out1 = run(lambda d, i: relay.take(d, i, axis=-1, mode=mode), x, idx)
    fix3 = (lambda i: _clip_index(i, 3)) if mode == "clip" else (lambda i: i % 3)
    assert out1.tolist() == [[[row[fix3(i)] for i in r] for r in idx.tolist()] for row in rows]
    flat = [v for row in rows for v in row]
    fix12 = (lambda i: _clip_index(i, 12)) if mode == "clip" else (lambda i: i % 12)
    out2 = run(lambda d, i: relay.take(d, i, mode=mode), x, idx)
    assert out2.tolist() == [[flat[fix12(i)] for i in r] for r in idx.tolist()]


def test_take_types():
    ty = type_of(relay.take, ((4, 5, 6), "float16"), ((2, 3), "int64"), axis=1)
    assert ty == TensorType((4, 2, 3, 6), "float16")
    assert type_of(relay.take, ((4, 5), "int8"), ((), "int32")) == TensorType((), "int8")
    scalar = run(lambda d, i: relay.take(d, i, axis=0), ints((4,)), np.array(2, "int32"))
    assert scalar.shape == ()


def test_take_errors():
    err = type_error(relay.take, ((4,), "float32"), ((2,), "float32"))
    assert (err.op, err.argument) == ("take", "indices")
    err = type_error(relay.take, ((4,), "float32"), ((2,), "int8"))
    assert err.argument == "indices"
    err = type_error(relay.take, ((4,), "float32"), ((2,), "int32"), axis=1)
    assert (err.op, err.argument) == ("take", "axis")
    err = type_error(relay.take, ((0, 2), "float32"), ((2,), "int32"), axis=0)
    assert (err.op, err.argument) == ("take", "data")
    with pytest.raises(AttrError, match="take: attribute 'mode'"):
        relay.take(tvar("x", (2,)), tvar("i", (1,), "int32"), mode="raise")


# -- layout_transform ---------------------------------------------------------------------------
def test_layout_transform():
    x = ints((2, 3, 2, 4))
    out = run(relay.layout_transform, x, src_layout="NCHW", dst_layout="NHWC")
    assert out.shape == (2, 2, 4, 3)
    for n, c, h, w in itertools.product(range(2), range(3), range(2), range(4)):
        assert out[n, h, w, c] == x[n, c, h, w]
    back = run(relay.layout_transform, out, src_layout="NHWC", dst_layout="NCHW")
    assert back.tolist() == x.tolist()
    w = ints((5, 3, 2, 4))
    hwio = run(relay.layout_transform, w, src_layout="OIHW", dst_layout="HWIO")
    for o, i, h, ww in itertools.product(range(5), range(3), range(2), range(4)):
        assert hwio[h, ww, i, o] == w[o, i, h, ww]
    ty = type_of(relay.layout_transform, ((1, 8, 5, 7), "int8"), src_layout="NCHW",
                 dst_layout="NWCH")
    assert ty == TensorType((1, 7, 8, 5), "int8")


def test_split_layout_transform():
    # NCHW16c: N, C / 16, H, W, then 16 consecutive channels; OIHW4i8o splits two axes
    x = ints((2, 32, 3, 2))
    out = run(relay.layout_transform, x, src_layout="NCHW", dst_layout="NCHW16c")
    assert out.shape == (2, 2, 3, 2, 16)
    for n, c, h, w in itertools.product(range(2), range(32), range(3), range(2)):
        assert out[n, c // 16, h, w, c % 16] == x[n, c, h, w]
    nhwc8c = run(relay.layout_transform, out, src_layout="NCHW16c", dst_layout="NHWC8c")
    for n, c, h, w in itertools.product(range(2), range(32), range(3), range(2)):
        assert nhwc8c[n, h, w, c // 8, c % 8] == x[n, c, h, w]
    back = run(relay.layout_transform, nhwc8c, src_layout="NHWC8c", dst_layout="NCHW")
    assert back.tolist() == x.tolist()
    w = ints((16, 8, 3, 3))
    blocked = run(relay.layout_transform, w, src_layout="OIHW", dst_layout="OIHW4i8o")
    assert blocked.shape == (2, 2, 3, 3, 4, 8)
    for o, i, h, ww in itertools.product(range(16), range(8), range(3), range(3)):
        assert blocked[o // 8, i // 4, h, ww, i % 4, o % 8] == w[o, i, h, ww]
    ty = type_of(relay.layout_transform, ((1, 64, 5, 7), "int8"), src_layout="NCHW",
                 dst_layout="NHWC16c")
    assert ty == TensorType((1, 5, 7, 4, 16), "int8")


def test_layout_transform_errors():
    err = type_error(relay.layout_transform, ((2, 3, 4), "float32"), src_layout="NCHW",
                     dst_layout="NHWC")
    assert (err.op, err.argument) == ("layout_transform", "data") and "NCHW" in str(err)
    err = type_error(relay.layout_transform, ((1, 24, 4, 4), "float32"), src_layout="NCHW",
                     dst_layout="NCHW16c")
    assert err.argument == "data" and "a multiple of 16 along axis C" in str(err)
    err = type_error(relay.layout_transform, ((1, 2, 4, 4, 8), "float32"),
                     src_layout="NCHW16c", dst_layout="NCHW")
    assert err.argument == "data" and "axis 4 of 16" in str(err)
    x = tvar("x", (1, 2, 3, 4))
    for malformed in ("NCHW0c", "NCHW16x", "NCHW16", "NCHW16C", "NCHW16c8c", "NC16cHWc"):
        with pytest.raises(AttrError, match=r"layout_transform: attribute 'dst_layout'"):
            relay.layout_transform(x, "NCHW", malformed)
    with pytest.raises(AttrError, match=r"attribute 'dst_layout'.*primal axes"):
        relay.layout_transform(x, "NCHW", "NCHD")
    with pytest.raises(AttrError, match="attribute 'src_layout'"):
        relay.layout_transform(x, "NCHN", "NCHW")
    with pytest.raises(AttrError, match="attribute 'src_layout'"):
        relay.layout_transform(x, "nchw", "nhwc")
    with pytest.raises(AttrError, match="layout_transform: attribute 'src_layout'"):
        relay.layout_transform(x)
