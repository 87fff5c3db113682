"""tir.Simplify: fold what is known while compiling.

* integer and bool arithmetic on immediates (``int64(4) * int64(8)``; results wrap around
  as the dtype does), comparisons and logic of immediates, casts of integer immediates;
* identities of integer operands: ``x + 0``, ``x - 0``, ``x * 1``, ``x * 0``, ``x // 1``,
  ``x % 1``; floats are left alone (``x + 0.0`` is not ``x`` for ``x = -0.0``);
* integer division and remainder by a positive constant whose dividend's range (from the
  constant bounds of the loops, :func:`passhost.tir.bounds.index_range`) stays within one
  multiple of the divisor: ``(i * 64 + j) % 768`` is ``i * 64 + j`` and ``(i * 64 + j) //
  768`` is 0 for ``i < 12, j < 64``, as a reshape's indices often are (then the loop reads
  memory contiguously, and vectorises);
* ``select`` and ``if`` on a known condition; a loop of one iteration becomes its body with
  the loop variable replaced by the loop's start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from passhost.ir.module import IRModule
from passhost.ir.types import INT_DTYPES
from passhost.tir import expr as e
from passhost.tir.bounds import Range, index_range
from passhost.tir.function import PrimFunc
from passhost.tir.stmt import Evaluate, For, IfThenElse, SeqStmt, Stmt
from passhost.tir.transform.prim_func_pass import prim_func_pass
from passhost.tir.visitor import StmtExprMutator, post_order, substitute
from passhost.transform.context import PassContext

__all__ = ["Simplify", "simplify"]

_FOLD: dict[type, Callable[[int, int], Any]] = {
    e.Add: lambda a, b: a + b,
    e.Sub: lambda a, b: a - b,
    e.Mul: lambda a, b: a * b,
    e.FloorDiv: lambda a, b: a // b if b else None,
    e.FloorMod: lambda a, b: a % b if b else None,
    e.Div: lambda a, b: (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1) if b else None,
    e.Mod: lambda a, b: a - b * ((abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1))
    if b else None,
    e.Min: min,
    e.Max: max,
    e.EQ: lambda a, b: a == b,
    e.NE: lambda a, b: a != b,
    e.LT: lambda a, b: a < b,
    e.LE: lambda a, b: a <= b,
    e.GT: lambda a, b: a > b,
    e.GE: lambda a, b: a >= b,
    e.And: lambda a, b: a and b,
    e.Or: lambda a, b: a or b,
}


def _wrap(value: int, dtype: str) -> int:
    """``value`` wrapped into ``dtype``'s range, as the machine's arithmetic does."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return (value - int(info.min)) % span + int(info.min)


def _int(node: Any) -> int | None:
    """The value of an integer or bool immediate, else None."""
    if isinstance(node, e.IntImm):
        return int(node.value)
    return None


def _identity(node: e.BinaryOp) -> e.PrimExpr | None:
    """``node`` simplified by an identity of integer arithmetic, or None."""
    if node.a.dtype not in INT_DTYPES:
        return None
    a, b = _int(node.a), _int(node.b)
    if isinstance(node, e.Add):
        return node.b if a == 0 else node.a if b == 0 else None
    if isinstance(node, e.Sub):
        return node.a if b == 0 else None
    if isinstance(node, e.Mul):
        if a == 0 or b == 0:
            return e.const(0, node.dtype)
        return node.b if a == 1 else node.a if b == 1 else None
    if isinstance(node, (e.FloorDiv, e.Div)) and b == 1:
        return node.a
    if isinstance(node, (e.FloorMod, e.Mod)) and b == 1:
        return e.const(0, node.dtype)
    return None


def _loop_ranges(body: Stmt) -> dict[int, Range]:
    """id(loop variable) -> the values it takes, for loops with constant bounds."""
    ranges: dict[int, Range] = {}
    for n in post_order(body, stop=lambda m: not isinstance(m, Stmt)):
        if isinstance(n, For):
            lo, extent = _int(n.min), _int(n.extent)
            if lo is not None and extent is not None and extent > 0:
                ranges[id(n.loop_var)] = (lo, lo + extent - 1)
    return ranges


