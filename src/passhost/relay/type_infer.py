"""Type inference for graph expressions: bottom-up, iterative, cached on the nodes.

Every variable carries its type annotation, so each node's type follows from its children:
an operator call from the operator's type relation, a function call from the callee's
function type. Errors name the operator, the argument, what was expected and what was found.
"""

from __future__ import annotations

from passhost.errors import IRTypeError
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.types import FuncType, TensorType, TupleType, Type
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order

__all__ = ["infer_type"]


def infer_type(expr: BaseExpr) -> Type:
    """The type of ``expr``; fills the type cache of every node below it."""
    if expr._checked_type is not None:
        return expr._checked_type
    for node in post_order(expr, stop=lambda n: n._checked_type is not None):
        if node._checked_type is None and not getattr(type(node), "_is_op", False):
            node._set_checked_type(_type_of(node))
    return expr._checked_type  # type: ignore[return-value]


def _type_of(node: BaseExpr) -> Type:
    if isinstance(node, Call):
        return _call_type(node)
    if isinstance(node, Tuple):
        return TupleType([f._checked_type for f in node.fields])
    if isinstance(node, TupleGetItem):
        ty = node.tuple_value._checked_type
        if not isinstance(ty, TupleType):
            raise IRTypeError(f"tuple projection .{node.index} expected a tuple, found {ty}",
                              expected="a tuple", found=str(ty), span=node.span)
        if not 0 <= node.index < len(ty.fields):
            raise IRTypeError(f"tuple projection .{node.index} is out of range for {ty}",
                              expected=f"an index below {len(ty.fields)}",
                              found=str(node.index), span=node.span)
        return ty.fields[node.index]
    if isinstance(node, Function):
        body_ty = node.body._checked_type
        if node.ret_type is not None and node.ret_type != body_ty:
            raise IRTypeError(
                f"function's declared return type {node.ret_type} does not match its "
                f"body's type {body_ty}", expected=str(node.ret_type), found=str(body_ty),
                span=node.span)
        return FuncType([p._checked_type for p in node.params], body_ty)
    if isinstance(node, Var):
        raise IRTypeError(f"variable %{node.name_hint} has no type annotation", span=node.span)
    if isinstance(node, GlobalVar):
        return node.checked_type
    if isinstance(node, Constant):  # pragma: no cover - constants type themselves
        return TensorType(node.data.shape, node.data.dtype.name)
    raise IRTypeError(f"cannot type {type(node).__name__}", span=node.span)


def _call_type(call: Call) -> Type:
    arg_types = [a._checked_type for a in call.args]
    op = call.op
    if getattr(type(op), "_is_op", False):
        values = [a.data if isinstance(a, Constant) else None for a in call.args]
        return op.infer_type(arg_types, call.attrs, call.span, values)
    fn_ty = op._checked_type
    name = f"@{op.name_hint}" if isinstance(op, GlobalVar) else "function"
    if not isinstance(fn_ty, FuncType):
        raise IRTypeError(f"callee {name} is not a function, found {fn_ty}", span=call.span)
    if len(fn_ty.arg_types) != len(arg_types):
        raise IRTypeError(
            f"call of {name}: expected {len(fn_ty.arg_types)} arguments, "
            f"found {len(arg_types)}", op=name, expected=str(len(fn_ty.arg_types)),
            found=str(len(arg_types)), span=call.span)
    for i, (want, got) in enumerate(zip(fn_ty.arg_types, arg_types)):
        if want != got:
            raise IRTypeError(f"call of {name}: argument {i} expected {want}, found {got}",
                              op=name, argument=str(i), expected=str(want), found=str(got),
                              span=call.span)
    return fn_ty.ret_type
