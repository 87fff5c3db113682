"""Lowering tensor expressions to a PrimFunc of loop nests.

:func:`lower` walks the tensors the outputs depend on and decides, stage by stage, which
ones get a buffer of their own:

* outputs, reductions and placeholders always do (placeholders are parameters, or
  ``AllocateConst`` buffers for the ``constants`` given); but a reduction read by one stage
  only, of its shape and at its own indices (a mean's division, a cast), hands its result
  straight to that stage, computed in the reduction's final store;
* every other computed tensor is *inlined*: its loads are replaced by its expression at
  the loaded indices, so a chain of elementwise and injective stages becomes one loop
  nest with no buffer between them. A stage is kept in a buffer instead when inlining
  would repeat costly work: when it calls an intrinsic (``exp``, ``erf``...) and is read
  more than once, or read from a loop nest larger than itself (each element would be
  computed several times), or when its expression would grow past :data:`INLINE_LIMIT`
  nodes.

Each stage kept in a buffer becomes one loop nest over its shape (``serial`` loops; TIR
passes annotate them later); a reduction accumulates in a one-element buffer allocated
inside the loops over its result (so those loops may run in parallel), then stores it.
Consecutive stages that share their leading loops share them in one nest when each reads
the others' buffers only at those loops' own indices (a softmax over the last axis: for
every row, its max, exponentials, sum and quotients), so that a row is still in cache when
the next stage reads it; a stage that is not a reduction keeps a loop of its own inside.
The PrimFunc takes the input buffers, then the output buffers.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from passhost.errors import IRTypeError
from passhost.ir import traversal
from passhost.te.tensor import INDEX_DTYPE, Reduce, Tensor, body_exprs, compute
from passhost.tir.expr import BufferLoad, Call, PrimExpr, Var, const
from passhost.tir.function import Buffer, PrimFunc, decl_buffer
from passhost.tir.stmt import (
    Allocate,
    AllocateConst,
    BufferStore,
    DeclBuffer,
    For,
    IfThenElse,
    SeqStmt,
    Stmt,
)
from passhost.tir.visitor import StmtExprMutator, post_order, substitute

__all__ = ["INLINE_LIMIT", "lower", "stages"]

#: The largest expression (in nodes, counting each inlined use) a stage may grow to by
#: inlining the stages it reads.
INLINE_LIMIT = 256


def stages(outputs: Sequence[Tensor]) -> list[Tensor]:
    """Every tensor ``outputs`` depend on, producers before their consumers."""
    return traversal.post_order(outputs, lambda t: t.inputs)


def _iterations(tensor: Tensor) -> int:
    """How many times the stage's body is evaluated."""
    count = math.prod(tensor.shape)
    if isinstance(tensor.body, Reduce):
        count *= math.prod(a.extent for a in tensor.body.axes)
    return count


def _size(exprs: Sequence[PrimExpr]) -> int:
    return len(post_order(list(exprs)))


def _calls_intrinsic(exprs: Sequence[PrimExpr]) -> bool:
    return any(isinstance(n, Call) for n in post_order(list(exprs)))


class _Inliner(StmtExprMutator):
    """Replaces loads of inlined stages by their (already expanded) expressions."""

    def __init__(self, inlined: Mapping[int, tuple[Tensor, PrimExpr]]) -> None:
        super().__init__()
        self.inlined = inlined

    def visit_buffer_load(self, load: BufferLoad) -> PrimExpr:
        """The inlined stage's expression at the loaded indices, or the load itself."""
        entry = self.inlined.get(id(load.buffer))
        if entry is None:
            return load
        tensor, body = entry
        return substitute(body, dict(zip(tensor.axes, load.indices)))


