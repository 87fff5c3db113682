"""Printing the expressions of one statement as C, without recursion over their depth.

The expressions are planned bottom-up, then written top-down with an explicit stack of
pieces. C operators are used with their precedences (and the parentheses GCC's
``-Wparentheses`` asks for); the semantics C lacks come from the helpers of
:mod:`.runtime`. A subexpression is *spilled* into a ``const`` temporary declared before
the statement when it is used more than once (computed once) or when its C nesting grows
past :data:`SPILL_DEPTH` (C compilers limit nesting; Clang to 256 brackets), when that cannot
change what the program does: it calls no external function, and it is evaluated anyway or
reads no memory. The right side of ``&&``/``||`` and the sides of a ``Select`` are evaluated
only when needed (they may guard a load); a subexpression under one of them that reads
memory gets its temporary inside that side, which becomes a GNU statement expression
``({ const T t = ...; ...; value; })``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from passhost.backend.c.dtypes import (
    c_string,
    float_literal,
    int_literal,
    suffix,
    value_type,
)
from passhost.backend.c.errors import CCodegenError
from passhost.backend.c.runtime import Runtime
from passhost.backend.vector_math import VECTOR_MATH
from passhost.errors import PasshostError
from passhost.ir import traversal
from passhost.ir.types import FLOAT_DTYPES, INT_DTYPES
from passhost.tir import expr as te
from passhost.tir.function import Buffer
from passhost.tir.intrinsics import check_intrinsic_call

__all__ = ["SPILL_DEPTH", "ExprContext", "ExprPrinter", "KernelArgs", "Pointer", "Piece",
           "flat_index", "operands", "strip"]

#: C nesting depth past which a subexpression goes into a temporary.
SPILL_DEPTH = 48
_MIXED = -1  # no place to declare a temporary
_SPILLING, _IN_BLOCK = 1, 2  # modes of _render

ATOM, UNARY, MUL, ADD, REL, EQUAL, AND, OR, COND = 16, 15, 13, 12, 10, 9, 5, 4, 3

#: A piece of C text: literal text, or an expression written with at least a precedence.
Piece = str | tuple[te.PrimExpr, int]

_CMP = {te.LT: ("<", REL), te.LE: ("<=", REL), te.GT: (">", REL), te.GE: (">=", REL),
        te.EQ: ("==", EQUAL), te.NE: ("!=", EQUAL)}
_ARITH = {te.Add: ("+", ADD, "add"), te.Sub: ("-", ADD, "sub"), te.Mul: ("*", MUL, "mul")}
_LEAVES = (te.Var, te.IntImm, te.FloatImm, te.StringImm)
_FLOATS = (*FLOAT_DTYPES, "bfloat16")
_WRAPPING_FREE = ("uint32", "uint64")  # C's own arithmetic wraps and has no narrowing


class Pointer:
    """A C pointer expression: its text, the element type it points at (None: ``void``) and
    whether the memory is read-only."""

    __slots__ = ("const", "storage", "text")

    def __init__(self, text: str, storage: str | None, const: bool = False) -> None:
        self.text = text
        self.storage = storage
        self.const = const

    def mutable(self) -> str:
        """The pointer as an argument for a function that may write (const cast away)."""
        if not self.const:
            return self.text
        return f"({self.storage or 'void'} *){self.text}"


class KernelArgs:
    """What a ``kernel_printer`` gets besides the call: the C text of each argument after the
    kernel's name (buffers as pointers to their data, expressions as values) and the C symbol
    of the function being printed."""

    __slots__ = ("function", "texts")

    def __init__(self, texts: tuple[str, ...], function: str) -> None:
        self.texts = texts
        self.function = function


#: Prints a ``call_kernel`` as a C expression: ``kernel_printer(call, args) -> str``.
KernelPrinter = Callable[[te.Call, KernelArgs], str]


class ExprContext(Protocol):
    """What expressions need from the function they are printed in."""

    runtime: Runtime
    kernel_printer: KernelPrinter | None
    symbol: str

    def scalar(self, var: te.Var) -> str:
        """The C name of scalar variable ``var``."""

    def handle(self, var: te.Var) -> Pointer:
        """The pointer a handle variable stands for."""

    def pointer(self, buffer: Buffer) -> Pointer:
        """The pointer to the elements of ``buffer``."""

    def temp(self) -> str:
        """A fresh name for a temporary."""

    def fail(self, problem: str) -> CCodegenError:
        """An error about the function being printed."""

    def int_range(self, node: te.PrimExpr) -> tuple[float, float] | None:
        """The values integer ``node`` takes, when no operation in it can wrap around."""


def flat_index(shape: Sequence[int], indices: Sequence[te.PrimExpr]) -> list[Piece]:
    """Pieces of the row-major element offset of ``indices`` in an array of ``shape``:
    constant indices folded, products in int64."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    offset = 0
    terms: list[tuple[te.PrimExpr, int]] = []
    for idx, stride in zip(indices, strides):
        if isinstance(idx, te.IntImm):
            offset += idx.value * stride
        else:
            terms.append((idx, stride))
    if not terms:
        return [str(offset)]
    if len(terms) == 1 and terms[0][1] == 1 and offset == 0:
        return [(terms[0][0], 0)]
    pieces: list[Piece] = []
    for idx, stride in terms:
        # The first term makes the sum int64; a later one only needs widening to multiply.
        widen = idx.dtype not in ("int64", "uint64") and (stride != 1 or not pieces)
        if pieces:
            pieces.append(" + ")
        if widen:
            pieces.append("(int64_t)")
        pieces.append((idx, UNARY if widen else MUL))
        if stride != 1:
            pieces.append(f" * {stride}")
    if offset:
        pieces.append(f" + {offset}")
    return pieces


