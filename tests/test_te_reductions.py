"""TE computes of the reductions and of the operators built on them, run as loop nests and
compared with the operators' NumPy reference kernels: hypothesis over shapes, dtypes and
attributes, with edge values (NaN, infinities, -0.0, integer extremes).

Tolerances: integer results, extremes and indices match exactly. Float sums add in another
order than NumPy's pairwise sums, so they agree to rounding: a few units in the last place of
the accumulation dtype, which float16 and bfloat16 results may turn into one unit of their
own (:data:`TOL`). Normalisations divide by ``sqrt(var + epsilon)``, which multiplies the
mean's rounding by up to ``1 / sqrt(epsilon)`` where the variance is tiny (:data:`NORM_TOL`;
float32 cases take epsilon >= 1e-3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from passhost import relay
from passhost.tir import stmt as ts
from passhost.tir.expr import Call, Max, Min
from passhost.tir.visitor import post_order
from te_harness import assert_matches_reference, loops_of

# Wrapping integer arithmetic and NaN/inf inputs warn in the loops NumPy runs; the values
# are the point of the tests.
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning",
    "ignore:divide by zero:RuntimeWarning")

FAST = settings(max_examples=30, deadline=None)
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
EDGES = (math.nan, math.inf, -math.inf, -0.0, 0.0)
#: Values with many ties, for the arg-extremes.
TIES = (0.0, -0.0, 1.0, -1.0, 2.0, math.nan, math.inf, -math.inf)
#: Factors whose products neither overflow nor underflow part of the way, in any order.
PRODUCT_VALUES = (-2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.0, *EDGES)
#: (rtol, atol) of float results computed by sums.
TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (2e-5, 2e-5),
       "float64": (1e-12, 1e-12)}
#: (rtol, atol) of normalised results.
NORM_TOL = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-4),
            "float64": (1e-10, 1e-10)}


# -- strategies --------------------------------------------------------------------------------
@st.composite
def arrays(draw, shape, dtype, *, edges=True, values=None, bound=None):
    """An array of ``shape``: floats in [-4, 4] (with :data:`EDGES` when ``edges``, or drawn
    from ``values``), integers over the dtype's range (or within ``bound``), bools."""
    if dtype in FLOATS:
        elements = st.floats(-4, 4, width=32)
        if values is not None:
            elements = st.sampled_from(values)
        elif edges:
            elements = st.one_of(elements, st.sampled_from(EDGES))
        return draw(hnp.arrays("float32", shape, elements=elements)).astype(dtype)
    if dtype == "bool":
        return draw(hnp.arrays(bool, shape))
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if bound is not None:
        lo, hi = max(lo, -bound), min(hi, bound)
    return draw(hnp.arrays(dtype, shape, elements=st.integers(lo, hi)))


def shapes(min_rank=0, max_rank=3, min_side=0, max_side=4):
    """Small shapes (at most 4**3 elements)."""
    return st.lists(st.integers(min_side, max_side), min_size=min_rank,
                    max_size=max_rank).map(tuple)


@st.composite
def reduce_attrs(draw, ndim):
    """``axis`` (None, an int or a tuple; negative ones too), ``keepdims``, ``exclude``."""
    axis = None
    if ndim and draw(st.booleans()):
        picked = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        axis = tuple(a - ndim if draw(st.booleans()) else a for a in picked)
        if len(axis) == 1 and draw(st.booleans()):
            axis = axis[0]
    return {"axis": axis, "keepdims": draw(st.booleans()), "exclude": draw(st.booleans())}


def unary(op, shape, dtype, **attrs):
    """``op`` of one variable of ``shape`` and ``dtype``."""
    x = relay.var("x", shape=shape, dtype=dtype)
    return relay.Function([x], op(x, **attrs))


def check(func, inputs, dtype=None, tol=TOL):
    """The loops give the reference's outputs (to ``tol`` of ``dtype`` for floats)."""
    rtol, atol = tol.get(dtype, (0, 0))
    assert_matches_reference(func, inputs, rtol=rtol, atol=atol)


# -- sum, mean, max, min, prod -----------------------------------------------------------------
REDUCERS = {"sum": relay.sum, "prod": relay.prod, "mean": relay.mean, "max": relay.max,
            "min": relay.min}


@FAST
@given(data=st.data(), name=st.sampled_from(sorted(REDUCERS)),
       dtype=st.sampled_from(FLOATS + INTS + ("bool",)), shape=shapes())
def test_reductions(data, name, dtype, shape):
    assume(dtype != "bool" or name in ("max", "min"))
    attrs = data.draw(reduce_attrs(len(shape)))
    if name in ("mean", "max", "min"):  # no reduction over zero elements
        shape = tuple(max(n, 1) for n in shape)
    bound = 2**55 if name == "mean" else None  # no int64 sum wraps (see the test below)
    func = unary(REDUCERS[name], shape, dtype, **attrs)
    x = data.draw(arrays(shape, dtype, bound=bound,
                         values=PRODUCT_VALUES if name == "prod" else None))
    check(func, [x], dtype)


