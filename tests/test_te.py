"""The tensor-expression layer: computes, reductions, inlining and lowering to loops."""

from __future__ import annotations

import numpy as np
import pytest

from passhost import te
from passhost.errors import IRTypeError
from passhost.tir import Allocate, AllocateConst, For, post_order
from te_harness import run_prim_func

RNG = np.random.default_rng(0)


def _allocated(prim) -> set[str]:
    return set(_allocated_shapes(prim.body))


def _allocated_shapes(stmt) -> dict[str, tuple[int, ...]]:
    """Name -> extents of every buffer allocated in ``stmt``."""
    return {n.buffer_var.name_hint.removesuffix("_data"): tuple(n.extents)
            for n in post_order(stmt) if isinstance(n, Allocate)}


def _softmax(n: int, m: int):
    a = te.placeholder((n, m), "float32", "a")
    k = te.reduce_axis(m, "k")
    mx = te.compute((n,), lambda i: te.max(a[i, k], axis=k), name="mx")
    e = te.compute((n, m), lambda i, j: te.exp(a[i, j] - mx[i]), name="e")
    s = te.compute((n,), lambda i: te.sum(e[i, k], axis=k), name="s")
    y = te.compute((n, m), lambda i, j: e[i, j] / s[i], name="y")
    return a, y, e


def test_softmax_matches_numpy_and_keeps_the_shared_exponentials():
    a, y, _ = _softmax(3, 7)
    prim = te.lower([y], [a], "softmax")
    x = RNG.standard_normal((3, 7)).astype("float32")
    (got,) = run_prim_func(prim, [x])
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(1, keepdims=True), rtol=1e-6)
    # e is read by the sum and the division, and costs an exp: it gets a buffer.
    assert _allocated(prim) == {"mx", "mx_acc", "e", "s", "s_acc"}  # accumulators: in loops


def test_stages_sharing_their_rows_share_one_nest_and_narrow_their_buffers():
    a, y, _ = _softmax(3, 7)
    prim = te.lower([y], [a], "softmax")
    # one loop over the rows holds the four stages; each row's max, exponentials and sum
    # live in buffers of the row's size, allocated inside it
    assert isinstance(prim.body, For) and prim.body.extent.value == 3
    shapes = _allocated_shapes(prim.body.body)
    assert shapes == {"mx": (1,), "e": (7,), "s": (1,), "mx_acc": (1,), "s_acc": (1,)}
    # the stages that are not reductions keep a loop of their own (vectorised later)
    inner = [n for n in post_order(prim.body.body) if isinstance(n, For)]
    assert sorted(n.extent.value for n in inner) == [7, 7, 7, 7]  # max, exp, sum, divide
    x = RNG.standard_normal((3, 7)).astype("float32")
    (got,) = run_prim_func(prim, [x])
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(1, keepdims=True), rtol=1e-6)


def test_a_buffer_read_after_the_shared_nest_keeps_its_whole_shape():
    a, y, e = _softmax(3, 7)
    z = te.compute((7, 3), lambda j, i: e[i, j] * 2.0, name="z")  # e read transposed
    prim = te.lower([y, z], [a], "softmax_and_more")
    shapes = _allocated_shapes(prim.body)
    assert shapes["e"] == (3, 7) and shapes["mx"] == (1,) and shapes["s"] == (1,)
    x = RNG.standard_normal((3, 7)).astype("float32")
    got_y, got_z = run_prim_func(prim, [x])
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got_y, want / want.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(got_z, 2 * want.T, rtol=1e-6)


def test_an_elementwise_chain_is_one_loop_nest_without_buffers():
    a = te.placeholder((4, 5), "float32", "a")
    b = te.placeholder((5,), "float32", "b")
    z = te.compute((4, 5), lambda i, j: a[i, j] + b[j], name="z")
    r = te.compute((4, 5), lambda i, j: te.if_then_else(z[i, j] > 0.0, z[i, j], 0.0), name="r")
    prim = te.lower([r], [a, b], "add_relu")
    assert _allocated(prim) == set()
    assert sum(isinstance(n, For) for n in post_order(prim.body)) == 2
    x, y = RNG.standard_normal((4, 5)).astype("float32"), RNG.standard_normal(5).astype("float32")
    (got,) = run_prim_func(prim, [x, y])
    np.testing.assert_array_equal(got, np.maximum(x + y, 0))


def test_a_costly_stage_read_from_a_larger_loop_nest_is_kept():
    a = te.placeholder((3, 4), "float32", "a")
    b = te.placeholder((4, 5), "float32", "b")
    ea = te.compute((3, 4), lambda i, k: te.exp(a[i, k]), name="ea")
    k = te.reduce_axis(4, "k")
    mm = te.compute((3, 5), lambda i, j: te.sum(ea[i, k] * b[k, j], axis=k), name="mm")
    prim = te.lower([mm], [a, b], "expmm")
    assert "ea" in _allocated(prim)
    x, y = RNG.standard_normal((3, 4)).astype("float32"), RNG.standard_normal((4, 5))
    (got,) = run_prim_func(prim, [x, y.astype("float32")])
    np.testing.assert_allclose(got, np.exp(x) @ y.astype("float32"), rtol=1e-5)


def test_a_costly_stage_read_once_in_step_is_inlined_into_a_reduction():
    a = te.placeholder((3, 4), "float32", "a")
    ea = te.compute((3, 4), lambda i, k: te.exp(a[i, k]), name="ea")
    k = te.reduce_axis(4, "k")
    s = te.compute((3,), lambda i: te.sum(ea[i, k], axis=k), name="s")
    prim = te.lower([s], [a], "sumexp")
    assert "ea" not in _allocated(prim)
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_allclose(run_prim_func(prim, [x])[0], np.exp(x).sum(1), rtol=1e-6)