def strip(node: Any) -> Any:
    """``node`` without the casts that change nothing in C: to its own dtype, or from a
    float16/bfloat16 value (a float) to float32."""
    while isinstance(node, te.Cast) and (
            node.dtype == node.value.dtype
            or (node.dtype == "float32" and node.value.dtype in ("float16", "bfloat16"))):
        node = node.value
    return node


def _side_effects(node: te.PrimExpr) -> bool:
    return isinstance(node, te.Call) and node.op in te.NAMED_CALL_OPS


def operands(node: Any) -> list[te.PrimExpr]:
    """The operands of ``node`` written in its C, without the casts that change nothing."""
    cls = type(node)
    if cls in _LEAVES:
        return []
    if cls is te.BufferLoad:
        return [strip(i) for i in node.indices]
    if cls is te.Select:
        return [strip(node.condition), strip(node.true_value), strip(node.false_value)]
    if cls is te.Not:
        return [strip(node.a)]
    if cls is te.Cast:
        return [strip(node.value)]
    if cls is te.Call:
        return [strip(a) for a in node.args
                if isinstance(a, te.PrimExpr) and not isinstance(a, te.StringImm)]
    if isinstance(node, te.BinaryOp):
        return [strip(node.a), strip(node.b)]
    raise CCodegenError(f"the C printer cannot print a {cls.__name__} expression")


