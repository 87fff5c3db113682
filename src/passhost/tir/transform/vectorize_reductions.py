"""tir.VectorizeReductions: reductions accumulated in vector lanes instead of one element.

A reduction lowered by :func:`passhost.te.lower` combines every term into one element::

    acc[0] = 0.0
    for k2 < 56: for k3 < 56: acc[0] = acc[0] + x[c, k2, k3]

Each step waits for the one before it (the C compiler may not reorder float additions), so
the loop runs at one term per add latency. This pass first merges the reduction's loops
where :func:`~passhost.tir.transform.collapse_loops.collapse_pair` allows, then splits the
innermost one, of extent ``E >= 2 * LANES``, into :data:`LANES` partial results::

    lanes[l] = identity                               for l < LANES
    for ko < E / LANES: for l < LANES: lanes[l] = lanes[l] + x[c, ko * LANES + l]
    for kt < E % LANES: lanes[kt] = lanes[kt] + x[c, E - E % LANES + kt]
    for h = LANES / 2, ..., 1: for l < h: lanes[l] = lanes[l] + lanes[l + h]
    acc[0] = acc[0] + lanes[0]

and AnnotateLoops then vectorises the lane loops (the tree at the end keeps the lanes'
combination short too: a row of 197 terms spent most of its time adding 32 lanes one
after another). A reduction step is a loop nest around one
store ``acc[i] = combine(acc[i], x)`` whose indices use none of the nest's loop variables,
where ``x`` reads nothing of ``acc`` and calls only pure intrinsics, of float32, float64 or
a 32/64-bit integer, and ``combine`` is one of:

* a sum (either operand order); its lanes start at -0.0, which adds nothing to any value
  (-0.0 + +0.0 is +0.0), so a sum of zeros keeps the sign the original order gives it;
* a maximum or minimum (from the type's lowest or highest value; float ``Max``/``Min``
  return NaN when an operand is NaN, docs/targets.md), or the NaN-propagating select
  ``select(isnan(x) || x > acc, x, acc)`` of the TE reducers (``<`` for the minimum), from
  -inf or +inf: the result is NaN when any term is.

The loops of a nest whose variables the store's indices use (a reduction into several
elements) stay as they are. The terms are the same, combined in another order: integer
results and extremes are unchanged (up to the sign of a zero extreme), a float sum may
round differently, as NumPy's pairwise summation differs from adding in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np
from attrs import frozen

from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal
from passhost.tir.expr import (
    GT,
    LT,
    Add,
    BufferLoad,
    Call,
    CmpOp,
    IntImm,
    Max,
    Min,
    Or,
    PrimExpr,
    Select,
    Var,
    const,
)
from passhost.tir.function import PrimFunc, decl_buffer
from passhost.tir.intrinsics import intrinsic_call
from passhost.tir.stmt import Allocate, BufferStore, DeclBuffer, For, SeqStmt, Stmt
from passhost.tir.transform.collapse_loops import collapse_pair, loop_extent
from passhost.tir.transform.prim_func_pass import prim_func_pass
from passhost.tir.visitor import StmtExprMutator, post_order, substitute
from passhost.transform.context import PassContext

__all__ = ["LANES", "VectorizeReductions", "vectorize_reductions"]

#: Partial sums per reduction: two 16-lane float32 vectors, so that two additions are in
#: flight at once on AVX-512 (four on AVX2).
LANES = 32

_DTYPES = ("float32", "float64", "int32", "int64")


def _same_index(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether two index expressions are the same variable or the same constant."""
    if a is b:
        return True
    return isinstance(a, IntImm) and isinstance(b, IntImm) and a.value == b.value


@frozen
class _Step:
    """One reduction step ``acc[i] = combine(acc[i], term)``: its term, its combine and
    the combine's identity (what the lanes start from)."""

    term: PrimExpr
    combine: Callable[[PrimExpr, PrimExpr], PrimExpr]
    identity: PrimExpr