class _Narrowed(StmtExprMutator):
    """Accesses of the buffers in ``narrow`` (id -> narrower buffer) without their
    ``depth`` leading indices (index 0 where none is left)."""

    def __init__(self, narrow: Mapping[int, Buffer], depth: int) -> None:
        super().__init__()
        self.narrow = narrow
        self.depth = depth

    def _indices(self, indices: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        return tuple(indices[self.depth:]) or (const(0, INDEX_DTYPE),)

    def visit_buffer_load(self, load: BufferLoad) -> PrimExpr:
        """A load of a narrowed buffer from the narrower one."""
        buffer = self.narrow.get(id(load.buffer))
        return load if buffer is None else BufferLoad(buffer, self._indices(load.indices))

    def visit_buffer_store(self, store: BufferStore) -> Stmt:
        """A store into a narrowed buffer into the narrower one."""
        buffer = self.narrow.get(id(store.buffer))
        return (store if buffer is None
                else BufferStore(buffer, store.value, self._indices(store.indices)))


class _LoadsReplaced(StmtExprMutator):
    """Replaces every load of ``buffer`` by ``value``."""

    def __init__(self, buffer: Buffer, value: PrimExpr) -> None:
        super().__init__()
        self.buffer = buffer
        self.value = value

    def visit_buffer_load(self, load: BufferLoad) -> PrimExpr:
        """``value`` for a load of ``buffer``, else the load."""
        return self.value if load.buffer is self.buffer else load


def _loads(exprs: Sequence[PrimExpr]) -> dict[int, int]:
    """Buffer id -> how many loads of it ``exprs`` hold."""
    counts: dict[int, int] = {}
    for node in post_order(list(exprs)):
        if isinstance(node, BufferLoad):
            counts[id(node.buffer)] = counts.get(id(node.buffer), 0) + 1
    return counts


class _Plan:
    """Which stages are inlined, and the expanded body of every stage."""

    def __init__(self, order: list[Tensor], outputs: Sequence[Tensor]) -> None:
        kept = {id(t) for t in outputs}
        readers: dict[int, list[tuple[Tensor, int]]] = {}
        for tensor in order:
            if tensor.body is None:
                continue
            for buffer_id, count in _loads(body_exprs(tensor.body)).items():
                readers.setdefault(buffer_id, []).append((tensor, count))
        self.inlined: dict[int, tuple[Tensor, PrimExpr]] = {}
        self.bodies: dict[int, PrimExpr | Reduce] = {}
        for tensor in order:
            if tensor.body is None:
                continue
            body = self._expand(tensor.body)
            self.bodies[id(tensor)] = body
            if id(tensor) in kept or isinstance(body, Reduce):
                continue
            uses = readers.get(id(tensor.buffer), [])
            if self._inlinable(tensor, body, uses):
                self.inlined[id(tensor.buffer)] = (tensor, body)
        self.epilogues = self._epilogues(order, kept)

    def _epilogues(self, order: list[Tensor], kept: set[int]) -> dict[int, Tensor]:
        """id(reduction) -> the one stage reading it, when that stage can be computed in
        the reduction's final store: same shape, reads the reduction only at its own
        indices, and reads nothing stored after the reduction."""
        position = {id(t.buffer): n for n, t in enumerate(order)}
        stored = [t for t in order if t.body is not None and id(t.buffer) not in self.inlined]
        readers: dict[int, list[Tensor]] = {}
        for tensor in stored:
            for buffer_id in _loads(body_exprs(self.bodies[id(tensor)])):
                readers.setdefault(buffer_id, []).append(tensor)
        out: dict[int, Tensor] = {}
        for reduction in stored:
            users = readers.get(id(reduction.buffer), [])
            if (not isinstance(reduction.body, Reduce) or id(reduction) in kept
                    or len(users) != 1):
                continue
            (user,) = users
            body = self.bodies[id(user)]
            if isinstance(body, Reduce) or user.shape != reduction.shape:
                continue
            loads = [n for n in post_order([body]) if isinstance(n, BufferLoad)]
            own = all(len(n.indices) == len(user.axes)
                      and all(i is a for i, a in zip(n.indices, user.axes))
                      for n in loads if n.buffer is reduction.buffer)
            earlier = all(position.get(id(n.buffer), -1) < position[id(reduction.buffer)]
                          for n in loads if n.buffer is not reduction.buffer)
            if own and earlier:
                out[id(reduction)] = user
        return out

    def _expand(self, body: PrimExpr | Reduce) -> PrimExpr | Reduce:
        inliner = _Inliner(self.inlined)
        if isinstance(body, Reduce):
            where = None if body.where is None else inliner.visit(body.where)
            return Reduce(body.reducer, inliner.visit(body.source), body.axes, where)
        return inliner.visit(body)

    @staticmethod
    def _inlinable(tensor: Tensor, body: PrimExpr, uses: list[tuple[Tensor, int]]) -> bool:
        sites = sum(count for _, count in uses)
        if _size([body]) * max(sites, 1) > INLINE_LIMIT:
            return False
        if not _calls_intrinsic([body]):
            return True
        size = math.prod(tensor.shape)
        return sites <= 1 and all(_iterations(reader) <= size for reader, _ in uses)


def _loop_nest(axes: Sequence[Any], extents: Sequence[int], body: Stmt) -> Stmt:
    for var, extent in zip(reversed(axes), reversed(extents)):
        body = For(var, const(0, INDEX_DTYPE), const(extent, INDEX_DTYPE), "serial", body)
    return body


def _stage_stmt(tensor: Tensor, body: PrimExpr | Reduce,
                epilogue: tuple[Tensor, PrimExpr] | None = None) -> Stmt:
    """The loop nest storing every element of ``tensor``; a reduction's accumulator is
    allocated inside the loops over the result, so every element has its own. With an
    ``epilogue`` (a stage and its body reading the reduction at its own indices), the
    final store computes that stage instead of storing the reduction."""
    out = tensor.buffer
    if not isinstance(body, Reduce):
        return _loop_nest(tensor.axes, tensor.shape, BufferStore(out, body, tensor.axes))
    acc = decl_buffer((1,), body.dtype, f"{tensor.name}_acc")
    zero = (const(0, INDEX_DTYPE),)
    # Each stage binds reduction variables of its own, even where computes share an axis.
    fresh = {a.var: Var(a.var.name_hint, INDEX_DTYPE) for a in body.axes}
    step: Stmt = BufferStore(acc, body.reducer.combine(acc[zero],
                                                       substitute(body.source, fresh)), zero)
    if body.where is not None:
        step = IfThenElse(substitute(body.where, fresh), step)
    inner = _loop_nest(list(fresh.values()), [a.extent for a in body.axes], step)
    final = BufferStore(out, acc[zero], tensor.axes)
    if epilogue is not None:
        user, value = epilogue
        value = substitute(value, dict(zip(user.axes, tensor.axes)))
        value = _LoadsReplaced(out, acc[zero]).visit(value)
        final = BufferStore(user.buffer, value, tensor.axes)
    seq = SeqStmt([BufferStore(acc, body.reducer.identity(body.dtype), zero), inner, final])
    scoped = Allocate(acc.data, acc.dtype, acc.shape, DeclBuffer(acc, seq))
    return _loop_nest(tensor.axes, tensor.shape, scoped)


def _shared_depth(stage: Tensor, stored: Tensor, stmt: Stmt, written: Collection[int],
                  extents: Sequence[int], depth: int) -> int:
    """How many of the leading loops (``extents``, at most ``depth``) ``stage``'s nest
    ``stmt`` can share with the stages before it, which wrote the buffers in ``written``
    (ids): its loops' extents must match, and every load of those buffers
    must index them by its own leading loop variables; a stage that is not a reduction keeps
    one loop of its own."""
    own = len(stored.shape) - (0 if isinstance(stage.body, Reduce) else 1)
    depth = min(depth, own)
    while depth and tuple(stage.shape[:depth]) != tuple(extents[:depth]):
        depth -= 1
    for node in post_order(stmt):
        if not depth:
            break
        if isinstance(node, BufferLoad) and id(node.buffer) in written:
            same = 0
            while (same < min(depth, len(node.indices))
                   and node.indices[same] is stage.axes[same]):
                same += 1
            depth = same
    return depth


def _peel(stmt: Stmt, depth: int) -> Stmt:
    """``stmt`` without its ``depth`` outermost loops."""
    for _ in range(depth):
        assert isinstance(stmt, For)
        stmt = stmt.body
    return stmt


def _loaded(stmt: Stmt) -> set[int]:
    """The ids of the buffers ``stmt`` loads from."""
    return {id(n.buffer) for n in post_order(stmt) if isinstance(n, BufferLoad)}


def _grouped(nests: Sequence[tuple[Tensor, Tensor, Stmt]],
             allocated: Sequence[Buffer]) -> tuple[list[Stmt], set[int]]:
    """The loop nests of ``nests`` (stage, tensor it stores, nest), consecutive ones that
    can share leading loops put under one set of them (see the module docstring); and the
    ids of the ``allocated`` buffers that moved inside such loops: a buffer stored and read
    only within one group is narrowed to its trailing dimensions there."""
    loads = [_loaded(stmt) for _, _, stmt in nests]
    local = {id(b) for b in allocated}
    out: list[Stmt] = []
    moved: set[int] = set()
    start, depth = 0, 0
    written: set[int] = set()

    def close(end: int) -> None:
        group = nests[start:end]
        if len(group) == 1:
            out.append(group[0][2])
            return
        lead = group[0][0]
        narrow = {}
        for _, stored, _ in group:
            key = id(stored.buffer)
            if key in local and not any(key in loads[n] for n in range(len(nests))
                                        if not start <= n < end):
                narrow[key] = decl_buffer(tuple(stored.shape[depth:]) or (1,),
                                          stored.buffer.dtype, stored.name)
        rewrite = _Narrowed(narrow, depth)
        body: Stmt = SeqStmt([rewrite.visit(substitute(
            _peel(stmt, depth), dict(zip(stage.axes[:depth], lead.axes[:depth]))))
            for stage, _, stmt in group])
        for buffer in reversed(list(narrow.values())):
            body = Allocate(buffer.data, buffer.dtype, buffer.shape, DeclBuffer(buffer, body))
        moved.update(narrow)
        out.append(_loop_nest(lead.axes[:depth], lead.shape[:depth], body))

    for n, (stage, stored, stmt) in enumerate(nests):
        shared = (_shared_depth(stage, stored, stmt, written, nests[start][0].shape, depth)
                  if n > start else 0)
        if n > start and not shared:
            close(n)
            start, written = n, set()
        depth = shared or len(stage.shape)
        written.add(id(stored.buffer))
    if nests:
        close(len(nests))
    return out, moved


def _copies(outputs: Sequence[Tensor]) -> list[Tensor]:
    """The outputs, with a copying stage for each placeholder and repeated output (every
    output needs a buffer of its own)."""
    out: list[Tensor] = []
    seen: set[int] = set()
    for tensor in outputs:
        if tensor.is_placeholder or id(tensor) in seen:
            source = tensor
            tensor = compute(source.shape, lambda *i, s=source: s[i], name=f"{source.name}_copy")
        seen.add(id(tensor))
        out.append(tensor)
    return out


def lower(outputs: Sequence[Tensor], inputs: Sequence[Tensor], name: str, *,
          constants: Mapping[Tensor, np.ndarray] | None = None,
          attrs: Mapping[str, Any] | None = None) -> PrimFunc:
    """The PrimFunc ``name`` computing ``outputs`` from the placeholders ``inputs`` (its
    parameters: the input buffers, then the output buffers). ``constants`` gives the data
    of placeholders that are not inputs; ``attrs`` are added to the function's."""
    outputs = _copies(outputs)
    constants = dict(constants or {})
    order = stages(outputs)
    given = {id(t) for t in inputs} | {id(t) for t in constants}
    for tensor in order:
        if tensor.is_placeholder and id(tensor) not in given:
            raise IRTypeError(f"lower {name}: placeholder {tensor.name} is neither an input "
                              f"nor a constant")
    plan = _Plan(order, outputs)
    output_ids = {id(t) for t in outputs}
    allocated: list[Buffer] = []
    nests: list[tuple[Tensor, Tensor, Stmt]] = []
    folded = {id(user) for user in plan.epilogues.values()}
    for tensor in order:
        if tensor.body is None or id(tensor.buffer) in plan.inlined or id(tensor) in folded:
            continue
        user = plan.epilogues.get(id(tensor))
        stored = tensor if user is None else user
        if id(stored) not in output_ids:
            allocated.append(stored.buffer)
        epilogue = None if user is None else (user, plan.bodies[id(user)])
        nests.append((tensor, stored, _stage_stmt(tensor, plan.bodies[id(tensor)], epilogue)))
    stmts, moved = _grouped(nests, allocated)
    body: Stmt = stmts[0] if len(stmts) == 1 else SeqStmt(stmts)
    for buf in reversed([b for b in allocated if id(b) not in moved]):
        body = Allocate(buf.data, buf.dtype, buf.shape, DeclBuffer(buf, body))
    for tensor, data in reversed(list(constants.items())):
        buf = tensor.buffer
        if any(t is tensor for t in order):
            body = AllocateConst(buf.data, buf.dtype, buf.shape, np.asarray(data, buf.dtype),
                                 DeclBuffer(buf, body))
    params = [t.buffer for t in (*inputs, *outputs)]
    return PrimFunc([b.data for b in params], {b.data: b for b in params}, body,
                    attrs={"global_symbol": name, "tir.noalias": True, **(attrs or {})})
