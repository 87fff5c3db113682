"""The data-movement operators' TE computes equal their NumPy reference kernels.

Each test draws shapes, dtypes and attributes, runs the operator's loop nests
(``te_harness.run_as_loops``) and compares them with the reference kernel: bit for bit for
the operators that only move data (NaN, infinities, -0.0 and integer extremes included),
and checks statically (``passhost.tir.bounds``) that no load or store can leave its buffer. Indices
the reference rejects (out of range) are checked against the documented wrapping or
clamping, computed with NumPy.
"""

from __future__ import annotations

import math

import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy)
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from passhost import relay, te
from passhost.relay.op import image
from passhost.relay.op.movement import CUMULATIVE_TE_LIMIT
from passhost.tir.bounds import IndexBoundsError, check_index_bounds
from te_harness import loops_of, reference, run_as_loops

FAST = settings(max_examples=25, deadline=None)
DTYPES = ("float32", "float16", "bfloat16", "float64", "int8", "uint16", "int32", "int64",
          "uint64", "bool")
INDEX_DTYPES = ("int32", "int64")


# -- helpers ------------------------------------------------------------------------------------
def _is_float(dtype: str) -> bool:
    return dtype == "bfloat16" or np.dtype(dtype).kind == "f"


def _special(dtype: str) -> list:
    if dtype == "bool":
        return [True, False]
    if _is_float(dtype):
        return [np.nan, np.inf, -np.inf, -0.0, 0.0]
    info = np.iinfo(dtype)
    return [int(info.min), int(info.max), 0]


def _array(seed: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Random values of ``dtype`` with its edge values mixed in."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if _is_float(dtype):
        out = rng.uniform(-4, 4, size=shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        out = rng.integers(max(int(info.min), -50), min(int(info.max), 50) + 1,
                           size=shape).astype(dtype)
    flat = out.reshape(-1)
    special = np.array(_special(dtype), dtype=dtype)
    for k in rng.choice(flat.size, size=min(flat.size, len(special)), replace=False):
        flat[k] = special[rng.integers(len(special))]
    return out


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal dtype, shape and bits (NaNs equal to any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if _is_float(got.dtype.name):
        g, w = got.astype(np.float64), want.astype(np.float64)
        assert np.array_equal(np.isnan(g), np.isnan(w))
        ok = ~np.isnan(g)
        np.testing.assert_array_equal(g[ok], w[ok])
        np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]))
    else:
        np.testing.assert_array_equal(got, want)


def _check(func: relay.Function, inputs: list[np.ndarray],
           expected: list[np.ndarray] | None = None) -> None:
    """The loop nests stay in bounds and give the reference's outputs (or ``expected``)."""
    prim = loops_of(func)
    assert prim is not None, "a TE compute does not cover this function"
    check_index_bounds(prim, "f")
    copies = [a.copy() for a in inputs]
    with np.errstate(all="ignore"):
        got = run_as_loops(func, inputs)
        want = reference(func, inputs) if expected is None else expected
    for a, b in zip(inputs, copies):
        _same(a, b)  # inputs are not modified
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


def _unary(shape, dtype, build) -> relay.Function:
    x = relay.var("x", shape=shape, dtype=dtype)
    return relay.Function([x], build(x))


