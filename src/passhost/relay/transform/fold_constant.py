"""FoldConstant: evaluate every operator call whose arguments are all constants.

The module is type-checked first (a nested ``InferType`` call, so instruments see it), then
each optimisable graph function is rewritten bottom-up: a call of an operator whose arguments
are constants (after folding below it) becomes a Constant holding the operator's reference
kernel result, a tuple-valued result becomes a Tuple of Constants, and a projection of a
Tuple becomes the field. Nested Primitive functions are left as they are.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np

from passhost.errors import OptionError
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem
from passhost.relay.interpreter import KernelError
from passhost.relay.transform.common import map_graph_functions
from passhost.relay.transform.infer_type import InferType
from passhost.relay.visitor import ExprMutator, post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["FoldConstant", "is_primitive_function"]


@module_pass(opt_level=2, name="FoldConstant")
class FoldConstant:
    """Replace calls of operators on constants by their values.

    ``fold_qnn`` also folds ``qnn.*`` operators (kept by default so that quantised patterns
    stay visible to targets that offload them). ``annotation.*`` operators, calls of
    functions and calls without arguments are never folded.
    """

    def __init__(self, fold_qnn: Annotated[bool, "also fold qnn.* operators"] = False
                 ) -> None:
        if not isinstance(fold_qnn, bool):
            raise OptionError(f"FoldConstant: option 'fold_qnn' expects a bool, "
                              f"found {fold_qnn!r}")
        self.fold_qnn = fold_qnn

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Type-check the module, then fold each optimisable graph function; the module
        itself comes back when nothing folded."""
        mod = InferType()(mod)
        return map_graph_functions(mod, self.fold_function)

    def fold_function(self, func: Function) -> Function:
        """``func`` with its constant subexpressions folded (``func`` itself if none)."""
        folder = _Folder(self.fold_qnn)
        for node in post_order(func.body, stop=is_primitive_function):
            if is_primitive_function(node):
                folder.memo[id(node)] = node
        return folder.visit(func)  # type: ignore[return-value]


def is_primitive_function(node: BaseExpr) -> bool:
    """Whether ``node`` is a Primitive function (a fused group the graph passes leave be)."""
    return isinstance(node, Function) and bool(node.attrs.get("Primitive"))


def _value(expr: BaseExpr) -> Any:
    """The NumPy value of a constant expression (a Constant or a Tuple of them), else None."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, Tuple):
        values = [_value(f) for f in expr.fields]
        if any(v is None for v in values):
            return None
        return tuple(values)
    return None


def _as_expr(value: Any, call: Call) -> BaseExpr:
    """A kernel result as a Constant (or a Tuple of them)."""
    if isinstance(value, tuple):
        return Tuple([_as_expr(v, call) for v in value], span=call.span)
    arr = np.asarray(value)
    if arr.flags.writeable and arr.flags.c_contiguous:
        arr.flags.writeable = False  # a fresh kernel result: share it instead of copying
    return Constant(arr, span=call.span)


class _Folder(ExprMutator):
    """Folds operator calls on constants, bottom-up."""

    def __init__(self, fold_qnn: bool) -> None:
        super().__init__()
        self.fold_qnn = fold_qnn

    def foldable(self, op: BaseExpr) -> bool:
        """Whether calls of ``op`` may be folded (operators only; not annotations; qnn
        only when asked)."""
        if isinstance(op, (Function, GlobalVar)):
            return False
        name: str = op.name  # type: ignore[attr-defined]
        if name.startswith("annotation."):
            return False
        return self.fold_qnn or not name.startswith("qnn.")

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """The call's value when its operator may be folded and its arguments are
        constant; otherwise the call rebuilt on its rewritten arguments."""
        if args and self.foldable(op):
            values = [_value(a) for a in args]
            if all(v is not None for v in values):
                return self.evaluate(call, values)
        return super().visit_call(call, op, args)

    def evaluate(self, call: Call, values: list[Any]) -> BaseExpr:
        """Run the operator's reference kernel and check the result has the call's type."""
        folded = _as_expr(call.op.evaluate(call.attrs, *values), call)  # type: ignore[attr-defined]
        if folded.checked_type != call.checked_type:
            raise KernelError(f"FoldConstant: the kernel of {call.op} returned a value of type "
                              f"{folded.checked_type}, but the call's type is "
                              f"{call.checked_type}")
        return folded

    def visit_tuple_get_item(self, item: TupleGetItem, tuple_value: BaseExpr) -> BaseExpr:
        """A projection of a Tuple is the field itself."""
        if isinstance(tuple_value, Tuple):
            return tuple_value.fields[item.index]
        return super().visit_tuple_get_item(item, tuple_value)
