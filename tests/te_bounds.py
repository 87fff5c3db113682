"""A static check that loop nests never index a buffer out of bounds, for tests of TE
computes.

``assert_in_bounds(func)`` bounds every index expression of every ``BufferLoad`` and
``BufferStore`` in ``func`` by interval arithmetic over the loop ranges, and fails when one
may fall outside its buffer. It is conservative the way TIR's semantics require: both sides
of a ``Select`` count (both are evaluated), a loaded value may be anything its dtype holds,
integer arithmetic that may overflow its dtype fails, and so does a float-to-integer
conversion of a value not known to fit. Two idioms are understood: ``max(x, 0 - x)`` is
``|x|``, and ``select(v >= lo, select(v <= hi, v, hi), lo)`` lies in ``[lo, hi]``. Loops
that never run are skipped."""

from __future__ import annotations

import math

import numpy as np

from passhost.tir import expr as tir
from passhost.tir.function import PrimFunc
from passhost.tir.stmt import BufferStore, For, Stmt
from passhost.tir.visitor import children, post_order

__all__ = ["assert_in_bounds", "index_bounds"]



def _dtype_range(dtype: str) -> tuple[int, int] | None:
    if dtype == "bool":
        return (0, 1)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return (int(info.min), int(info.max))
    return None  # floats: unbounded


def _span(values: list[int]) -> tuple[int, int]:
    return (min(values), max(values))