@st.composite
def shapes(draw, min_rank: int = 0, max_rank: int = 4, max_size: int = 120,
           min_dim: int = 0) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    dims: list[int] = []
    for _ in range(rank):
        room = max(min_dim, max_size // max(math.prod(dims), 1))
        dims.append(draw(st.integers(min_dim, min(5, room))))
    return tuple(dims)


dtypes = st.sampled_from(DTYPES)
seeds = st.integers(0, 2**32 - 1)


# -- reshape-like ---------------------------------------------------------------------------------
@st.composite
def _factorisation(draw, size: int) -> list[int]:
    dims = []
    rest = size
    while rest > 1 and len(dims) < 4:
        d = draw(st.sampled_from([f for f in range(1, rest + 1) if rest % f == 0]))
        dims.append(d)
        rest //= d
    if rest != 1 or draw(st.booleans()):
        dims.append(rest)
    return draw(st.permutations(dims))


@FAST
@given(shapes(min_dim=1), dtypes, seeds, st.data())
def test_reshape(shape, dtype, seed, data):
    newshape = list(data.draw(_factorisation(math.prod(shape))))
    for k in range(min(len(newshape), len(shape))):
        if newshape[k] == shape[k] and data.draw(st.booleans()):
            newshape[k] = 0  # copies the input dimension
    if newshape and data.draw(st.booleans()):
        newshape[data.draw(st.integers(0, len(newshape) - 1))] = -1
    func = _unary(shape, dtype, lambda x: relay.reshape(x, tuple(newshape)))
    _check(func, [_array(seed, shape, dtype)])


def test_reshape_of_empty_and_scalar_tensors():
    _check(_unary((2, 0, 3), "float32", lambda x: relay.reshape(x, (0, 6, -1))),
           [np.zeros((2, 0, 3), "float32")])
    _check(_unary((), "int8", lambda x: relay.reshape(x, (1, 1))), [np.array(-128, "int8")])


@FAST
@given(shapes(), dtypes, seeds, st.data())
def test_transpose(shape, dtype, seed, data):
    perm = data.draw(st.permutations(range(len(shape))))
    axes = None if data.draw(st.booleans()) else tuple(
        p - len(shape) if data.draw(st.booleans()) else p for p in perm)
    func = _unary(shape, dtype, lambda x: relay.transpose(x, axes))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=5), dtypes, seeds, st.data())
def test_squeeze(shape, dtype, seed, data):
    shape = tuple(shape)
    ones = [k for k, d in enumerate(shape) if d == 1]
    if data.draw(st.booleans()):
        axis = None
    else:
        picked = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
        axis = tuple(a - len(shape) if data.draw(st.booleans()) else a for a in picked)
    func = _unary(shape, dtype, lambda x: relay.squeeze(x, axis=axis))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(shapes(max_rank=3), dtypes, seeds, st.data())
def test_expand_dims(shape, dtype, seed, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    num = data.draw(st.integers(0, 2))
    func = _unary(shape, dtype, lambda x: relay.expand_dims(x, axis, num))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(shapes(min_rank=1), dtypes, seeds)
def test_batch_flatten_and_dropout(shape, dtype, seed):
    x = _array(seed, shape, dtype)
    _check(_unary(shape, dtype, relay.nn.batch_flatten), [x])
    _check(_unary(shape, dtype, lambda v: relay.nn.dropout(v, rate=0.3)), [x])


@FAST
@given(shapes(min_rank=1, max_rank=4), dtypes, seeds, st.data())
def test_layout_transform(shape, dtype, seed, data):
    src = "NCHWD"[:len(shape)]
    dst = "".join(data.draw(st.permutations(src)))
    func = _unary(shape, dtype, lambda x: relay.layout_transform(x, src, dst))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(dtypes, seeds, st.data())
def test_split_layout_transform(dtype, seed, data):
    # NCHW -> a permutation of N C H W with C, then maybe H, split by a factor, and back
    f, g = data.draw(st.sampled_from([1, 2, 4, 16])), data.draw(st.sampled_from([1, 2, 3]))
    shape = (data.draw(st.integers(1, 2)), f * data.draw(st.integers(1, 3)),
             g * data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)))
    dst = "".join(data.draw(st.permutations("NCHW"))) + f"{f}c" + (f"{g}h" if g > 1 else "")
    x = _array(seed, shape, dtype)
    _check(_unary(shape, dtype, lambda v: relay.layout_transform(v, "NCHW", dst)), [x])
    (split,) = reference(_unary(shape, dtype, lambda v: relay.layout_transform(v, "NCHW", dst)),
                         [x])
    _check(_unary(split.shape, dtype, lambda v: relay.layout_transform(v, dst, "NHWC")),
           [split])