@pytest.mark.parametrize("name", ["sum", "prod"])
@pytest.mark.parametrize("dtype", ["float16", "int32"])
def test_sum_and_prod_over_no_elements_are_0_and_1(name, dtype):
    func = unary(REDUCERS[name], (2, 0, 3), dtype, axis=1)
    check(func, [np.zeros((2, 0, 3), dtype)])
    check(unary(REDUCERS[name], (0, 3), dtype, axis=1), [np.zeros((0, 3), dtype)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint64"])
def test_integer_sums_and_products_wrap_as_the_reference(dtype):
    info = np.iinfo(dtype)
    x = np.array([[info.max, info.max, 3], [info.min, info.min + 1, -1 % (info.max + 1)]],
                 dtype)
    for name in ("sum", "prod", "mean"):
        check(unary(REDUCERS[name], x.shape, dtype, axis=1), [x])


def test_integer_mean_truncates_toward_zero_even_at_int64_min():
    x = np.array([[np.iinfo("int64").min, 0], [-7, 0], [7, 0], [-8, 1]], "int64")
    func = unary(relay.mean, x.shape, "int64", axis=1)
    check(func, [x])
    assert relay.evaluate(func, x).tolist() == [-2**62, -3, 3, -3]


def test_max_and_min_propagate_nan_and_keep_signed_infinities():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, np.nan]],
                 "float32")
    for op in (relay.max, relay.min):
        func = unary(op, x.shape, "float32", axis=1)
        check(func, [x])
        prim = loops_of(func)
        assert not any(isinstance(n, (Max, Min)) for n in _exprs(prim.body))


# -- argmax, argmin, hardmax -------------------------------------------------------------------
@FAST
@given(data=st.data(), op=st.sampled_from([relay.argmax, relay.argmin]),
       dtype=st.sampled_from(FLOATS + INTS), shape=shapes(min_rank=1, min_side=1),
       keepdims=st.booleans(), last=st.booleans())
def test_arg_extremes(data, op, dtype, shape, keepdims, last):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    func = unary(op, shape, dtype, axis=axis, keepdims=keepdims, select_last_index=last)
    x = data.draw(arrays(shape, dtype, values=TIES if data.draw(st.booleans()) else None))
    check(func, [x])


@FAST
@given(data=st.data(), dtype=st.sampled_from(FLOATS), shape=shapes(min_rank=1))
def test_hardmax(data, dtype, shape):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(arrays(shape, dtype, values=TIES if data.draw(st.booleans()) else None))
    check(unary(relay.nn.hardmax, shape, dtype, axis=axis), [x])


# -- softmax, log_softmax ----------------------------------------------------------------------
@FAST
@given(data=st.data(), op=st.sampled_from([relay.nn.softmax, relay.nn.log_softmax]),
       dtype=st.sampled_from(FLOATS), shape=shapes(min_rank=1), edges=st.booleans())
def test_softmax(data, op, dtype, shape, edges):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(arrays(shape, dtype, edges=edges))
    check(unary(op, shape, dtype, axis=axis), [x], dtype)


def test_softmax_is_one_nest_per_reduction_and_keeps_exp_in_a_buffer():
    prim = loops_of(unary(relay.nn.softmax, (3, 5), "float32", axis=0))
    nests = [s for s in _top_level(prim.body) if isinstance(s, ts.For)]
    assert len(nests) == 4  # max, exp, sum, divide
    allocated = {s.buffer_var.name_hint for s in _stmts(prim.body) if isinstance(s, ts.Allocate)}
    assert allocated == {"softmax_max_data", "softmax_max_acc_data", "softmax_exp_data",
                         "softmax_sum_data", "softmax_sum_acc_data"}
    exps = [n for n in _exprs(prim.body) if isinstance(n, Call) and n.op == "tir.exp"]
    assert len(exps) == 1


def test_log_softmax_is_one_nest_over_the_rows_computing_exp_inside_the_sum():
    prim = loops_of(unary(relay.nn.log_softmax, (3, 5), "float16"))
    nests = [s for s in _top_level(prim.body) if isinstance(s, ts.For)]
    assert len(nests) == 1 and nests[0].extent.value == 3  # max, sum of exp, output per row
    exps = [n for n in _exprs(prim.body) if isinstance(n, Call) and n.op == "tir.exp"]
    assert len(exps) == 1  # in the sum; the output takes the log of the sum
    allocated = {s.buffer_var.name_hint for s in _stmts(prim.body) if isinstance(s, ts.Allocate)}
    assert "log_softmax_exp_data" not in allocated


