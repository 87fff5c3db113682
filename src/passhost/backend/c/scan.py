"""The C printer's first pass over a PrimFunc, before any line is printed: its *regions* (the
function body and each parallel loop's body) and the allocations each one makes, the
vectorized loops that cannot be ``omp simd`` loops, the pointers something writes through
(the others are ``const``) and the names ``call_extern`` calls."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from passhost.backend.c.errors import CCodegenError
from passhost.backend.c.expr import Pointer, operands, strip
from passhost.backend.c.extern import ExternPrinter
from passhost.backend.c.naming import is_identifier
from passhost.ir import traversal
from passhost.tir import expr as te
from passhost.tir import stmt as ts
from passhost.tir.function import Buffer, PrimFunc

__all__ = ["Region", "Scan", "scan"]


class Region:
    """The function body or a parallel loop's body: its allocations and failure exit."""

    __slots__ = ("allocs", "decls", "gotos", "has_allocs", "heap", "heap_bytes", "label",
                 "parent", "stack_bytes")

    def __init__(self, parent: Region | None) -> None:
        self.parent = parent
        self.has_allocs = False
        self.allocs: list[tuple[ts.Allocate, Pointer, bool]] = []  # (stmt, pointer, on heap)
        self.stack_bytes = 0
        self.heap_bytes = 0
        self.gotos = 0
        self.label = "ph_exit"
        self.decls: list[str] = []  # declarations at its top (its used allocations)
        self.heap: list[str] = []  # the heap pointers to free at its end


def _expressions(s: ts.Stmt) -> list[te.PrimExpr]:
    """The expressions a statement evaluates itself (not those of its body)."""
    if isinstance(s, ts.For):
        return [s.min, s.extent]
    if isinstance(s, ts.LetStmt):
        return [s.value]
    if isinstance(s, (ts.IfThenElse, ts.AssertStmt)):
        return [s.condition]
    if isinstance(s, ts.BufferStore):
        return [s.value, *s.indices]
    if isinstance(s, ts.Evaluate):
        return [s.value]
    return []


def _children(s: ts.Stmt) -> list[ts.Stmt]:
    if isinstance(s, ts.SeqStmt):
        return list(s.seq)
    if isinstance(s, ts.IfThenElse):
        return [s.then_case] + ([s.else_case] if s.else_case is not None else [])
    body = getattr(s, "body", None)
    return [body] if body is not None else []


class Scan:
    """What the first pass found: ``region_of`` (id of the function, a parallel ``For`` or
    an ``Allocate`` -> its region), ``no_simd`` (ids of vectorized loops printed serial),
    ``written`` (ids of the handle variables something writes through) and ``externs``
    (the names ``call_extern`` calls)."""

    __slots__ = ("externs", "no_simd", "region_of", "written")

    def __init__(self) -> None:
        self.region_of: dict[int, Region] = {}
        self.no_simd: set[int] = set()
        self.written: set[int] = set()
        self.externs: set[str] = set()


def _extern_name(name: str, fail: Callable[[str], CCodegenError]) -> str:
    """``name``, once it is a C identifier that is not one of the printer's helpers."""
    if not is_identifier(name):
        raise fail(f"call_extern of {name!r}: not a C identifier")
    if name.startswith(("ph_", "PH_")):
        raise fail(f"call_extern of {name!r}: names starting with ph_ belong to the "
                   "printer's helpers")
    return name


def scan(func: PrimFunc, freestanding: bool, extern_printer: ExternPrinter | None,
         fail: Callable[[str], CCodegenError]) -> Scan:
    """The first pass over ``func`` (parallel loops are regions unless ``freestanding``;
    ``fail(problem)`` makes the error of a bad ``call_extern`` name)."""
    found = Scan()
    written, no_simd = found.written, found.no_simd
    alias: dict[int, int] = {}
    top = Region(None)
    found.region_of[id(func)] = top
    # (statement, region, chain of enclosing vectorized loops: (id, outer chain))
    stack: list[tuple[ts.Stmt, Region, Any]] = [(func.body, top, None)]

    def block(chain: Any) -> None:
        while chain is not None and chain[0] not in no_simd:
            no_simd.add(chain[0])
            chain = chain[1]

    while stack:
        s, region, chain = stack.pop()
        if isinstance(s, ts.LetStmt) and isinstance(s.value, te.Var) \
                and s.value.dtype == "handle":
            alias[id(s.var)] = alias.get(id(s.value), id(s.value))
        if isinstance(s, ts.BufferStore):
            written.add(alias.get(id(s.buffer.data), id(s.buffer.data)))
        for n in traversal.post_order(map(strip, _expressions(s)), operands):
            if isinstance(n, te.Call) and n.op in te.NAMED_CALL_OPS:
                block(chain)
                read_only: Collection[int] = ()
                if n.op == "call_extern":
                    found.externs.add(_extern_name(n.args[0].value, fail))
                    if extern_printer is not None:
                        read_only = extern_printer.read_only(n)
                for k, a in enumerate(n.args[1:]):
                    if k in read_only:
                        continue
                    data = a.data if isinstance(a, Buffer) else a
                    if isinstance(data, te.Var) and data.dtype == "handle":
                        written.add(alias.get(id(data), id(data)))
        if isinstance(s, (ts.Allocate, ts.AssertStmt)):
            block(chain)
        if isinstance(s, ts.Allocate):
            found.region_of[id(s)] = region
            region.has_allocs = True
        inner, inner_chain = region, chain
        if isinstance(s, ts.For) and s.kind == "parallel" and not freestanding:
            block(chain)
            inner = Region(region)
            found.region_of[id(s)] = inner
            inner_chain = None
        elif isinstance(s, ts.For) and s.kind == "vectorized":
            inner_chain = (id(s), chain)
        for child in reversed(_children(s)):
            stack.append((child, inner, inner_chain))
    return found
