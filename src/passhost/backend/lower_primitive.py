"""Default lowering of one fused (``Primitive``) graph function to a PrimFunc.

The PrimFunc takes one buffer per input tensor (tuple parameters flattened), then one per
output tensor, and calls one kernel per operator call (see :mod:`.kernel_call`). Buffers
are planned so that no work is wasted:

* a call whose value is an output of the function writes straight into the output buffer;
* an elementwise or broadcast call writes over an input that nothing else reads (same
  shape and dtype), so ``conv2d -> add -> relu`` runs in one buffer, the output;
* every other value gets an ``Allocate``; constants become ``AllocateConst`` buffers.
"""

from __future__ import annotations

from typing import Any

from passhost.errors import IRTypeError, PasshostError
from passhost.ir.expr import BaseExpr
from passhost.ir.types import TensorType, TupleType, Type, tensor_types
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.op.registry import OpPattern
from passhost.relay.visitor import post_order
from passhost.runtime.kernel_call import COPY, kernel_call
from passhost.tir.function import Buffer, PrimFunc, decl_buffer
from passhost.tir.stmt import Allocate, AllocateConst, DeclBuffer, SeqStmt, Stmt

__all__ = ["LoweringError", "flatten_type", "leaves", "lower_primitive"]

Value = Buffer | tuple  # a buffer, or a (nested) tuple of them

_IN_PLACE = (OpPattern.ELEMWISE, OpPattern.BROADCAST)


class LoweringError(PasshostError):
    """A graph function cannot be lowered by the default lowering."""


def flatten_type(ty: Type) -> list[TensorType]:
    """The tensor types of ``ty`` in order (:func:`~passhost.ir.types.tensor_types`); a
    :class:`LoweringError` for anything else."""
    try:
        return tensor_types(ty)
    except IRTypeError:
        raise LoweringError(f"cannot lower a value of type {ty}") from None


def _buffers_for(ty: Type, name: str, made: list[Buffer]) -> Value:
    """Fresh buffers shaped like ``ty`` (a tuple of them for tuple types)."""
    if isinstance(ty, TupleType):
        return tuple(_buffers_for(f, f"{name}_{i}", made) for i, f in enumerate(ty.fields))
    if not isinstance(ty, TensorType):
        raise LoweringError(f"cannot lower a value of type {ty}")
    buf = decl_buffer(ty.shape, ty.dtype, name)
    made.append(buf)
    return buf


def leaves(value: Any) -> list[Any]:
    """The non-tuple items of a (nested) tuple, in order; ``[value]`` for a non-tuple."""
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        else:
            out.append(v)
    return out


