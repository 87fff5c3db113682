"""Proving that every load and store of a PrimFunc stays inside its buffer.

Native code indexes memory with whatever a PrimFunc's indices compute, so a PrimFunc read
from text nobody vouches for (an artifact's TIR) must be shown safe before it is compiled.
:func:`check_index_bounds` does it by interval arithmetic: each loop variable ranges over its
loop, each let variable over its value's range, and each index expression over the range its
operations give (a value loaded from an integer buffer may be anything its dtype holds, so a
data-dependent index must be clamped with ``min``/``max`` to be accepted). An index whose
range is not inside ``[0, extent)`` of its dimension is refused.

Float values matter where a float coordinate is clamped and converted to an index (resize):
a float expression has a range only when constants and conditions give it one (a range
never holds NaN, so a value that may be NaN has none), a select's range is the union of its
sides', and a float-to-integer conversion keeps its operand's range (the C printer converts
saturating, and truncates toward zero).

Conditions help where they are plain: in the chosen side of a ``select``, and inside ``if``
statements (for expressions that load nothing, since the body may store), comparisons of an
expression with a constant joined by ``&&`` (``x >= 0 && x < n``) bound every expression
structurally equal to ``x``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from passhost.errors import PasshostError
from passhost.ir.structural import structural_equal
from passhost.ir.types import INT_DTYPES
from passhost.tir import expr as e
from passhost.tir.function import PrimFunc
from passhost.tir.stmt import For, IfThenElse, LetStmt, Stmt
from passhost.tir.visitor import children, post_order

__all__ = ["IndexBoundsError", "check_index_bounds", "exact_range", "facts", "index_range"]

Range = tuple[float, float] | None  # inclusive bounds (never NaN), or None: anything
Fact = tuple[e.PrimExpr, float | None, float | None]  # an expression's known bounds
_INF = math.inf


class IndexBoundsError(PasshostError):
    """A load or store of a PrimFunc may fall outside its buffer."""


def _dtype_range(dtype: str) -> Range:
    if dtype == "bool":
        return (0, 1)
    if dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        return (int(info.min), int(info.max))
    return None


def _fit(value: Range, dtype: str) -> Range:
    """``value`` if the dtype holds all of it, else the dtype's whole range (the arithmetic
    may wrap around); float values keep their range."""
    full = _dtype_range(dtype)
    if full is None:
        return value
    if value is None:
        return full
    return value if full[0] <= value[0] and value[1] <= full[1] else full


def _corners(a: Range, b: Range, op: Callable[[int, int], int]) -> Range:
    if a is None or b is None:
        return None
    values = [op(x, y) for x in a for y in b]
    return (min(values), max(values))


def _positive(b: Range) -> bool:
    return b is not None and b[0] > 0


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _is_negation(value: e.PrimExpr, of: e.PrimExpr) -> bool:
    """Whether ``value`` is ``0 - of``."""
    return (isinstance(value, e.Sub) and isinstance(value.a, e.IntImm) and value.a.value == 0
            and structural_equal(value.b, of))


def _binary(node: e.BinaryOp, a: Range, b: Range) -> Range:
    kind = type(node)
    if kind is e.Add:
        return _corners(a, b, lambda x, y: x + y)
    if kind is e.Sub:
        return _corners(a, b, lambda x, y: x - y)
    if kind is e.Mul:
        return _corners(a, b, lambda x, y: x * y)
    if kind is e.Min:
        return None if a is None or b is None else (min(a[0], b[0]), min(a[1], b[1]))
    if kind is e.Max:
        if a is not None and _is_negation(node.b, node.a):  # max(x, 0 - x) is |x|
            return (max(a[0], -a[1], 0), max(abs(a[0]), abs(a[1])))
        return None if a is None or b is None else (max(a[0], b[0]), max(a[1], b[1]))
    if not _positive(b):
        return None
    assert b is not None
    if kind is e.FloorDiv:
        return _corners(a, b, lambda x, y: x // y)
    if kind is e.Div:
        return _corners(a, b, _trunc_div)
    if kind is e.FloorMod:
        if a is not None and a[0] >= 0 and a[1] < b[0]:
            return a
        return (0, b[1] - 1)
    if kind is e.Mod:
        if a is not None and a[0] >= 0:
            return (0, min(a[1], b[1] - 1))
        return (-(b[1] - 1), b[1] - 1)
    return None


def facts(condition: e.PrimExpr) -> list[Fact]:
    """The bounds ``condition`` (a ``&&`` of comparisons with constants) puts on
    expressions when it holds."""
    out: list[Fact] = []
    stack = [condition]
    while stack:
        c = stack.pop()
        if isinstance(c, e.And):
            stack.extend((c.a, c.b))
            continue
        if not isinstance(c, (e.LT, e.LE, e.GT, e.GE)):
            continue
        a, b = c.a, c.b
        constant = (e.IntImm, e.FloatImm)
        flipped = isinstance(a, constant)
        x, k = (b, a) if flipped else (a, b)
        if not isinstance(k, constant) or math.isnan(k.value):
            continue
        kind = type(c)
        if flipped:  # k < x is x > k, and so on
            kind = {e.LT: e.GT, e.LE: e.GE, e.GT: e.LT, e.GE: e.LE}[kind]
        value = k.value
        step = 1 if x.dtype in INT_DTYPES else 0  # x < 3 is x <= 2 for integers
        bound = {e.LT: (None, value - step), e.LE: (None, value),
                 e.GT: (value + step, None), e.GE: (value, None)}[kind]
        out.append((x, *bound))
    return out


def _refine(node: e.PrimExpr, value: Range, known: list[Fact]) -> Range:
    """``value`` narrowed by the facts about expressions equal to ``node`` (a fact holding
    also says the value is not NaN)."""
    for expr, lo, hi in known:
        if structural_equal(expr, node):
            low, high = value if value is not None else (-_INF, _INF)
            value = (low if lo is None else max(low, lo), high if hi is None else min(high, hi))
    return value


def _monotonic(call: e.Call, value: Range) -> Range:
    """The range of a rounding intrinsic of a value in ``value``."""
    rounding = {"tir.floor": math.floor, "tir.ceil": math.ceil, "tir.trunc": math.trunc}
    fn = rounding.get(call.op)
    if fn is None or value is None or not all(math.isfinite(v) for v in value):
        return None
    return (fn(value[0]), fn(value[1]))


def _cast(node: e.Cast, value: Range) -> Range:
    """The range of a conversion (float to integer truncates toward zero)."""
    if value is None:
        return None
    if node.dtype in INT_DTYPES and node.value.dtype not in (*INT_DTYPES, "bool"):
        if not all(math.isfinite(v) for v in value):
            return None
        return (math.trunc(value[0]), math.trunc(value[1]))
    return value


def _bounded(value: Range) -> bool:
    return value is not None and all(math.isfinite(v) for v in value)


def _select_range(node: e.Select, ranges: dict[int, Range]) -> Range:
    """The union of the ranges of the values a tree of selects may choose, each narrowed by
    the conditions that hold where it is chosen."""
    low, high = _INF, -_INF
    stack: list[tuple[e.PrimExpr, list[Fact]]] = [(node.true_value, facts(node.condition)),
                                                   (node.false_value, [])]
    while stack:
        item, known = stack.pop()
        value = _refine(item, ranges[id(item)], known)
        if isinstance(item, e.Select) and not _bounded(value):
            stack.append((item.true_value, known + facts(item.condition)))
            stack.append((item.false_value, known))
            continue
        if value is None:
            return None
        low, high = min(low, value[0]), max(high, value[1])
    return (low, high)


def index_range(expr: e.PrimExpr, env: dict[int, Range],
                known: list[Fact] | None = None,
                memo: dict[int, Range] | None = None) -> Range:
    """The values integer expression ``expr`` may take, given the ranges of variables in
    ``env`` (by id; a variable not in it may be anything its dtype holds) and the ``known``
    facts of the conditions around it. ``memo`` (by id) keeps the ranges of nodes across
    calls with the same ``env`` and no facts."""
    known = known or []
    ranges: dict[int, Range] = {} if memo is None or known else memo
    for node in post_order(expr, stop=lambda n: id(n) in ranges):
        if not isinstance(node, e.PrimExpr) or id(node) in ranges:
            continue
        value: Range
        if isinstance(node, e.IntImm):
            value = (int(node.value), int(node.value))
        elif isinstance(node, e.FloatImm):
            value = None if math.isnan(node.value) else (node.value, node.value)
        elif isinstance(node, e.Var):
            value = env.get(id(node), _dtype_range(node.dtype))
        elif isinstance(node, e.BinaryOp) and not isinstance(node, e.CmpOp) \
                and node.dtype in INT_DTYPES:
            value = _binary(node, ranges[id(node.a)], ranges[id(node.b)])
        elif isinstance(node, e.Select):
            value = _select_range(node, ranges)
        elif isinstance(node, e.Cast):
            value = _cast(node, ranges[id(node.value)])
        elif isinstance(node, e.Call) and len(node.args) == 1:
            value = _monotonic(node, ranges.get(id(node.args[0])))
        else:
            value = None
        ranges[id(node)] = _refine(node, _fit(value, node.dtype), known) if known else \
            _fit(value, node.dtype)
    return ranges[id(expr)]


def exact_range(expr: e.PrimExpr, env: dict[int, Range],
                memo: dict[int, Range] | None = None) -> Range:
    """The values integer ``expr`` takes (variables ranging as in ``env``) when no
    operation in it can wrap around: its range is narrower than its dtype's; else None.
    ``memo`` as for :func:`index_range`."""
    value = index_range(expr, env, memo=memo)
    return value if value is not None and value != _dtype_range(expr.dtype) else None


def _outside(value: Range, extent: int) -> bool:
    return value is None or value[0] < 0 or value[1] >= extent


def check_index_bounds(func: PrimFunc, name: str) -> None:
    """Raise :class:`IndexBoundsError` unless every load and store of ``func`` (called
    ``name``) provably indexes inside its buffer."""
    env: dict[int, Range] = {}
    stack: list[tuple[Stmt, list[Fact]]] = [(func.body, [])]
    while stack:
        stmt, known = stack.pop()
        if isinstance(stmt, For):
            lo = index_range(stmt.min, env, known)
            extent = index_range(stmt.extent, env, known)
            if extent is not None and extent[1] <= 0:
                continue  # the body never runs
            env[id(stmt.loop_var)] = (None if lo is None or extent is None
                                      else (lo[0], lo[1] + extent[1] - 1))
        elif isinstance(stmt, LetStmt):
            env[id(stmt.var)] = index_range(stmt.value, env, known)
        for child in children(stmt):
            if isinstance(child, Stmt):
                guarded = isinstance(stmt, IfThenElse) and child is stmt.then_case
                stack.append((child, known + _lasting_facts(stmt.condition) if guarded
                              else known))
            elif isinstance(child, e.PrimExpr):
                _check_expr(child, env, known, name)
        if hasattr(stmt, "indices") and hasattr(stmt, "buffer"):
            _check_access(stmt, env, known, name, "store to")


def _lasting_facts(condition: e.PrimExpr) -> list[Fact]:
    """The facts of an ``if`` condition that its body cannot invalidate: those about
    expressions that load nothing (the body may store to a buffer the condition read)."""
    return [f for f in facts(condition)
            if not any(isinstance(n, e.BufferLoad) for n in post_order(f[0]))]


def _check_expr(expr: e.PrimExpr, env: dict[int, Range], known: list[Fact],
                name: str) -> None:
    for node in post_order(expr):
        if isinstance(node, e.BufferLoad):
            _check_access(node, env, known, name, "load of")


def _check_access(node, env: dict[int, Range], known: list[Fact], name: str,
                  what: str) -> None:
    buf = node.buffer
    for dim, (index, extent) in enumerate(zip(node.indices, buf.shape)):
        value = index_range(index, env, known)
        if _outside(value, extent):
            found = "any value" if value is None else f"[{value[0]}, {value[1]}]"
            raise IndexBoundsError(
                f"PrimFunc @{name}: the {what} %{buf.name} (shape {list(buf.shape)}) may "
                f"index dimension {dim} with {index} in {found}, outside [0, {extent - 1}]")
