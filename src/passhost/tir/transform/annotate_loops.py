"""AnnotateLoops: mark which loops run in parallel and which are vectorised.

For each outermost loop nest of a PrimFunc:

* **parallel**: along the chain of perfectly nested loops from the outermost, the first loop
  with at least :data:`MIN_PARALLEL_EXTENT` iterations (else the longest) becomes
  ``parallel`` when the whole nest does at least :data:`MIN_PARALLEL_WORK` innermost steps
  and its iterations are independent;
* **vectorized**: an innermost loop (no loop inside it) becomes ``vectorized`` when its
  iterations are independent and every store it makes is contiguous in it (its loop variable
  is the store's last index).

Iterations of a loop are independent when every buffer the loop writes, other than those
allocated inside it, is written and read only at the loop variable in one index position
(so two iterations never touch one element), and the loop calls nothing but pure math
intrinsics. Loops already marked are left alone.
"""

from __future__ import annotations

from passhost.ir.module import IRModule
from passhost.tir.expr import BufferLoad, Call
from passhost.tir.function import PrimFunc
from passhost.tir.stmt import Allocate, AllocateConst, BufferStore, For, SeqStmt, Stmt
from passhost.tir.transform.prim_func_pass import prim_func_pass
from passhost.tir.visitor import StmtExprMutator, post_order
from passhost.transform.context import PassContext

__all__ = [
    "MIN_PARALLEL_EXTENT", "MIN_PARALLEL_WORK", "AnnotateLoops", "independent", "loop_kinds",
    "outermost_loops",
]

#: A nest doing fewer innermost steps than this runs on one thread (a parallel region
#: costs a few microseconds to start).
MIN_PARALLEL_WORK = 1 << 15
#: The smallest extent preferred for the parallel loop of a nest.
MIN_PARALLEL_EXTENT = 8


def _pure(call: Call) -> bool:
    return call.op.startswith("tir.")


def independent(loop: For) -> bool:
    """Whether no two iterations of ``loop`` touch one element of a buffer that lives
    outside it, and the loop calls only pure intrinsics."""
    var = loop.loop_var
    nodes = post_order(loop.body)
    local = {id(n.buffer_var) for n in nodes if isinstance(n, (Allocate, AllocateConst))}
    accesses: dict[int, list[tuple[tuple, bool]]] = {}
    for n in nodes:
        if isinstance(n, Call) and not _pure(n):
            return False
        if isinstance(n, (BufferLoad, BufferStore)) and id(n.buffer.data) not in local:
            accesses.setdefault(id(n.buffer.data), []).append(
                (n.indices, isinstance(n, BufferStore)))
    for uses in accesses.values():
        if not any(is_store for _, is_store in uses):
            continue
        positions = set.intersection(*(
            {p for p, index in enumerate(indices) if index is var} for indices, _ in uses))
        if not positions or len({len(indices) for indices, _ in uses}) != 1:
            return False
    return True


def _work(root: Stmt) -> dict[int, int]:
    """id(statement) -> how many innermost steps it runs (loops multiply their bodies')."""
    work: dict[int, int] = {}
    for n in post_order(root, stop=lambda m: not isinstance(m, Stmt)):
        if isinstance(n, For):
            extent = getattr(n.extent, "value", 1)
            work[id(n)] = extent * work.get(id(n.body), 1)
        elif isinstance(n, SeqStmt):
            work[id(n)] = sum(work.get(id(s), 1) for s in n.seq)
        elif isinstance(n, Stmt):
            body = getattr(n, "body", None)
            work[id(n)] = work.get(id(body), 1) if body is not None else 1
    return work


def outermost_loops(body: Stmt) -> list[For]:
    """The loops of ``body`` with no loop around them, in order."""
    out: list[For] = []
    stack = [body]
    while stack:
        s = stack.pop()
        if isinstance(s, For):
            out.append(s)
        elif isinstance(s, SeqStmt):
            stack.extend(reversed(s.seq))
        elif isinstance(getattr(s, "body", None), Stmt):
            stack.append(s.body)
        for branch in ("then_case", "else_case"):
            if isinstance(getattr(s, branch, None), Stmt):
                stack.append(getattr(s, branch))
    return out


def _parallel_candidate(nest: For) -> For:
    chain = [nest]
    while isinstance(chain[-1].body, For):
        chain.append(chain[-1].body)
    for loop in chain:
        if getattr(loop.extent, "value", 0) >= MIN_PARALLEL_EXTENT:
            return loop
    return max(chain, key=lambda loop: getattr(loop.extent, "value", 0))


def _vectorizable(loop: For) -> bool:
    nodes = post_order(loop.body)
    if any(isinstance(n, (For, Allocate, AllocateConst)) for n in nodes):
        return False
    stores = [n for n in nodes if isinstance(n, BufferStore)]
    return bool(stores) and all(s.indices and s.indices[-1] is loop.loop_var
                                for s in stores) and independent(loop)


def loop_kinds(func: PrimFunc) -> dict[int, str]:
    """id(loop variable) -> the kind AnnotateLoops gives its loop (serial ones left out)."""
    kinds: dict[int, str] = {}
    work = _work(func.body)
    for nest in outermost_loops(func.body):
        if nest.kind != "serial":
            continue
        loop = _parallel_candidate(nest)
        if (work.get(id(nest), 0) >= MIN_PARALLEL_WORK and loop.kind == "serial"
                and getattr(loop.extent, "value", 0) >= 2 and independent(loop)):
            kinds[id(loop.loop_var)] = "parallel"
        for inner in post_order(nest, stop=lambda m: not isinstance(m, Stmt)):
            if (isinstance(inner, For) and inner.kind == "serial"
                    and id(inner.loop_var) not in kinds and _vectorizable(inner)):
                kinds[id(inner.loop_var)] = "vectorized"
    return kinds


class _Marker(StmtExprMutator):
    def __init__(self, kinds: dict[int, str]) -> None:
        super().__init__()
        self.kinds = kinds

    def visit_for(self, loop: For) -> For:
        """The loop with its new kind, if it has one."""
        kind = self.kinds.get(id(loop.loop_var))
        if kind is None or kind == loop.kind:
            return loop
        return For(loop.loop_var, loop.min, loop.extent, kind, loop.body, span=loop.span)


@prim_func_pass(opt_level=2, name="tir.AnnotateLoops")
class AnnotateLoops:
    """Mark parallel and vectorised loops (see the module docstring)."""

    def transform_function(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        """``func`` with its loops marked."""
        kinds = loop_kinds(func)
        if not kinds:
            return func
        body = _Marker(kinds).visit(func.body)
        return func.with_body(body)
