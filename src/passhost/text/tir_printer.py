"""Printing PrimFuncs (and loose TIR statements and expressions) in passhost's text format.

The syntax is described in docs/ir-text-format.md ("PrimFuncs"). Every variable and
buffer of a function gets one distinct ``%name`` (duplicate name hints are numbered); a
buffer's data pointer that is first defined by the buffer itself is written ``%B.data``.
Nothing here recurses over the depth of the IR: statements are laid out with an explicit
work stack and expressions are written with an explicit stack of pending pieces.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from passhost.errors import PasshostError
from passhost.ir.node import Node
from passhost.text.metadata import MetadataWriter
from passhost.text.relay_printer import (
    INLINE_CONSTANT_LIMIT,
    format_constant_values,
    format_func_attrs,
)
from passhost.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    Sub,
    Var,
)
from passhost.tir.function import Buffer, PrimFunc
from passhost.tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from passhost.tir.visitor import post_order

__all__ = ["BINARY_OPERATORS", "FUNCTION_OPERATORS", "TIRPrinter", "print_prim_func",
           "print_tir"]

#: Infix operators: class -> (text, precedence). Higher binds tighter; all are left
#: associative. ``!`` binds tighter than all of them (precedence 7).
BINARY_OPERATORS: dict[type, tuple[str, int]] = {
    Or: ("||", 1), And: ("&&", 2), EQ: ("==", 3), NE: ("!=", 3), LT: ("<", 4), LE: ("<=", 4),
    GT: (">", 4), GE: (">=", 4), Add: ("+", 5), Sub: ("-", 5), Mul: ("*", 6), Div: ("/", 6),
}
#: Binary operators written as calls: class -> name.
FUNCTION_OPERATORS: dict[type, str] = {
    Min: "min", Max: "max", FloorDiv: "floordiv", FloorMod: "floormod", Mod: "truncmod",
}
_NOT_PREC = 7
_INDENT = "  "
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
_GLOBAL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _items(stmt: Stmt) -> tuple[Stmt, ...]:
    """The statements of a block whose value is ``stmt`` (a block of one statement is that
    statement; any other count is a SeqStmt)."""
    if isinstance(stmt, SeqStmt) and len(stmt.seq) != 1:
        return stmt.seq
    return (stmt,)


def _plan_implicit_buffers(body: Stmt, params: tuple[Var, ...],
                           matched: tuple[Buffer, ...]) -> dict[Any, list[Buffer]]:
    """Where to declare the buffers that no ``match`` or ``DeclBuffer`` declares: ``"top"``
    (start of the body) or the id of the statement that defines their data pointer (start
    of its body). Buffers are listed in order of first use."""
    declared = {id(b) for b in matched}
    binder_of: dict[int, int] = {}
    owner_at: dict[int, Any] = {id(b.data): "top" for b in matched}
    stack: list[Stmt] = [body]
    while stack:
        s = stack.pop()
        if isinstance(s, SeqStmt):
            stack.extend(reversed(s.seq))
        elif isinstance(s, IfThenElse):
            if s.else_case is not None:
                stack.append(s.else_case)
            stack.append(s.then_case)
        elif isinstance(s, (For, LetStmt, Allocate, AllocateConst, DeclBuffer, AssertStmt)):
            if isinstance(s, For):
                binder_of.setdefault(id(s.loop_var), id(s))
            elif isinstance(s, LetStmt):
                binder_of.setdefault(id(s.var), id(s))
            elif isinstance(s, (Allocate, AllocateConst)):
                binder_of.setdefault(id(s.buffer_var), id(s))
            elif isinstance(s, DeclBuffer):
                declared.add(id(s.buffer))
                owner_at.setdefault(id(s.buffer.data), id(s))
            stack.append(s.body)
    param_ids = {id(p) for p in params}
    out: dict[Any, list[Buffer]] = {}
    for node in post_order(body):
        if not isinstance(node, Buffer) or id(node) in declared:
            continue
        declared.add(id(node))
        data = id(node.data)
        if data in param_ids:
            key: Any = "top"
        elif data in binder_of:
            key = binder_of[data]
        else:
            key = owner_at.get(data, "top")
        out.setdefault(key, []).append(node)
    return out


class TIRPrinter:
    """Prints one PrimFunc (or loose statements and expressions) with consistent names.

    Constants of ``AllocateConst`` with at most ``INLINE_CONSTANT_LIMIT`` elements print
    inline; larger ones go to ``meta`` as ``meta[Constant][i]``, or print as ``elided``
    (which does not parse back) when ``meta`` is None.
    """

    def __init__(self, meta: MetadataWriter | None = None) -> None:
        self.meta = meta
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.owner: dict[int, Buffer] = {}
        self.plan: dict[Any, list[Buffer]] = {}
        self._keep: list[Any] = []

    # -- names --------------------------------------------------------------------------
    def _fresh(self, obj: Node, hint: str, default: str) -> str:
        base = _NAME_CHARS.sub("_", hint) or default
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        text = "%" + name
        self.names[id(obj)] = text
        self._keep.append(obj)
        return text

    def define(self, var: Var) -> str:
        """The name of ``var`` at a place that defines it."""
        return self.names.get(id(var)) or self._fresh(var, var.name_hint, "v")

    def ref(self, node: Var | Buffer) -> str:
        """The name of a variable or buffer where it is used."""
        got = self.names.get(id(node))
        if got is not None:
            return got
        if isinstance(node, Buffer):
            return self._fresh(node, node.name, "buf")
        return self._fresh(node, node.name_hint, "v")

    def buffer_decl(self, buf: Buffer, kind: str, param: Var | None = None) -> str:
        """``buffer %B: dtype[shape] (in "scope")? = kind(...)``; defines ``%B`` (and
        ``%B.data`` when the buffer is the first to define its pointer)."""
        name = self.names.get(id(buf)) or self._fresh(buf, buf.name, "buf")
        args = [] if param is None else [self.ref(param)]
        data = buf.data
        data_name = self.names.get(id(data))
        if data_name is None:
            self.names[id(data)] = f"{name}.data"
            self.owner[id(data)] = buf
            self._keep.append(data)
        elif self.owner.get(id(data)) is not buf:
            args.append(f"data={data_name}" if kind == "match" else data_name)
        dims = ", ".join(str(d) for d in buf.shape)
        scope = f" in {_string(buf.scope)}" if buf.scope != "global" else ""
        return f"buffer {name}: {buf.dtype}[{dims}]{scope} = {kind}({', '.join(args)})"

    # -- expressions --------------------------------------------------------------------
    def expr(self, root: PrimExpr | Buffer) -> str:
        """The text of an expression (or of a buffer, as a call argument)."""
        out: list[str] = []
        stack: list[Any] = [(root, 0)]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            node, ctx = item
            cls = type(node)
            op = BINARY_OPERATORS.get(cls)
            if op is not None:
                text, prec = op
                paren = prec < ctx
                if paren:
                    stack.append(")")
                stack.extend(((node.b, prec + 1), f" {text} ", (node.a, prec)))
                if paren:
                    stack.append("(")
            elif cls is Var or cls is Buffer:
                out.append(self.ref(node))
            elif cls is IntImm:
                out.append(self._int(node))
            elif cls is FloatImm:
                out.append(self._float_imm(node))
            elif cls is StringImm:
                out.append(_string(node.value))
            elif cls is BufferLoad:
                self._call_like(stack, self.ref(node.buffer) + "[", node.indices, "]")
            elif cls is Not:
                paren = ctx > _NOT_PREC
                if paren:
                    stack.append(")")
                stack.append((node.a, _NOT_PREC))
                stack.append("(!" if paren else "!")
            elif cls in FUNCTION_OPERATORS:
                self._call_like(stack, FUNCTION_OPERATORS[cls] + "(", (node.a, node.b), ")")
            elif cls is Select:
                self._call_like(stack, "select(",
                                (node.condition, node.true_value, node.false_value), ")")
            elif cls is Cast:
                self._call_like(stack, f"cast({node.dtype}, ", (node.value,), ")")
            elif cls is Call:
                head = node.op + ("" if node.dtype == "int32" else f"<{node.dtype}>") + "("
                self._call_like(stack, head, node.args, ")")
            else:
                raise PasshostError(f"cannot print {type(node).__name__} as a TIR expression")
        return "".join(out)

    @staticmethod
    def _call_like(stack: list[Any], head: str, args: Any, tail: str) -> None:
        stack.append(tail)
        for i in range(len(args) - 1, -1, -1):
            stack.append((args[i], 0))
            if i:
                stack.append(", ")
        stack.append(head)

    @staticmethod
    def _int(node: IntImm) -> str:
        if node.dtype == "bool":
            return "true" if node.value else "false"
        if node.dtype == "int32":
            return str(node.value)
        return f"{node.dtype}({node.value})"

    @staticmethod
    def _float_imm(node: FloatImm) -> str:
        text = repr(node.value)  # reads back to exactly this double; inf and nan as words
        if node.dtype == "float32" and math.isfinite(node.value):
            return text
        return f"{node.dtype}({text})"

    def _const_data(self, arr: np.ndarray) -> str:
        if arr.size <= INLINE_CONSTANT_LIMIT:
            values = format_constant_values(arr)
            if values is not None:
                return "[" + ", ".join(values) + "]"
        if self.meta is not None:
            return f"meta[Constant][{self.meta.add(arr)}]"
        return "elided"

    # -- statements ---------------------------------------------------------------------
    def _binder_header(self, s: Stmt) -> str:
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            return f"let {self.define(s.var)}: {s.var.dtype} = {value}"
        if isinstance(s, Allocate):
            dims = ", ".join(str(d) for d in s.extents)
            scope = f" in {_string(s.scope)}" if s.scope != "global" else ""
            return f"allocate {self.define(s.buffer_var)}: {s.dtype}[{dims}]{scope}"
        if isinstance(s, AllocateConst):
            dims = ", ".join(str(d) for d in s.extents)
            name = self.define(s.buffer_var)
            return f"allocate_const {name}: {s.dtype}[{dims}] = {self._const_data(s.data)}"
        if isinstance(s, DeclBuffer):
            return self.buffer_decl(s.buffer, "decl")
        assert isinstance(s, AssertStmt)
        return f"assert({self.expr(s.condition)}, {self.expr(s.message)})"

    def _views(self, key: Any, level: int, out: list[str]) -> None:
        for buf in self.plan.get(key, ()):
            out.append(_INDENT * level + self.buffer_decl(buf, "view") + ";")

    def block(self, body: Stmt, level: int, out: list[str]) -> None:
        """Append the lines of the statements of block ``body`` at indent ``level``."""
        stack: list[tuple[Any, ...]] = [("items", level, _items(body), 0)]
        while stack:
            work = stack.pop()
            kind, lvl = work[0], work[1]
            if kind == "line":
                out.append(_INDENT * lvl + work[2])
            elif kind == "items":
                items, i = work[2], work[3]
                if i >= len(items):
                    continue
                if i + 1 < len(items):
                    stack.append(("items", lvl, items, i + 1))
                self._stmt(items[i], lvl, i + 1 == len(items), stack, out)
            else:  # "else": what follows the then-block of an IfThenElse
                node = work[2]
                other = node.else_case
                pad = _INDENT * lvl
                if other is None:
                    out.append(pad + "}")
                elif isinstance(other, IfThenElse):
                    out.append(pad + f"}} else if ({self.expr(other.condition)}) {{")
                    stack.append(("else", lvl, other))
                    stack.append(("items", lvl + 1, _items(other.then_case), 0))
                else:
                    out.append(pad + "} else {")
                    stack.append(("line", lvl, "}"))
                    stack.append(("items", lvl + 1, _items(other), 0))

    def _stmt(self, s: Stmt, lvl: int, last: bool, stack: list[tuple[Any, ...]],
              out: list[str]) -> None:
        pad = _INDENT * lvl
        if isinstance(s, BufferStore):
            indices = ", ".join(self.expr(i) for i in s.indices)
            out.append(f"{pad}{self.ref(s.buffer)}[{indices}] = {self.expr(s.value)};")
        elif isinstance(s, Evaluate):
            out.append(f"{pad}{self.expr(s.value)};")
        elif isinstance(s, SeqStmt):
            out.append(pad + "seq {")
            stack.append(("line", lvl, "}"))
            if s.seq:
                stack.append(("items", lvl + 1, s.seq, 0))
        elif isinstance(s, For):
            bounds = f"{self.expr(s.min)}, {self.expr(s.extent)}"
            var = self.define(s.loop_var)
            out.append(f"{pad}for {var}: {s.loop_var.dtype} in {s.kind}({bounds}) {{")
            self._views(id(s), lvl + 1, out)
            stack.append(("line", lvl, "}"))
            stack.append(("items", lvl + 1, _items(s.body), 0))
        elif isinstance(s, IfThenElse):
            out.append(f"{pad}if ({self.expr(s.condition)}) {{")
            stack.append(("else", lvl, s))
            stack.append(("items", lvl + 1, _items(s.then_case), 0))
        elif isinstance(s, (LetStmt, Allocate, AllocateConst, DeclBuffer, AssertStmt)):
            header = self._binder_header(s)
            if last:  # the rest of the block is the body
                out.append(pad + header + ";")
                self._views(id(s), lvl, out)
                items = _items(s.body)
                if items:
                    stack.append(("items", lvl, items, 0))
            else:
                out.append(pad + header + " {")
                self._views(id(s), lvl + 1, out)
                stack.append(("line", lvl, "}"))
                items = _items(s.body)
                if items:
                    stack.append(("items", lvl + 1, items, 0))
        else:
            raise PasshostError(f"cannot print {type(s).__name__} as a TIR statement")

    # -- functions ----------------------------------------------------------------------
    def print_func(self, name: str, func: PrimFunc) -> str:
        """The text of ``func`` named ``@name``."""
        if not _GLOBAL_RE.match(name):
            raise PasshostError(f"cannot print function name {name!r}: a global name is a "
                                "letter or '_' followed by letters, digits, '_', '.' or '-'")
        self.plan = _plan_implicit_buffers(func.body, func.params,
                                           tuple(func.buffer_map.values()))
        params = ", ".join(f"{self.define(p)}: {p.dtype}" for p in func.params)
        attrs_text = format_func_attrs(func.attrs)
        header = f"prim_func @{name}" + (f" {attrs_text} " if attrs_text else "")
        header += f"({params})"
        if func.ret_type is not None:
            header += f" -> {func.ret_type}"
        out = [header + " {"]
        for param, buf in func.buffer_map.items():
            out.append(_INDENT + self.buffer_decl(buf, "match", param) + ";")
        self._views("top", 1, out)
        self.block(func.body, 1, out)
        out.append("}")
        return "\n".join(out) + "\n"


def print_prim_func(name: str, func: PrimFunc, meta: MetadataWriter | None) -> str:
    """The text of ``func`` as ``prim_func @name ... { ... }`` (ending with a newline).

    Large ``AllocateConst`` data goes to ``meta`` as ``meta[Constant][i]``; with ``meta``
    None it prints as ``elided``, which the parser rejects with a clear message.
    """
    if not isinstance(func, PrimFunc):
        raise PasshostError(f"print_prim_func needs a PrimFunc, found {func!r}")
    return TIRPrinter(meta).print_func(name, func)


def print_tir(node: Node, meta: MetadataWriter | None = None) -> str:
    """The text of a loose TIR node: an expression, a statement block (undeclared buffers
    first, as ``view`` declarations), a buffer declaration or a PrimFunc (as ``@main``)."""
    printer = TIRPrinter(meta)
    if isinstance(node, PrimFunc):
        return printer.print_func("main", node)
    if isinstance(node, (PrimExpr, Buffer)) and not isinstance(node, Stmt):
        if isinstance(node, Buffer):
            return printer.buffer_decl(node, "view")
        return printer.expr(node)
    if isinstance(node, Stmt):
        printer.plan = _plan_implicit_buffers(node, (), ())
        out: list[str] = []
        printer._views("top", 0, out)
        printer.block(node, 0, out)
        return "\n".join(out)
    raise PasshostError(f"cannot print {node!r} as TIR")
