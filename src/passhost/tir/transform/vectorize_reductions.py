"""tir.VectorizeReductions: sums accumulated in vector lanes instead of one element.

A reduction lowered by :func:`passhost.te.lower` adds every term into one element::

    acc[0] = 0.0
    for k2 < 56: for k3 < 56: acc[0] = acc[0] + x[c, k2, k3]

Each addition waits for the one before it (the C compiler may not reorder float additions),
so the loop runs at one term per add latency. This pass first merges the reduction's loops
where :func:`~passhost.tir.transform.collapse_loops.collapse_pair` allows, then splits the
innermost one, of extent ``E >= 2 * LANES``, into :data:`LANES` partial sums::

    lanes[l] = -0.0                                   for l < LANES
    for ko < E / LANES: for l < LANES: lanes[l] = lanes[l] + x[c, ko * LANES + l]
    for kt < E % LANES: acc[0] = acc[0] + x[c, E - E % LANES + kt]
    for l < LANES: acc[0] = acc[0] + lanes[l]

and AnnotateLoops then vectorises the lane loops. A reduction step is a loop nest around one
store ``acc[i] = acc[i] + v`` (either operand order) whose indices use none of the nest's
loop variables, where ``v`` reads nothing of ``acc`` and calls only pure intrinsics, of
float32, float64 or a 32/64-bit integer. The loops of a nest whose variables the store's
indices use (a reduction into several elements) stay as they are.

The terms are the same, added in another order: an integer sum (wrapping) is unchanged, a
float sum may round differently, as NumPy's pairwise summation differs from adding in
order. -0.0 starts the lanes because it adds nothing to any value (-0.0 + +0.0 is +0.0),
so a sum of zeros keeps the sign the original order gives it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from passhost.ir.module import IRModule
from passhost.tir.expr import Add, BufferLoad, Call, IntImm, PrimExpr, Var, const
from passhost.tir.function import PrimFunc, decl_buffer
from passhost.tir.stmt import Allocate, BufferStore, DeclBuffer, For, SeqStmt, Stmt
from passhost.tir.transform.collapse_loops import collapse_pair, loop_extent
from passhost.tir.visitor import StmtExprMutator, post_order, substitute
from passhost.transform.context import PassContext
from passhost.transform.passes import prim_func_pass

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


def _term(store: Stmt) -> PrimExpr | None:
    """The ``v`` of a store ``acc[i] = acc[i] + v`` that reads nothing else of ``acc`` and
    calls only pure intrinsics, or None."""
    if not (isinstance(store, BufferStore) and isinstance(store.value, Add)
            and store.buffer.dtype in _DTYPES):
        return None
    def own(load: PrimExpr) -> bool:
        return (isinstance(load, BufferLoad) and load.buffer.data is store.buffer.data
                and len(load.indices) == len(store.indices)
                and all(map(_same_index, load.indices, store.indices)))

    a, b = store.value.a, store.value.b
    term = b if own(a) else a if own(b) else None
    if term is None:
        return None
    for n in post_order(term):
        if isinstance(n, BufferLoad) and n.buffer.data is store.buffer.data:
            return None
        if isinstance(n, Call) and not n.op.startswith("tir."):
            return None
    return term


def _reduction_nest(top: For) -> tuple[list[For], BufferStore] | None:
    """The loops of ``top``'s perfectly nested chain that reduce into its innermost store
    (a suffix of the chain: the loops the store's indices do not use), and the store."""
    chain = [top]
    while isinstance(chain[-1].body, For):
        chain.append(chain[-1].body)
    store = chain[-1].body
    if _term(store) is None:
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


def _loop(name: str, extent: int, body_of: Callable[[Var], Stmt]) -> For:
    """``for name < extent: body_of(name)``."""
    var = Var(name, "int64")
    return For(var, 0, extent, "serial", body_of(var))


def _in_lanes(loop: For) -> Stmt | None:
    """The reduction loop ``loop`` (one store in its body) as partial sums in lanes, or
    None when it is too short."""
    extent = loop_extent(loop)
    store = loop.body
    term = _term(store)
    if extent is None or extent < 2 * LANES or term is None:
        return None
    assert isinstance(store, BufferStore)
    k = loop.loop_var
    full = extent - extent % LANES
    dtype = store.buffer.dtype
    lanes = decl_buffer((LANES,), dtype, f"{store.buffer.name}_lanes")
    start = const(-0.0 if dtype.startswith("float") else 0, dtype)

    def lane_sum(ko: Var) -> Stmt:
        def step(lane: Var) -> Stmt:
            at = substitute(term, {k: ko * LANES + lane})
            return BufferStore(lanes, lanes[(lane,)] + at, (lane,))
        return _loop(f"{k.name_hint}_lane", LANES, step)

    def accumulate(value: PrimExpr) -> Stmt:
        return BufferStore(store.buffer, store.buffer[store.indices] + value, store.indices)

    parts: list[Stmt] = [
        _loop(f"{k.name_hint}_lane", LANES, lambda lane: BufferStore(lanes, start, (lane,))),
        _loop(f"{k.name_hint}_outer", full // LANES, lane_sum),
    ]
    if extent > full:
        parts.append(_loop(f"{k.name_hint}_tail", extent - full,
                           lambda kt: accumulate(substitute(term, {k: kt + full}))))
    parts.append(_loop(f"{k.name_hint}_lane", LANES,
                       lambda lane: accumulate(lanes[(lane,)])))
    return Allocate(lanes.data, dtype, lanes.shape, DeclBuffer(lanes, SeqStmt(parts)))


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
