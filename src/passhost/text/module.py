"""Printing and parsing whole modules (graph functions and PrimFuncs side by side) and
single graph expressions. See docs/ir-text-format.md for the format."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from passhost.errors import ParseError, PasshostError
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.relay.expr import Function
from passhost.text.lexer import DIRECTIVE, EOF, GLOBAL, IDENT, PUNCT, Token, TokenStream
from passhost.text.metadata import METADATA_DIRECTIVE, MetadataReader, MetadataWriter
from passhost.text.relay_parser import GraphParser
from passhost.text.relay_printer import GraphPrinter, format_map, global_default_type

__all__ = ["VERSION", "parse_expr", "parse_module", "print_expr", "print_module"]

#: The text format version written in (and accepted from) the version directive.
VERSION = "passhost.text/1"

_T = TypeVar("_T")

_VERSION_RE = re.compile(r'#\[\s*version\s*=\s*"([^"]*)"\s*\]\Z')
_ATTRS_RE = re.compile(r"#\[\s*attrs\s*\]\Z")
_METADATA_LINE_RE = re.compile(r"^[ \t]*" + re.escape(METADATA_DIRECTIVE) + r"[ \t]*\r?$",
                               re.MULTILINE)


# -- printing ----------------------------------------------------------------------------
def _metadata_tail(meta: MetadataWriter, show_meta_data: bool) -> str:
    if not meta.arrays:
        return ""
    if show_meta_data:
        return "\n" + meta.to_text()
    return (f"\n// metadata omitted: {len(meta.arrays)} constant(s) referenced as "
            "meta[Constant][i]; print with show_meta_data=True to include them\n")


def print_module(mod: IRModule, show_meta_data: bool = True) -> str:
    """The text of ``mod``: version directive, module attributes, functions, metadata."""
    meta = MetadataWriter()
    defaults = {name: global_default_type(func) for name, func in mod.items()}
    header = f'#[version = "{VERSION}"]'
    if mod.attrs:
        header += f"\n#[attrs] {format_map(mod.attrs)}"
    parts = [header]
    for name, func in mod.items():
        if isinstance(func, Function):
            parts.append(GraphPrinter(meta, defaults).print_def(name, func))
        else:
            from passhost.text.tir_printer import print_prim_func

            parts.append(print_prim_func(name, func, meta).rstrip("\n"))
    return "\n\n".join(parts) + "\n" + _metadata_tail(meta, show_meta_data)


def print_expr(expr: BaseExpr, show_meta_data: bool = False) -> str:
    """The text of a graph expression or function on its own (``str(expr)``).

    Free variables are written ``%x: Type`` where first used. Large constants are
    ``meta[Constant][i]`` references; the table follows only when ``show_meta_data``.
    """
    meta = MetadataWriter()
    lines = GraphPrinter(meta, None).print_body(expr, 0, None)
    text = "\n".join(lines)
    tail = _metadata_tail(meta, show_meta_data)
    return text + "\n" + tail if tail else text


# -- parsing -----------------------------------------------------------------------------
def _split_metadata(text: str, source_name: str) -> tuple[str, MetadataReader]:
    """The text before the ``#[metadata]`` line, and the parsed metadata section."""
    m = _METADATA_LINE_RE.search(text)
    if m is None:
        return text, MetadataReader()
    line = text.count("\n", 0, m.start()) + 1
    body = text[m.end() + 1:]
    return text[:m.start()], MetadataReader.parse(body, line, source_name)


def _prescan_globals(ts: TokenStream, meta: MetadataReader) -> dict[str, GlobalVar]:
    """The GlobalVar of every top-level function name, typed from ``def`` signatures, so
    calls can refer to functions defined further down."""
    tokens = ts.tokens
    depth = 0
    out: dict[str, GlobalVar] = {}
    for i, tok in enumerate(tokens):
        if tok.kind == PUNCT:
            if tok.text in "([{":
                depth += 1
            elif tok.text in ")]}":
                depth -= 1
            continue
        if depth != 0 or tok.kind != IDENT or tok.text not in ("def", "prim_func"):
            continue
        name_tok = tokens[i + 1]
        if name_tok.kind != GLOBAL or name_tok.text[1:] in out:
            continue
        ty = None
        if tok.text == "def":
            sub = TokenStream(tokens, ts.source_name)
            sub.pos = i
            try:
                ty = GraphParser(sub, meta).def_signature_type()
            except ParseError:
                ty = None  # the main pass reports it
        name = name_tok.text[1:]
        out[name] = GlobalVar(name, ty, span=ts.span(name_tok))
    return out