def test_a_cheap_stage_is_inlined_into_a_broadcast():
    a = te.placeholder((3,), "float32", "a")
    d = te.compute((3,), lambda i: a[i] * 2.0, name="d")
    out = te.compute((4, 3), lambda i, j: d[j] + 1.0, name="out")
    assert _allocated(te.lower([out], [a], "f")) == set()


def test_inlining_stops_before_expressions_grow_too_large():
    x = te.placeholder((2,), "float32", "x")
    y = x
    for n in range(12):  # each stage reads the previous one twice: 2**12 leaves if inlined
        y = te.compute((2,), lambda i, y=y: y[i] * y[i] * 0.5 + 0.25, name=f"y{n}")
    prim = te.lower([y], [x], "square_chain")
    assert len(post_order(prim.body)) < 40 * 12
    v = np.array([0.5, -0.25], "float32")
    want = v
    for _ in range(12):
        want = want * want * np.float32(0.5) + np.float32(0.25)
    np.testing.assert_allclose(run_prim_func(prim, [v])[0], want, rtol=1e-6)


def test_a_long_chain_lowers_without_recursion():
    x = te.placeholder((2,), "float32", "x")
    y = x
    for n in range(3000):
        y = te.compute((2,), lambda i, y=y: y[i] + 1.0, name=f"y{n}")
    prim = te.lower([y], [x], "long")
    v = np.array([0.0, 1.0], "float32")
    np.testing.assert_array_equal(run_prim_func(prim, [v])[0], v + 3000)


def test_reduction_with_a_condition_and_several_outputs():
    a = te.placeholder((5,), "int32", "a")
    k = te.reduce_axis(5, "k")
    prefix = te.compute((5,), lambda i: te.sum(a[k], axis=k, where=k <= i), name="prefix")
    top = te.compute((), lambda: te.max(a[k], axis=k), name="top")
    prim = te.lower([prefix, top], [a], "scan")
    v = np.array([3, -1, 4, 1, -5], "int32")
    got_prefix, got_top = run_prim_func(prim, [v])
    np.testing.assert_array_equal(got_prefix, np.cumsum(v))
    assert got_top == 4


def test_constants_become_allocate_const_and_placeholder_outputs_are_copied():
    a = te.placeholder((3,), "float32", "a")
    w = te.placeholder((3,), "float32", "w")
    out = te.compute((3,), lambda i: a[i] * w[i], name="out")
    prim = te.lower([out, a], [a], "f", constants={w: np.array([1, 2, 3], "float32")})
    assert any(isinstance(n, AllocateConst) for n in post_order(prim.body))
    v = np.array([1, 1, 2], "float32")
    got, copy = run_prim_func(prim, [v])
    np.testing.assert_array_equal(got, [1, 2, 6])
    np.testing.assert_array_equal(copy, v)


def test_the_same_reduce_axis_in_two_stages_binds_two_loop_variables():
    a, y, _ = _softmax(2, 3)
    loops = [n.loop_var for n in post_order(te.lower([y], [a], "f").body) if isinstance(n, For)]
    assert len({id(v) for v in loops}) == len(loops)


def test_errors_are_clear():
    a = te.placeholder((2, 3), "float32", "a")
    with pytest.raises(IRTypeError, match="2 dimension"):
        te.compute((2,), lambda i: a[i], name="bad")
    with pytest.raises(IRTypeError, match="is float32, expected int32"):
        te.compute((2, 3), lambda i, j: a[i, j], name="c", dtype="int32")
    with pytest.raises(IRTypeError, match="neither an input nor a constant"):
        te.lower([te.compute((2, 3), lambda i, j: a[i, j] + 1.0)], [], "f")
    with pytest.raises(IRTypeError, match="extent must be an int"):
        te.reduce_axis(-1)
    with pytest.raises(IRTypeError, match="unknown intrinsic 'expp'"):
        te.intrinsic("expp", a[0, 0])
    with pytest.raises(AttributeError, match="no attribute 'expp'"):
        te.expp  # noqa: B018
    foreign = te.placeholder((3,), "float32", "foreign")
    load = foreign[0]  # built outside the compute: not recorded as read by it
    with pytest.raises(IRTypeError, match="loads buffer foreign"):
        te.compute((2,), lambda i: load + 1.0, name="sneaky")


def test_the_stage_after_a_reduction_is_computed_in_its_final_store():
    a = te.placeholder((3, 4), "float32", "a")
    k = te.reduce_axis(4, "k")
    total = te.compute((3,), lambda i: te.sum(a[i, k], axis=k), name="total")
    mean = te.compute((3,), lambda i: total[i] / 4.0, name="mean")
    prim = te.lower([mean], [a], "mean")
    assert _allocated(prim) == {"total_acc"}
    assert sum(isinstance(n, For) for n in post_order(prim.body)) == 2
    x = RNG.standard_normal((3, 4)).astype("float32")
    np.testing.assert_allclose(run_prim_func(prim, [x])[0], x.mean(1), rtol=1e-6)


def test_one_element_constants_of_every_dtype_become_immediates():
    from passhost import relay
    from te_harness import assert_matches_reference

    for dtype in ("bfloat16", "float16", "int8", "uint64", "float64"):
        x = relay.var("x", shape=(3,), dtype=dtype)
        joined = relay.concatenate([x, relay.const(np.full((1,), 7, dtype), dtype)], axis=0)
        func = relay.Function([x], joined)
        func = relay.transform.InferType()(__import__("passhost").ir.IRModule.from_expr(
            func))["main"]
        assert_matches_reference(func, [np.arange(3).astype(dtype)])