def _extremes(dtype: str) -> tuple[PrimExpr, PrimExpr]:
    """The lowest and highest values of ``dtype`` (infinities for floats)."""
    if dtype.startswith("float"):
        return const(-math.inf, dtype), const(math.inf, dtype)
    info = np.iinfo(dtype)
    return const(int(info.min), dtype), const(int(info.max), dtype)


def _propagating(beats: type[CmpOp]) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    """The combine of a NaN-propagating maximum (``beats`` GT) or minimum (LT)."""
    def combine(acc: PrimExpr, x: PrimExpr) -> PrimExpr:
        return Select(Or(intrinsic_call("tir.isnan", x), beats(x, acc)), x, acc)
    return combine


def _step(store: Stmt) -> _Step | None:
    """The reduction step ``store`` is, or None: a sum, a maximum or minimum, or the
    select that propagates NaN (``select(isnan(x) || x > acc, x, acc)``), whose term
    reads nothing of ``acc`` and calls only pure intrinsics."""
    if not (isinstance(store, BufferStore) and store.buffer.dtype in _DTYPES):
        return None

    def own(load: PrimExpr) -> bool:
        return (isinstance(load, BufferLoad) and load.buffer.data is store.buffer.data
                and len(load.indices) == len(store.indices)
                and all(map(_same_index, load.indices, store.indices)))

    value, dtype = store.value, store.buffer.dtype
    lowest, highest = _extremes(dtype)
    found: _Step | None = None
    if isinstance(value, (Add, Max, Min)) and (own(value.a) or own(value.b)):
        term = value.b if own(value.a) else value.a
        if isinstance(value, Add):
            found = _Step(term, Add, const(-0.0 if dtype.startswith("float") else 0, dtype))
        else:
            found = _Step(term, type(value), lowest if isinstance(value, Max) else highest)
    elif (isinstance(value, Select) and own(value.false_value)
          and isinstance(cond := value.condition, Or) and isinstance(cond.a, Call)
          and cond.a.op == "tir.isnan" and len(cond.a.args) == 1
          and structural_equal(cond.a.args[0], value.true_value)
          and isinstance(cond.b, (GT, LT)) and structural_equal(cond.b.a, value.true_value)
          and own(cond.b.b)):
        found = _Step(value.true_value, _propagating(type(cond.b)),
                      lowest if isinstance(cond.b, GT) else highest)
    if found is None:
        return None
    for n in post_order(found.term):
        if isinstance(n, BufferLoad) and n.buffer.data is store.buffer.data:
            return None
        if isinstance(n, Call) and not n.op.startswith("tir."):
            return None
    return found


def _reduction_nest(top: For) -> tuple[list[For], BufferStore] | None:
    """The loops of ``top``'s perfectly nested chain that reduce into its innermost store
    (a suffix of the chain: the loops the store's indices do not use), and the store."""
    chain = [top]
    while isinstance(chain[-1].body, For):
        chain.append(chain[-1].body)
    store = chain[-1].body
    if _step(store) is None:
        return None
    index_vars = {id(n) for index in store.indices for n in post_order(index)
                  if isinstance(n, Var)}
    start = len(chain)
    while start > 0 and id(chain[start - 1].loop_var) not in index_vars:
        start -= 1
    loops = chain[start:]
    if not loops or any(loop_extent(loop) is None for loop in loops):
        return None
    return loops, store  # type: ignore[return-value]


def _loop(name: str, extent: int, body_of: Callable[[PrimExpr], Stmt]) -> Stmt:
    """``for name < extent: body_of(name)``, or ``body_of(0)`` for one iteration."""
    if extent == 1:
        return body_of(const(0, "int64"))
    var = Var(name, "int64")
    return For(var, 0, extent, "serial", body_of(var))


