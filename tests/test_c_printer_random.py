"""Random expression trees (hypothesis) printed by the TIR -> C printer
(passhost.backend.c), compiled with sanitizers and run, against an evaluator written with
NumPy that follows TIR's meaning of each node."""

from __future__ import annotations

import copy
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c_printer_harness import (
    SANITIZED,
    assert_floats_equal,
    func,
    int_reference,
    run_sanitized,
    wrap,
)
from c_unit_helpers import compile_unit, needs_cc
from passhost.backend.c import expr as c_expr
from passhost.backend.c import (
    print_unit,
)
from passhost.ir.types import INT_DTYPES
from passhost.tir import (
    EQ,
    GE,
    INTRINSICS,
    LT,
    NE,
    Add,
    And,
    BufferStore,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    For,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
    Var,
    const,
    decl_buffer,
    intrinsic_call,
)

# -- random expression trees, against an evaluator written with NumPy -------------------------
TREE_N = 16
_TREE_INPUTS = {
    "a": np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 7.0, -7.0, 1e-3, 3.0, -3.0,
                   0.1, 5.5, 1e30, -4.75], np.float32),
    "b": np.array([1.0, -0.5, 0.0, 2.0, 3.0, -np.inf, 2.5, -7.0, 0.1, np.nan, -3.0, 1e-30,
                   4.0, -0.0, 6.0, 8.0], np.float32),
    "p": np.array([0, -1, 1, 7, -7, 2**31 - 1, -2**31, 100, -100, 3, -3, 65536, 12, -12, 5, 9],
                  np.int32),
    "q": np.array([3, 0, -1, -2**31, 2, -1, -1, 7, 13, -4, 4, 0, 5, -5, 2**31 - 1, 1], np.int32),
    "r": np.array([-128, 127, 0, -1, 1, 50, -50, 100, -100, 3, -3, 64, -64, 7, 8, 9], np.int8),
}
_TREE_BUFFERS = {name: decl_buffer((TREE_N,), str(v.dtype), name)
                 for name, v in _TREE_INPUTS.items()}
_TREE_LOOP = Var("i")
_ARITH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
_EXACT_UNARY = ("tir.sqrt", "tir.floor", "tir.ceil", "tir.trunc", "tir.round", "tir.fabs")
_CMP_OPS = (LT, GE, EQ, NE)


def _draw_tree(data: st.DataObject, dtype: str, depth: int,
               pool: dict[str, list[PrimExpr]]) -> PrimExpr:
    """A random expression of ``dtype`` over the tree buffers at index ``i``; it may reuse
    subexpressions drawn before (``pool``), so the trees share nodes."""
    buf = {"float32": ("a", "b"), "int32": ("p", "q"), "int8": ("r",)}
    if dtype != "bool" and (depth == 0 or data.draw(st.integers(0, 3)) == 0):
        kind = data.draw(st.sampled_from(["load", "load", "const", "loop", "reuse"]))
        if kind == "reuse" and pool[dtype]:
            return data.draw(st.sampled_from(pool[dtype]))
        if kind == "load":
            return _TREE_BUFFERS[data.draw(st.sampled_from(buf[dtype]))][_TREE_LOOP]
        if kind == "loop" and dtype == "int32":
            return _TREE_LOOP
        if dtype == "float32":
            return const(data.draw(st.sampled_from([0.0, -0.0, 0.5, -1.0, 3.0, np.inf, np.nan])))
        info = np.iinfo(dtype)
        return const(data.draw(st.sampled_from([0, 1, -1, 3, int(info.min), int(info.max)])),
                     dtype)
    tree = _draw_node(data, dtype, depth, pool)
    pool[dtype].append(tree)
    return tree


def _draw_node(data: st.DataObject, dtype: str, depth: int,
               pool: dict[str, list[PrimExpr]]) -> PrimExpr:
    sub = max(depth - 1, 0)

    def draw(of: str) -> PrimExpr:
        return _draw_tree(data, of, sub, pool)

    if dtype == "bool":
        kind = "cmp" if depth == 0 else data.draw(st.sampled_from(["cmp", "cmp", "and", "or",
                                                                   "not"]))
        if kind == "cmp":
            of = data.draw(st.sampled_from(["float32", "int32"]))
            return data.draw(st.sampled_from(_CMP_OPS))(draw(of), draw(of))
        if kind == "not":
            return Not(draw("bool"))
        return (And if kind == "and" else Or)(draw("bool"), draw("bool"))
    kind = data.draw(st.sampled_from(["arith", "arith", "arith", "select", "cast", "call"]))
    if kind == "arith":
        return data.draw(st.sampled_from(_ARITH))(draw(dtype), draw(dtype))
    if kind == "select":
        return Select(draw("bool"), draw(dtype), draw(dtype))
    if kind == "cast":
        return Cast(dtype, draw(data.draw(st.sampled_from(
            [d for d in ("float32", "int32", "int8") if d != dtype]))))
    if dtype == "float32":
        # (not copysign: the sign of a NaN from an invalid operation is not specified)
        name = data.draw(st.sampled_from([*_EXACT_UNARY, "tir.fmod"]))
        return intrinsic_call(name, *[draw(dtype) for _ in range(INTRINSICS[name].arity)])
    return intrinsic_call("tir.fabs", draw(dtype))