class ExprPrinter:
    """Writes the expressions of one statement; :meth:`print` returns the temporaries'
    declarations and the C text of each piece list."""

    def __init__(self, ctx: ExprContext) -> None:
        self.ctx = ctx
        self.rt = ctx.runtime
        self.names: dict[int, str] = {}
        self._forms: dict[int, tuple[int, list[Piece]]] = {}
        self._pure: dict[int, bool] = {}
        self._unrounded = 0  # id of the value a store rounds itself, if not computed once
        self._blocks: dict[int, list[str]] = {}  # id of a conditional side -> its temporaries
        self._keep: list[Any] = []

    # -- planning -------------------------------------------------------------------------
    def _conditional(self, node: Any, count: int) -> list[bool]:
        """For each operand of ``node``: whether C evaluates it only under a condition (the
        right side of ``&&``/``||``; the sides of a Select unless one calls a function)."""
        cls = type(node)
        if cls is te.And or cls is te.Or:
            return [False, True]
        if cls is te.Select:
            arms = self._pure[id(strip(node.true_value))] and self._pure[
                id(strip(node.false_value))]
            return [False, arms, arms]
        return [False] * count

    def print(self, pieces: Sequence[Sequence[Piece]],
              unrounded: te.PrimExpr | None = None) -> tuple[list[str], list[str]]:
        """(declarations of the spilled temporaries, the text of each piece list).

        ``unrounded`` is a float16 or bfloat16 value whose store converts it: its own rounding
        is left out.
        """
        roots = [strip(p[0]) for ps in pieces for p in ps if not isinstance(p, str)]
        found: dict[int, list[te.PrimExpr]] = {}

        def children(n: Any) -> list[te.PrimExpr]:
            got = found[id(n)] = operands(n)
            return got

        nodes = traversal.post_order(roots, children)  # nodes are numbered in this order
        number = {id(n): k for k, n in enumerate(nodes)}
        kids = [[number[id(c)] for c in found[id(n)]] for n in nodes]
        uses = [0] * len(nodes)
        for k in (*(number[id(r)] for r in roots), *(c for ks in kids for c in ks)):
            uses[k] += 1
        pure, safe = [False] * len(nodes), [False] * len(nodes)  # safe: may run early
        for k, n in enumerate(nodes):
            pure[k] = self._pure[id(n)] = (not _side_effects(n)
                                           and all(pure[c] for c in kids[k]))
            safe[k] = (pure[k] and type(n) is not te.BufferLoad
                       and all(safe[c] for c in kids[k]))
        # Where the temporary of each node may be declared: before the statement (0), in the
        # statement expression of the one conditional side it is under (that side's number
        # + 1), or nowhere (_MIXED: under several sides).
        evaluated = [False] * len(nodes)
        scope: list[int | None] = [None] * len(nodes)
        for r in roots:
            evaluated[number[id(r)]] = True
            scope[number[id(r)]] = 0
        for k in range(len(nodes) - 1, -1, -1):  # parents before children
            here = 0 if evaluated[k] else scope[k]
            for c, conditional in zip(kids[k], self._conditional(nodes[k], len(kids[k]))):
                if not conditional and evaluated[k]:
                    evaluated[c] = True
                s = c + 1 if conditional else here
                scope[c] = s if scope[c] is None or scope[c] == s else _MIXED
        depth = [0] * len(nodes)
        lines: list[str] = []
        for k, n in enumerate(nodes):
            if not kids[k]:
                continue
            d = 1 + max(depth[c] for c in kids[k])
            into = 0 if evaluated[k] or safe[k] else scope[k]
            if into == k + 1:  # a side is written in a block of its own
                into = _MIXED
            if pure[k] and into != _MIXED and (uses[k] > 1 or d > SPILL_DEPTH):
                name = self.ctx.temp()
                decl = "void *const" if n.dtype == "handle" else f"const {value_type(n.dtype)}"
                text = f"{decl} {name} = {self._render(n, 0, _SPILLING)};"
                if into:
                    self._blocks.setdefault(id(nodes[into - 1]), []).append(text)
                else:
                    lines.append(text)
                self.names[id(n)] = name
                self._keep.append(n)
                d = 0
            depth[k] = d
        if unrounded is not None and id(strip(unrounded)) not in self.names:
            self._unrounded = id(strip(unrounded))
        return lines, [self.text(ps) for ps in pieces]

    def text(self, pieces: Sequence[Piece]) -> str:
        """The C text of a piece list (expressions planned by :meth:`print` or leaves)."""
        out = []
        for p in pieces:
            out.append(p if isinstance(p, str) else self._render(strip(p[0]), p[1]))
        return "".join(out)

    # -- writing --------------------------------------------------------------------------
    def _render(self, root: te.PrimExpr, need: int, mode: int = 0) -> str:
        """The text of ``root`` (mode _SPILLING: its own, not its temporary's name;
        _IN_BLOCK: not again the statement expression of its temporaries)."""
        out: list[str] = []
        stack: list[Any] = [(root, need, mode)]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            node, need, mode = item
            if mode != _SPILLING:
                name = self.names.get(id(node))
                if name is not None:
                    out.append(name)
                    continue
            if mode == 0 and id(node) in self._blocks:  # a side with temporaries of its own
                stack += ["; })", (node, 0, _IN_BLOCK), " ".join(["({", *self._blocks[id(node)],
                                                                  ""])]
                continue
            prec, pieces = self._form(node)
            paren = prec < need
            if paren:
                stack.append(")")
            for piece in reversed(pieces):
                stack.append(piece if isinstance(piece, str) else (strip(piece[0]), piece[1], 0))
            if paren:
                stack.append("(")
        return "".join(out)

    def _form(self, node: Any) -> tuple[int, list[Piece]]:
        form = self._forms.get(id(node))
        if form is None:
            form = self._make_form(node)
            self._forms[id(node)] = form
            self._keep.append(node)
        return form

    def _make_form(self, n: Any) -> tuple[int, list[Piece]]:
        cls = type(n)
        if cls is te.Var:
            text = self.ctx.handle(n).text if n.dtype == "handle" else self.ctx.scalar(n)
            return ATOM, [text]
        if cls is te.IntImm or cls is te.FloatImm:
            text = (int_literal(n.value, n.dtype) if cls is te.IntImm
                    else float_literal(n.value, n.dtype))
            return (UNARY if text.startswith("-") or "(-" in text else ATOM), [text]
        if cls is te.StringImm:
            return ATOM, [c_string(n.value)]
        if cls is te.BufferLoad:
            return self._load(n)
        if cls in _CMP:
            op, prec = _CMP[cls]
            need = ATOM if n.a.dtype == "bool" else ADD  # no `!a == b`, no `a < b == c`
            return prec, [(n.a, need), f" {op} ", (n.b, need)]
        if cls is te.And:
            return AND, [(n.a, AND), " && ", (n.b, AND + 1)]
        if cls is te.Or:  # `a && b || c` would draw -Wparentheses
            return OR, [(n.a, OR if isinstance(strip(n.a), te.Or) else AND + 1), " || ",
                        (n.b, AND + 1)]
        if cls is te.Not:
            return UNARY, ["!", (n.a, UNARY)]
        if isinstance(n, te.BinaryOp):
            return self._arith(n)
        if cls is te.Select:
            return self._select(n)
        if cls is te.Cast:
            return self._cast(n)
        if cls is te.Call:
            return self._call(n)
        raise self.ctx.fail(f"cannot print a {cls.__name__} expression")

    def _call_form(self, name: str, *args: te.PrimExpr) -> tuple[int, list[Piece]]:
        pieces: list[Piece] = [f"{name}("]
        for i, a in enumerate(args):
            if i:
                pieces.append(", ")
            pieces.append((a, 0))
        pieces.append(")")
        return ATOM, pieces

    def _f16(self, node: Any, form: tuple[int, list[Piece]]) -> tuple[int, list[Piece]]:
        """``form`` rounded to float16 when ``node`` is float16 (not when it is the value a
        store converts to float16 anyway)."""
        if node.dtype != "float16" or id(node) == self._unrounded:
            return form
        return ATOM, [f"{self.rt.use('ph_f16_round')}(", *form[1], ")"]

    def _load(self, n: te.BufferLoad) -> tuple[int, list[Piece]]:
        ptr = self.ctx.pointer(n.buffer)
        access = [f"{ptr.text}[", *flat_index(n.buffer.shape, n.indices), "]"]
        if n.dtype == "float16":
            return UNARY, ["(float)", *access]
        if n.dtype == "bfloat16":
            return ATOM, [f"{self.rt.use('ph_bf16_to_f32')}(", *access, ")"]
        return ATOM, access

    def _arith(self, n: te.BinaryOp) -> tuple[int, list[Piece]]:
        dtype, cls = n.dtype, type(n)
        sfx = suffix(dtype)
        if dtype in INT_DTYPES:
            if cls in _ARITH:
                op, prec, name = _ARITH[cls]
                if dtype in _WRAPPING_FREE or self.ctx.int_range(n) is not None:
                    return prec, [(n.a, prec), f" {op} ", (n.b, prec + 1)]
                return self._call_form(self.rt.use(f"ph_{name}_{sfx}"), n.a, n.b)
            if cls in (te.Min, te.Max):
                return self._call_form(self.rt.use(f"ph_{cls.__name__.lower()}_{sfx}"),
                                       n.a, n.b)
            unsigned = dtype.startswith("u")
            kind = {te.Div: "div", te.Mod: "mod", te.FloorDiv: "div" if unsigned else
                    "floordiv", te.FloorMod: "mod" if unsigned else "floormod"}[cls]
            b = strip(n.b)
            if kind in ("div", "mod") and isinstance(b, te.IntImm) and b.value not in (0, -1):
                return MUL, [(n.a, MUL), " / " if kind == "div" else " % ", (b, MUL + 1)]
            return self._call_form(self.rt.use(f"ph_{kind}_{sfx}"), n.a, n.b)
        if cls in _ARITH or cls is te.Div:
            op, prec = ("/", MUL) if cls is te.Div else _ARITH[cls][:2]
            return self._f16(n, (prec, [(n.a, prec), f" {op} ", (n.b, prec + 1)]))
        if cls in (te.Min, te.Max):
            return self._call_form(self.rt.use(f"ph_{cls.__name__.lower()}_{sfx}"), n.a, n.b)
        if cls is te.Mod:
            return self._f16(n, self._call_form("fmod" if dtype == "float64" else "fmodf",
                                                n.a, n.b))
        kind = "floordiv" if cls is te.FloorDiv else "floormod"
        return self._f16(n, self._call_form(self.rt.use(f"ph_{kind}_{sfx}"), n.a, n.b))

    def _select(self, n: te.Select) -> tuple[int, list[Piece]]:
        if self._pure[id(strip(n.true_value))] and self._pure[id(strip(n.false_value))]:
            return COND, [(n.condition, AND + 1), " ? ", (n.true_value, OR), " : ",
                          (n.false_value, COND)]
        # A side calls a function: evaluate both sides, as TIR does, then choose.
        vt = "void *const" if n.dtype == "handle" else f"const {value_type(n.dtype)}"
        t, f = self.ctx.temp(), self.ctx.temp()
        return ATOM, [f"({{ {vt} {t} = ", (n.true_value, 0), f"; {vt} {f} = ",
                      (n.false_value, 0), "; ", (n.condition, AND + 1), f" ? {t} : {f}; }})"]

    def _cast(self, n: te.Cast) -> tuple[int, list[Piece]]:
        src, dst, x = n.value.dtype, n.dtype, n.value
        if "handle" in (src, dst):
            raise self.ctx.fail(f"cannot convert a {src} to a {dst}")
        if dst == "bool":
            return EQUAL, [(x, ADD), " != 0"]
        if dst in ("float16", "bfloat16"):
            if dst == "float16" and src == "float64":
                pieces: list[Piece] = [(x, 0)]
                rounding = "ph_f16_from_f64"
            else:
                widen = src not in (_FLOATS if dst == "float16" else ("float32", "float16"))
                pieces = ["(float)", (x, UNARY)] if widen else [(x, 0)]
                rounding = "ph_f16_round" if dst == "float16" else "ph_bf16_round"
            if id(n) == self._unrounded:  # a store rounds it
                return (UNARY if len(pieces) == 2 else 0), pieces
            return ATOM, [f"{self.rt.use(rounding)}(", *pieces, ")"]
        if dst in INT_DTYPES and src in _FLOATS:
            name = f"ph_{suffix(src)}_to_{suffix(dst)}"
            return self._call_form(self.rt.use(name), x)
        return UNARY, [f"({value_type(dst)})", (x, UNARY)]

    def _call(self, n: te.Call) -> tuple[int, list[Piece]]:
        if n.op == "call_extern":
            return self._extern(n)
        if n.op == "call_kernel":
            return self._kernel(n)
        try:
            intrinsic = check_intrinsic_call(n)
        except PasshostError as err:
            raise self.ctx.fail(str(err)) from None
        dtype = n.args[0].dtype
        name = intrinsic.c_name(dtype)
        if dtype in ("float32", "float16") and n.op in VECTOR_MATH:
            name = VECTOR_MATH[n.op]  # our own, which the compiler vectorises
        if name.startswith("ph_"):
            self.rt.use(name)
        if intrinsic.returns_bool:
            return UNARY, ["(bool)", *self._call_form(name, *n.args)[1]]
        return self._f16(n, self._call_form(name, *n.args))

    def call_args(self, n: te.Call, mutable: bool = True) -> list[Piece]:
        """The arguments after a named call's function name: buffers and handles as
        pointers (``const`` cast away when ``mutable``), expressions as values."""
        out: list[Piece] = []
        for a in n.args[1:]:
            if isinstance(a, Buffer):
                ptr = self.ctx.pointer(a)
                out.append(ptr.mutable() if mutable else ptr.text)
            elif isinstance(a, te.Var) and a.dtype == "handle":
                ptr = self.ctx.handle(a)
                out.append(ptr.mutable() if mutable else ptr.text)
            else:
                out.append((a, 0))
        return out

    def _extern(self, n: te.Call) -> tuple[int, list[Piece]]:
        pieces: list[Piece] = [f"{n.args[0].value}("]
        for i, arg in enumerate(self.call_args(n)):
            pieces.extend((", ", arg) if i else (arg,))
        pieces.append(")")
        return ATOM, pieces

    def _kernel(self, n: te.Call) -> tuple[int, list[Piece]]:
        printer = self.ctx.kernel_printer
        if printer is None:
            raise self.ctx.fail(f"call_kernel of {n.args[0].value!r}: a kernel call is not C; "
                                "the target must give the printer a kernel_printer")
        texts = tuple(self.text([arg]) for arg in self.call_args(n))
        return ATOM, [f"({printer(n, KernelArgs(texts, self.ctx.symbol))})"]
