"""Printing graph functions and expressions in passhost's IR text format.

Every non-atomic node (call, tuple, projection, nested function) is bound once to a number
(``%0 = ...;``) in the innermost function scope that encloses all of its uses, so sharing is
kept and closures stay well scoped. The body's result is printed inline as the last line.
Nothing here recurses over the depth of the IR: the placement works from an iterative
post-order and the output is produced with an explicit stack of open scopes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from passhost.errors import PasshostError
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.types import FuncType, TensorType, TupleType, Type, is_float_dtype
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.visitor import post_order
from passhost.text.metadata import MetadataWriter

__all__ = [
    "INLINE_CONSTANT_LIMIT", "GraphPrinter", "check_global_name", "format_attr_value",
    "format_constant_values", "format_func_attrs", "format_key", "format_map", "format_type",
    "global_default_type",
]

#: Constants with at most this many elements print inline; larger ones go to the metadata.
INLINE_CONSTANT_LIMIT = 16

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_GLOBAL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


# -- values and types --------------------------------------------------------------------
def format_type(ty: Type) -> str:
    """The text of a type: ``Tensor[(1, 3), float32]``, ``(T1, T2)``, ``fn (T1) -> T2``."""
    if isinstance(ty, TensorType):
        return f"Tensor[({', '.join(str(d) for d in ty.shape)}), {ty.dtype}]"
    if isinstance(ty, TupleType):
        inner = ", ".join(format_type(f) for f in ty.fields)
        return f"({inner},)" if len(ty.fields) == 1 else f"({inner})"
    if isinstance(ty, FuncType):
        args = ", ".join(format_type(a) for a in ty.arg_types)
        return f"fn ({args}) -> {format_type(ty.ret_type)}"
    raise PasshostError(f"cannot print type {ty!r}")


def format_attr_value(value: Any) -> str:
    """The text of an attribute value: int, float, string, bool, None or (nested) tuple."""
    if value is None:
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    raise PasshostError(f"cannot print attribute value {value!r} of type "
                        f"{type(value).__name__}")


def format_key(key: object) -> str:
    """An attribute key: a bare identifier when it is one, else a quoted string."""
    if not isinstance(key, str):
        raise PasshostError(f"attribute keys must be strings, found {key!r}")
    if _IDENT_RE.match(key) and key not in ("true", "false", "none"):
        return key
    return json.dumps(key, ensure_ascii=False)


def format_func_attrs(attrs_map: Mapping[str, Any]) -> str:
    """``[key=value, ...]`` for function attributes, or ``""`` when there are none."""
    if not attrs_map:
        return ""
    items = ", ".join(f"{format_key(k)}={format_attr_value(v)}" for k, v in attrs_map.items())
    return f"[{items}]"


def format_map(attrs_map: Mapping[str, Any]) -> str:
    """``{key=value, ...}`` for module attributes."""
    items = ", ".join(f"{format_key(k)}={format_attr_value(v)}" for k, v in attrs_map.items())
    return "{" + items + "}"


def _format_element(x: Any, dtype: str) -> str:
    if dtype == "bool":
        return "true" if x else "false"
    if is_float_dtype(dtype):
        if math.isnan(x):
            return "-nan" if np.signbit(x) else "nan"
        text = str(x)  # NumPy's shortest text that reads back to the same value
        # ml_dtypes writes whole bfloat16 values without a point ("-0"): keep them floats.
        return text if any(c in text for c in ".ein") else text + ".0"
    return str(int(x))


def format_constant_values(arr: np.ndarray) -> list[str] | None:
    """The elements of ``arr`` as text that reads back bit-exactly, or None if impossible."""
    dtype = arr.dtype.name
    flat = arr.reshape(-1)
    out = []
    for x in flat:
        text = _format_element(x, dtype)
        if is_float_dtype(dtype):
            back = np.array(float(text), dtype=np.float64).astype(dtype)
            if back.tobytes() != x.tobytes():
                text = repr(float(x))  # the exact double value of x
                back = np.array(float(text), dtype=np.float64).astype(dtype)
                if back.tobytes() != x.tobytes():
                    return None  # a NaN with a payload: only the metadata keeps it
        out.append(text)
    return out


def global_default_type(func: object) -> FuncType | None:
    """The type a ``@name`` reference gets from the definition ``func`` of that name: its
    signature when every parameter and the result are annotated, else None."""
    if not isinstance(func, Function) or func.ret_type is None:
        return None
    if any(p.type_annotation is None for p in func.params):
        return None
    return FuncType([p.type_annotation for p in func.params], func.ret_type)


def check_global_name(name: str) -> str:
    """``name`` if it can be printed as ``@name``, else a clear error."""
    if not _GLOBAL_RE.match(name):
        raise PasshostError(f"global name {name!r} cannot be printed: it must match "
                            "[A-Za-z_][A-Za-z0-9_.-]*")
    return name


def _atomic(node: BaseExpr) -> bool:
    return not isinstance(node, (Call, Tuple, TupleGetItem, Function))


class _Scope:
    """A function body being laid out: its bindings and its result."""

    __slots__ = ("bindings", "depth", "inline", "parent", "result")

    def __init__(self, parent: _Scope | None, result: BaseExpr) -> None:
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.bindings: list[BaseExpr] = []
        self.result = result
        self.inline = False


def _lca(a: _Scope, b: _Scope) -> _Scope:
    while a.depth > b.depth:
        a = a.parent  # type: ignore[assignment]
    while b.depth > a.depth:
        b = b.parent  # type: ignore[assignment]
    while a is not b:
        a, b = a.parent, b.parent  # type: ignore[assignment]
    return a


class GraphPrinter:
    """Prints graph functions; one instance per top-level definition (names are unique
    within it).

    ``meta`` receives constants too large (or impossible) to print inline; ``globals_``
    maps module function names to the type a plain ``@name`` reference stands for (a
    reference whose GlobalVar has another type, or names a function outside the module,
    prints with an explicit annotation). ``globals_`` None means "no module": every typed
    global is annotated.
    """

    def __init__(self, meta: MetadataWriter,
                 globals_: Mapping[str, FuncType | None] | None = None) -> None:
        self.meta = meta
        self.globals = globals_
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self._next_suffix: dict[str, int] = {}
        self.counter = 0

    # -- names ----------------------------------------------------------------------------
    def _var_name(self, var: Var) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", var.name_hint) or "v"
        if base.isdigit():
            base = "v" + base
        i = self._next_suffix.get(base, 0)
        name = base if i == 0 else f"{base}_{i}"
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self._next_suffix[base] = i + 1
        self.used.add(name)
        return "%" + name

    def bind_var(self, var: Var) -> str:
        """Name ``var`` (a parameter) and return ``%name: Type``. A variable bound again
        (the same object as the parameter of two functions) keeps its name."""
        name = self.names.get(id(var))
        if name is None:
            name = self.names[id(var)] = self._var_name(var)
        if var.type_annotation is None:
            return name
        return f"{name}: {format_type(var.type_annotation)}"

    # -- atoms ----------------------------------------------------------------------------
    def ref(self, node: BaseExpr) -> str:
        """The text of a reference to ``node`` (bound, or an atom)."""
        name = self.names.get(id(node))
        if name is not None:
            return name
        if isinstance(node, Var):  # a free variable: annotated where first seen
            return self.bind_var(node)
        if isinstance(node, Constant):
            return self.constant(node)
        if isinstance(node, GlobalVar):
            return self.global_ref(node)
        if getattr(type(node), "_is_op", False):
            return node.name  # type: ignore[attr-defined]
        raise PasshostError(f"cannot print {type(node).__name__} as a value")

    def global_ref(self, gv: GlobalVar) -> str:
        """``@name``, or ``(@name: type)`` when the GlobalVar's type is not the default."""
        name = "@" + check_global_name(gv.name_hint)
        ty = gv.type_annotation
        if self.globals is not None and gv.name_hint in self.globals:
            if self.globals[gv.name_hint] == ty:
                return name
        elif self.globals is None and ty is None:
            return name
        return f"({name}: {'untyped' if ty is None else format_type(ty)})"

    def constant(self, const: Constant) -> str:
        """``const(...)`` for small constants, ``meta[Constant][i]`` for the others."""
        arr = const.data
        dtype = arr.dtype.name
        if arr.size <= INLINE_CONSTANT_LIMIT:
            values = format_constant_values(arr)
            if values is not None:
                if arr.ndim == 0:
                    return f"const({values[0]}, {dtype})"
                text = f"const([{', '.join(values)}], {dtype}"
                if arr.ndim != 1:
                    text += f", shape=[{', '.join(str(d) for d in arr.shape)}]"
                return text + ")"
        return f"meta[Constant][{self.meta.add(arr)}]"

    # -- compound nodes ---------------------------------------------------------------------
    def _call(self, call: Call) -> str:
        op = call.op
        args = [self.ref(a) for a in call.args]
        if getattr(type(op), "_is_op", False):
            callee = op.name  # type: ignore[attr-defined]
            if call.attrs is not None:
                args.extend(f"{k}={format_attr_value(v)}"
                            for k, v in _non_default_attrs(call.attrs))
        else:
            callee = self.ref(op)
        return f"{callee}({', '.join(args)})"

    def _compound(self, node: BaseExpr) -> str:
        if isinstance(node, Call):
            return self._call(node)
        if isinstance(node, Tuple):
            fields = [self.ref(f) for f in node.fields]
            return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
        if isinstance(node, TupleGetItem):
            return f"{self.ref(node.tuple_value)}.{node.index}"
        raise AssertionError(node)  # pragma: no cover

    def fn_header(self, func: Function, keyword: str) -> str:
        """``<keyword> [attrs] (params) -> ret``; names the parameters."""
        attrs_text = format_func_attrs(func.attrs)
        params = ", ".join(self.bind_var(p) for p in func.params)
        if attrs_text:
            text = f"{keyword} {attrs_text} ({params})"
        else:  # "fn (%x)" but "def @f(%x)"
            text = f"{keyword}{' ' if keyword == 'fn' else ''}({params})"
        if func.ret_type is not None:
            text += f" -> {format_type(func.ret_type)}"
        return text

    # -- layout ---------------------------------------------------------------------------
    def _layout(self, result: BaseExpr) -> tuple[_Scope, dict[int, _Scope]]:
        """Place every compound node in the innermost scope enclosing all its uses."""
        order = post_order(result)
        root = _Scope(None, result)
        place: dict[int, _Scope] = {}
        inner: dict[int, _Scope] = {}
        if not _atomic(result):
            place[id(result)] = root
        for node in reversed(order):  # users before what they use
            if _atomic(node):
                continue
            scope = place[id(node)]
            if isinstance(node, Function):
                use = inner[id(node)] = _Scope(scope, node.body)
                kids: Sequence[BaseExpr] = (node.body,)
            else:
                use = scope
                kids = node.children()  # type: ignore[attr-defined]
            for kid in kids:
                if _atomic(kid):
                    continue
                prev = place.get(id(kid))
                place[id(kid)] = use if prev is None else _lca(prev, use)
        scopes = [root, *inner.values()]
        for scope in scopes:
            res = scope.result
            if not _atomic(res) and place[id(res)] is scope:
                scope.inline = True
        for node in order:
            if _atomic(node):
                continue
            scope = place[id(node)]
            if not (scope.inline and scope.result is node):
                scope.bindings.append(node)
        return root, inner

    def print_body(self, result: BaseExpr, indent: int, closer: str | None) -> list[str]:
        """The lines of a body whose value is ``result`` (bindings, then the result), at
        ``indent`` levels; ``closer`` is appended at one level less (e.g. ``"}"``)."""
        root, inner = self._layout(result)
        lines: list[str] = []
        # Frame: [scope, next binding, result state, closer, indent]
        stack: list[list[Any]] = [[root, 0, False, closer, indent]]
        while stack:
            frame = stack[-1]
            scope, i, started, close, level = frame
            pad = "  " * level
            if i < len(scope.bindings):
                frame[1] += 1
                node = scope.bindings[i]
                name = f"%{self.counter}"
                self.counter += 1
                if isinstance(node, Function):
                    self.names[id(node)] = name
                    lines.append(f"{pad}{name} = {self.fn_header(node, 'fn')} {{")
                    stack.append([inner[id(node)], 0, False, "};", level + 1])
                else:
                    lines.append(f"{pad}{name} = {self._compound(node)};")
                    self.names[id(node)] = name
                continue
            res = scope.result
            if scope.inline and isinstance(res, Function) and not started:
                frame[2] = True
                lines.append(f"{pad}{self.fn_header(res, 'fn')} {{")
                stack.append([inner[id(res)], 0, False, "}", level + 1])
                continue
            if not started:
                lines.append(pad + (self._compound(res) if scope.inline else self.ref(res)))
            stack.pop()
            if close is not None:
                lines.append("  " * (level - 1) + close)
        return lines

    def print_def(self, name: str, func: Function) -> str:
        """A top-level ``def @name ...`` block."""
        header = self.fn_header(func, f"def @{check_global_name(name)}")
        lines = [header + " {", *self.print_body(func.body, 1, "}")]
        return "\n".join(lines)


def _non_default_attrs(value: Any) -> list[tuple[str, Any]]:
    out = []
    for a in attrs.fields(type(value)):
        v = getattr(value, a.name)
        default = a.default
        if default is attrs.NOTHING:
            out.append((a.name, v))
            continue
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        if a.converter is not None:
            try:
                default = a.converter(default)  # type: ignore[operator]
            except Exception:  # an odd converter: print the value
                default = attrs.NOTHING
        if _same_value(v, default):
            continue
        out.append((a.name, v))
    return out


def _same_value(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return bool(a == b)