def _within_one_multiple(node: e.BinaryOp, value: Range) -> e.PrimExpr | None:
    """A division or remainder by a positive constant of a dividend in ``value`` that
    stays within one multiple of the divisor, as the quotient or the dividend; else None."""
    divisor = _int(node.b)
    if value is None or divisor is None or divisor <= 0:
        return None
    lo, hi = int(value[0]), int(value[1])
    if isinstance(node, (e.Div, e.Mod)) and lo < 0:  # C's truncation, not the floor
        return None
    if lo // divisor != hi // divisor:
        return None
    if isinstance(node, (e.FloorDiv, e.Div)):
        return e.const(lo // divisor, node.dtype)
    return node.a if lo // divisor == 0 else None


class _Simplifier(StmtExprMutator):
    """The rewrites of :func:`simplify`, bottom-up; ``loops`` ranges the loop variables."""

    def __init__(self, loops: dict[int, Range]) -> None:
        super().__init__()
        self.loops = loops
        self.ranges: dict[int, Range] = {}  # by id: the nodes are kept alive in `measured`
        self.measured: list[e.PrimExpr] = []

    def visit_binary_op(self, node: e.BinaryOp) -> e.PrimExpr:
        """Fold immediates; apply integer identities and the loops' ranges."""
        a, b = _int(node.a), _int(node.b)
        fold = _FOLD.get(type(node))
        if a is not None and b is not None and fold is not None:
            value = fold(a, b)
            if value is not None:
                if node.dtype == "bool":
                    return e.const(bool(value), "bool")
                return e.const(_wrap(int(value), node.dtype), node.dtype)
        if isinstance(node, (e.FloorDiv, e.FloorMod, e.Div, e.Mod)) and node.dtype in INT_DTYPES:
            self.measured.append(node.a)
            known = _within_one_multiple(node, index_range(node.a, self.loops,
                                                           memo=self.ranges))
            if known is not None:
                return known
        return _identity(node) or node

    def visit_not(self, node: e.Not) -> e.PrimExpr:
        """``not`` of a known bool."""
        a = _int(node.a)
        return node if a is None else e.const(not a, "bool")

    def visit_select(self, node: e.Select) -> e.PrimExpr:
        """The chosen value of a select on a known condition."""
        cond = _int(node.condition)
        if cond is None:
            return node
        return node.true_value if cond else node.false_value

    def visit_cast(self, node: e.Cast) -> e.PrimExpr:
        """A cast of an integer immediate to an integer dtype."""
        value = _int(node.value)
        if value is None or node.dtype not in INT_DTYPES:
            return node
        return e.const(_wrap(value, node.dtype), node.dtype)

    def visit_if_then_else(self, node: IfThenElse) -> Stmt:
        """The branch a known condition takes."""
        cond = _int(node.condition)
        if cond is None:
            return node
        if cond:
            return node.then_case
        return node.else_case if node.else_case is not None else Evaluate(e.const(0))

    def visit_for(self, node: For) -> Stmt:
        """The body of a loop of one iteration, at the loop's start."""
        if _int(node.extent) != 1:
            return node
        return substitute(node.body, {node.loop_var: node.min})

    def visit_seq_stmt(self, node: SeqStmt) -> Stmt:
        """Drop no-op statements (``Evaluate`` of an immediate) from a sequence."""
        kept = [s for s in node.seq
                if not (isinstance(s, Evaluate) and isinstance(s.value, e.IntImm))]
        if len(kept) == len(node.seq):
            return node
        if not kept:
            return Evaluate(e.const(0))
        return kept[0] if len(kept) == 1 else SeqStmt(kept)


#: Rounds of rewriting at most (a loop's removal can make its body foldable again).
_ROUNDS = 8


def simplify(func: PrimFunc) -> PrimFunc:
    """``func`` with its body simplified (the same object when nothing changes)."""
    body = func.body
    for _ in range(_ROUNDS):
        new = _Simplifier(_loop_ranges(body)).visit(body)
        if new is body:
            break
        body = new
    if body is func.body:
        return func
    return func.with_body(body)


@prim_func_pass(opt_level=1, name="tir.Simplify")
class Simplify:
    """Fold constants, integer identities, known branches and one-iteration loops."""

    def transform_function(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        """``func`` simplified."""
        return simplify(func)