def _evaluate(e: Any) -> np.ndarray:
    """``e`` at every index, computed with NumPy as TIR and the printer's documentation say."""
    if isinstance(e, Var):
        return np.arange(TREE_N, dtype=np.int32)
    if isinstance(e, PrimExpr) and type(e).__name__ in ("IntImm", "FloatImm"):
        return np.full(TREE_N, e.value, e.dtype)
    if type(e).__name__ == "BufferLoad":
        return _TREE_INPUTS[e.buffer.name]
    with np.errstate(all="ignore"):
        if isinstance(e, Cast):
            x = _evaluate(e.value)
            if e.dtype in INT_DTYPES and x.dtype.kind == "f":  # saturating, NaN to 0
                info = np.iinfo(e.dtype)
                x = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0),
                            int(info.min), int(info.max))
            return x.astype(e.dtype)
        if isinstance(e, Select):
            return np.where(_evaluate(e.condition), _evaluate(e.true_value),
                            _evaluate(e.false_value))
        if isinstance(e, Not):
            return ~_evaluate(e.a)
        if isinstance(e, Call):
            return INTRINSICS[e.op].numpy(*[_evaluate(a) for a in e.args])
        a, b = _evaluate(e.a), _evaluate(e.b)
        cls = type(e)
        if cls in (Min, Max):  # NaN when either is; b when they are equal
            first = (a < b) if cls is Min else (a > b)
            return np.where(first | (np.isnan(a) if a.dtype.kind == "f" else False), a, b)
        numpy_ops = {Add: np.add, Sub: np.subtract, Mul: np.multiply, LT: np.less,
                     GE: np.greater_equal, EQ: np.equal, NE: np.not_equal, And: np.logical_and,
                     Or: np.logical_or}
        if cls in numpy_ops:
            return numpy_ops[cls](a, b)
        if a.dtype.kind == "f":
            return {Div: np.divide, Mod: np.fmod, FloorDiv: np.floor_divide,
                    FloorMod: np.remainder}[cls](a, b)
        name = {Div: "div", Mod: "mod", FloorDiv: "floordiv", FloorMod: "floormod"}[cls]
        return wrap([int_reference(name, int(x), int(y)) for x, y in zip(a, b)],
                    str(a.dtype))


@needs_cc
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_expression_trees_compute_what_numpy_computes(tmp_path_factory, data):
    funcs, calls, want, trees = {}, {}, {}, {}
    pool: dict[str, list[PrimExpr]] = {"float32": [], "int32": [], "int8": [], "bool": []}
    for k in range(8):
        dtype = data.draw(st.sampled_from(["float32", "int32", "int8", "bool"]))
        tree = _draw_tree(data, dtype, 4, pool)
        kind = data.draw(st.sampled_from(["serial", "vectorized", "parallel"]))
        out = decl_buffer((TREE_N,), dtype, "out")
        funcs[f"tree{k}"] = func([*_TREE_BUFFERS.values(), out],
                                 For(_TREE_LOOP, 0, TREE_N, kind,
                                     BufferStore(out, tree, [_TREE_LOOP])))
        want[f"tree{k}"] = _evaluate(tree).astype(dtype)
        trees[f"tree{k}"] = str(tree)
    # With a tiny spill depth, most subexpressions go into temporaries, in conditional sides
    # too: the same trees test that.
    with mock.patch.object(c_expr, "SPILL_DEPTH", data.draw(st.sampled_from([1, 3, 48]))):
        u = print_unit(funcs)
    for name in funcs:
        args = [*copy.deepcopy(list(_TREE_INPUTS.values())), np.zeros(TREE_N, want[name].dtype)]
        calls[name] = (u.functions[name].symbol, u.functions[name].argtypes, args, 0)
    directory = tmp_path_factory.mktemp("trees")
    got = run_sanitized(compile_unit(u, SANITIZED, directory), calls, directory)
    for name in funcs:
        status, args, _ = got[name]
        assert status == 0
        try:
            if want[name].dtype.kind == "f":
                assert_floats_equal(args[-1], want[name])
            else:
                np.testing.assert_array_equal(args[-1], want[name])
        except AssertionError as err:
            raise AssertionError(f"out[i] = {trees[name]}\n{err}") from None