def _floordiv(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    if b[0] <= 0 <= b[1]:
        return None
    return _span([a[0] // b[0], a[0] // b[1], a[1] // b[0], a[1] // b[1]])


def _truncdiv(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    if b[0] <= 0 <= b[1]:
        return None
    quotients = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
                 for x in a for y in b]
    return _span(quotients)


def _floormod(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int] | None:
    if b[0] <= 0:
        return None
    if a[0] >= 0 and a[1] < b[0]:
        return a
    return (0, b[1] - 1)


def _cast(node: tir.Cast, inner: tuple | None) -> tuple | None:
    """The bounds of a conversion: integers keep theirs when they fit (else they wrap:
    any value of the dtype); floats truncate, and must be bounded within the dtype."""
    target = _dtype_range(node.dtype)
    if target is None or inner is None:
        return None
    if node.value.dtype.startswith(("int", "uint", "bool")):
        fits = target[0] <= inner[0] and inner[1] <= target[1]
        return inner if fits else target
    if not all(math.isfinite(v) for v in inner):
        return None
    lo, hi = math.trunc(inner[0]), math.trunc(inner[1])
    return (lo, hi) if target[0] <= lo and hi <= target[1] else None


def _constant(expr: tir.PrimExpr) -> float | None:
    if isinstance(expr, (tir.IntImm, tir.FloatImm)):
        return expr.value
    return None


def _clamp_idiom(node: tir.Select) -> tuple | None:
    """``[lo, hi]`` for ``select(v >= lo, select(v <= hi, v, hi), lo)`` (a clamp that
    sends NaN to ``lo``), else None."""
    inner, cond = node.true_value, node.condition
    if not (isinstance(cond, tir.GE) and isinstance(inner, tir.Select)
            and isinstance(inner.condition, tir.LE)):
        return None
    v = cond.a
    lo, hi = _constant(cond.b), _constant(inner.condition.b)
    if (inner.condition.a is not v or inner.true_value is not v or lo is None or hi is None
            or _constant(inner.false_value) != hi or _constant(node.false_value) != lo):
        return None
    return (lo, hi)


def _is_negation(expr: tir.PrimExpr, of: tir.PrimExpr) -> bool:
    return (isinstance(expr, tir.Sub) and expr.b is of and isinstance(expr.a, tir.IntImm)
            and expr.a.value == 0)


def _binary(node: tir.PrimExpr, a, b):
    if isinstance(node, tir.Add):
        return (a[0] + b[0], a[1] + b[1])
    if isinstance(node, tir.Sub):
        return (a[0] - b[1], a[1] - b[0])
    if isinstance(node, tir.Mul):
        return _span([x * y for x in a for y in b])
    if isinstance(node, tir.FloorDiv):
        return _floordiv(a, b)
    if isinstance(node, tir.Div):
        return _truncdiv(a, b)
    if isinstance(node, tir.FloorMod):
        return _floormod(a, b)
    if isinstance(node, tir.Mod):
        if b[0] <= 0:
            return None
        hi = b[1] - 1
        return (0 if a[0] >= 0 else -hi, hi if a[1] > 0 else 0)
    if isinstance(node, tir.Min):
        return (min(a[0], b[0]), min(a[1], b[1]))
    if isinstance(node, tir.Max):
        if _is_negation(node.b, node.a) and a[0] < 0 < a[1]:  # |x| as max(x, 0 - x)
            return (0, max(-a[0], a[1]))
        return (max(a[0], b[0]), max(a[1], b[1]))
    return None


def index_bounds(expr: tir.PrimExpr, loops: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """The interval ``[lo, hi]`` of the integer ``expr`` over the loop ranges ``loops``
    (Var id -> interval); raises AssertionError when no bound is known or the integer
    arithmetic may overflow its dtype."""
    bounds: dict[int, tuple[int, int] | None] = {}
    for node in post_order(expr, stop=lambda n: isinstance(n, tir.BufferLoad)):
        key = id(node)
        if isinstance(node, (tir.IntImm, tir.FloatImm)):
            bounds[key] = (node.value, node.value)
        elif isinstance(node, tir.Var):
            bounds[key] = loops.get(id(node), _dtype_range(node.dtype))
        elif isinstance(node, tir.BufferLoad):
            bounds[key] = _dtype_range(node.dtype)
        elif isinstance(node, tir.Cast):
            bounds[key] = _cast(node, bounds[id(node.value)])
        elif isinstance(node, tir.Select):
            t, f = bounds[id(node.true_value)], bounds[id(node.false_value)]
            bounds[key] = _clamp_idiom(node) or (
                None if t is None or f is None else (min(t[0], f[0]), max(t[1], f[1])))
        elif isinstance(node, tir.BinaryOp) and not isinstance(node, (tir.CmpOp, tir.And,
                                                                       tir.Or)):
            a, b = bounds[id(node.a)], bounds[id(node.b)]
            result = None if a is None or b is None else _binary(node, a, b)
            limits = _dtype_range(node.dtype)
            if result is not None and limits is not None:
                assert limits[0] <= result[0] and result[1] <= limits[1], \
                    f"{node.dtype} index arithmetic may overflow: {node} in {list(result)}"
            bounds[key] = result
        else:
            bounds[key] = None
    found = bounds[id(expr)]
    assert found is not None, f"no bound known for the index {expr}"
    return found


def _live_nodes(func: PrimFunc) -> tuple[dict[int, tuple[int, int]], list[object]]:
    """The range of every loop that runs, and the loads and stores reachable through
    loops that run (a loop of extent 0 hides its body)."""
    loops: dict[int, tuple[int, int]] = {}
    accesses: list[object] = []
    stack: list[object] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, For):
            assert isinstance(node.min, tir.IntImm) and isinstance(node.extent, tir.IntImm), \
                f"loop {node.loop_var} has no constant range"
            lo, extent = node.min.value, node.extent.value
            if extent > 0:
                loops[id(node.loop_var)] = (lo, lo + extent - 1)
                stack.append(node.body)
            continue
        if isinstance(node, BufferStore):
            accesses.append(node)
        for child in children(node):
            if isinstance(child, Stmt):
                stack.append(child)
            elif isinstance(child, tir.PrimExpr):
                accesses.extend(n for n in post_order(child) if isinstance(n, tir.BufferLoad))
    return loops, accesses


def assert_in_bounds(func: PrimFunc) -> None:
    """Every load and store of ``func`` stays inside its buffer at every loop point."""
    loops, accesses = _live_nodes(func)
    for node in accesses:
        for axis, (index, dim) in enumerate(zip(node.indices, node.buffer.shape)):
            found = index_bounds(index, loops)
            n = dim.value if isinstance(dim, tir.IntImm) else int(dim)
            assert found[0] >= 0 and found[1] < n, (
                f"{type(node).__name__} of {node.buffer.name}: index {index} of axis {axis} "
                f"may be in {list(found)}, outside [0, {n})")