def _check_version(ts: TokenStream, tok: Token) -> None:
    m = _VERSION_RE.match(tok.text)
    if m is None:
        ts.error(f'malformed version directive; expected #[version = "{VERSION}"]', tok)
    if m.group(1) != VERSION:
        ts.error(f"unsupported text format version {m.group(1)!r}; this reader reads "
                 f"{VERSION!r}", tok)


def _parse_module(ts: TokenStream, meta: MetadataReader) -> IRModule:
    globals_ = _prescan_globals(ts, meta)
    parser = GraphParser(ts, meta, globals_)
    funcs: dict[GlobalVar, object] = {}
    seen: dict[str, Token] = {}
    module_attrs: dict[str, object] | None = None
    first = True
    while not ts.at(EOF):
        tok = ts.peek()
        if tok.kind == DIRECTIVE:
            if _VERSION_RE.match(tok.text) or tok.text.startswith("#[version"):
                if not first:
                    ts.error("the version directive must come first", tok)
                _check_version(ts, tok)
                ts.next()
            elif _ATTRS_RE.match(tok.text):
                if module_attrs is not None:
                    ts.error("duplicate #[attrs] directive", tok)
                ts.next()
                module_attrs = parser.parse_attr_map("{", "}")
            elif tok.text == METADATA_DIRECTIVE:
                ts.error(f"the {METADATA_DIRECTIVE} directive must be alone on its line, "
                         "followed by the metadata JSON", tok)
            else:
                ts.error(f"unknown directive {tok.text}; expected #[version = ...], #[attrs] "
                         f"or {METADATA_DIRECTIVE}", tok)
        elif tok.kind == IDENT and tok.text == "def":
            name_tok, func = parser.parse_def()
            name = name_tok.text[1:]
            if name in seen:
                prev = seen[name]
                ts.error(f"function @{name} is defined twice (first at line {prev.line}, "
                         f"column {prev.column})", name_tok)
            seen[name] = name_tok
            funcs[globals_[name]] = func
        elif tok.kind == IDENT and tok.text == "prim_func":
            try:
                from passhost.text.tir_parser import parse_prim_func
            except ImportError:
                ts.error("cannot read PrimFuncs: passhost.text.tir_parser is not available",
                         tok)
            name, prim = parse_prim_func(ts, meta)
            if name in seen:
                ts.error(f"function @{name} is defined twice", tok)
            seen[name] = tok
            funcs[globals_.get(name) or GlobalVar(name)] = prim
        else:
            ts.error(f"expected 'def', 'prim_func' or a directive, found {tok.describe()}")
        first = False
    try:
        return IRModule(funcs, attrs=module_attrs)  # type: ignore[arg-type]
    except PasshostError as err:
        ts.error(str(err))


def _guarded(ts: TokenStream, run: Callable[[], _T]) -> _T:
    try:
        return run()
    except RecursionError:
        ts.error("text nested too deeply; bind intermediate values to names instead")
    except ParseError:
        raise
    except PasshostError as err:  # a construction check the parser did not anticipate
        ts.error(str(err))


def parse_module(text: str, source_name: str = "<text>") -> IRModule:
    """Read a module from its text; any malformed input raises a ParseError with its line
    and column."""
    head, meta = _split_metadata(text, source_name)
    ts = TokenStream.from_text(head, source_name)
    return _guarded(ts, lambda: _parse_module(ts, meta))


def parse_expr(text: str, source_name: str = "<text>") -> BaseExpr:
    """Read a graph expression (bindings, then the result) such as :func:`print_expr`
    writes; undefined ``%x`` are free variables (``%x: Type`` at first use)."""
    head, meta = _split_metadata(text, source_name)
    ts = TokenStream.from_text(head, source_name)
    if ts.at(DIRECTIVE) and ts.peek().text.startswith("#[version"):
        _check_version(ts, ts.next())
    parser = GraphParser(ts, meta, None, free_vars=True)
    return _guarded(ts, lambda: parser.parse_body(""))