class _Planner:
    """Buffer planning and statement emission for one Primitive function."""

    def __init__(self, func: Function) -> None:
        self.func = func
        self.order = post_order(func.body, stop=lambda n: isinstance(n, Function))
        self.uses: dict[int, int] = {}
        for node in self.order:
            if isinstance(node, Function):
                raise LoweringError("the default lowering cannot lower nested functions "
                                    "(a Composite function of an external target?)")
            for child in node.children():
                self.uses[id(child)] = self.uses.get(id(child), 0) + 1
        self.uses[id(func.body)] = self.uses.get(id(func.body), 0) + 1
        self.inputs: list[Buffer] = []
        self.outputs: list[Buffer] = []
        self.value: dict[int, Value] = {}
        self.slot: dict[int, Value] = {}  # call id -> its output buffer(s)
        self.allocated: list[Buffer] = []
        self.constants: list[tuple[Buffer, Constant]] = []

    def plan(self) -> tuple[list, dict, Stmt]:
        for i, param in enumerate(self.func.params):
            self.value[id(param)] = _buffers_for(param.checked_type, f"p{i}", self.inputs)
        result = _buffers_for(self.func.body.checked_type, "T", self.outputs)
        copies = self._claim_outputs(self.func.body, result)
        self._alias_in_place()
        body = self._emit(copies)
        for buf in reversed(self.allocated):
            body = Allocate(buf.data, buf.dtype, buf.shape, DeclBuffer(buf, body))
        for buf, const in reversed(self.constants):
            body = AllocateConst(buf.data, buf.dtype, buf.shape, const.data,
                                 DeclBuffer(buf, body))
        params = [b.data for b in (*self.inputs, *self.outputs)]
        return params, {b.data: b for b in (*self.inputs, *self.outputs)}, body

    def _claim_outputs(self, body: BaseExpr, result: Value) -> list[tuple[Buffer, BaseExpr]]:
        """Let the calls producing the function's result write into the output buffers;
        the (output, value) pairs that need a copy instead."""
        copies: list[tuple[Buffer, BaseExpr]] = []
        stack: list[tuple[BaseExpr, Value]] = [(body, result)]
        while stack:
            node, out = stack.pop()
            if isinstance(node, Tuple) and isinstance(out, tuple):
                stack.extend(zip(node.fields, out))
            elif isinstance(node, Call) and id(node) not in self.slot:
                self.slot[id(node)] = out
            else:
                copies.extend((buf, node) for buf in leaves(out))
        return copies

    def _alias_in_place(self) -> None:
        """Walking back from the result, let each elementwise or broadcast call share its
        buffer with an input computed here that only it reads."""
        for node in reversed(self.order):
            if not (isinstance(node, Call) and getattr(node.op, "pattern", None) in _IN_PLACE):
                continue
            ty = node.checked_type
            if not isinstance(ty, TensorType):
                continue
            out = self.slot.get(id(node))
            if out is None:
                out = self.slot[id(node)] = self._allocate(ty, len(self.allocated))
            for arg in node.args:
                if (isinstance(arg, Call) and id(arg) not in self.slot
                        and self.uses[id(arg)] == 1 and arg.checked_type == ty):
                    self.slot[id(arg)] = out
                    break

    def _allocate(self, ty: Type, index: int) -> Value:
        return _buffers_for(ty, f"t{index}", self.allocated)

    def _emit(self, copies: list[tuple[Buffer, BaseExpr]]) -> Stmt:
        stmts: list[Stmt] = []
        for node in self.order:
            key = id(node)
            if isinstance(node, Var):
                if key not in self.value:
                    raise LoweringError(f"free variable %{node.name_hint} in a fused function")
            elif isinstance(node, Constant):
                buf = decl_buffer(node.data.shape, node.data.dtype.name,
                                  f"c{len(self.constants)}")
                self.constants.append((buf, node))
                self.value[key] = buf
            elif isinstance(node, Tuple):
                self.value[key] = tuple(self.value[id(f)] for f in node.fields)
            elif isinstance(node, TupleGetItem):
                self.value[key] = self.value[id(node.tuple_value)][node.index]
            elif isinstance(node, Call):
                stmts.append(self._emit_call(node))
        for buf, node in copies:
            stmts.append(kernel_call(COPY, None, [buf], [self.value[id(node)]]))
        if not stmts:
            raise LoweringError("a fused function with nothing to compute")
        return stmts[0] if len(stmts) == 1 else SeqStmt(stmts)

    def _emit_call(self, call: Call) -> Stmt:
        op = call.op
        if not getattr(type(op), "_is_op", False):
            raise LoweringError(f"the default lowering calls operators only, found a call "
                                f"of {op}")
        out = self.slot.get(id(call))
        if out is None:
            out = self.slot[id(call)] = self._allocate(call.checked_type, len(self.allocated))
        self.value[id(call)] = out
        inputs = []
        for arg in call.args:
            value = self.value[id(arg)]
            if isinstance(value, tuple) and any(isinstance(v, tuple) for v in value):
                raise LoweringError(f"{op.name}: nested tuple arguments are not supported")
            inputs.append(value)
        return kernel_call(op.name, call.attrs, leaves(out), inputs)


def lower_primitive(func: Function, name: str, attrs: dict | None = None) -> PrimFunc:
    """The PrimFunc computing the typed fused function ``func`` with kernel calls, named
    ``name`` (its ``global_symbol``), with the extra function ``attrs`` given."""
    params, buffer_map, body = _Planner(func).plan()
    return PrimFunc(params, buffer_map, body, attrs={"global_symbol": name, **(attrs or {})})
