"""Parsing PrimFuncs of passhost's IR text format (syntax: docs/ir-text-format.md ("PrimFuncs")).

Nothing here recurses over nesting: statements are read with an explicit stack of open
blocks and expressions with an operator-precedence parser over explicit stacks, so a
100 000-statement block, 10 000 nested parentheses or a 10 000-deep chain of ``+`` parse
fine. Every error is a :class:`~passhost.errors.ParseError` at the offending token saying
what was expected.

Within one ``prim_func`` each ``%name`` denotes one variable or buffer. A name may be
defined again after its scope has ended (two loops over ``%i``); it then denotes the same
object, which is how a printed function that binds one variable in two places reads back
exactly. Defining a name that is still in scope is an error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from passhost.errors import PasshostError, close_matches
from passhost.ir.types import DTYPES, FLOAT_DTYPES, INT_DTYPES
from passhost.text.lexer import (
    EOF,
    FLOAT,
    GLOBAL,
    IDENT,
    INT,
    LOCAL,
    PUNCT,
    STRING,
    Token,
    TokenStream,
)
from passhost.text.metadata import MetadataReader
from passhost.text.tir_printer import BINARY_OPERATORS, FUNCTION_OPERATORS
from passhost.tir.expr import (
    RESERVED_WORDS,
    TIR_DTYPES,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Not,
    PrimExpr,
    Select,
    StringImm,
    Var,
)
from passhost.tir.function import Buffer, PrimFunc
from passhost.tir.stmt import (
    FOR_KINDS,
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

__all__ = ["TIRParser", "parse_prim_func", "parse_prim_func_text"]

_BINOPS: dict[str, tuple[int, type]] = {
    text: (prec, cls) for cls, (text, prec) in BINARY_OPERATORS.items()}
_FUNCS: dict[str, type] = {name: cls for cls, name in FUNCTION_OPERATORS.items()}
_NOT_PREC = 7
_STATEMENT_KEYWORDS = ("for", "if", "let", "allocate", "allocate_const", "buffer", "assert",
                       "seq")
_BUFFER_KINDS = ("match", "decl", "view")


def _block_value(items: list[Stmt]) -> Stmt:
    """The statement a block of ``items`` stands for: the item itself when there is exactly
    one, else a SeqStmt of them."""
    return items[0] if len(items) == 1 else SeqStmt(items)


class _Frame:
    """An open block of statements (or a statement waiting for its body)."""

    __slots__ = ("build", "extra", "flat", "items", "kind", "names", "tok")

    def __init__(self, kind: str, tok: Token, *, flat: bool = False,
                 names: list[str] | None = None,
                 build: Callable[[Stmt], Stmt] | None = None, extra: Any = None) -> None:
        self.kind = kind
        self.tok = tok
        self.flat = flat
        self.items: list[Stmt] = []
        self.names = names if names is not None else []
        self.build = build
        self.extra = extra


class _Group:
    """An open bracket in an expression: ``(``, a call's or a buffer's argument list."""

    __slots__ = ("args", "arity", "base", "extra", "kind", "tok")

    def __init__(self, kind: str, tok: Token, base: int, arity: int | None = None,
                 extra: Any = None) -> None:
        self.kind = kind  # paren | call | index | select | cast | func
        self.tok = tok
        self.base = base  # operand stack height when opened
        self.args: list[tuple[Any, Token]] = []
        self.arity = arity
        self.extra = extra


class TIRParser:
    """Reads one ``prim_func`` from a token stream."""

    def __init__(self, ts: TokenStream, meta: MetadataReader | None = None) -> None:
        self.ts = ts
        self.meta = meta if meta is not None else MetadataReader()
        self.env: dict[str, Var | Buffer] = {}
        self.defined: dict[str, tuple[Var | Buffer, Token]] = {}
        self.params: dict[str, Var] = {}
        self.matched: set[str] = set()

    # -- helpers ------------------------------------------------------------------------
    def error(self, message: str, tok: Token | None = None) -> NoReturn:
        """Raise a ParseError at ``tok`` (default: the current token)."""
        self.ts.error(message, tok)

    def build(self, tok: Token, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, with a construction error reported at ``tok``."""
        try:
            return fn(*args, **kwargs)
        except (PasshostError, TypeError, ValueError, OverflowError) as err:
            message = str(err)
            if isinstance(err, PasshostError) and getattr(err, "span", None) is not None:
                message = message.rsplit(" (at ", 1)[0]
            self.error(message, tok)

    def dtype(self, allow_handle: bool = True) -> str:
        """A dtype name such as ``int32``."""
        tok = self.ts.peek()
        known = TIR_DTYPES if allow_handle else DTYPES
        if tok.kind != IDENT:
            self.error(f"expected a dtype, found {tok.describe()}")
        if tok.text not in known:
            hint = close_matches(tok.text, known)
            more = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
            self.error(f"unknown dtype {tok.text!r}{more} (expected one of "
                       f"{', '.join(known)})")
        self.ts.next()
        return tok.text

    def string(self, tok: Token) -> str:
        """The value of a string token (JSON escapes)."""
        try:
            return json.loads(tok.text, strict=False)
        except json.JSONDecodeError as err:
            self.error(f"bad string literal: {err.msg}", tok)

    def int_literal(self) -> int:
        """A possibly negative integer literal."""
        neg = self.ts.accept_punct("-") is not None
        tok = self.ts.expect(INT, what="an integer")
        return -int(tok.text) if neg else int(tok.text)

    def dims(self) -> tuple[int, ...]:
        """``[d0, d1, ...]``: a static shape."""
        ts = self.ts
        first = ts.expect_punct("[")
        out: list[int] = []
        while not ts.accept_punct("]"):
            out.append(int(ts.expect(INT, what="a dimension (a non-negative integer)").text))
            if not ts.accept_punct(","):
                ts.expect_punct("]", "',' or ']'")
                break
        return ts.check_shape(out, first)

    def scope_suffix(self) -> str:
        """An optional ``in "scope"``."""
        if self.ts.accept(IDENT, "in"):
            return self.string(self.ts.expect(STRING, what="a memory scope string"))
        return "global"

    # -- names --------------------------------------------------------------------------
    def lookup(self, tok: Token) -> Var | Buffer:
        """The variable or buffer ``%name`` stands for here."""
        name = tok.text[1:]
        obj = self.env.get(name)
        if obj is not None:
            return obj
        prev = self.defined.get(name)
        if prev is not None:
            where = prev[1]
            self.error(f"{tok.text} is not in scope here (it was defined at line {where.line},"
                       f" column {where.column})", tok)
        self.error(f"undefined variable {tok.text}", tok)

    def _check_free(self, tok: Token) -> str:
        name = tok.text[1:]
        if name in self.env:
            where = self.defined[name][1]
            self.error(f"{tok.text} is already defined (at line {where.line}, column "
                       f"{where.column})", tok)
        return name

    def define_var(self, tok: Token, dtype: str, names: list[str]) -> Var:
        """Define ``%name`` as a variable of ``dtype`` (the same Var as an earlier definition
        of the name whose scope has ended)."""
        name = self._check_free(tok)
        prev = self.defined.get(name)
        if prev is not None:
            var = prev[0]
            if not isinstance(var, Var) or var.dtype != dtype:
                self._redefined(tok, prev)
        else:
            var = self.build(tok, Var, name, dtype, span=self.ts.span(tok))
            self.defined[name] = (var, tok)
        self.env[name] = var
        names.append(name)
        return var  # type: ignore[return-value]

    def _redefined(self, tok: Token, prev: tuple[Any, Token]) -> NoReturn:
        obj, where = prev
        what = (f"a {obj.dtype} variable" if isinstance(obj, Var)
                else f"buffer {obj.dtype}{list(obj.shape)}")
        self.error(f"{tok.text} was defined differently at line {where.line}, column "
                   f"{where.column} (as {what}); one name stands for one variable or buffer "
                   "in a prim_func", tok)

    def define_buffer(self, tok: Token, dtype: str, shape: tuple[int, ...], scope: str,
                      data: Var | None, names: list[str]) -> Buffer:
        """Define ``%name`` as a buffer (the same Buffer as an identical earlier declaration
        of the name whose scope has ended); ``data`` None means a fresh pointer."""
        name = self._check_free(tok)
        prev = self.defined.get(name)
        if prev is not None:
            buf = prev[0]
            if (not isinstance(buf, Buffer) or (buf.dtype, buf.shape, buf.scope)
                    != (dtype, shape, scope) or (data is not None and data is not buf.data)):
                self._redefined(tok, prev)
        else:
            if data is None:
                data = self.build(tok, Var, f"{name}_data", "handle", span=self.ts.span(tok))
            buf = self.build(tok, Buffer, data, dtype, shape, name, scope,
                             span=self.ts.span(tok))
            self.defined[name] = (buf, tok)
        self.env[name] = buf
        names.append(name)
        return buf  # type: ignore[return-value]

    def var_ref(self, what: str = "a pointer variable") -> tuple[Var, Token]:
        """``%x`` or ``%B.data``: a variable in scope."""
        tok = self.ts.expect(LOCAL, what=what)
        obj = self.lookup(tok)
        if self.ts.accept_punct("."):
            self.ts.expect_keyword("data")
            if not isinstance(obj, Buffer):
                self.error(f"{tok.text} is a variable; only buffers have .data", tok)
            return obj.data, tok
        if isinstance(obj, Buffer):
            self.error(f"expected {what}, found buffer {tok.text} (write {tok.text}.data for "
                       "its pointer)", tok)
        return obj, tok

    # -- expressions --------------------------------------------------------------------
    def expr(self, allow_buffer: bool = False) -> PrimExpr:
        """An expression, read up to the first token that cannot continue it."""
        ts = self.ts
        tokens = ts.tokens
        operands: list[tuple[Any, Token]] = []
        ops: list[Any] = []  # _Group, or (prec, cls, tok) for operators (cls None: '!')
        groups: list[_Group] = []  # the open groups among ops, innermost last
        while True:
            # an operand (after prefix operators and opening brackets)
            tok = tokens[ts.pos]
            kind = tok.kind
            if kind == PUNCT and tok.text == "(":
                ts.pos += 1
                group = _Group("paren", tok, len(operands))
                ops.append(group)
                groups.append(group)
                continue
            if kind == PUNCT and tok.text == "!":
                ts.pos += 1
                ops.append((_NOT_PREC, None, tok))
                continue
            if kind == INT:
                ts.pos += 1
                operands.append((self._int32(tok, tok.text), tok))
            elif kind == LOCAL:
                ts.pos += 1
                obj = self.lookup(tok)
                nxt = tokens[ts.pos]
                if nxt.kind == PUNCT and nxt.text == "[":
                    if not isinstance(obj, Buffer):
                        self.error(f"{tok.text} is a variable, not a buffer; it cannot be "
                                   "indexed", nxt)
                    ts.pos += 1
                    if not ts.accept_punct("]"):
                        group = _Group("index", tok, len(operands), extra=obj)
                        ops.append(group)
                        groups.append(group)
                        continue
                    obj = self.build(tok, BufferLoad, obj, (), span=ts.span(tok))
                elif nxt.kind == PUNCT and nxt.text == ".":
                    ts.pos += 1
                    ts.expect_keyword("data")
                    if not isinstance(obj, Buffer):
                        self.error(f"{tok.text} is a variable; only buffers have .data", tok)
                    obj = obj.data
                operands.append((obj, tok))
            elif kind == IDENT:
                group = self._ident_operand(operands)
                if group is not None:
                    ops.append(group)
                    groups.append(group)
                    continue
            else:
                operands.append((self._literal(), tok))
            # after an operand: an operator, a separator, a closing bracket, or the end
            while True:
                tok = tokens[ts.pos]
                if tok.kind != PUNCT:
                    break
                text = tok.text
                binop = _BINOPS.get(text)
                if binop is not None:
                    self._reduce(operands, ops, binop[0])
                    ts.pos += 1
                    ops.append((binop[0], binop[1], tok))
                    break
                if not groups or text not in (",", ")", "]"):
                    break
                group = groups[-1]
                self._reduce(operands, ops, 0)
                closer = "]" if group.kind == "index" else ")"
                if text == ",":
                    if group.kind == "paren":
                        self.error("expected ')' or an operator, found ','", tok)
                    ts.pos += 1
                    group.args.append(operands.pop())
                    if group.arity is not None and len(group.args) >= group.arity:
                        self.error(f"too many arguments: {group.tok.text} takes "
                                   f"{group.arity}", tok)
                    break
                if text != closer:
                    self.error(f"expected ',' or {closer!r} (to close the {group.tok.text!r} "
                               f"at line {group.tok.line}, column {group.tok.column}), found "
                               f"{tok.describe()}", tok)
                ts.pos += 1
                ops.pop()
                groups.pop()
                group.args.append(operands.pop())
                operands.append((self._close(group), group.tok))
            if tok.kind == PUNCT and (tok.text in _BINOPS or (groups and tok.text == ",")):
                continue  # an operand follows
            if groups:
                group = groups[-1]
                closer = "]" if group.kind == "index" else ")"
                self.error(f"expected an operator, ',' or {closer!r} (to close the "
                           f"{group.tok.text!r} at line {group.tok.line}, column "
                           f"{group.tok.column}), found {tok.describe()}", tok)
            self._reduce(operands, ops, 0)
            value, vtok = operands.pop()
            if isinstance(value, Buffer) and not allow_buffer:
                self._buffer_misuse(vtok)
            return value

    def _int32(self, tok: Token, text: str) -> IntImm:
        value = int(text)
        if not -(2 ** 31) <= value < 2 ** 31:
            self.error(f"{value} is out of range for int32; write int64({value})", tok)
        return IntImm("int32", value)

    def _buffer_misuse(self, tok: Token) -> NoReturn:
        self.error(f"buffer {tok.text} is not a value here; index it ({tok.text}[...]) or take "
                   f"its pointer ({tok.text}.data)", tok)

    @staticmethod
    def _group_name(group: _Group) -> str:
        return group.tok.text

    def _value(self, item: tuple[Any, Token]) -> PrimExpr:
        value, tok = item
        if isinstance(value, Buffer):
            self._buffer_misuse(tok)
        return value

    def _reduce(self, operands: list[tuple[Any, Token]], ops: list[Any], prec: int) -> None:
        while ops and not isinstance(ops[-1], _Group) and ops[-1][0] >= prec:
            _, cls, tok = ops.pop()
            span = self.ts.span(tok)
            if cls is None:
                a = self._value(operands.pop())
                operands.append((self.build(tok, Not, a, span=span), tok))
            else:
                b = self._value(operands.pop())
                a_item = operands.pop()
                a = self._value(a_item)
                operands.append((self.build(tok, cls, a, b, span=span), a_item[1]))

    def _close(self, group: _Group) -> PrimExpr:
        """The expression a closed bracket group stands for."""
        tok, kind = group.tok, group.kind
        span = self.ts.span(tok)
        if kind == "call":
            dtype, op = group.extra
            return self.build(tok, Call, dtype, op, [a for a, _ in group.args], span=span)
        args = [self._value(a) for a in group.args]
        if kind == "paren":
            return args[0]
        if kind == "index":
            return self.build(tok, BufferLoad, group.extra, args, span=span)
        if len(args) != group.arity:
            self.error(f"{self._group_name(group)} takes {group.arity} argument(s), found "
                       f"{len(args)}", tok)
        if kind == "select":
            return self.build(tok, Select, *args, span=span)
        if kind == "cast":
            return self.build(tok, Cast, group.extra, args[0], span=span)
        return self.build(tok, group.extra, *args, span=span)  # func

    def _ident_operand(self, operands: list[tuple[Any, Token]]) -> _Group | None:
        """An operand starting with an identifier: a bool, a typed literal, or the start of
        ``cast(``, ``select(``, ``min(``..., or a call (then the group to push)."""
        ts = self.ts
        tok = ts.next()
        word = tok.text
        span = ts.span(tok)
        if word in ("true", "false"):
            operands.append((IntImm("bool", int(word == "true"), span=span), tok))
            return None
        if word in TIR_DTYPES:
            ts.expect_punct("(", f"'(' after {word} (a typed literal such as {word}(1))")
            operands.append((self._typed_literal(word, tok), tok))
            return None
        if word == "cast":
            ts.expect_punct("(")
            dtype = self.dtype()
            ts.expect_punct(",")
            return _Group("cast", tok, len(operands), 1, dtype)
        if word == "select":
            ts.expect_punct("(")
            return _Group("select", tok, len(operands), 3)
        if word in _FUNCS:
            ts.expect_punct("(")
            return _Group("func", tok, len(operands), 2, _FUNCS[word])
        if word in RESERVED_WORDS or not (ts.at_punct("(") or ts.at_punct("<")):
            self.error(f"expected an expression, found {tok.describe()}", tok)
        dtype = "int32"
        if ts.accept_punct("<"):
            dtype = self.dtype()
            ts.expect_punct(">")
        ts.expect_punct("(", f"'(' after {word}")
        if ts.at_punct(")"):
            ts.next()
            operands.append((self.build(tok, Call, dtype, word, (), span=span), tok))
            return None
        return _Group("call", tok, len(operands), None, (dtype, word))

    def _typed_literal(self, dtype: str, tok: Token) -> PrimExpr:
        """The rest of ``dtype(value)`` after the ``(``."""
        ts = self.ts
        span = ts.span(tok)
        neg = ts.accept_punct("-") is not None
        vtok = ts.peek()
        sign = "-" if neg else ""
        if dtype in FLOAT_DTYPES:
            if vtok.kind in (INT, FLOAT) or (vtok.kind == IDENT and vtok.text in ("inf",
                                                                                 "nan")):
                ts.next()
                value = self.build(vtok, FloatImm, dtype, float(sign + vtok.text), span=span)
            else:
                self.error(f"expected a number, inf or nan in {dtype}(...), found "
                           f"{vtok.describe()}")
        elif dtype in INT_DTYPES or dtype == "bool":
            if vtok.kind == INT:
                ts.next()
                value = self.build(vtok, IntImm, dtype, int(sign + vtok.text), span=span)
            elif dtype == "bool" and not neg and vtok.kind == IDENT and vtok.text in (
                    "true", "false"):
                ts.next()
                value = IntImm("bool", int(vtok.text == "true"), span=span)
            else:
                self.error(f"expected an integer in {dtype}(...), found {vtok.describe()} "
                           f"(write cast({dtype}, ...) to convert a value)")
        else:
            self.error(f"there are no literals of dtype {dtype}", tok)
        ts.expect_punct(")", f"')' after the {dtype} literal")
        return value

    def _literal(self) -> PrimExpr:
        """A number or string literal (the current token), with an optional minus sign."""
        ts = self.ts
        tok = ts.peek()
        span = ts.span(tok)
        if tok.kind == STRING:
            ts.next()
            return StringImm(self.string(tok), span=span)
        if tok.kind == PUNCT and tok.text == "-":
            ts.next()
            num = ts.peek()
            if num.kind not in (INT, FLOAT):
                self.error("expected a number after '-' (there is no negation operator; "
                           f"write 0 - x), found {num.describe()}", num)
            ts.next()
            text = "-" + num.text
        elif tok.kind in (INT, FLOAT):
            ts.next()
            num, text = tok, tok.text
        else:
            self.error(f"expected an expression, found {tok.describe()}", tok)
        if num.kind == INT:
            return self._int32(tok, text)
        return self.build(tok, FloatImm, "float32", float(text), span=span)

    # -- statements ---------------------------------------------------------------------
    def _deliver(self, frames: list[_Frame], stmt: Stmt) -> None:
        """Add a finished statement to the innermost open block."""
        while frames[-1].kind == "elseif":
            frame = frames.pop()
            cond, then, if_tok = frame.extra
            stmt = self.build(if_tok, IfThenElse, cond, then, stmt, span=self.ts.span(if_tok))
        frames[-1].items.append(stmt)

    def _finish(self, frame: _Frame) -> Stmt:
        """Close ``frame``: end the scope of its names and build its statement."""
        for name in reversed(frame.names):
            del self.env[name]
        if frame.kind == "seq":
            return self.build(frame.tok, SeqStmt, frame.items, span=self.ts.span(frame.tok))
        body = self.build(frame.tok, _block_value, frame.items)
        if frame.build is None:
            return body
        return self.build(frame.tok, frame.build, body)

    def _open(self, frames: list[_Frame], kind: str, tok: Token, names: list[str],
              build: Callable[[Stmt], Stmt], what: str) -> None:
        """After a binder's header: ``;`` (the rest of the block is its body) or ``{``."""
        ts = self.ts
        if ts.accept_punct(";"):
            frames.append(_Frame(kind, tok, flat=True, names=names, build=build))
        elif ts.accept_punct("{"):
            frames.append(_Frame(kind, tok, names=names, build=build))
        else:
            for name in reversed(names):
                del self.env[name]
            self.error(f"expected ';' or '{{' after {what}, found {ts.peek().describe()}")

    def body(self, func: _Frame) -> Stmt:
        """The statements of a function body (the open ``func`` frame) up to and including
        its closing ``}``."""
        ts = self.ts
        frames = [func]
        while True:
            tok = ts.peek()
            if tok.kind == PUNCT and tok.text == "}":
                ts.next()
                while frames[-1].flat:
                    flat = frames.pop()
                    self._deliver(frames, self._finish(flat))
                frame = frames.pop()
                stmt = self._finish(frame)
                if frame is func:
                    return stmt
                if frame.kind == "then":
                    cond, if_tok = frame.extra
                    if ts.at(IDENT, "else"):
                        else_tok = ts.next()
                        if ts.at(IDENT, "if"):
                            frames.append(_Frame("elseif", else_tok, extra=(cond, stmt, if_tok)))
                        else:
                            ts.expect_punct("{", "'{' or 'if' after 'else'")
                            frames.append(_Frame("else", else_tok,
                                                 build=self._else_builder(cond, stmt, if_tok)))
                        continue
                    stmt = self.build(if_tok, IfThenElse, cond, stmt, None,
                                      span=ts.span(if_tok))
                self._deliver(frames, stmt)
                continue
            if tok.kind == EOF:
                opener = next(f for f in reversed(frames) if not f.flat)
                what = "the function body" if opener is func else "the block"
                self.error(f"expected '}}' to close {what} opened at line {opener.tok.line}, "
                           f"column {opener.tok.column}, found end of input", tok)
            self.statement(frames)

    def _else_builder(self, cond: PrimExpr, then: Stmt, if_tok: Token,
                      ) -> Callable[[Stmt], Stmt]:
        span = self.ts.span(if_tok)
        return lambda body: IfThenElse(cond, then, body, span=span)

    def statement(self, frames: list[_Frame]) -> None:
        """Read one statement (or the header of one that opens a block)."""
        ts = self.ts
        tok = ts.peek()
        func = frames[0]
        if tok.kind == IDENT and tok.text == "buffer":
            self._buffer_statement(frames)
            return
        func.extra["header"] = False
        if tok.kind == IDENT:
            word = tok.text
            if word == "for":
                self._for(frames)
                return
            if word == "if":
                ts.next()
                ts.expect_punct("(", "'(' after 'if'")
                cond = self.expr()
                ts.expect_punct(")", "')' after the condition")
                ts.expect_punct("{", "'{' after 'if (...)'")
                frames.append(_Frame("then", tok, extra=(cond, tok)))
                return
            if word in ("let", "allocate", "allocate_const", "assert"):
                self._binder(frames)
                return
            if word == "seq":
                ts.next()
                ts.expect_punct("{", "'{' after 'seq'")
                frames.append(_Frame("seq", tok))
                return
            if word == "else":
                self.error("'else' without a matching 'if'", tok)
            nxt = ts.peek(1)
            starts_expr = (word in ("true", "false")
                           or (nxt.kind == PUNCT and nxt.text in ("(", "<")
                               and word not in _STATEMENT_KEYWORDS))
            if not starts_expr:
                self.error(f"unknown statement keyword {word!r}; expected one of "
                           f"{', '.join(_STATEMENT_KEYWORDS)}, or an expression or store "
                           "ending with ';'", tok)
        if tok.kind == PUNCT and tok.text == "{":
            self.error("a block is not a statement; write 'seq { ... }' for a nested "
                       "sequence", tok)
        value = self.expr()
        span = ts.span(tok)
        if ts.at_punct("="):
            eq = ts.next()
            if not isinstance(value, BufferLoad):
                self.error("only a buffer element (%B[...]) can be assigned to", eq)
            rhs = self.expr()
            ts.expect_punct(";", "';' after the store")
            stmt = self.build(tok, BufferStore, value.buffer, rhs, value.indices, span=span)
        else:
            ts.expect_punct(";", "';' (or '=' to store) after the expression")
            stmt = self.build(tok, Evaluate, value, span=span)
        self._deliver(frames, stmt)

    def _for(self, frames: list[_Frame]) -> None:
        ts = self.ts
        tok = ts.next()
        var_tok = ts.expect(LOCAL, what="the loop variable (%i)")
        ts.expect_punct(":", "':' and the loop variable's dtype")
        dtype = self.dtype()
        ts.expect_keyword("in")
        kind_tok = ts.expect(IDENT, what=f"a loop kind ({', '.join(FOR_KINDS)})")
        if kind_tok.text not in FOR_KINDS:
            self.error(f"unknown loop kind {kind_tok.text!r}; expected one of "
                       f"{', '.join(FOR_KINDS)}", kind_tok)
        ts.expect_punct("(", f"'(' after {kind_tok.text}")
        lo = self.expr()
        ts.expect_punct(",", "',' between the loop's min and extent")
        extent = self.expr()
        ts.expect_punct(")", "')' after the loop's extent")
        ts.expect_punct("{", "'{' to open the loop body")
        names: list[str] = []
        var = self.define_var(var_tok, dtype, names)
        span = ts.span(tok)
        self.build(tok, For, var, lo, extent, kind_tok.text, SeqStmt(()), span=span)  # check
        frames.append(_Frame("for", tok, names=names, build=lambda b: For(
            var, lo, extent, kind_tok.text, b, span=span)))

    def _binder(self, frames: list[_Frame]) -> None:
        ts = self.ts
        tok = ts.next()
        word = tok.text
        span = ts.span(tok)
        names: list[str] = []
        build: Callable[[Stmt], Stmt]
        if word == "assert":
            ts.expect_punct("(", "'(' after 'assert'")
            cond = self.expr()
            ts.expect_punct(",", "',' and the assertion message")
            msg_tok = ts.expect(STRING, what="the assertion message (a string)")
            message = StringImm(self.string(msg_tok), span=ts.span(msg_tok))
            ts.expect_punct(")", "')' after the assertion message")
            self.build(tok, AssertStmt, cond, message, SeqStmt(()))  # check now
            self._open(frames, word, tok, names, lambda b: AssertStmt(cond, message, b,
                                                                      span=span), "assert(...)")
            return
        var_tok = ts.expect(LOCAL, what="the name being defined (%name)")
        ts.expect_punct(":", f"':' and the dtype of {var_tok.text}")
        if word == "let":
            dtype = self.dtype()
            ts.expect_punct("=", "'=' and the value")
            value = self.expr()
            var = self.define_var(var_tok, dtype, names)
            self.build(tok, LetStmt, var, value, SeqStmt(()))  # check now
            build = lambda b: LetStmt(var, value, b, span=span)  # noqa: E731
        elif word == "allocate":
            dtype = self.dtype(allow_handle=False)
            extents = self.dims()
            scope = self.scope_suffix()
            var = self.define_var(var_tok, "handle", names)
            build = lambda b: Allocate(var, dtype, extents, b, scope, span=span)  # noqa: E731
        else:  # allocate_const
            dtype = self.dtype(allow_handle=False)
            extents = self.dims()
            ts.expect_punct("=", "'=' and the constant data")
            data_tok = ts.peek()
            data = self._const_data(dtype)
            var = self.define_var(var_tok, "handle", names)
            checked = self.build(data_tok, AllocateConst, var, dtype, extents, data,
                                 SeqStmt(()))
            data = checked.data
            build = lambda b: AllocateConst(var, dtype, extents, data, b,  # noqa: E731
                                            span=span)
        self._open(frames, word, tok, names, build, f"the {word} header")

    def _const_data(self, dtype: str) -> np.ndarray:
        """``meta[Constant][i]`` or an inline list of values ``[1, 2, 3]``."""
        ts = self.ts
        tok = ts.peek()
        if tok.kind == IDENT and tok.text == "meta":
            ts.next()
            ts.expect_punct("[")
            ts.expect_keyword("Constant")
            ts.expect_punct("]")
            ts.expect_punct("[")
            index = int(ts.expect(INT, what="a metadata index").text)
            ts.expect_punct("]")
            return self.meta.get(index, tok.line, tok.column, ts.source_name)
        if tok.kind == IDENT and tok.text == "elided":
            self.error("the constant data was elided when this text was printed; print the "
                       "module with show_meta_data=True to read it back", tok)
        if not ts.at_punct("["):
            self.error(f"expected constant data (meta[Constant][i] or [v0, v1, ...]), found "
                       f"{tok.describe()}", tok)
        ts.next()
        texts: list[str] = []
        while not ts.accept_punct("]"):
            sign = "-" if ts.accept_punct("-") else ""
            vtok = ts.peek()
            if vtok.kind in (INT, FLOAT) or (vtok.kind == IDENT and vtok.text in (
                    "inf", "nan", "true", "false")):
                ts.next()
                texts.append(sign + vtok.text)
            else:
                self.error(f"expected a number, found {vtok.describe()}", vtok)
            if not ts.accept_punct(","):
                ts.expect_punct("]", "',' or ']'")
                break
        try:
            if dtype == "bool":
                values = [{"true": 1, "false": 0}.get(t, t) for t in texts]
                return np.array([int(v) for v in values], dtype=np.int64).astype(bool)
            if dtype in FLOAT_DTYPES:
                return np.array([float(t) for t in texts], dtype=np.float64).astype(dtype)
            return np.array([int(t) for t in texts], dtype=dtype)
        except (ValueError, OverflowError) as err:
            self.error(f"bad {dtype} constant data: {err}", tok)

    def _buffer_statement(self, frames: list[_Frame]) -> None:
        """``buffer %B: dtype[shape] (in "scope")? = match(%p) | decl(...) | view(...)``."""
        ts = self.ts
        tok = ts.next()
        func = frames[0]
        name_tok = ts.expect(LOCAL, what="the buffer's name (%B)")
        ts.expect_punct(":", f"':' and the element type of {name_tok.text}")
        dtype = self.dtype(allow_handle=False)
        shape = self.dims()
        scope = self.scope_suffix()
        ts.expect_punct("=", "'=' and match(...), decl(...) or view(...)")
        kind_tok = ts.expect(IDENT, what="match, decl or view")
        kind = kind_tok.text
        if kind not in _BUFFER_KINDS:
            self.error(f"unknown buffer declaration {kind!r}; expected match, decl or view",
                       kind_tok)
        if kind != "match":
            func.extra["header"] = False
        elif not (frames[-1] is func and func.extra["header"]):
            self.error("match(...) declarations come first in a prim_func body, before any "
                       "other statement", kind_tok)
        ts.expect_punct("(", f"'(' after {kind}")
        param: Var | None = None
        data: Var | None = None
        if kind == "match":
            param, ptok = self.var_ref("the parameter the buffer views")
            pname = ptok.text[1:]
            if self.params.get(pname) is not param:
                self.error(f"{ptok.text} is not a parameter of this prim_func", ptok)
            if pname in self.matched:
                self.error(f"parameter {ptok.text} is matched twice", ptok)
            self.matched.add(pname)
            if param.dtype != "handle":
                self.error(f"parameter {ptok.text} is {param.dtype}; only a handle can be "
                           "matched to a buffer", ptok)
            if ts.accept_punct(","):
                data = self._data_arg()
        elif not ts.at_punct(")"):
            data = self._data_arg()
        ts.expect_punct(")", f"')' after the arguments of {kind}")
        span = ts.span(tok)
        if kind == "decl":
            names: list[str] = []
            buf = self.define_buffer(name_tok, dtype, shape, scope, data, names)
            self._open(frames, "decl", tok, names,
                       lambda b: DeclBuffer(buf, b, span=span), "the buffer declaration")
            return
        ts.expect_punct(";", f"';' after {kind}(...)")
        buf = self.define_buffer(name_tok, dtype, shape, scope, data, frames[-1].names)
        if param is not None:
            func.extra["buffer_map"][param] = buf

    def _data_arg(self) -> Var:
        ts = self.ts
        if ts.at(IDENT, "data") and ts.peek(1).kind == PUNCT and ts.peek(1).text == "=":
            ts.next()
            ts.next()
        var, vtok = self.var_ref("the buffer's data pointer (%p or %B.data)")
        if var.dtype != "handle":
            self.error(f"a buffer's data pointer must be a handle, {vtok.text} is {var.dtype}",
                       vtok)
        return var

    # -- functions ----------------------------------------------------------------------
    def prim_func(self) -> tuple[str, PrimFunc]:
        """``prim_func @name [attrs] (params) -> dtype { body }``."""
        ts = self.ts
        tok = ts.expect_keyword("prim_func")
        name_tok = ts.expect(GLOBAL, what="a function name (@name)")
        attrs_map: dict[str, Any] = {}
        if ts.at_punct("["):
            from passhost.text.relay_parser import GraphParser

            attrs_map = GraphParser(ts, self.meta).parse_attr_map("[", "]")
        ts.expect_punct("(", "'(' and the parameters")
        names: list[str] = []
        params: list[Var] = []
        while not ts.accept_punct(")"):
            ptok = ts.expect(LOCAL, what="a parameter (%name: dtype) or ')'")
            ts.expect_punct(":", f"':' and the dtype of {ptok.text}")
            var = self.define_var(ptok, self.dtype(), names)
            self.params[ptok.text[1:]] = var
            params.append(var)
            if not ts.accept_punct(","):
                ts.expect_punct(")", "',' or ')'")
                break
        ret = self.dtype() if ts.accept_punct("->") else None
        open_tok = ts.expect_punct("{", "'{' to open the function body")
        frame = _Frame("func", open_tok, names=names, extra={"header": True, "buffer_map": {}})
        body = self.body(frame)
        func = self.build(tok, PrimFunc, params, frame.extra["buffer_map"], body, ret,
                          attrs_map, span=ts.span(tok))
        return name_tok.text[1:], func


def parse_prim_func(ts: TokenStream, meta: MetadataReader) -> tuple[str, PrimFunc]:
    """Read a ``prim_func`` starting at the cursor (the ``prim_func`` keyword); leaves the
    stream after its closing brace. Returns the function's name and the function."""
    return TIRParser(ts, meta).prim_func()


def parse_prim_func_text(text: str, meta: MetadataReader | None = None,
                         source_name: str = "<text>") -> tuple[str, PrimFunc]:
    """Read text holding exactly one ``prim_func`` (constants from ``meta``)."""
    ts = TokenStream.from_text(text, source_name)
    result = TIRParser(ts, meta).prim_func()
    if not ts.at(EOF):
        ts.error(f"expected end of input after the prim_func, found {ts.peek().describe()}")
    return result

