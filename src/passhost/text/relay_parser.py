"""Parsing graph functions and expressions of passhost's IR text format.

A body is a flat sequence of bindings (``%0 = nn.relu(%x);``) ended by its result, so a
100 000-binding chain parses without deep recursion. Expressions may nest (a call inside a
call, a function inside a binding) up to :data:`MAX_NESTING` levels; deeper text is a
ParseError asking for intermediate bindings. Every error is a
:class:`~passhost.errors.ParseError` at the offending token saying what was expected.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from passhost.errors import AttrError, PasshostError, UnknownNameError, close_matches
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.types import DTYPES, FuncType, TensorType, TupleType, Type, is_float_dtype
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.op.registry import Op, get_op
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

__all__ = ["MAX_NESTING", "GraphParser"]

#: How deeply expressions, types and attribute values may nest in text.
MAX_NESTING = 100

_KEYWORD_LITERALS = ("true", "false", "none", "inf", "nan")
_ATTR_NAME_RE = re.compile(r"attribute '([^']+)'")


class GraphParser:
    """Reads graph functions, types and attribute values from a :class:`TokenStream`.

    ``globals_`` maps module function names to the GlobalVar a plain ``@name`` stands for;
    None means "no module" (:func:`passhost.text.parse_expr`), where any ``@name`` is an
    untyped GlobalVar. ``free_vars`` lets an undefined ``%x`` (optionally ``%x: Type`` at
    its first use) stand for a free variable instead of being an error.
    """

    def __init__(self, ts: TokenStream, meta: MetadataReader,
                 globals_: dict[str, GlobalVar] | None = None, *,
                 free_vars: bool = False) -> None:
        self.ts = ts
        self.meta = meta
        self.globals = globals_
        self.free_vars = free_vars
        self.scopes: list[dict[str, tuple[BaseExpr, Token]]] = [{}]
        self.depth = 0
        self._meta_cache: dict[int, Constant] = {}
        self._globals_cache: dict[tuple[str, Type | None], GlobalVar] = {}
        self._ops: dict[str, Op] = {}
        self._params: dict[str, Var] = {}

    # -- helpers -------------------------------------------------------------------------
    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.ts.error(f"text nested more than {MAX_NESTING} levels deep; bind "
                          "intermediate values to names (%n = ...;) instead")

    def _leave(self) -> None:
        self.depth -= 1

    def _lookup(self, name: str) -> tuple[BaseExpr, Token] | None:
        for scope in reversed(self.scopes):
            found = scope.get(name)
            if found is not None:
                return found
        return None

    def _check_fresh(self, tok: Token) -> None:
        name = tok.text[1:]
        prev = self._lookup(name)
        if prev is not None:
            first = prev[1]
            self.ts.error(f"duplicate binding %{name} (first bound at line {first.line}, "
                          f"column {first.column})", tok)

    def _define(self, tok: Token, value: BaseExpr) -> None:
        self._check_fresh(tok)
        self.scopes[-1][tok.text[1:]] = (value, tok)

    def _visible_names(self) -> list[str]:
        return [n for scope in self.scopes for n in scope]

    # -- attribute values ------------------------------------------------------------------
    def parse_number(self) -> int | float:
        """An int or float, with an optional leading minus (``inf`` and ``nan`` included)."""
        ts = self.ts
        neg = ts.accept_punct("-") is not None
        tok = ts.peek()
        if tok.kind == INT:
            ts.next()
            return -int(tok.text) if neg else int(tok.text)
        if tok.kind == FLOAT or (tok.kind == IDENT and tok.text in ("inf", "nan")):
            ts.next()
            value = float(tok.text)
            return -value if neg else value
        ts.error(f"expected a number, found {tok.describe()}")

    def parse_literal(self) -> Any:
        """An attribute value: number, string, ``true``/``false``, ``none`` or ``[...]``."""
        ts = self.ts
        tok = ts.peek()
        if tok.kind == PUNCT and tok.text == "[":
            self._enter()
            ts.next()
            items = []
            while not ts.accept_punct("]"):
                items.append(self.parse_literal())
                if not ts.accept_punct(","):
                    ts.expect_punct("]", "',' or ']'")
                    break
            self._leave()
            return tuple(items)
        if tok.kind in (INT, FLOAT) or (tok.kind == PUNCT and tok.text == "-"):
            return self.parse_number()
        if tok.kind == STRING:
            ts.next()
            return self.string_value(tok)
        if tok.kind == IDENT and tok.text in _KEYWORD_LITERALS:
            ts.next()
            if tok.text in ("true", "false"):
                return tok.text == "true"
            return None if tok.text == "none" else float(tok.text)
        ts.error("expected a value (a number, a string, true, false, none or [...]), "
                 f"found {tok.describe()}")

    def string_value(self, tok: Token) -> str:
        """The value of a string token (JSON escapes)."""
        try:
            return json.loads(tok.text, strict=False)
        except json.JSONDecodeError as err:
            self.ts.error(f"bad string literal: {err.msg}", tok)

    def parse_attr_map(self, open_: str, close: str) -> dict[str, Any]:
        """``<open_> key=value, ... <close>`` (keys are identifiers or strings)."""
        ts = self.ts
        ts.expect_punct(open_)
        out: dict[str, Any] = {}
        while not ts.accept_punct(close):
            tok = ts.peek()
            if tok.kind == IDENT:
                key = tok.text
            elif tok.kind == STRING:
                key = self.string_value(tok)
            else:
                ts.error(f"expected an attribute name or {close!r}, found {tok.describe()}")
            ts.next()
            if key in out:
                ts.error(f"duplicate attribute {key!r}", tok)
            ts.expect_punct("=")
            out[key] = self.parse_literal()
            if not ts.accept_punct(","):
                ts.expect_punct(close, f"',' or {close!r}")
                break
        return out

    # -- types ---------------------------------------------------------------------------
    def parse_dtype(self) -> str:
        """A dtype name such as ``float32``."""
        tok = self.ts.peek()
        if tok.kind != IDENT:
            self.ts.error(f"expected a dtype, found {tok.describe()}")
        if tok.text not in DTYPES:
            err = UnknownNameError("dtype", tok.text, DTYPES)
            self.ts.error(str(err) if err.candidates else f"{err}; dtypes are "
                          f"{', '.join(DTYPES)}")
        self.ts.next()
        return tok.text

    def parse_type(self) -> Type:
        """``Tensor[(d0, d1), dtype]``, a tuple type ``(T1, T2)`` or ``fn (T1) -> T2``."""
        ts = self.ts
        tok = ts.peek()
        self._enter()
        if tok.kind == IDENT and tok.text == "Tensor":
            ts.next()
            ts.expect_punct("[")
            shape_tok = ts.expect_punct("(", "'(' (the shape)")
            dims: list[int] = []
            while not ts.accept_punct(")"):
                d = ts.peek()
                if d.kind == PUNCT and d.text == "-":
                    ts.error("a dimension must be a non-negative integer")
                if d.kind != INT:
                    ts.error(f"expected an integer dimension, found {d.describe()}")
                ts.next()
                dims.append(int(d.text))
                if not ts.accept_punct(","):
                    ts.expect_punct(")", "',' or ')'")
                    break
            ts.expect_punct(",", "',' and a dtype")
            dtype = self.parse_dtype()
            ts.expect_punct("]")
            result: Type = TensorType(ts.check_shape(dims, shape_tok), dtype)
        elif tok.kind == PUNCT and tok.text == "(":
            ts.next()
            fields: list[Type] = []
            trailing = False
            while not ts.accept_punct(")"):
                fields.append(self.parse_type())
                trailing = ts.accept_punct(",") is not None
                if not trailing:
                    ts.expect_punct(")", "',' or ')'")
                    break
            result = fields[0] if len(fields) == 1 and not trailing else TupleType(fields)
        elif tok.kind == IDENT and tok.text == "fn":
            ts.next()
            ts.expect_punct("(")
            args: list[Type] = []
            while not ts.accept_punct(")"):
                args.append(self.parse_type())
                if not ts.accept_punct(","):
                    ts.expect_punct(")", "',' or ')'")
                    break
            ts.expect_punct("->")
            result = FuncType(args, self.parse_type())
        else:
            ts.error("expected a type (Tensor[(...), dtype], a tuple type or fn (...) -> ...), "
                     f"found {tok.describe()}")
        self._leave()
        return result

    # -- constants -----------------------------------------------------------------------
    def _const_element(self) -> tuple[Token, Any]:
        ts = self.ts
        tok = ts.peek()
        if tok.kind == IDENT and tok.text in ("true", "false"):
            ts.next()
            return tok, tok.text == "true"
        return tok, self.parse_number()

    def parse_const(self) -> Constant:
        """``const(1.5, float32)``, ``const([1, 2], int8)``, ``const([...], f32, shape=[2, 2])``."""
        ts = self.ts
        const_tok = ts.expect_keyword("const")
        ts.expect_punct("(")
        elements: list[tuple[Token, Any]] = []
        scalar = not ts.at_punct("[")
        if scalar:
            elements.append(self._const_element())
        else:
            ts.next()
            while not ts.accept_punct("]"):
                elements.append(self._const_element())
                if not ts.accept_punct(","):
                    ts.expect_punct("]", "',' or ']'")
                    break
        ts.expect_punct(",", "',' and a dtype")
        dtype = self.parse_dtype()
        shape: tuple[int, ...] = () if scalar else (len(elements),)
        if ts.accept_punct(","):
            shape_tok = ts.expect_keyword("shape")
            ts.expect_punct("=")
            ts.expect_punct("[")
            dims = []
            while not ts.accept_punct("]"):
                d = ts.expect(INT, what="a non-negative integer dimension")
                dims.append(int(d.text))
                if not ts.accept_punct(","):
                    ts.expect_punct("]", "',' or ']'")
                    break
            count = math.prod(ts.check_shape(dims, shape_tok))
            if count != len(elements):
                ts.error(f"shape {dims} holds {count} elements but {len(elements)} values "
                         "are given", shape_tok)
            shape = tuple(dims)
        ts.expect_punct(")")
        arr = self._const_array(elements, dtype).reshape(shape)
        return Constant(arr, span=ts.span(const_tok))

    def _const_array(self, elements: list[tuple[Token, Any]], dtype: str) -> np.ndarray:
        if dtype == "bool":
            for tok, v in elements:
                if not isinstance(v, bool):
                    self.ts.error(f"expected true or false for a bool constant, found "
                                  f"{tok.describe()}", tok)
            return np.array([v for _, v in elements], dtype=bool)
        if is_float_dtype(dtype):
            for tok, v in elements:
                if isinstance(v, bool):
                    self.ts.error(f"expected a number for a {dtype} constant, found "
                                  f"{tok.describe()}", tok)
            values = []
            for tok, v in elements:
                try:
                    values.append(float(v))
                except OverflowError:
                    self.ts.error(f"{v} is out of range for {dtype}", tok)
            with np.errstate(over="ignore"):
                arr = np.array(values, dtype=np.float64).astype(dtype)
            for (tok, v), fv, x in zip(elements, values, arr):
                if math.isfinite(fv) and not np.isfinite(x):
                    self.ts.error(f"{v} is out of range for {dtype}", tok)
            return arr
        info = np.iinfo(dtype)
        for tok, v in elements:
            if isinstance(v, bool) or not isinstance(v, int):
                self.ts.error(f"expected an integer for a {dtype} constant, found "
                              f"{tok.describe()}", tok)
            if not info.min <= v <= info.max:
                self.ts.error(f"{v} is out of range for {dtype} ([{info.min}, {info.max}])",
                              tok)
        return np.array([v for _, v in elements], dtype=dtype)

    def parse_meta_ref(self) -> Constant:
        """``meta[Constant][i]``: entry ``i`` of the metadata section."""
        ts = self.ts
        meta_tok = ts.expect_keyword("meta")
        ts.expect_punct("[")
        ts.expect_keyword("Constant")
        ts.expect_punct("]")
        ts.expect_punct("[")
        idx_tok = ts.expect(INT, what="a metadata index")
        ts.expect_punct("]")
        index = int(idx_tok.text)
        const = self._meta_cache.get(index)
        if const is None:
            arr = self.meta.get(index, meta_tok.line, meta_tok.column, ts.source_name)
            const = Constant(arr, span=ts.span(meta_tok))
            self._meta_cache[index] = const
        return const

    # -- expressions ---------------------------------------------------------------------
    def _global(self) -> GlobalVar:
        ts = self.ts
        tok = ts.next()
        name = tok.text[1:]
        if ts.accept_punct(":"):
            if ts.accept(IDENT, "untyped"):
                ty: Type | None = None
            else:
                ty_tok = ts.peek()
                ty = self.parse_type()
                if not isinstance(ty, FuncType):
                    ts.error(f"a global's type must be a function type, found {ty}", ty_tok)
            key = (name, ty)
            gv = self._globals_cache.get(key)
            if gv is None:
                gv = self._globals_cache[key] = GlobalVar(name, ty, span=ts.span(tok))
            return gv
        if self.globals is None:
            key = (name, None)
            gv = self._globals_cache.get(key)
            if gv is None:
                gv = self._globals_cache[key] = GlobalVar(name, span=ts.span(tok))
            return gv
        gv = self.globals.get(name)
        if gv is None:
            err = UnknownNameError("global function", "@" + name,
                                   ["@" + n for n in self.globals])
            ts.error(f"{err} (refer to a function outside the module as (@{name}: "
                     "fn (...) -> ...))", tok)
        return gv

    def _local(self) -> BaseExpr:
        ts = self.ts
        tok = ts.next()
        name = tok.text[1:]
        found = self._lookup(name)
        if found is not None:
            return found[0]
        if not self.free_vars:
            hint = close_matches(name, self._visible_names())
            extra = f"; did you mean {', '.join('%' + h for h in hint)}?" if hint else ""
            ts.error(f"undefined variable %{name}{extra}", tok)
        ty = self.parse_type() if ts.accept_punct(":") else None
        var = Var(name, ty, span=ts.span(tok))
        self.scopes[0][name] = (var, tok)
        return var

    def _primary(self) -> BaseExpr:
        ts = self.ts
        tok = ts.peek()
        kind, text = tok.kind, tok.text
        if kind == LOCAL:
            return self._local()
        if kind == GLOBAL:
            return self._global()
        if kind == PUNCT and text == "(":
            ts.next()
            fields: list[BaseExpr] = []
            trailing = False
            while not ts.accept_punct(")"):
                fields.append(self.parse_expr())
                trailing = ts.accept_punct(",") is not None
                if not trailing:
                    ts.expect_punct(")", "',' or ')'")
                    break
            if len(fields) == 1 and not trailing:
                return fields[0]
            return self._build(tok, Tuple, fields, span=ts.span(tok))
        if kind == IDENT:
            if text == "fn":
                return self.parse_fn()
            if text == "const" and ts.peek(1).text == "(":
                return self.parse_const()
            if text == "meta" and ts.peek(1).text == "[":
                return self.parse_meta_ref()
            if text in _KEYWORD_LITERALS:
                ts.error(f"expected an expression, found {tok.describe()} (constants are "
                         "written const(value, dtype))")
            return self._op_call()
        if kind in (INT, FLOAT) or (kind == PUNCT and text == "-"):
            ts.error(f"expected an expression, found {tok.describe()} (constants are written "
                     "const(value, dtype))")
        ts.error(f"expected an expression, found {tok.describe()}")

    def _build(self, tok: Token, cls: type, *args: Any, **kwargs: Any) -> Any:
        try:
            return cls(*args, **kwargs)
        except PasshostError as err:
            message = str(err)
            where = f" (at {getattr(err, 'span', None)})"
            if message.endswith(where):  # the ParseError gives the position
                message = message[:-len(where)]
            self.ts.error(message, tok)

    def _op_call(self) -> BaseExpr:
        ts = self.ts
        op_tok = ts.next()
        op = self._ops.get(op_tok.text)
        if op is None:
            try:
                op = self._ops[op_tok.text] = get_op(op_tok.text)
            except UnknownNameError as err:
                ts.error(str(err), op_tok)
        if not ts.at_punct("("):
            return op
        ts.next()
        args: list[BaseExpr] = []
        values: dict[str, Any] = {}
        where: dict[str, tuple[Token, Token]] = {}
        while not ts.accept_punct(")"):
            tok = ts.peek()
            if tok.kind == IDENT and ts.peek(1).kind == PUNCT and ts.peek(1).text == "=":
                ts.next()
                ts.next()
                if tok.text in values:
                    ts.error(f"duplicate attribute {tok.text!r}", tok)
                value_tok = ts.peek()
                values[tok.text] = self.parse_literal()
                where[tok.text] = (tok, value_tok)
            else:
                if values:
                    ts.error(f"expected an attribute (name=value) after the attributes, "
                             f"found {tok.describe()}")
                args.append(self.parse_expr())
            if not ts.accept_punct(","):
                ts.expect_punct(")", "',' or ')'")
                break
        attrs_value = self._make_attrs(op, op_tok, values, where)
        return self._build(op_tok, Call, op, args, attrs_value, span=ts.span(op_tok))

    def _make_attrs(self, op: Any, op_tok: Token, values: dict[str, Any],
                    where: dict[str, tuple[Token, Token]]) -> Any:
        try:
            return op.make_attrs(values)
        except UnknownNameError as err:
            tok = where[err.name][0] if err.name in where else op_tok
            self.ts.error(str(err), tok)
        except (PasshostError, TypeError, ValueError, OverflowError) as err:
            tok = op_tok
            m = _ATTR_NAME_RE.search(str(err))
            if m and m.group(1) in where:
                tok = where[m.group(1)][1]
            elif where:
                tok = next(iter(where.values()))[0]
            self.ts.error(str(err) if isinstance(err, AttrError) else f"{op.name}: {err}", tok)

    def parse_expr(self) -> BaseExpr:
        """An expression: a primary followed by projections ``.i`` and calls ``(args)``."""
        ts = self.ts
        self._enter()
        start = ts.peek()
        expr = self._primary()
        while True:
            tok = ts.peek()
            if tok.kind != PUNCT:
                break
            if tok.text == ".":
                ts.next()
                idx = ts.peek()
                if idx.kind == INT:
                    indices = [int(idx.text)]
                elif idx.kind == FLOAT and re.fullmatch(r"\d+\.\d+", idx.text):
                    indices = [int(part) for part in idx.text.split(".")]  # %t.0.1
                else:
                    ts.error(f"expected a tuple index after '.', found {idx.describe()}")
                ts.next()
                for index in indices:
                    expr = self._build(tok, TupleGetItem, expr, index, span=ts.span(tok))
            elif tok.text == "(":
                ts.next()
                args: list[BaseExpr] = []
                while not ts.accept_punct(")"):
                    args.append(self.parse_expr())
                    if not ts.accept_punct(","):
                        ts.expect_punct(")", "',' or ')'")
                        break
                expr = self._build(start, Call, expr, args, span=ts.span(start))
            else:
                break
        self._leave()
        return expr

    # -- functions -----------------------------------------------------------------------
    def parse_params(self) -> list[Var]:
        """``(%x: Type, %y, ...)``; defines the parameters in a new scope."""
        ts = self.ts
        ts.expect_punct("(", "'(' (the parameters)")
        self.scopes.append({})
        params = []
        while not ts.accept_punct(")"):
            tok = ts.expect(LOCAL, what="a parameter (%name: Type) or ')'")
            ty = self.parse_type() if ts.accept_punct(":") else None
            name = tok.text[1:]
            var = self._params.get(name)
            if var is None or var.type_annotation != ty:
                # A name bound again in a sibling function is the same variable (the
                # printer gives distinct variables distinct names within a definition).
                var = self._params[name] = Var(name, ty, span=ts.span(tok))
            self._define(tok, var)
            params.append(var)
            if not ts.accept_punct(","):
                ts.expect_punct(")", "',' or ')'")
                break
        return params

    def parse_body(self, closing: str = "}") -> BaseExpr:
        """Bindings ``%name = expr;`` then the result; consumes ``closing`` (``"}"``, or
        ``""`` for the end of input)."""
        ts = self.ts
        while ts.at(LOCAL) and ts.peek(1).kind == PUNCT and ts.peek(1).text == "=":
            name_tok = ts.next()
            self._check_fresh(name_tok)
            ts.next()
            value = self.parse_expr()
            ts.expect_punct(";", "';' after the binding")
            self._define(name_tok, value)
        if closing and ts.at_punct(closing):
            ts.error(f"expected the result (an expression) before {closing!r}")
        result = self.parse_expr()
        if closing:
            ts.expect_punct(closing, f"{closing!r} (the result must be the last line)")
        elif not ts.at(EOF):
            ts.error(f"expected the end of the expression, found {ts.peek().describe()}")
        return result

    def _signature(self) -> tuple[dict[str, Any], list[Var], Type | None]:
        attrs_map = self.parse_attr_map("[", "]") if self.ts.at_punct("[") else {}
        params = self.parse_params()
        ret = self.parse_type() if self.ts.accept_punct("->") else None
        return attrs_map, params, ret

    def parse_fn(self) -> Function:
        """``fn [attrs] (params) -> ret { body }`` (a nested function)."""
        ts = self.ts
        self._enter()
        fn_tok = ts.expect_keyword("fn")
        attrs_map, params, ret = self._signature()
        ts.expect_punct("{")
        body = self.parse_body()
        self.scopes.pop()
        self._leave()
        return self._build(fn_tok, Function, params, body, ret, attrs_map,
                           span=ts.span(fn_tok))

    def parse_def(self) -> tuple[Token, Function]:
        """``def @name [attrs] (params) -> ret { body }``; returns the name token too."""
        ts = self.ts
        def_tok = ts.expect_keyword("def")
        name_tok = ts.expect(GLOBAL, what="a function name (@name)")
        self.scopes = [{}]
        self._params = {}
        attrs_map, params, ret = self._signature()
        ts.expect_punct("{")
        body = self.parse_body()
        self.scopes = [{}]
        func = self._build(def_tok, Function, params, body, ret, attrs_map,
                           span=ts.span(def_tok))
        return name_tok, func

    def def_signature_type(self) -> FuncType | None:
        """From ``def @name ...`` at the cursor: the type a plain ``@name`` stands for (the
        signature when fully annotated, else None). Used to type globals before bodies."""
        self.ts.expect_keyword("def")
        self.ts.expect(GLOBAL)
        _, params, ret = self._signature()
        if ret is None or any(p.type_annotation is None for p in params):
            return None
        return FuncType([p.type_annotation for p in params], ret)
