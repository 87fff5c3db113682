"""Target kinds for the build-flow tests, registered in-process with the testing kit.

``ref-host``: a host kind whose runtime runs each kernel call with the operator's NumPy
reference kernel (an oracle for the default lowering, independent of the cpu target).
``toy``: an external kind taking ``add`` calls: its relay_to_tir (a pluggy hookimpl) writes
a loop PrimFunc per partition, its tir_to_runtime (a kind attribute) runs them with NumPy;
both record the modules they were given. Its phase pass records what it saw at tir.phase1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passhost.ir.module import IRModule
from passhost.plugins.hookspecs import hookimpl
from passhost.plugins.specs import PassSpec
from passhost.relay.dataflow_pattern import is_op, wildcard
from passhost.relay.expr import Constant, Function
from passhost.runtime import FunctionModule, decode_kernel_call
from passhost.target import TargetKind
from passhost.tir import (
    AllocateConst,
    DeclBuffer,
    For,
    PrimFunc,
    Var,
    decl_buffer,
    post_order,
)
from passhost.tir import Call as TirCall
from passhost.transform import module_pass


def reference_runtime(target: Any, mod: IRModule) -> FunctionModule:
    """A runtime module running every kernel call with the reference kernels."""
    funcs = {}
    for name, func in mod.items():
        nodes = post_order(func.body)
        calls = [decode_kernel_call(n) for n in nodes
                 if isinstance(n, TirCall) and n.op == "call_kernel"]
        data = {id(n.buffer_var): n.data for n in nodes if isinstance(n, AllocateConst)}
        consts = {id(n.buffer): data[id(n.buffer.data)] for n in nodes
                  if isinstance(n, DeclBuffer) and id(n.buffer.data) in data}
        params = [func.buffer_map[p] for p in func.params]
        funcs[name] = _interpreted(calls, params, consts)
    return FunctionModule("ref-host", funcs)


def _interpreted(calls, params, consts):
    def run(*arrays):
        env = {id(b): a for b, a in zip(params, arrays)}
        env.update(consts)

        def get(b):
            if isinstance(b, tuple):
                return tuple(get(x) for x in b)
            return env.setdefault(id(b), np.empty(b.shape, b.dtype))

        for k in calls:
            ins = [get(i) for i in k.inputs]
            result = ins[0].copy() if k.name == "copy" else k.op.evaluate(k.attrs, *ins)
            outs = [get(o) for o in k.outputs]
            for out, value in zip(outs, result if len(outs) > 1 else (result,)):
                out[...] = value

    return run


class RefHostPlugin:
    """Registers the ``ref-host`` host target."""

    @hookimpl
    def passhost_register_targets(self) -> list[TargetKind]:
        return [TargetKind("ref-host", host=True, tir_to_runtime=reference_runtime,
                           summary="reference kernels (tests)")]


class ToyPlugin:
    """The ``toy`` external target, recording the calls of its hooks."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    @hookimpl
    def passhost_register_targets(self) -> list[TargetKind]:
        return [
            TargetKind("toy", tir_to_runtime=self._tir_to_runtime,
                       pattern_table=[("toy.add", is_op("add")(wildcard(), wildcard()),
                                      _no_constants)],
                       phase_passes={"tir.phase1": ("ToyPhasePass",)},
                       summary="adds by loops (tests)"),
        ]

    @hookimpl
    def passhost_register_passes(self) -> list[PassSpec]:
        def create() -> Any:
            return module_pass(self._phase_pass, name="ToyPhasePass")

        return [PassSpec("ToyPhasePass", create, 0, summary="records the module (tests)")]

    @hookimpl
    def passhost_relay_to_tir(self, target: Any, mod: IRModule) -> IRModule | None:
        if target.kind.name != "toy":
            return None
        self.events.append(("relay_to_tir", mod))
        lowered = {}
        for name, func in mod.items():
            if isinstance(func, Function) and func.attrs.get("Compiler") == "toy":
                lowered[mod.get_global_var(name)] = _loop_add(func, name)
        return mod.with_functions(lowered)

    def _phase_pass(self, mod: IRModule, ctx: Any) -> IRModule:
        self.events.append(("tir.phase1", mod))
        return mod

    def _tir_to_runtime(self, target: Any, mod: IRModule) -> FunctionModule:
        self.events.append(("tir_to_runtime", mod))

        return FunctionModule("toy", {name: _toy_add(f) for name, f in mod.items()},
                              source="// toy\n", files={"toy.txt": "toy kernels\n"})


def _no_constants(call: Any) -> bool:
    """The toy target adds two computed tensors, never a constant."""
    return not any(isinstance(a, Constant) for a in call.args)


def _toy_add(func: PrimFunc):
    """Run the loop of :func:`_loop_add` with NumPy: find which parameters it adds."""
    datas = [func.buffer_map[p].data for p in func.params]
    loop = func.body
    while isinstance(loop, DeclBuffer):
        loop = loop.body
    store = loop.body
    lhs, rhs = (datas.index(x.buffer.data) for x in (store.value.a, store.value.b))

    def add(*arrays):
        np.add(arrays[lhs], arrays[rhs], out=arrays[-1])

    return add


def _loop_add(func: Function, name: str) -> PrimFunc:
    """``out[i] = x[i] + y[i]`` over flat views of the tensors of a partitioned add (whose
    arguments are parameters of the partition, possibly the same one twice). The PrimFunc's
    parameters are buffers of the tensors' shapes, as the executor calls it."""
    ty = func.body.checked_type
    n = int(np.prod(ty.shape))
    bufs = [decl_buffer(p.checked_type.shape, p.checked_type.dtype, f"in{k}")
            for k, p in enumerate(func.params)]
    out = decl_buffer(ty.shape, ty.dtype, "out")
    flat = {id(b): decl_buffer((n,), b.dtype, f"{b.name}_flat", data=b.data)
            for b in (*bufs, out)}
    composite = func.body  # a call of the Composite function holding the add
    inner = composite.op
    outer = {id(p): flat[id(bufs[k])] for k, p in enumerate(func.params)}
    lhs, rhs = (outer[id(composite.args[inner.params.index(a)])] for a in inner.body.args)
    i = Var("i", "int32")
    body = For(i, 0, n, "serial", flat[id(out)].store([i], lhs[i] + rhs[i]))
    for view in reversed(flat.values()):
        body = DeclBuffer(view, body)
    return PrimFunc([b.data for b in (*bufs, out)], {b.data: b for b in (*bufs, out)}, body,
                    attrs={"global_symbol": name})
