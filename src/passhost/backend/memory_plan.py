"""Executor codegen: the executor plan of a lowered ``main``, with a memory plan.

After lowering, ``main`` only calls PrimFuncs (through GlobalVars), builds tuples and
projects them. Each call becomes a step; every tensor a step writes gets a storage block.
Blocks are reused: when a tensor's last reader has run its block returns to a free list,
and a later tensor takes the smallest free block that fits (or grows the largest one).
Graph outputs keep their blocks. Constants become named parameters ``p0``, ``p1``...
"""

from __future__ import annotations

import numpy as np

from passhost.backend.lower_primitive import LoweringError, flatten_type, leaves
from passhost.ir.expr import GlobalVar
from passhost.ir.types import TensorType, TupleType
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order
from passhost.runtime.plan import ExecutorPlan, Step, TensorEntry

__all__ = ["plan_executor"]

Ref = int | tuple  # a tensor index, or a tuple of refs


class _StoragePool:
    """Storage blocks and the free list."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.free: list[int] = []

    def take(self, nbytes: int) -> int:
        fitting = [s for s in self.free if self.sizes[s] >= nbytes]
        if fitting:
            sid = min(fitting, key=lambda s: self.sizes[s])
        elif self.free:
            sid = max(self.free, key=lambda s: self.sizes[s])
            self.sizes[sid] = nbytes
        else:
            self.sizes.append(nbytes)
            return len(self.sizes) - 1
        self.free.remove(sid)
        return sid

    def give_back(self, sid: int) -> None:
        self.free.append(sid)


def plan_executor(main: Function) -> tuple[ExecutorPlan, dict[str, np.ndarray]]:
    """The plan running lowered ``main``, and the parameters (constants) it reads."""
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
    return _assign_storage(tensors, calls, outputs), params


def _nest(ty, ids) -> Ref:
    if isinstance(ty, TupleType):
        return tuple(_nest(f, ids) for f in ty.fields)
    return next(ids)


def _assign_storage(tensors: list[TensorEntry], calls, outputs: list[int]) -> ExecutorPlan:
    last_use: dict[int, int] = {}
    for i, (_, args, _) in enumerate(calls):
        for a in args:
            last_use[a] = i
    keep = set(outputs)
    pool = _StoragePool()
    storage: dict[int, int] = {}
    steps = []
    for i, (func, args, outs) in enumerate(calls):
        for o in outs:
            storage[o] = pool.take(tensors[o].nbytes)
        for o in outs:  # a result nothing reads (an unused tuple field) is free at once
            if o not in keep and o not in last_use:
                pool.give_back(storage[o])
        for a in dict.fromkeys(args):
            if last_use[a] == i and a in storage and a not in keep:
                pool.give_back(storage[a])
        steps.append(Step(func, (*args, *outs)))
    final = tuple(
        TensorEntry(t.kind, t.shape, t.dtype, t.name, storage[i]) if t.kind == "storage" else t
        for i, t in enumerate(tensors))
    return ExecutorPlan(final, tuple(pool.sizes), tuple(steps), tuple(outputs))
