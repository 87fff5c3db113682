"""Printing one PrimFunc as a C function of a unit (the convention is in
:mod:`passhost.backend.c`).

Statements are laid out with an explicit work stack (no recursion over the IR's depth).
Statements that bind (let, allocate, declare buffer, assert) print flat in their block:
every local has a name of its own, so a C declaration outliving its TIR scope is harmless.

*Regions* are the function body and the body of every ``parallel`` loop. The allocations of
a region are made once at its top (per task for a parallel loop, whose body is a function of
its own: :mod:`.outline`; the regions come from :mod:`.scan`), on the stack while they
fit the printer's stack budget, else on the heap; a failure inside a region (an assertion,
a heap allocation) records its status and jumps to the region's end, where heap memory is
freed; after a parallel loop a failure jumps on to the enclosing region's end. A
freestanding unit has no parallel regions (its loops are serial) and no heap; allocations in
the unit's scratch scope point into its shared scratch array instead of the region's memory.
A ``call_extern`` statement the target's :class:`~.extern.ExternPrinter` prints is a block
of its lines, then a check of its status that fails like an assertion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from passhost.backend.c.dtypes import (
    array_elements,
    c_string,
    int_literal,
    storage_type,
    suffix,
    value_type,
)
from passhost.backend.c.errors import CCodegenError
from passhost.backend.c.expr import (
    UNARY,
    ExprPrinter,
    KernelPrinter,
    Piece,
    Pointer,
    flat_index,
    strip,
)
from passhost.backend.c.extern import ExternArgs, ExternPrinter
from passhost.backend.c.naming import Namer
from passhost.backend.c.outline import Local, OutlinedLoop, captured
from passhost.backend.c.scan import Region, scan
from passhost.tir import expr as te
from passhost.tir import stmt as ts
from passhost.tir.bounds import exact_range
from passhost.tir.function import Buffer, PrimFunc

if TYPE_CHECKING:
    from passhost.backend.c.unit import CParam, UnitState

__all__ = ["FunctionPrinter", "STATUS_ASSERT", "STATUS_NO_MEMORY"]

#: The status a function returns when an ``AssertStmt`` fails.
STATUS_ASSERT = 1
#: The status a function returns when a heap allocation fails.
STATUS_NO_MEMORY = 2

_INDENT = "    "
_ELEMENTS_PER_LINE = 8
_UNROLL_LIMIT = 1024  # constant extents up to this unroll fully


class _Slot:
    """Lines decided after the lines that follow them were printed."""

    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: list[str] = []


class FunctionPrinter:
    """Prints one PrimFunc as ``int32_t symbol(params)`` of a unit."""

    def __init__(self, unit: UnitState, name: str, func: PrimFunc) -> None:
        self.unit = unit
        self.runtime = unit.runtime
        self.kernel_printer: KernelPrinter | None = unit.kernel_printer
        self.name = name
        self.symbol = name  # the unit sets the C symbol before printing
        self.func = func
        self.scalars: dict[int, str] = {}
        self.used: set[int] = set()
        self.handles: dict[int, Pointer] = {}
        self.views: dict[int, Pointer] = {}
        self.lines: list[str | _Slot] = []
        self.uses_status = False
        self._temps = 0
        self._regions = 0
        # (lines, index in them, node, name): declarations to mark if nothing uses the node
        self._unused_checks: list[tuple[list[Any], int, Any, str]] = []
        self._locals: dict[str, Local] = {}  # what a parallel body may capture, in order
        self._outlined: list[OutlinedLoop] = []
        self._constants: list[tuple[Pointer, str]] = []
        self._keep: list[Any] = []
        self.extern_printer: ExternPrinter | None = unit.extern_printer
        self.scratch_bytes = 0  # this function's part of the unit's shared scratch memory
        self.var_ranges: dict[int, tuple[float, float] | None] = {}  # id(loop var) -> values
        self._ranges: dict[int, tuple[float, float] | None] = {}  # id(node) -> its range
        found = scan(func, unit.freestanding, self.extern_printer, self.fail)
        self.externs = found.externs
        self.region_of = found.region_of  # id(parallel For or Allocate) -> region
        self.no_simd = found.no_simd  # vectorized loops that cannot be `omp simd`
        self.written = found.written  # pointers something writes through
        self.names = Namer(extra=self.externs, others=(unit.namer,))

    def fail(self, problem: str) -> CCodegenError:
        """An error about this function."""
        return CCodegenError(f"PrimFunc {self.name!r}: {problem}")

    def int_range(self, node: te.PrimExpr) -> tuple[float, float] | None:
        """The values integer ``node`` takes inside the loops printed so far, when no
        operation in it can wrap (:func:`passhost.tir.bounds.exact_range`)."""
        self._keep.append(node)  # the ids in self._ranges must stay unique
        return exact_range(node, self.var_ranges, self._ranges)

    # -- what expressions need (ExprContext) -----------------------------------------------
    def scalar(self, var: te.Var) -> str:
        """The C name of scalar variable ``var``."""
        name = self.scalars.get(id(var))
        if name is None:
            raise self.fail(f"variable %{var.name_hint} is used where nothing defines it")
        self.used.add(id(var))
        return name

    def handle(self, var: te.Var) -> Pointer:
        """The pointer handle variable ``var`` stands for."""
        ptr = self.handles.get(id(var))
        if ptr is None:
            raise self.fail(f"pointer %{var.name_hint} is used where no parameter, allocation "
                            "or let statement defines it")
        self.used.add(id(ptr))
        return ptr

    def pointer(self, buf: Buffer) -> Pointer:
        """A pointer to the elements of ``buf``."""
        view = self.views.get(id(buf))
        if view is not None:
            self.used.add(id(view))
            return view
        try:
            base = self.handle(buf.data)
        except CCodegenError:
            raise self.fail(f"buffer {buf.name} points at %{buf.data.name_hint}, which no "
                            "parameter, allocation or let statement defines") from None
        return self._view_of(base, buf)

    def _view_of(self, base: Pointer, buf: Buffer) -> Pointer:
        want = storage_type(buf.dtype)
        if base.storage == want:
            return base
        if base.storage is not None:
            self.unit.flags.add("-fno-strict-aliasing")
        const = "const " if base.const else ""
        return Pointer(f"(({const}{want} *){base.text})", want, base.const)

    def temp(self) -> str:
        """A fresh name for a temporary."""
        self._temps += 1
        return f"ph_t{self._temps}"

    # -- lines ------------------------------------------------------------------------------
    def line(self, ind: int, text: str) -> None:
        """Append one line at indent level ``ind``."""
        self.lines.append(_INDENT * ind + text)

    def slot(self) -> _Slot:
        """A place for lines decided later."""
        slot = _Slot()
        self.lines.append(slot)
        return slot

    def exprs(self, ind: int, *pieces: list[Piece]) -> list[str]:
        """The texts of piece lists, after printing the temporaries they need."""
        pre, texts = ExprPrinter(self).print(pieces)
        for text in pre:
            self.line(ind, text)
        return texts

    def declare(self, ind: int, node: Any, name: str, text: str) -> None:
        """A declaration line; ``(void)name;`` is added if nothing uses ``node``."""
        self.line(ind, text)
        self._unused_checks.append((self.lines, len(self.lines) - 1, node, name))
        self._keep.append(node)

    # -- the function -----------------------------------------------------------------------
    def print(self) -> tuple[str, tuple[CParam, ...]]:
        """The C text (constant arrays, then the function) and the parameters."""
        from passhost.backend.c.unit import CParam

        params: list[CParam] = []
        decls: list[str] = []
        entry: list[str] = []
        param_nodes: list[tuple[Any, str]] = []
        for var in self.func.params:
            buf = self.func.buffer_map.get(var)
            if buf is not None:
                name = self.names.fresh(buf.name)
                ro = id(var) not in self.written
                ptr = Pointer(name, storage_type(buf.dtype), ro)
                self.handles[id(var)] = self.views[id(buf)] = ptr
                restrict = "restrict " if self.unit.restrict else ""
                decl = f"{'const ' if ro else ''}{ptr.storage} *{restrict}{name}"
                self._locals[name] = Local(f"{'const ' if ro else ''}{ptr.storage} *",
                                           self.unit.restrict)
                params.append(CParam(name, "buffer", buf.dtype, buf.shape, ro, decl))
                param_nodes.append((ptr, name))
            elif var.dtype == "handle":
                name = self.names.fresh(var.name_hint)
                ptr = Pointer(name, None)
                self.handles[id(var)] = ptr
                params.append(CParam(name, "handle", "handle", None, False, f"void *{name}"))
                self._locals[name] = Local("void *")
                param_nodes.append((ptr, name))
            else:
                name = self.names.fresh(var.name_hint)
                self.scalars[id(var)] = name
                decl = f"{value_type(var.dtype)} {name}"
                self._locals[name] = Local(f"{value_type(var.dtype)} ")
                params.append(CParam(name, "scalar", var.dtype, None, False, decl))
                param_nodes.append((var, name))
                if var.dtype in ("float16", "bfloat16"):
                    rounding = "ph_f16_round" if var.dtype == "float16" else "ph_bf16_round"
                    entry.append(f"{name} = {self.runtime.use(rounding)}({name});")
            decls.append(params[-1].declaration)
        top = self.region_of[id(self.func)]
        self.region = top
        head = self.slot()
        self._statements(self.func.body)
        self._close_region(top, 1)
        lines = ["int32_t ph_status = 0;", "const char *ph_error = NULL;"] \
            if self.uses_status else []
        lines += entry
        lines += [f"(void){name};" for node, name in param_nodes if id(node) not in self.used]
        head.lines = [_INDENT + text for text in lines] + top.decls
        if top.gotos:
            self.lines.append("ph_exit: ;")
        self.lines.extend(self._frees(top, 1))
        if self.uses_status:
            if self.unit.last_error:
                self.line(1, "if (ph_status != 0)")
                self.line(2, "ph_last_error_message = ph_error;")
            self.line(1, "return ph_status;")
        else:
            self.line(1, "return 0;")
        for lines, index, node, name in self._unused_checks:
            if id(node) not in self.used:
                lines[index] += f" (void){name};"
        signature = f"int32_t {self.symbol}({', '.join(decls) or 'void'})"
        out = [f"/* PrimFunc {self.name!r} */" if "*/" not in self.name else "/* PrimFunc */"]
        for ptr, text in self._constants:
            if id(ptr) in self.used:
                out.append(text)
        for loop in self._outlined:
            loop.body = _flat(loop.body)
            out.append(loop.text())
        out += [signature, "{", *_flat(self.lines), "}"]
        return "\n".join(out) + "\n", tuple(params)

    # -- regions ----------------------------------------------------------------------------
    def _alloc(self, s: ts.Allocate) -> None:
        region = self.region_of[id(s)]
        size = math.prod(s.extents) * np.dtype(s.dtype).itemsize
        if s.scope == self.unit.scratch_scope:
            self._scratch(s, region, size)
            return
        name = self.names.fresh(s.buffer_var.name_hint.removesuffix("_data"))
        ptr = Pointer(name, storage_type(s.dtype))
        padded = -(-max(size, 1) // 64) * 64
        heap = region.stack_bytes + padded > self.unit.stack_limit
        if heap and self.unit.freestanding:
            raise self.fail(f"allocation %{s.buffer_var.name_hint} of {size} bytes does not "
                            f"fit the stack budget ({self.unit.stack_limit - region.stack_bytes}"
                            " bytes left) and a freestanding unit has no heap")
        if heap:
            region.heap_bytes += size
        else:
            region.stack_bytes += padded
        region.allocs.append((s, ptr, heap))
        self.handles[id(s.buffer_var)] = ptr
        self._locals[name] = Local(f"{ptr.storage} *", True)  # memory of its own

    def _scratch(self, s: ts.Allocate, region: Region, size: int) -> None:
        """Point ``s`` into the unit's shared scratch memory, after this function's other
        scratch allocations (8-byte aligned)."""
        if region.parent is not None:
            raise self.fail(f"allocation %{s.buffer_var.name_hint} in the shared scratch "
                            f"memory ({s.scope!r}) is inside a parallel loop, whose threads "
                            "would share it")
        storage = storage_type(s.dtype)
        words = self.scratch_bytes // 8
        base = self.unit.scratch_symbol + (f" + {words}" if words else "")
        base = f"({base})" if words else base
        self.handles[id(s.buffer_var)] = Pointer(f"(({storage} *){base})", storage)
        self.scratch_bytes += -(-size // 8) * 8
        self.unit.scratch_bytes = max(self.unit.scratch_bytes, self.scratch_bytes)

    def _close_region(self, region: Region, ind: int) -> str | None:
        """Fill in the region's declarations (its used allocations, at ``ind``) and heap
        pointers. Returns, for a parallel region with heap memory, the per-thread flag saying
        the allocations succeeded."""
        decls = []
        for s, ptr, on_heap in region.allocs:
            if id(ptr) not in self.used:
                continue
            count = max(math.prod(s.extents), 1)
            size = count * np.dtype(s.dtype).itemsize
            if on_heap:
                if size >= 1 << 62:
                    raise self.fail(f"allocation %{s.buffer_var.name_hint} of {size} bytes "
                                    "is too large")
                decls.append(f"{ptr.storage} *{ptr.text} = ({ptr.storage} *)"
                             f"{self.runtime.use('ph_alloc')}({size}u);")
                region.heap.append(ptr.text)
            else:
                decls.append(f"{ptr.storage} {ptr.text}[{count}] __attribute__((aligned(64)));")
        ok = None
        if region.heap:
            self.uses_status = True
            test = " || ".join(f"{p} == NULL" for p in region.heap)
            message = c_string(f"{self.name}: out of memory ({region.heap_bytes} bytes)")
            fail = (f"{self.runtime.use('ph_fail')}(&ph_status, &ph_error, {STATUS_NO_MEMORY},"
                    f" {message});")
            if region.parent is None:
                decls += [f"if ({test}) {{", _INDENT + fail, _INDENT + "goto ph_exit;", "}"]
                region.gotos += 1
            else:
                ok = region.label.replace("next", "ok")
                decls += [f"const bool {ok} = !({test});", f"if (!{ok})", _INDENT + fail]
        region.decls = [_INDENT * ind + d for d in decls]
        return ok

    def _frees(self, region: Region, ind: int) -> list[str]:
        return [f"{_INDENT * ind}free({p});" for p in reversed(region.heap)]

    # -- statements -------------------------------------------------------------------------
    def _statements(self, body: ts.Stmt) -> None:
        stack: list[Any] = [("s", body, 1)]
        while stack:
            item = stack.pop()
            kind = item[0]
            if kind == "s":
                self._stmt(item[1], item[2], stack)
            elif kind == "l":
                self.line(item[2], item[1])
            elif kind == "f":
                item[1]()
            else:  # "else": what follows the then-block of an IfThenElse
                self._else(item[1], item[2], stack)

    def _stmt(self, s: ts.Stmt, ind: int, stack: list[Any]) -> None:
        handler: Callable[..., None] | None = getattr(self, f"_s_{type(s).__name__}", None)
        if handler is None:
            raise self.fail(f"cannot print a {type(s).__name__} statement")
        handler(s, ind, stack)

    def _s_SeqStmt(self, s: ts.SeqStmt, ind: int, stack: list[Any]) -> None:
        for item in reversed(s.seq):
            stack.append(("s", item, ind))

    def _s_Evaluate(self, s: ts.Evaluate, ind: int, stack: list[Any]) -> None:
        value = strip(s.value)
        if isinstance(value, (te.IntImm, te.FloatImm, te.StringImm)):
            return
        if isinstance(value, te.Call) and value.op == "call_extern" \
                and self.extern_printer is not None and self._extern(value, ind):
            return
        if isinstance(value, te.Call) and value.op in te.NAMED_CALL_OPS:
            (text,) = self.exprs(ind, [(value, 0)])
            self.line(ind, f"{text};")
        else:
            (text,) = self.exprs(ind, [(value, UNARY)])
            self.line(ind, f"(void){text};")

    def _extern(self, call: te.Call, ind: int) -> bool:
        """Print ``call`` as its target's :class:`ExternPrinter` says; False when it prints
        nothing of its own."""
        const = []
        for a in call.args[1:]:
            if isinstance(a, Buffer):
                const.append(self.pointer(a).const)
            elif isinstance(a, te.Var) and a.dtype == "handle":
                const.append(self.handle(a).const)
            else:
                const.append(False)
        printer = ExprPrinter(self)
        pieces = printer.call_args(call, mutable=False)
        pre, texts = printer.print([[p] for p in pieces])
        args = ExternArgs(tuple(texts), tuple(const), self.symbol, self.names.fresh)
        out = self.extern_printer.statement(call, args)
        if out is None:
            return False
        for text in pre:
            self.line(ind, text)
        self.line(ind, "{")
        for line in out.lines:
            for part in line.split("\n"):
                self.line(ind + 1, part)
        if out.status is not None:
            status = self.temp()
            message = c_string(f"{self.name}: {out.message}")
            self.uses_status = True
            self.line(ind + 1, f"const int32_t {status} = (int32_t)({out.status});")
            self.line(ind + 1, f"if ({status} != 0) {{")
            self.line(ind + 2, f"{self.runtime.use('ph_fail')}(&ph_status, &ph_error, "
                               f"{status}, {message});")
            self.line(ind + 2, f"goto {self.region.label};")
            self.line(ind + 1, "}")
            self.region.gotos += 1
        self.line(ind, "}")
        return True

    def _s_BufferStore(self, s: ts.BufferStore, ind: int, stack: list[Any]) -> None:
        buf = s.buffer
        ptr = self.pointer(buf)
        if ptr.const:
            raise self.fail(f"buffer {buf.name} is constant data and cannot be stored into")
        pieces: list[Piece] = [f"{ptr.text}[", *flat_index(buf.shape, s.indices), "] = "]
        value = strip(s.value)
        if buf.dtype in ("float16", "bfloat16") and isinstance(value, te.BufferLoad) \
                and value.dtype == buf.dtype:  # a copy: the bits as they are
            src = self.pointer(value.buffer)
            pieces += [f"{src.text}[", *flat_index(value.buffer.shape, value.indices), "]"]
        elif buf.dtype == "float16":
            pieces += ["(_Float16)", (value, UNARY)]
        elif buf.dtype == "bfloat16":
            pieces += [f"{self.runtime.use('ph_f32_to_bf16')}(", (value, 0), ")"]
        else:
            pieces.append((value, 0))
        pre, (text,) = ExprPrinter(self).print(
            [pieces], unrounded=value if buf.dtype in ("float16", "bfloat16") else None)
        for line in pre:
            self.line(ind, line)
        self.line(ind, text + ";")

    def _s_LetStmt(self, s: ts.LetStmt, ind: int, stack: list[Any]) -> None:
        var = s.var
        value = strip(s.value)
        if var.dtype == "handle" and isinstance(value, te.Var):
            self.handles[id(var)] = self.handle(value)
        else:
            (text,) = self.exprs(ind, [(value, 0)])
            name = self.names.fresh(var.name_hint)
            if var.dtype == "handle":
                ptr = Pointer(name, None)
                self.handles[id(var)] = ptr
                self.declare(ind, ptr, name, f"void *{name} = {text};")
                self._locals[name] = Local("void *")
            else:
                self.scalars[id(var)] = name
                self.declare(ind, var, name, f"const {value_type(var.dtype)} {name} = {text};")
                self._locals[name] = Local(f"{value_type(var.dtype)} ")
        stack.append(("s", s.body, ind))

    def _s_Allocate(self, s: ts.Allocate, ind: int, stack: list[Any]) -> None:
        self._alloc(s)
        stack.append(("s", s.body, ind))

    def _s_AllocateConst(self, s: ts.AllocateConst, ind: int, stack: list[Any]) -> None:
        hint = f"{self.symbol}_{s.buffer_var.name_hint.removesuffix('_data')}"
        name = self.unit.namer.fresh(hint, avoid=self.names.taken)
        ctype = storage_type(s.dtype)
        ptr = Pointer(name, ctype, True)
        self.handles[id(s.buffer_var)] = ptr
        elements = array_elements(s.data) or ["0"]
        rows = [", ".join(elements[i:i + _ELEMENTS_PER_LINE])
                for i in range(0, len(elements), _ELEMENTS_PER_LINE)]
        text = (f"static const {ctype} {name}[{len(elements)}] __attribute__((aligned(64))) = "
                "{\n" + ",\n".join(_INDENT + r for r in rows) + "\n};")
        self._constants.append((ptr, text))
        stack.append(("s", s.body, ind))

    def _s_DeclBuffer(self, s: ts.DeclBuffer, ind: int, stack: list[Any]) -> None:
        buf = s.buffer
        base = self.handle(buf.data)
        source = self._view_of(base, buf)
        name = self.names.fresh(buf.name)
        view = Pointer(name, source.storage, source.const)
        self.views[id(buf)] = view
        const = "const " if view.const else ""
        self.declare(ind, view, name, f"{const}{view.storage} *{name} = {source.text};")
        based = self._locals.get(base.text)
        self._locals[name] = Local(f"{const}{view.storage} *",
                                   root=(based.root or base.text) if based else None)
        stack.append(("s", s.body, ind))

    def _s_AssertStmt(self, s: ts.AssertStmt, ind: int, stack: list[Any]) -> None:
        (cond,) = self.exprs(ind, [(s.condition, UNARY)])
        message = c_string(f"{self.name}: {s.message.value}")
        self.uses_status = True
        self.line(ind, f"if (!{cond}) {{")
        self.line(ind + 1, f"{self.runtime.use('ph_fail')}(&ph_status, &ph_error, "
                           f"{STATUS_ASSERT}, {message});")
        self.line(ind + 1, f"goto {self.region.label};")
        self.line(ind, "}")
        self.region.gotos += 1
        stack.append(("s", s.body, ind))

    def _s_IfThenElse(self, s: ts.IfThenElse, ind: int, stack: list[Any]) -> None:
        (cond,) = self.exprs(ind, [(s.condition, 0)])
        self.line(ind, f"if ({cond}) {{")
        stack.append(("else", s, ind))
        stack.append(("s", s.then_case, ind + 1))

    def _else(self, s: ts.IfThenElse, ind: int, stack: list[Any]) -> None:
        other = s.else_case
        if other is None:
            self.line(ind, "}")
            return
        if isinstance(other, ts.IfThenElse):
            pre, (cond,) = ExprPrinter(self).print([[(other.condition, 0)]])
            if not pre:  # nothing to evaluate before the test: `else if`
                self.line(ind, f"}} else if ({cond}) {{")
                stack.append(("else", other, ind))
                stack.append(("s", other.then_case, ind + 1))
                return
        self.line(ind, "} else {")
        stack.append(("l", "}", ind))
        stack.append(("s", other, ind + 1))

    def _s_For(self, s: ts.For, ind: int, stack: list[Any]) -> None:
        var = s.loop_var
        vt = value_type(var.dtype)
        lo, hi = self._bounds(s, ind)
        if s.kind == "parallel" and not self.unit.freestanding:
            self._parallel(s, ind, lo, hi, stack)
            return
        name = self.names.fresh(var.name_hint)
        self.scalars[id(var)] = name
        self._locals[name] = Local(f"{vt} ")
        if s.kind == "vectorized" and not self.unit.freestanding:
            if id(s) in self.no_simd:
                self.line(ind, "/* vectorized, printed serial: its body allocates, asserts, "
                               "calls or runs a parallel loop */")
            else:
                self.line(ind, "PH_OMP_SIMD")
        elif s.kind == "unrolled":
            extent = strip(s.extent)
            count = extent.value if isinstance(extent, te.IntImm) else 8
            self.line(ind, f"#pragma GCC unroll {min(max(count, 1), _UNROLL_LIMIT)}")
        self.line(ind, f"for ({vt} {name} = {lo}; {name} < {hi}; ++{name}) {{")
        stack.append(("l", "}", ind))
        stack.append(("s", s.body, ind + 1))

    def _bounds(self, s: ts.For, ind: int) -> tuple[str, str]:
        """The C texts of a loop's first value and of the value it stops before."""
        dtype = s.loop_var.dtype
        lo_e, ext_e = strip(s.min), strip(s.extent)
        if isinstance(lo_e, te.IntImm) and isinstance(ext_e, te.IntImm):
            end = lo_e.value + max(ext_e.value, 0)
            info = np.iinfo(dtype)
            if end > int(info.max):
                raise self.fail(f"loop %{s.loop_var.name_hint} runs to {end - 1}, the largest "
                                f"{dtype}; its end {end} is not a {dtype}: use a wider loop "
                                "variable")
            if end > lo_e.value:
                self.var_ranges[id(s.loop_var)] = (lo_e.value, end - 1)
            return int_literal(lo_e.value, dtype), int_literal(max(end, lo_e.value), dtype)
        lo, ext = self.exprs(ind, [(lo_e, 0)], [(ext_e, 0)])
        vt = value_type(dtype)
        if not isinstance(lo_e, (te.Var, te.IntImm)):
            name = self.temp()
            self.line(ind, f"const {vt} {name} = {lo};")
            lo = name
        if isinstance(lo_e, te.IntImm) and lo_e.value == 0:
            end = ext
        elif dtype in ("uint32", "uint64"):
            end = f"{lo} + ({ext})"
        else:
            end = f"{self.runtime.use('ph_add_' + suffix(dtype))}({lo}, {ext})"
        if isinstance(ext_e, (te.Var, te.IntImm)) and end == ext:
            return lo, end
        name = self.temp()
        self.line(ind, f"const {vt} {name} = {end};")
        return lo, name

    def _parallel(self, s: ts.For, ind: int, lo: str, hi: str, stack: list[Any]) -> None:
        """Print parallel loop ``s`` over ``[lo, hi)`` as a call running its outlined body
        (:mod:`.outline`) on the unit's threads."""
        region = self.region_of[id(s)]
        self._regions += 1
        region.label = f"ph_next{self._regions}"
        outer, outer_lines, known = self.region, self.lines, len(self._locals)
        symbol = self.unit.namer.fresh(f"{self.symbol}_par{self._regions}",
                                       avoid=self.names.taken)
        var = s.loop_var
        vt = value_type(var.dtype)
        name = self.names.fresh(var.name_hint)
        self.scalars[id(var)] = name
        self._locals[name] = Local(f"{vt} ")  # after `known`: the body's own, not a capture
        self.lines = []
        decls = self.slot()
        self.line(1, f"for ({vt} {name} = ({vt})ph_first; {name} < ({vt})ph_last; ++{name}) {{")
        check = self.slot()

        def enter() -> None:
            self.region = region

        def leave() -> None:
            ok = self._close_region(region, 1)
            decls.lines = region.decls
            if ok is not None:
                check.lines = [f"{_INDENT * 2}if (!{ok})", f"{_INDENT * 3}continue;"]
            if region.gotos:
                self.line(2, f"{region.label}: ;")
            self.line(1, "}")
            self.lines.extend(self._frees(region, 1))
            body = self.lines
            self.lines, self.region = outer_lines, outer
            fails = bool(region.gotos) or ok is not None
            if fails:
                self.uses_status = True
                self.runtime.use("ph_fail")
            outer_locals = dict(list(self._locals.items())[:known])
            names = captured(_flat(body), outer_locals)
            loop = OutlinedLoop(symbol, {n: outer_locals[n] for n in names}, body, fails)
            self._outlined.append(loop)
            self.lines.extend(loop.call(ind, lo, hi))
            if fails:
                self.line(ind, f"if ({self.runtime.use('ph_failed')}(&ph_status))")
                self.line(ind + 1, f"goto {outer.label};")
                outer.gotos += 1

        stack.append(("f", leave))
        stack.append(("s", s.body, 2))
        stack.append(("f", enter))


def _flat(lines: list[Any]) -> list[str]:
    """``lines`` with every slot replaced by its lines."""
    out: list[str] = []
    for item in lines:
        out.extend(item.lines if isinstance(item, _Slot) else (item,))
    return out