# -- normalisations ----------------------------------------------------------------------------
@st.composite
def norm_case(draw, min_rank=1):
    dtype = draw(st.sampled_from(FLOATS))
    shape = draw(shapes(min_rank=min_rank, max_rank=4, min_side=1, max_side=4))
    assume(math.prod(shape) <= 200)
    # A (nearly) constant float32 row has a variance of about 0, where the mean's rounding
    # (NumPy sums pairwise) grows by 1 / sqrt(epsilon): small epsilons only for the dtypes
    # whose results round that away.
    return dtype, shape, draw(st.sampled_from([1e-3, 0.5] if dtype == "float32"
                                              else [1e-5, 1e-3, 0.5]))


def _vector(name, length, dtype):
    return relay.var(name, shape=(length,), dtype=dtype)


@FAST
@given(data=st.data(), case=norm_case(), scale=st.booleans(), center=st.booleans())
def test_layer_norm(data, case, scale, center):
    dtype, shape, eps = case
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    x, g, b = relay.var("x", shape=shape, dtype=dtype), _vector("g", n, dtype), \
        _vector("b", n, dtype)
    func = relay.Function([x, g, b], relay.nn.layer_norm(x, g, b, axis=axis, epsilon=eps,
                                                         scale=scale, center=center))
    inputs = [data.draw(arrays(shape, dtype, edges=False)),
              *(data.draw(arrays((n,), dtype, edges=False)) for _ in range(2))]
    check(func, inputs, dtype, NORM_TOL)


@FAST
@given(data=st.data(), case=norm_case(min_rank=3), op=st.sampled_from(["instance", "group"]),
       scale=st.booleans(), center=st.booleans())
def test_instance_and_group_norm(data, case, op, scale, center):
    dtype, shape, eps = case
    axis = data.draw(st.integers(1, len(shape) - 1)) - data.draw(st.sampled_from([0, 1])) * \
        len(shape)
    n = shape[axis]
    x, g, b = relay.var("x", shape=shape, dtype=dtype), _vector("g", n, dtype), \
        _vector("b", n, dtype)
    if op == "instance":
        y = relay.nn.instance_norm(x, g, b, axis=axis, epsilon=eps, scale=scale,
                                   center=center)
    else:
        groups = data.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
        y = relay.nn.group_norm(x, g, b, num_groups=groups, axis=axis, epsilon=eps,
                                scale=scale, center=center)
    inputs = [data.draw(arrays(shape, dtype, edges=False)),
              *(data.draw(arrays((n,), dtype, edges=False)) for _ in range(2))]
    check(relay.Function([x, g, b], y), inputs, dtype, NORM_TOL)


@FAST
@given(data=st.data(), case=norm_case())
def test_rms_norm(data, case):
    dtype, shape, eps = case
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x, g = relay.var("x", shape=shape, dtype=dtype), _vector("g", shape[axis], dtype)
    func = relay.Function([x, g], relay.nn.rms_norm(x, g, axis=axis, epsilon=eps))
    inputs = [data.draw(arrays(shape, dtype, edges=False)),
              data.draw(arrays((shape[axis],), dtype, edges=False))]
    check(func, inputs, dtype, NORM_TOL)


@FAST
@given(data=st.data(), case=norm_case(), scale=st.booleans(), center=st.booleans())
def test_batch_norm_returns_the_moving_statistics(data, case, scale, center):
    dtype, shape, eps = case
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    x = relay.var("x", shape=shape, dtype=dtype)
    vecs = [_vector(name, n, dtype) for name in ("gamma", "beta", "mean", "var")]
    y = relay.nn.batch_norm(x, *vecs, axis=axis, epsilon=eps, scale=scale, center=center)
    func = relay.Function([x, *vecs], relay.Tuple([y[0], y[1], y[2]]))
    inputs = [data.draw(arrays(shape, dtype, edges=False)),
              *(data.draw(arrays((n,), dtype, edges=False)) for _ in range(3)),
              np.abs(data.draw(arrays((n,), dtype, edges=False)))]
    check(func, inputs, dtype, TOL)


@FAST
@given(data=st.data(), dtype=st.sampled_from(FLOATS), shape=shapes(min_rank=1),
       p=st.sampled_from([1, 2]), zeros=st.booleans())
def test_lp_normalize(data, dtype, shape, p, zeros):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = data.draw(arrays(shape, dtype, values=(0.0, -0.0, 1.5) if zeros else None))
    check(unary(relay.nn.lp_normalize, shape, dtype, axis=axis, p=p), [x], dtype)


@FAST
@given(data=st.data(), case=norm_case(), size=st.integers(1, 6),
       coefficients=st.sampled_from([(1.0, 1e-4, 0.75), (2.0, 1e-2, 0.5), (0.5, 1.0, 1.5)]))
