"""Executor codegen: the executor plan of a lowered ``main``, with a memory plan.

After lowering, ``main`` only calls PrimFuncs (through GlobalVars), builds tuples and
projects them. Each call becomes a step; every tensor a step writes gets a storage block of
its own, at an offset in one arena. A tensor's block takes the lowest offset where it
overlaps no tensor still to be read (first fit); when a tensor's last reader has run, its
bytes are free for the tensors written after. Graph outputs keep theirs. So the arena's
low end is written again and again: a step's output mostly lands on bytes that recent
steps wrote, still in the cache, where a block of its own, last written one inference
ago, would be fetched from memory first (``benchmarks/memory_plan.py``). Constants become
named parameters ``p0``, ``p1``...
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

import numpy as np

from passhost.backend.lower_primitive import LoweringError, flatten_type, leaves
from passhost.ir.expr import GlobalVar
from passhost.ir.types import TensorType, TupleType
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order
from passhost.runtime.aligned import CACHE_LINE
from passhost.runtime.plan import ExecutorPlan, Step, TensorEntry

__all__ = ["plan_executor"]

Ref = int | tuple  # a tensor index, or a tuple of refs


#: Bytes kept free after every block: a page and a cache line, so that blocks placed end
#: to end start at different offsets within a page (measured on ResNet-50 at one and two
#: threads: without the gap, 1.7% slower than blocks allocated one by one; with it, even).
BLOCK_GAP = 4096 + CACHE_LINE


class _Arena:
    """The byte ranges of the tensors still to be read, and the offsets handed out."""

    def __init__(self) -> None:
        self.live: dict[int, tuple[int, int]] = {}

    def take(self, tensor: int, nbytes: int) -> int:
        """The lowest offset, a whole number of cache lines, where ``nbytes`` and the gap
        after them overlap no live tensor."""
        size = -(-max(nbytes, 1) // CACHE_LINE) * CACHE_LINE + BLOCK_GAP
        offset = 0
        for start, end in sorted(self.live.values()):
            if offset + size <= start:
                break
            offset = max(offset, end)
        self.live[tensor] = (offset, offset + size)
        return offset

    def give_back(self, tensor: int) -> None:
        """Free the bytes of ``tensor``, whose last reader has run."""
        self.live.pop(tensor, None)


def plan_executor(main: Function, views: Collection[str] = (),
                  ) -> tuple[ExecutorPlan, dict[str, np.ndarray]]:
    """The plan running lowered ``main``, and the parameters (constants) it reads; a call
    of a function named in ``views`` (one that only reshapes its input) whose input is a
    step's result read by nothing else, neither of them a graph output, is no step: its
    result is a view of the input's storage block (see :func:`_view_roots`)."""
    tensors: list[TensorEntry] = []
    params: dict[str, np.ndarray] = {}
    refs: dict[int, Ref] = {}
    for p in main.params:
        ty = p.checked_type
        if not isinstance(ty, TensorType):
            raise LoweringError(f"input %{p.name_hint}: only tensor inputs are supported, "
                                f"found {ty}")
        refs[id(p)] = len(tensors)
        tensors.append(TensorEntry("input", ty.shape, ty.dtype, p.name_hint))

    calls: list[tuple[str, list[int], list[int]]] = []
    for node in post_order(main.body, stop=lambda n: isinstance(n, Function)):
        key = id(node)
        if isinstance(node, Constant):
            name = f"p{len(params)}"
            params[name] = node.data
            refs[key] = len(tensors)
            tensors.append(TensorEntry("param", node.data.shape, node.data.dtype.name, name))
        elif isinstance(node, Tuple):
            refs[key] = tuple(refs[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            refs[key] = refs[id(node.tuple_value)][node.index]
        elif isinstance(node, Call):
            if not isinstance(node.op, GlobalVar):
                raise LoweringError(f"main still calls {node.op}; lower it before planning")
            outs = flatten_type(node.checked_type)
            first = len(tensors)
            tensors.extend(TensorEntry("storage", t.shape, t.dtype) for t in outs)
            out_ids = list(range(first, len(tensors)))
            args = [i for a in node.args for i in leaves(refs[id(a)])]
            calls.append((node.op.name_hint, args, out_ids))
            refs[key] = out_ids[0] if isinstance(node.checked_type, TensorType) else \
                _nest(node.checked_type, iter(out_ids))
        elif isinstance(node, Var) and key not in refs:
            raise LoweringError(f"free variable %{node.name_hint} in main")
        elif isinstance(node, Function):
            continue
    outputs = leaves(refs[id(main.body)])
    return _assign_storage(tensors, calls, outputs, frozenset(views)), params


def _nest(ty, ids) -> Ref:
    if isinstance(ty, TupleType):
        return tuple(_nest(f, ids) for f in ty.fields)
    return next(ids)


def _view_roots(tensors: list[TensorEntry], calls, keep: set[int],
                views: frozenset[str]) -> dict[int, int]:
    """Tensor -> the tensor whose storage it views, for the result of each call of a
    function in ``views`` whose input is a storage tensor of the same size that only this
    call reads, neither being kept (a graph output). Its bytes are the input's, so the copy
    is skipped (GPT-2: a reshape of each matrix product's 128 x 2304 result, 0.12 ms)."""
    readers = Counter(a for _, args, _ in calls for a in set(args))
    roots: dict[int, int] = {}
    for func, args, outs in calls:
        if func not in views or len(args) != 1 or len(outs) != 1:
            continue
        (a,), (o,) = args, outs
        if tensors[a].kind == "storage" and readers[a] == 1 and a not in keep \
                and o not in keep and tensors[a].nbytes == tensors[o].nbytes:
            roots[o] = roots.get(a, a)
    return roots


def _assign_storage(tensors: list[TensorEntry], calls, outputs: list[int],
                    views: frozenset[str]) -> ExecutorPlan:
    keep = set(outputs)
    roots = _view_roots(tensors, calls, keep, views)
    last_use: dict[int, int] = {}
    for i, (_, args, outs) in enumerate(calls):
        if not (outs and outs[0] in roots):
            for a in args:
                last_use[roots.get(a, a)] = i
    arena = _Arena()
    offsets: dict[int, int] = {}
    steps = []
    for i, (func, args, outs) in enumerate(calls):
        if outs and outs[0] in roots:  # a view: no step, no bytes of its own
            continue
        for o in outs:
            offsets[o] = arena.take(o, tensors[o].nbytes)
        for o in outs:  # a result nothing reads (an unused tuple field) is free at once
            if o not in keep and o not in last_use:
                arena.give_back(o)
        for a in dict.fromkeys(roots.get(a, a) for a in args):
            if last_use[a] == i and a not in keep:
                arena.give_back(a)
        steps.append(Step(func, (*args, *outs)))
    block = {t: k for k, t in enumerate(offsets)}
    final = tuple(
        TensorEntry(t.kind, t.shape, t.dtype, t.name, block[roots.get(i, i)])
        if t.kind == "storage" else t
        for i, t in enumerate(tensors))
    return ExecutorPlan(final, tuple(tensors[t].nbytes for t in offsets), tuple(steps),
                        tuple(outputs), tuple(offsets.values()))
