"""Lowering a fused (``Primitive``) graph function to one PrimFunc of loop nests, from the
TE computes of its operators.

The function's parameters become placeholders (a tuple parameter one per field, as the
kernel-call lowering flattens them), its operator calls the tensors of each operator's
``te_compute``, its constants either immediates (one element: a compute whose body is the
immediate, which computes needing a value when the loops are built, such as quantisation
scales, read) or ``AllocateConst`` buffers, and :func:`passhost.te.lower` turns the result
into loops: every elementwise and injective step is inlined into the loop nest that
consumes it, so a chain of them stores nothing in between. The PrimFunc has the kernel-call
lowering's signature (the input buffers, then the output buffers), so the two are
interchangeable per function.

A TE compute returns None for attributes or dtypes it does not cover, and a lowered
function whose every index cannot be proved inside its buffer (:mod:`passhost.tir.bounds`)
is not used either: the caller then lowers the function to kernel calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from passhost import te
from passhost.backend.lower_primitive import LoweringError, flatten_type, leaves
from passhost.errors import PasshostError
from passhost.ir.types import TensorType, TupleType, Type
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order
from passhost.tir.bounds import IndexBoundsError, check_index_bounds
from passhost.tir.function import PrimFunc

__all__ = ["has_te_computes", "lower_to_loops"]


def has_te_computes(func: Function) -> bool:
    """Whether ``func`` calls operators only, and each has a TE compute."""
    calls = [n for n in post_order(func.body, stop=lambda n: isinstance(n, Function))
             if isinstance(n, Call)]
    return bool(calls) and all(getattr(type(c.op), "_is_op", False)
                               and c.op.te_compute is not None for c in calls)


def _placeholders(ty: Type, name: str) -> Any:
    """Placeholders shaped like ``ty`` (a tuple of them for a tuple type)."""
    if isinstance(ty, TupleType):
        return tuple(_placeholders(f, f"{name}_{i}") for i, f in enumerate(ty.fields))
    if not isinstance(ty, TensorType):
        raise LoweringError(f"cannot lower a value of type {ty}")
    return te.placeholder(ty.shape, ty.dtype, name)


def _constant(node: Constant, index: int, constants: dict[te.Tensor, np.ndarray]) -> te.Tensor:
    data = node.data
    if data.size == 1:
        value = data.reshape(()).item()
        return te.compute(data.shape, lambda *_: te.fill(value, data.dtype.name),
                          name=f"c{index}")
    tensor = te.placeholder(data.shape, data.dtype.name, f"c{index}")
    constants[tensor] = data
    return tensor


def _check_result(call: Call, result: Any) -> Any:
    """``result`` of ``call``'s TE compute, checked against the call's type."""
    expected = flatten_type(call.checked_type)
    found = leaves(result)
    ok = len(found) == len(expected) and all(
        isinstance(t, te.Tensor) and t.shape == e.shape and t.dtype == e.dtype
        for t, e in zip(found, expected))
    if not ok:
        raise LoweringError(
            f"{call.op.name}: the TE compute gives "
            f"{[f'{t.dtype}{list(t.shape)}' if isinstance(t, te.Tensor) else t for t in found]}"
            f", the call's type is {call.checked_type}")
    return result


def lower_to_loops(func: Function, name: str, attrs: dict | None = None) -> PrimFunc | None:
    """The PrimFunc ``name`` computing the typed fused function ``func`` with loop nests,
    or None when an operator's TE compute does not cover its call or an index cannot be
    proved in bounds."""
    values: dict[int, Any] = {}
    inputs: list[te.Tensor] = []
    for i, param in enumerate(func.params):
        value = _placeholders(param.checked_type, f"p{i}")
        values[id(param)] = value
        inputs.extend(leaves(value))
    constants: dict[te.Tensor, np.ndarray] = {}
    for node in post_order(func.body, stop=lambda n: isinstance(n, Function)):
        key = id(node)
        if isinstance(node, Var):
            if key not in values:
                raise LoweringError(f"free variable %{node.name_hint} in a fused function")
        elif isinstance(node, Constant):
            values[key] = _constant(node, len(constants), constants)
        elif isinstance(node, Tuple):
            values[key] = tuple(values[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            values[key] = values[id(node.tuple_value)][node.index]
        elif isinstance(node, Call):
            op = node.op
            if not getattr(type(op), "_is_op", False) or op.te_compute is None:
                raise LoweringError(f"{getattr(op, 'name', op)} has no TE compute")
            args = [values[id(a)] for a in node.args]
            try:
                result = op.te_compute(node.attrs, args, node.checked_type)
            except PasshostError as err:
                raise LoweringError(f"{op.name}: TE compute failed: {err}") from None
            if result is None:
                return None
            values[key] = _check_result(node, result)
        elif isinstance(node, Function):
            raise LoweringError("loop lowering cannot lower nested functions")
    outputs = leaves(values[id(func.body)])
    prim = te.lower(outputs, inputs, name, constants=constants, attrs=attrs)
    try:
        check_index_bounds(prim, name)
    except IndexBoundsError:
        return None
    return prim