# -- concatenate / split / strided_slice ---------------------------------------------------------
@FAST
@given(shapes(min_rank=1, max_rank=3, max_size=30), dtypes, seeds, st.data())
def test_concatenate(shape, dtype, seed, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    lengths = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=9))
    params, arrays = [], []
    for k, n in enumerate(lengths):
        piece = list(shape)
        piece[axis] = n
        params.append(relay.var(f"x{k}", shape=tuple(piece), dtype=dtype))
        arrays.append(_array(seed + k, tuple(piece), dtype))
    func = relay.Function(params, relay.concatenate(params, axis))
    _check(func, arrays)


@FAST
@given(shapes(min_rank=1, max_rank=3), dtypes, seeds, st.data())
def test_split(shape, dtype, seed, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [1]
    if n <= 1 or data.draw(st.booleans()):
        sections = data.draw(st.sampled_from(divisors))
    else:
        sections = tuple(data.draw(st.lists(st.integers(1, n - 1), min_size=1, unique=True)
                                   .map(sorted)))
    func = _unary(shape, dtype, lambda x: relay.split(x, sections, axis))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(shapes(min_rank=1, max_rank=3), dtypes, seeds, st.data())
def test_strided_slice(shape, dtype, seed, data):
    rank = len(shape)
    ends = st.integers(-8, 8)
    if data.draw(st.booleans()):
        axes = None
        count = data.draw(st.integers(1, rank))
    else:
        axes = tuple(data.draw(st.lists(st.integers(-rank, rank - 1), min_size=1,
                                        unique_by=lambda a: a % rank)))
        count = len(axes)
    begin = tuple(data.draw(st.lists(ends, min_size=count, max_size=count)))
    end = tuple(data.draw(st.lists(st.integers(-8, 8), max_size=count)))
    strides = tuple(data.draw(st.lists(st.integers(-3, 3).filter(bool), max_size=count)))
    mode = data.draw(st.sampled_from(["end", "size"]))
    func = _unary(shape, dtype, lambda x: relay.strided_slice(
        x, begin, end, strides or None, axes=axes, slice_mode=mode))
    _check(func, [_array(seed, shape, dtype)])


# -- take and the gathers -----------------------------------------------------------------------
def _indices(seed: int, shape: tuple[int, ...], n: int, dtype: str,
             wild: bool = True) -> np.ndarray:
    """Indices into an axis of length ``n``: in ``[-n, n)`` (converted to ``dtype`` as
    ``astype`` converts), and with ``wild`` also far out of range (the dtype's extremes
    included)."""
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        out = rng.integers(-n, max(n, 1), size=shape).astype(dtype)
    if wild and out.size:
        info = np.iinfo(dtype)
        flat = out.reshape(-1)
        wild_values = [int(info.min), int(info.max), -n - 1, n, 3 * n + 2]
        for k in rng.choice(flat.size, size=min(flat.size, 3), replace=False):
            flat[k] = np.array(wild_values[rng.integers(len(wild_values))]).astype(dtype)
    return out


@FAST
@given(shapes(max_rank=3, max_size=40), shapes(max_rank=2, max_size=6), dtypes,
       st.sampled_from(INDEX_DTYPES), st.sampled_from(["clip", "wrap", "fast"]), seeds,
       st.data())
def test_take(shape, index_shape, dtype, index_dtype, mode, seed, data):
    axis = None if not shape or data.draw(st.booleans()) else data.draw(
        st.integers(-len(shape), len(shape) - 1))
    n = math.prod(shape) if axis is None else shape[axis]
    if n == 0:
        index_shape = (0,)
    x = relay.var("x", shape=shape, dtype=dtype)
    idx = relay.var("i", shape=index_shape, dtype=index_dtype)
    func = relay.Function([x, idx], relay.take(x, idx, axis=axis, mode=mode))
    _check(func, [_array(seed, shape, dtype), _indices(seed, index_shape, n, index_dtype)])


def _wrapped(idx: np.ndarray, n: int) -> np.ndarray:
    """Indices into an axis of length ``n`` as the computes read them: negative ones count
    from the end, out-of-range ones wrap around."""
    return np.mod(idx.astype(np.int64), n)


@FAST
@given(shapes(max_rank=3, max_size=30), st.sampled_from(DTYPES[:-1]),
       st.sampled_from(("int8", "uint8", "int32", "int64", "uint64")), st.integers(1, 5),
       seeds, st.data())
def test_one_hot(index_shape, value_dtype, index_dtype, depth, seed, data):
    axis = data.draw(st.integers(-len(index_shape) - 1, len(index_shape)))
    idx_data = _indices(seed, index_shape, depth, index_dtype)
    on, off = _array(seed, (2,), value_dtype)
    idx = relay.var("i", shape=index_shape, dtype=index_dtype)
    on_var, off_var = relay.var("on", shape=(), dtype=value_dtype), \
        relay.var("off", shape=(), dtype=value_dtype)
    func = relay.Function([idx, on_var, off_var],
                          relay.one_hot(idx, on_var, off_var, depth=depth, axis=axis))
    _check(func, [idx_data, on, off])


# -- broadcast_to / tile / trilu / pad ----------------------------------------------------------
@FAST
@given(shapes(max_rank=3, max_size=30), dtypes, seeds, st.data())
def test_broadcast_to(shape, dtype, seed, data):
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + tuple(data.draw(st.integers(0, 3)) if d == 1 else d for d in shape)
    func = _unary(shape, dtype, lambda x: relay.broadcast_to(x, target))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(shapes(max_rank=3, max_size=24), dtypes, seeds,
       st.lists(st.integers(0, 3), max_size=4))
def test_tile(shape, dtype, seed, reps):
    func = _unary(shape, dtype, lambda x: relay.tile(x, tuple(reps)))
    _check(func, [_array(seed, shape, dtype)])


@FAST
@given(shapes(min_rank=2, max_rank=4, max_size=60), dtypes, st.sampled_from(INDEX_DTYPES),
       st.booleans(), seeds, st.data())
def test_trilu(shape, dtype, k_dtype, upper, seed, data):
    info = np.iinfo(k_dtype)
    k = data.draw(st.one_of(st.integers(-6, 6), st.sampled_from([int(info.min),
                                                                    int(info.max)])))
    x = relay.var("x", shape=shape, dtype=dtype)
    kv = relay.var("k", shape=(), dtype=k_dtype)
    func = relay.Function([x, kv], relay.trilu(x, kv, upper=upper))
    _check(func, [_array(seed, shape, dtype), np.array(k, k_dtype)])


@FAST
@given(shapes(max_rank=3, max_size=40), dtypes, seeds,
       st.sampled_from(["constant", "edge", "reflect", "wrap"]),
       st.sampled_from([0.0, 1.5, -2.75, float("nan"), float("-inf"), -0.0, 300.0]),
       st.data())
def test_pad(shape, dtype, seed, mode, value, data):
    assume(mode != "reflect" or 0 not in shape)  # the type relation rejects empty axes
    widths = []
    for n in shape:
        if mode == "reflect":
            most = max(n - 1, 0)
        elif mode in ("edge", "wrap") and n == 0:
            most = 0
        else:
            most = 7
        widths.append((data.draw(st.integers(0, min(most, 7))),
                       data.draw(st.integers(0, min(most, 7)))))
    func = _unary(shape, dtype, lambda x: relay.nn.pad(x, tuple(widths), pad_value=value,
                                                       pad_mode=mode))
    _check(func, [_array(seed, shape, dtype)])


# -- cumsum / cumprod ---------------------------------------------------------------------------
@FAST
@given(shapes(min_rank=1, max_rank=3, max_size=40),
       st.sampled_from(("float32", "float16", "bfloat16", "float64", "int8", "uint8",
                        "int32", "int64", "uint64")),
       st.sampled_from(["cumsum", "cumprod"]), st.booleans(), st.booleans(), seeds,
       st.data())
def test_cumulative(shape, dtype, op, exclusive, reverse, seed, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    build = getattr(relay, op)
    func = _unary(shape, dtype, lambda x: build(x, axis=axis, exclusive=exclusive,
                                                reverse=reverse))
    _check(func, [_array(seed, shape, dtype)])


def test_long_cumulative_axes_keep_the_kernel():
    n = CUMULATIVE_TE_LIMIT + 1
    assert loops_of(_unary((2, n), "float32", lambda x: relay.cumsum(x, axis=1))) is None
    assert loops_of(_unary((n, 2), "float32", lambda x: relay.cumsum(x, axis=1))) is not None


# -- the bounds check itself ---------------------------------------------------------------------
def _lowered(build) -> object:
    x = te.placeholder((4, 3), "float32", "x")
    i = te.placeholder((2,), "int32", "i")
    return te.lower([te.compute((4, 3), lambda a, b: build(x, i, a, b), name="y")], [x, i],
                    "f")


@pytest.mark.parametrize("build", [
    lambda x, i, a, b: x[a, b + 1],
    lambda x, i, a, b: x[3 - a - 1, b - 1],
    lambda x, i, a, b: x[te.cast(i[0], "int64"), b],
    lambda x, i, a, b: te.if_then_else(a < 3, x[a + 1, b], x[a, b]),
], ids=["past-the-end", "negative", "loaded-index", "select-branch"])
def test_the_bounds_check_finds_reads_out_of_bounds(build):
    with pytest.raises(IndexBoundsError):
        check_index_bounds(_lowered(build), "f")


def test_the_bounds_check_accepts_reads_in_bounds():
    # Wrapping products stay in range through the floor modulo.
    check_index_bounds(_lowered(lambda x, i, a, b: x[
        (te.cast(i[0], "int64") * 2**40) % 4, te.if_then_else(a < 1, b, 2 - b)]), "f")


# -- image.resize ---------------------------------------------------------------------------------
@st.composite
def _resize_case(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    size = tuple(draw(st.integers(0 if k == 0 else 1, 7)) for k in range(rank))
    method = draw(st.sampled_from(["nearest", "linear", "cubic"]))
    attrs = {
        "size": size, "method": method,
        "coordinate_transformation_mode": draw(st.sampled_from(image.COORDINATE_MODES)),
        "nearest_mode": draw(st.sampled_from(image.NEAREST_MODES)),
        "cubic_coeff_a": draw(st.sampled_from([-0.75, -0.5])),
        "exclude_outside": draw(st.booleans()),
        "extrapolation_value": draw(st.sampled_from([0.0, -1.25, 10.0])),
        "antialias": draw(st.booleans()),
    }
    scales = draw(st.sampled_from(["none", "float", "fraction"]))
    if scales == "float":
        attrs["scales"] = tuple(draw(st.floats(0.2, 3.0)) for _ in range(rank))
    elif scales == "fraction":
        attrs["scales"] = tuple(float(draw(st.integers(1, 9))) for _ in range(rank))
        attrs["scale_divisors"] = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    if draw(st.booleans()):
        ends = st.sampled_from([-0.4, 0.0, 0.25, 0.5, 0.8, 1.0, 1.3])
        attrs["roi"] = tuple(draw(ends) for _ in range(2 * rank))
    dtypes = ("float32", "float16", "bfloat16", "float64", "uint8", "int8", "int16",
              "uint32") + (("bool", "int64") if method == "nearest" else ())
    return shape, draw(st.sampled_from(dtypes)), attrs


@settings(max_examples=15, deadline=None)
@given(_resize_case(), seeds)
def test_resize(case, seed):
    shape, dtype, attrs = case
    x = _array(seed, shape, dtype)
    if _is_float(dtype):
        x = np.where(np.isfinite(x.astype(np.float64)), x, np.array(0.5, dtype))
    _check(_unary(shape, dtype, lambda v: relay.resize(v, **attrs)), [x])


def test_resize_keeps_the_kernel_where_loops_would_not_match_it():
    wide = _unary((1, 64), "float32", lambda v: relay.resize(
        v, size=(1, 1), method="cubic", antialias=True))
    assert loops_of(wide) is None  # 2 * 2 * 64 taps
    ints = _unary((4,), "int64", lambda v: relay.resize(v, size=(7,), method="linear"))
    assert loops_of(ints) is None