def _in_lanes(loop: For) -> Stmt | None:
    """The reduction loop ``loop`` (one store in its body) in lanes, or None when it is
    too short."""
    extent = loop_extent(loop)
    store = loop.body
    step = _step(store)
    if extent is None or extent < 2 * LANES or step is None:
        return None
    assert isinstance(store, BufferStore)
    k = loop.loop_var
    full = extent - extent % LANES
    lanes = decl_buffer((LANES,), store.buffer.dtype, f"{store.buffer.name}_lanes")

    def into_lane(lane: PrimExpr, term: PrimExpr) -> Stmt:
        return BufferStore(lanes, step.combine(lanes[(lane,)], term), (lane,))

    def lane_step(ko: PrimExpr) -> Stmt:
        return _loop(f"{k.name_hint}_lane", LANES,
                     lambda lane: into_lane(lane, substitute(step.term, {k: ko * LANES + lane})))

    parts: list[Stmt] = [
        _loop(f"{k.name_hint}_lane", LANES,
              lambda lane: BufferStore(lanes, step.identity, (lane,))),
        _loop(f"{k.name_hint}_outer", full // LANES, lane_step),
    ]
    if extent > full:
        parts.append(_loop(f"{k.name_hint}_tail", extent - full,
                           lambda kt: into_lane(kt, substitute(step.term, {k: kt + full}))))
    half = LANES // 2
    while half >= 1:  # a tree: lane l takes lane l + half, for half = LANES / 2, ..., 1
        parts.append(_loop(f"{k.name_hint}_lane", half,
                           lambda lane, h=half: into_lane(lane, lanes[(lane + h,)])))
        half //= 2
    zero = (const(0, "int64"),)
    parts.append(BufferStore(store.buffer, step.combine(store.buffer[store.indices],
                                                        lanes[zero]), store.indices))
    return Allocate(lanes.data, lanes.dtype, lanes.shape, DeclBuffer(lanes, SeqStmt(parts)))


def _vectorized(top: For) -> Stmt | None:
    """The reduction nest starting in ``top``'s chain with its loops merged and its sum
    in lanes (``top`` itself rebuilt around it), or None when it has none to change."""
    found = _reduction_nest(top)
    if found is None:
        return None
    loops, _ = found
    inner = merged_from = loops[-1]
    for outer in reversed(loops[:-1]):
        pair = collapse_pair(outer, inner)
        if pair is None:
            break
        inner, merged_from = pair, outer
    reduced = _in_lanes(inner)
    if reduced is None:
        return None
    around = [top]  # the loops of the chain outside the merged ones
    while around[-1] is not merged_from:
        around.append(around[-1].body)  # type: ignore[arg-type]
    body: Stmt = reduced
    for loop in reversed(around[:-1]):
        body = attrs.evolve(loop, body=body)
    return body


class _Rewriter(StmtExprMutator):
    def __init__(self, tops: set[int]) -> None:
        super().__init__()
        self.tops = tops

    def visit_for(self, loop: For) -> Stmt:
        """A chain top with its reduction in lanes, or the loop as it is."""
        if id(loop) not in self.tops:
            return loop
        return _vectorized(loop) or loop


def vectorize_reductions(func: PrimFunc) -> PrimFunc:
    """``func`` with its sum reductions accumulated in lanes (see the module docstring)."""
    nodes = post_order(func.body, stop=lambda n: not isinstance(n, Stmt))
    inner = {id(n.body) for n in nodes if isinstance(n, For)}
    tops = {id(n) for n in nodes if isinstance(n, For) and id(n) not in inner
            and _reduction_nest(n) is not None}
    if not tops:
        return func
    body = _Rewriter(tops).visit(func.body)
    return func if body is func.body else func.with_body(body)


@prim_func_pass(opt_level=2, name="tir.VectorizeReductions")
class VectorizeReductions:
    """Accumulate sum reductions in vector lanes (see the module docstring)."""

    def transform_function(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        """``func`` with its sums in lanes."""
        return vectorize_reductions(func)
