"""The reference interpreter: evaluates graph functions on NumPy arrays.

It runs each operator's NumPy reference kernel in dependency order (no recursion over graph
depth), frees intermediate values once their last user has run, and checks every kernel's
result against the inferred type. FoldConstant and all semantic tests rely on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from passhost.errors import IRTypeError, PasshostError
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.ir.types import TensorType, TupleType, Type
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order

__all__ = ["Interpreter", "KernelError", "evaluate"]

Value = Any  # an np.ndarray or a tuple of values


class KernelError(PasshostError):
    """A reference kernel returned a value that does not match its call's type."""


def _readonly(value: Value) -> Value:
    if isinstance(value, tuple):
        return tuple(_readonly(v) for v in value)
    view = np.asarray(value).view()
    view.flags.writeable = False
    return view


def _matches(value: Value, ty: Type) -> bool:
    if isinstance(ty, TensorType):
        return (isinstance(value, np.ndarray) and value.shape == ty.shape
                and value.dtype.name == ty.dtype)
    if isinstance(ty, TupleType):
        return (isinstance(value, tuple) and len(value) == len(ty.fields)
                and all(_matches(v, t) for v, t in zip(value, ty.fields)))
    return True


def _describe(value: Value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    if isinstance(value, np.ndarray):
        return f"array{list(value.shape)} of {value.dtype.name}"
    return type(value).__name__


class Interpreter:
    """Evaluates functions of ``mod`` (calls through GlobalVars resolve in it)."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod

    def run(self, func: Function | str = "main", inputs: Sequence[Any] | Mapping[str, Any] = (),
            ) -> Value:
        """Evaluate ``func`` (or the module function of that name) on ``inputs``, given in
        parameter order or by parameter name."""
        if isinstance(func, str):
            if self.mod is None:
                raise PasshostError(f"no module to look up function {func!r} in")
            func = self.mod[func]
        if not isinstance(func, Function):
            raise PasshostError(f"the interpreter runs graph functions, found "
                                f"{type(func).__name__}")
        return self._call(func, self._bind_inputs(func, inputs))

    def _bind_inputs(self, func: Function, inputs: Sequence[Any] | Mapping[str, Any],
                     ) -> list[Value]:
        params = func.params
        if isinstance(inputs, Mapping):
            names = [p.name_hint for p in params]
            unknown = sorted(set(inputs) - set(names))
            if unknown:
                raise PasshostError(f"unknown inputs {unknown}; the function takes {names}")
            missing = [n for n in names if n not in inputs]
            if missing:
                raise PasshostError(f"missing inputs {missing}")
            values = [inputs[n] for n in names]
        else:
            values = list(inputs)
            if len(values) != len(params):
                raise PasshostError(f"expected {len(params)} inputs, found {len(values)}")
        bound = []
        for param, value in zip(params, values):
            ty = param.checked_type
            if isinstance(ty, TensorType):
                arr = np.asarray(value)
                if arr.shape != ty.shape or arr.dtype.name != ty.dtype:
                    raise IRTypeError(
                        f"input %{param.name_hint} expected {ty}, found {_describe(arr)}",
                        argument=param.name_hint, expected=str(ty), found=_describe(arr))
                value = arr
            bound.append(_readonly(value))
        return bound

    def _call(self, func: Function, args: list[Value]) -> Value:
        env: dict[int, Value] = {id(p): a for p, a in zip(func.params, args)}
        order = post_order(func.body, stop=lambda n: isinstance(n, Function))
        uses: dict[int, int] = {}
        for node in order:
            for child in _operands(node):
                uses[id(child)] = uses.get(id(child), 0) + 1
        for node in order:
            key = id(node)
            if key in env:
                continue
            env[key] = self._eval(node, env)
            for child in _operands(node):
                ck = id(child)
                uses[ck] -= 1
                if uses[ck] == 0 and ck != id(func.body) and not isinstance(child, Var):
                    del env[ck]
        return env[id(func.body)]

    def _eval(self, node: BaseExpr, env: dict[int, Value]) -> Value:
        if isinstance(node, Call):
            args = [env[id(a)] for a in node.args]
            op = node.op
            if isinstance(op, Function):
                return self._call(op, args)
            if isinstance(op, GlobalVar):
                if self.mod is None:
                    raise PasshostError(f"call of @{op.name_hint} needs a module")
                callee = self.mod[op.name_hint]
                if not isinstance(callee, Function):
                    raise PasshostError(f"cannot evaluate a call of {type(callee).__name__} "
                                        f"@{op.name_hint}: the reference interpreter runs "
                                        f"graph functions only")
                return self._call(callee, args)
            result = op.evaluate(node.attrs, *args)
            ty = node.checked_type
            if not _matches(result, ty):
                raise KernelError(f"the kernel of {op.name} returned {_describe(result)}, "
                                  f"but the call's type is {ty}")
            return result
        if isinstance(node, Constant):
            return node.data
        if isinstance(node, Tuple):
            return tuple(env[id(f)] for f in node.fields)
        if isinstance(node, TupleGetItem):
            return env[id(node.tuple_value)][node.index]
        if isinstance(node, Var):
            raise PasshostError(f"free variable %{node.name_hint} has no value")
        if isinstance(node, (Function, GlobalVar)):
            return node  # a callee: its calls evaluate it
        raise PasshostError(f"cannot evaluate {type(node).__name__}")


def _operands(node: BaseExpr) -> tuple[BaseExpr, ...]:
    if isinstance(node, Function):
        return ()
    return node.children() if hasattr(node, "children") else ()


def evaluate(func: Function | IRModule, *inputs: Any, **named: Any) -> Value:
    """Evaluate a function (or a module's ``main``) on inputs given positionally or by name."""
    mod = func if isinstance(func, IRModule) else None
    interp = Interpreter(mod)
    target: Function | str = "main" if mod is not None else func  # type: ignore[assignment]
    if named and inputs:
        raise PasshostError("give inputs either positionally or by name, not both")
    return interp.run(target, named if named else inputs)
