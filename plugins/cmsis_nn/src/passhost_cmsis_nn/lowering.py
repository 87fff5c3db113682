"""``relay_to_tir`` of the ``cmsis-nn`` target: one PrimFunc per partition.

A partition ``@cmsis_nn_main_<n>`` calls one Composite function (a match of the pattern
table). Its PrimFunc takes one buffer per tensor parameter of the partition, then the output
buffer (the executor's calling convention), and its body is a single ``call_extern`` of the
CMSIS-NN function (argument layouts in :mod:`passhost_cmsis_nn.calls`), inside:

- an ``allocate_const`` + ``decl`` buffer for each constant argument: weights in the
  library's layout (OHWI, or ``[1, KH, KW, C_out]`` for depthwise), int32 bias,
  per-channel multipliers and shifts, a constant operand of add or mul;
- an ``allocate`` of ``int8[size]`` in ``"global.workspace"`` for the ``cmsis_nn_context``
  when the function, dispatched on the target's processor (``-mcpu``/``-mattr``), needs a
  scratch buffer of ``size`` bytes; otherwise the context is ``"NULL"`` and size 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passhost.errors import PasshostError
from passhost.ir import IRModule, TensorType
from passhost.relay import Call, Constant, Function, post_order
from passhost.relay.op import Op
from passhost.tir import (
    Allocate,
    AllocateConst,
    Buffer,
    DeclBuffer,
    Evaluate,
    PrimFunc,
    Stmt,
    Var,
    decl_buffer,
)
from passhost_cmsis_nn.calls import NULL, make_call
from passhost_cmsis_nn.features import Features, features_of
from passhost_cmsis_nn.layers import Layer, Unsupported
from passhost_cmsis_nn.patterns import KIND, READERS, read_layer

__all__ = ["CONTEXT_SCOPE", "CmsisNNLoweringError", "lower_partition", "relay_to_tir"]

#: The memory scope of context (scratch) buffers.
CONTEXT_SCOPE = "global.workspace"


class CmsisNNLoweringError(PasshostError):
    """A function tagged for ``cmsis-nn`` that is not a partition the target can lower."""


def _composite_call(func: Function, name: str) -> tuple[Call, Function, str]:
    call = func.body
    composite = call.op if isinstance(call, Call) else None
    cname = composite.attrs.get("Composite") if isinstance(composite, Function) else None
    if cname not in READERS:
        raise CmsisNNLoweringError(
            f"cmsis-nn: @{name} is tagged Compiler={KIND} but its body is not a call of a "
            f"Composite function of the cmsis-nn pattern table (found composite "
            f"{cname!r}); the composites are {', '.join(READERS)}")
    return call, composite, cname


def _structure_options(cname: str, body: Any) -> dict[str, bool]:
    """Which optional leading operator the composite holds (its body has only the matched
    calls; its inputs are parameters)."""
    ops = {n.op.name for n in post_order(body) if isinstance(n, Call) and isinstance(n.op, Op)}
    if cname == f"{KIND}.qnn_conv2d":
        return {"fused_pad": "nn.pad" in ops}
    if cname == f"{KIND}.qnn_fully_connected":
        return {"fused_reshape": "reshape" in ops}
    return {}


def _const_buffer(name: str, data: np.ndarray) -> Buffer:
    return decl_buffer(data.shape, data.dtype.name, name)


def lower_partition(func: Function, name: str, features: Features) -> PrimFunc:
    """The PrimFunc of partition ``func`` (named ``name``) for a processor with
    ``features``."""
    call, composite, cname = _composite_call(func, name)
    bound = dict(zip((id(p) for p in composite.params), call.args))

    def const_of(expr: Any) -> np.ndarray | None:
        value = bound.get(id(expr), expr)
        return value.data if isinstance(value, Constant) else None

    try:
        layer = read_layer(cname, composite.body, const_of,
                           **_structure_options(cname, composite.body))
    except Unsupported as err:
        raise CmsisNNLoweringError(f"cmsis-nn: @{name} ({cname}) cannot be lowered: "
                                   f"{err}") from None
    inputs = []
    for k, p in enumerate(func.params):
        ty = p.checked_type
        if not isinstance(ty, TensorType):
            raise CmsisNNLoweringError(f"cmsis-nn: @{name}: parameter %{p.name_hint} is {ty}, "
                                       f"expected a tensor")
        inputs.append(decl_buffer(ty.shape, ty.dtype, f"in{k}"))
    param_buffers = {id(p): b for p, b in zip(func.params, inputs)}
    out_type = call.checked_type
    output = decl_buffer(out_type.shape, out_type.dtype, "out")
    values, constants = _tensor_values(layer, bound, param_buffers, const_of)
    values.update(layer.scalars)
    values["output"] = output
    body = _body(layer, values, constants, features)
    buffers = [*inputs, output]
    return PrimFunc([b.data for b in buffers], {b.data: b for b in buffers}, body,
                    attrs={"global_symbol": name, "target": KIND, "tir.noalias": True})


def _tensor_values(layer: Layer, bound: dict[int, Any], param_buffers: dict[int, Buffer],
                   const_of: Any) -> tuple[dict[str, Any], list[tuple[Buffer, np.ndarray]]]:
    """The buffer of every tensor argument: a parameter's, or a new constant buffer."""
    values: dict[str, Any] = {}
    constants = [(_const_buffer(arg, data), data) for arg, data in layer.constants.items()]
    for arg, expr in layer.tensors.items():
        source = bound.get(id(expr), expr)
        if id(source) in param_buffers:
            values[arg] = param_buffers[id(source)]
        else:
            data = np.ascontiguousarray(const_of(expr))
            constants.append((_const_buffer(arg, data), data))
    values.update({buf.name: buf for buf, _ in constants})
    return values, constants


def _body(layer: Layer, values: dict[str, Any], constants: list[tuple[Buffer, np.ndarray]],
          features: Features) -> Stmt:
    """``allocate_const``s, the context ``allocate`` (if any) and the call."""
    context: Var | None = None
    if layer.context is not None:
        size = int(layer.context(features))
        if size > 0:
            context = Var("context", "handle")
        values["context"] = context if context is not None else NULL
        values["context_size"] = size
    stmt: Stmt = Evaluate(make_call(layer.api, values))
    if context is not None:
        stmt = Allocate(context, "int8", (values["context_size"],), stmt, scope=CONTEXT_SCOPE)
    for buf, data in reversed(constants):
        stmt = AllocateConst(buf.data, buf.dtype, buf.shape, data, DeclBuffer(buf, stmt))
    return stmt


def relay_to_tir(target: Any, mod: IRModule) -> IRModule:
    """Replace every function partitioned for ``cmsis-nn`` with its PrimFunc."""
    features = features_of(target)
    lowered = {mod.get_global_var(name): lower_partition(func, name, features)
               for name, func in mod.items()
               if isinstance(func, Function) and func.attrs.get("Compiler") == KIND}
    return mod.with_functions(lowered) if lowered else mod
