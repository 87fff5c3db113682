"""tir.ReuseBuffers: allocations whose lifetimes do not overlap share memory.

The allocations at the top of a PrimFunc (the buffers its stages keep, as
:func:`passhost.te.lower` and the kernel-call lowering place them) hold for the whole
function, though each is used by a few consecutive statements of its body. This pass finds,
for each one, the first and last statement of the body's sequence that use it, and gives
allocations of one dtype whose spans do not overlap one allocation (as large as the largest
of them): each keeps its buffer, now a view of the shared memory. A function whose
allocations all overlap is left as it is.
"""

from __future__ import annotations

from attrs import define

from passhost.ir.module import IRModule
from passhost.tir.expr import Var
from passhost.tir.function import Buffer, PrimFunc
from passhost.tir.stmt import Allocate, AllocateConst, DeclBuffer, SeqStmt, Stmt
from passhost.tir.transform.prim_func_pass import prim_func_pass
from passhost.tir.visitor import StmtExprMutator, post_order
from passhost.transform.context import PassContext

__all__ = ["ReuseBuffers", "reuse_buffers"]


@define
class _Slot:
    """One shared allocation: its pointer, dtype, elements and last user statement."""

    var: Var
    dtype: str
    size: int
    end: int


def _peel(body: Stmt) -> tuple[list[Stmt], Stmt]:
    """The leading allocation and declaration statements (outermost first), and what they
    scope over."""
    head: list[Stmt] = []
    while isinstance(body, (Allocate, AllocateConst, DeclBuffer)):
        head.append(body)
        body = body.body
    return head, body


def _spans(items: tuple[Stmt, ...], pointers: set[int]) -> dict[int, tuple[int, int]]:
    """id(pointer) -> (first, last) index of the statements in ``items`` using it."""
    spans: dict[int, tuple[int, int]] = {}
    for index, item in enumerate(items):
        for node in post_order(item):
            key = id(node.data) if isinstance(node, Buffer) else id(node)
            if key in pointers:
                first = spans.get(key, (index, index))[0]
                spans[key] = (first, index)
    return spans


class _Rebase(StmtExprMutator):
    """Replaces buffers by their views of the shared allocations."""

    def __init__(self, views: dict[int, Buffer]) -> None:
        super().__init__()
        self.views = views

    def visit_buffer(self, buf: Buffer) -> Buffer:
        """The view of ``buf``'s shared allocation, if it has one."""
        return self.views.get(id(buf.data), buf)


def reuse_buffers(func: PrimFunc) -> PrimFunc:
    """``func`` with the allocations at its top shared where their lifetimes allow."""
    head, core = _peel(func.body)
    if not isinstance(core, SeqStmt):
        return func
    allocations = [s for s in head if isinstance(s, Allocate)]
    spans = _spans(core.seq, {id(a.buffer_var) for a in allocations})
    slots: list[_Slot] = []
    slot_of: dict[int, _Slot] = {}
    for alloc in sorted(allocations, key=lambda a: spans.get(id(a.buffer_var), (-1, -1))):
        first, last = spans.get(id(alloc.buffer_var), (-1, -1))
        size = 1
        for extent in alloc.extents:
            size *= extent
        free = [s for s in slots if s.dtype == alloc.dtype and s.end < first]
        if free:
            slot = max(free, key=lambda s: s.size)
            slot.size, slot.end = max(slot.size, size), last
        else:
            slot = _Slot(alloc.buffer_var, alloc.dtype, size, last)
            slots.append(slot)
        slot_of[id(alloc.buffer_var)] = slot
    if len(slots) == len(allocations):
        return func
    views: dict[int, Buffer] = {}
    for stmt in head:
        if isinstance(stmt, DeclBuffer) and id(stmt.buffer.data) in slot_of:
            b = stmt.buffer
            views[id(b.data)] = Buffer(slot_of[id(b.data)].var, b.dtype, b.shape, b.name,
                                       b.scope)
    body: Stmt = _Rebase(views).visit(core)
    for view in views.values():
        body = DeclBuffer(view, body)
    for stmt in reversed(head):
        if isinstance(stmt, AllocateConst):
            body = AllocateConst(stmt.buffer_var, stmt.dtype, stmt.extents, stmt.data, body)
        elif isinstance(stmt, DeclBuffer) and id(stmt.buffer.data) not in slot_of:
            body = DeclBuffer(stmt.buffer, body)
    for slot in slots:
        body = Allocate(slot.var, slot.dtype, (slot.size,), body)
    return func.with_body(body)


@prim_func_pass(opt_level=2, name="tir.ReuseBuffers")
class ReuseBuffers:
    """Share memory between allocations whose lifetimes do not overlap."""

    def transform_function(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        """``func`` with its allocations shared where possible."""
        return reuse_buffers(func)