def test_lrn(data, case, size, coefficients):
    dtype, shape, _ = case
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    bias, alpha, beta = coefficients
    func = unary(relay.nn.lrn, shape, dtype, size=size, axis=axis, bias=bias, alpha=alpha,
                 beta=beta)
    check(func, [data.draw(arrays(shape, dtype, edges=False))], dtype, TOL)


@FAST
@given(data=st.data(), dtype=st.sampled_from(FLOATS),
       shape=shapes(min_rank=2, max_rank=3, min_side=1),
       target_dtype=st.sampled_from(["int32", "int64"]),
       reduction=st.sampled_from(["none", "sum", "mean"]),
       ignore=st.sampled_from([None, -1, 0, 2, 2**40]))
def test_nll_loss(data, dtype, shape, target_dtype, reduction, ignore):
    classes = shape[1]
    target_shape = (shape[0], *shape[2:])
    pred = relay.var("pred", shape=shape, dtype=dtype)
    targets = relay.var("t", shape=target_shape, dtype=target_dtype)
    weights = _vector("w", classes, dtype)
    func = relay.Function([pred, targets, weights], relay.nn.nll_loss(
        pred, targets, weights, reduction=reduction, ignore_index=ignore))
    t = data.draw(hnp.arrays(target_dtype, target_shape,
                             elements=st.integers(-2, classes + 1)))
    inputs = [data.draw(arrays(shape, dtype, edges=False)), t,
              np.abs(data.draw(arrays((classes,), dtype, edges=False)))]
    check(func, inputs, dtype)


# -- global_avg_pool2d -------------------------------------------------------------------------
@FAST
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTS),
       shape=st.tuples(*[st.integers(1, 3)] * 2, *[st.integers(0, 4)] * 2),
       layout=st.sampled_from(["NCHW", "NHWC"]), out_layout=st.sampled_from(["", "NCHW", "NHWC"]))
def test_global_avg_pool2d(data, dtype, shape, layout, out_layout):
    # A sum wrapping to exactly INT64_MIN is no magnitude the reference can take: no wrap.
    x = data.draw(arrays(shape, dtype, bound=2**58))
    func = unary(relay.nn.global_avg_pool2d, shape, dtype, layout=layout,
                 out_layout=out_layout)
    check(func, [x], dtype)


#: 2-D data layouts, the channel-blocked ones with 1 to 8 channels a block.
DATA_LAYOUTS = ("NCHW", "NHWC", "NCHW1c", "NCHW2c", "NCHW4c", "NCHW8c")


def _data_shape(layout, n, c, h, w):
    """The shape of (N, C, H, W) data in ``layout`` (NCHW{k}c: (N, C / k, H, W, k))."""
    if layout in ("NCHW", "NHWC"):
        return (n, h, w, c) if layout == "NHWC" else (n, c, h, w)
    k = int(layout[4:-1])
    return (n, c // k, h, w, k)


@FAST
@given(data=st.data(), dtype=st.sampled_from(FLOATS + INTS),
       dims=st.tuples(st.integers(1, 2), st.sampled_from([8, 16]), *[st.integers(0, 3)] * 2),
       layout=st.sampled_from(DATA_LAYOUTS), out_layout=st.sampled_from(("", *DATA_LAYOUTS)))
def test_global_avg_pool2d_blocked_layouts(data, dtype, dims, layout, out_layout):
    shape = _data_shape(layout, *dims)
    x = data.draw(arrays(shape, dtype, bound=2**58))
    func = unary(relay.nn.global_avg_pool2d, shape, dtype, layout=layout,
                 out_layout=out_layout)
    check(func, [x], dtype)


def test_global_avg_pool2d_of_ints_rounds_half_away_from_zero():
    x = np.array([-3, -2, -1, 0, 1, 2, 3, 5], "int8").reshape(2, 1, 2, 2)
    check(unary(relay.nn.global_avg_pool2d, x.shape, "int8"), [x])
    x = np.array([-5, 0, 0, 0, 5, 0, 0, 1], "int32").reshape(1, 2, 2, 2)
    check(unary(relay.nn.global_avg_pool2d, x.shape, "int32"), [x])


# -- helpers -----------------------------------------------------------------------------------
def _top_level(body):
    """The statements of a PrimFunc body below its allocations."""
    while isinstance(body, (ts.Allocate, ts.AllocateConst, ts.DeclBuffer)):
        body = body.body
    return body.seq if isinstance(body, ts.SeqStmt) else [body]


def _stmts(body):
    return [n for n in post_order(body) if isinstance(n, ts.Stmt)]


def _exprs(body):
    return [n for n in post_order(body) if not isinstance(n, ts.Stmt)]
