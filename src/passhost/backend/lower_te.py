"""LowerTE: the default lowering of what no external target took, for the host target.

Every call of a fused (``Primitive``) function in ``main``, and every operator call left
outside one, becomes a call of a module-level PrimFunc through a GlobalVar typed with the
function's signature, so ``main`` still type-checks. Fused functions that are structurally
equal share one PrimFunc. With ``loops`` (the host target compiles loops), a function
whose operators' TE computes all cover their calls becomes one PrimFunc of loop nests
(:func:`.lower_to_loops`); any other becomes kernel calls (:func:`.lower_primitive`).
A function that only reshapes its input is marked ``reshape_only`` (:data:`RESHAPE_ONLY`),
so that the memory plan may make its result a view instead of calling it.
"""

from __future__ import annotations

import re
from typing import Annotated

from passhost.backend.lower_loops import has_te_computes, lower_to_loops
from passhost.backend.lower_primitive import LoweringError, lower_primitive
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal, structural_hash
from passhost.ir.types import FuncType, TensorType
from passhost.relay.expr import Call, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order
from passhost.tir.function import PrimFunc
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["RESHAPE_ONLY", "LowerTE", "fused_name", "graph_entry", "reshape_only"]

#: Longest PrimFunc name made from operator names (longer ones are cut and numbered).
_NAME_LIMIT = 64


def graph_entry(mod: IRModule) -> Function:
    """The module's ``main`` graph function (what the build compiles)."""
    if "main" not in mod:
        raise LoweringError("the module has no main function")
    main = mod["main"]
    if not isinstance(main, Function):
        raise LoweringError(f"main must be a graph function, found {type(main).__name__}")
    return main


def fused_name(func: Function) -> str:
    """``fused_<op>_<op>...`` from the operators ``func`` calls, in order."""
    ops = [n.op.name for n in post_order(func.body, stop=lambda n: isinstance(n, Function))
           if isinstance(n, Call) and getattr(type(n.op), "_is_op", False)]
    name = "fused_" + "_".join(re.sub(r"\W", "_", o) for o in ops)
    return name[:_NAME_LIMIT].rstrip("_")


#: The PrimFunc attribute marking a function that only reshapes its one input (see
#: :func:`reshape_only`): the memory plan may make its output a view of its input.
RESHAPE_ONLY = "reshape_only"

#: Operators that keep every element in its row-major place and its dtype.
_RESHAPES = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten"})


def reshape_only(func: Function) -> bool:
    """Whether the fused ``func`` of one tensor parameter is a chain of reshapes of it
    (:data:`_RESHAPES`): its result holds the parameter's bytes unchanged."""
    node = func.body
    while isinstance(node, Call) and getattr(node.op, "name", None) in _RESHAPES \
            and len(node.args) == 1:
        node = node.args[0]
    return node is not func.body and len(func.params) == 1 and node is func.params[0] \
        and isinstance(node.checked_type, TensorType) \
        and isinstance(func.body.checked_type, TensorType) \
        and node.checked_type.dtype == func.body.checked_type.dtype


def _single_op_function(call: Call) -> Function:
    """A Primitive function computing ``call`` on fresh parameters."""
    params = [Var(f"p{i}", a.checked_type) for i, a in enumerate(call.args)]
    body = Call(call.op, params, call.attrs, span=call.span)
    return Function(params, body, call.checked_type, {"Primitive": 1})


@module_pass(opt_level=0, name="LowerTE", required=("InferType",))
class LowerTE:
    """Lower main's fused functions and remaining operator calls to PrimFuncs for the host
    target (``target`` is the kind name written in each PrimFunc's ``target`` attr;
    ``loops``: build loop nests from TE computes where every operator has one)."""

    def __init__(self,
                 target: Annotated[str, "the target kind written in each PrimFunc"] = "cpu",
                 loops: Annotated[bool, "loop nests from TE computes where every operator "
                                        "has one"] = False) -> None:
        self.target = target
        self.loops = loops

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Lower main; the new PrimFuncs are added to the module."""
        main = graph_entry(mod)
        cache: dict[int, list[tuple[Function, GlobalVar]]] = {}
        taken = set(mod)
        added: dict[GlobalVar, PrimFunc] = {}

        def lowered(func: Function) -> GlobalVar:
            key = structural_hash(func)
            for seen, gvar in cache.get(key, ()):
                if structural_equal(seen, func):
                    return gvar
            base = name = fused_name(func)
            n = 0
            while name in taken:
                n += 1
                name = f"{base}_{n}"
            taken.add(name)
            ty = FuncType([p.checked_type for p in func.params], func.body.checked_type)
            gvar = GlobalVar(name, ty)
            attrs: dict[str, object] = {"target": self.target}
            if reshape_only(func):
                attrs[RESHAPE_ONLY] = 1
            prim = lower_to_loops(func, name, attrs) if self.loops and has_te_computes(
                func) else None
            added[gvar] = prim if prim is not None else lower_primitive(func, name, attrs)
            cache.setdefault(key, []).append((func, gvar))
            return gvar

        body = _rewrite_calls(main.body, mod, lowered)
        if body is main.body and not added:
            return mod
        new_main = Function(main.params, body, main.ret_type, main.attrs, span=main.span)
        return mod.with_functions({"main": new_main, **added})


def _rewrite_calls(body: BaseExpr, mod: IRModule, lowered) -> BaseExpr:
    """``body`` with each fused-function or operator call replaced by a PrimFunc call."""
    new: dict[int, BaseExpr] = {}

    def get(node: BaseExpr) -> BaseExpr:
        return new.get(id(node), node)

    for node in post_order(body, stop=lambda n: isinstance(n, Function)):
        if isinstance(node, Call):
            args = [get(a) for a in node.args]
            op = node.op
            if isinstance(op, Function):
                if op.attrs.get("Compiler"):
                    raise LoweringError(f"a function for external target "
                                        f"{op.attrs['Compiler']!r} was left unlowered")
                if not op.attrs.get("Primitive"):
                    raise LoweringError("main calls a function that is not fused; run "
                                        "FuseOps before LowerTE")
                out = Call(lowered(op), args, span=node.span)
            elif isinstance(op, GlobalVar):
                if isinstance(mod[op.name_hint], Function):
                    raise LoweringError(f"main calls graph function @{op.name_hint}; "
                                        f"only calls of PrimFuncs are left after lowering")
                out = Call(op, args, span=node.span)
            else:
                out = Call(lowered(_single_op_function(node)), args, span=node.span)
            out._set_checked_type(node.checked_type)
            new[id(node)] = out
        elif isinstance(node, Tuple):
            fields = [get(f) for f in node.fields]
            if any(a is not b for a, b in zip(fields, node.fields)):
                new[id(node)] = Tuple(fields, span=node.span)
        elif isinstance(node, TupleGetItem):
            value = get(node.tuple_value)
            if value is not node.tuple_value:
                new[id(node)] = TupleGetItem(value, node.index, span=node.span)
    return get(body)
