"""A C translation unit of PrimFuncs: :class:`CPrinter` prints them, :class:`CUnit` holds the
source and, per function, the C signature a caller declares (ctypes argtypes included)."""

from __future__ import annotations

import ctypes
import re
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from passhost.backend.c.errors import CCodegenError
from passhost.backend.c.expr import KernelPrinter
from passhost.backend.c.extern import ExternPrinter
from passhost.backend.c.function import FunctionPrinter
from passhost.backend.c.naming import Namer, is_identifier
from passhost.backend.c.runtime import Runtime, threads_section
from passhost.ir.node import FrozenDict, frozen_dict
from passhost.tir.function import PrimFunc
from passhost.tir.intrinsics import INTRINSICS

__all__ = ["CFunction", "CParam", "CPrinter", "CUnit", "UnitState", "print_unit"]

#: The default stack budget of a region (function body or parallel loop body), in bytes.
STACK_LIMIT = 64 * 1024

_CTYPES: dict[str, Any] = {
    "bool": ctypes.c_bool, "int8": ctypes.c_int8, "uint8": ctypes.c_uint8,
    "int16": ctypes.c_int16, "uint16": ctypes.c_uint16, "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32, "int64": ctypes.c_int64, "uint64": ctypes.c_uint64,
    "float16": ctypes.c_float, "bfloat16": ctypes.c_float, "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


@frozen
class CParam:
    """One parameter of a printed function.

    ``kind`` is ``"buffer"`` (a pointer to the buffer's flat C-contiguous elements, of
    ``dtype`` and ``shape``; ``readonly`` when the function never writes it, then declared
    ``const``), ``"handle"`` (``void *``) or ``"scalar"`` (a value of ``dtype``; float16
    and bfloat16 are passed as ``float`` and rounded on entry).
    """

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...] | None
    readonly: bool
    declaration: str

    @property
    def ctype(self) -> Any:
        """The ctypes type of the argument."""
        return ctypes.c_void_p if self.kind != "scalar" else _CTYPES[self.dtype]


@frozen
class CFunction:
    """A printed function: the name it was given, its C symbol and its parameters; it
    returns an ``int32_t`` status (0 on success)."""

    name: str
    symbol: str
    params: tuple[CParam, ...]

    @property
    def signature(self) -> str:
        """``int32_t symbol(params)``."""
        decls = ", ".join(p.declaration for p in self.params) or "void"
        return f"int32_t {self.symbol}({decls})"

    @property
    def argtypes(self) -> list[Any]:
        """The ctypes argtypes of the function (its restype is ``ctypes.c_int32``)."""
        return [p.ctype for p in self.params]


@frozen
class CUnit:
    """A printed C translation unit.

    ``functions`` maps each name given to the printer to its :class:`CFunction`; ``flags``
    are the compiler flags the unit needs besides ``-std=gnu11`` (``-fno-strict-aliasing``
    when a buffer reads memory as another type than it was declared with).
    """

    source: str
    functions: FrozenDict = field(converter=frozen_dict)
    flags: tuple[str, ...]
    prefix: str

    @property
    def num_threads_symbol(self) -> str:
        """The ``int32_t`` variable setting the threads of parallel loops (0: default)."""
        return f"{self.prefix}_num_threads"

    @property
    def parallel_symbol(self) -> str:
        """The pointer to the thread pool running parallel loops, ``void (*)(int64_t tasks,
        int threads, void (*task)(void *, int64_t), void *ctx)``; NULL (the default) runs
        them on OpenMP's threads."""
        return f"{self.prefix}_parallel"

    @property
    def last_error_symbol(self) -> str:
        """The function ``const char *f(void)`` giving the last failure's message in the
        calling thread (NULL before any failure)."""
        return f"{self.prefix}_last_error"


class UnitState:
    """What the functions of one unit share: helpers, unit-level names, options, and the
    size of the shared scratch memory."""

    def __init__(self, prefix: str, stack_limit: int, kernel_printer: KernelPrinter | None,
                 extern_printer: ExternPrinter | None = None, *, freestanding: bool = False,
                 last_error: bool = True, restrict: bool = True,
                 scratch_scope: str | None = None) -> None:
        self.prefix = prefix
        self.stack_limit = stack_limit
        self.kernel_printer = kernel_printer
        self.extern_printer = extern_printer
        self.freestanding = freestanding
        self.last_error = last_error
        self.restrict = restrict
        self.scratch_scope = scratch_scope
        self.scratch_symbol = f"{prefix}_scratch"
        self.scratch_bytes = 0
        self.runtime = Runtime(single_thread=freestanding)
        self.externs: set[str] = set()
        self.namer = Namer(extra=self.externs)
        self.namer.taken.update({f"{prefix}_num_threads", f"{prefix}_parallel",
                                 f"{prefix}_last_error",
                                 self.scratch_symbol, "ph_last_error_message"})
        self.flags: set[str] = set()


_HOSTED_HEADER = """\
/* Generated by passhost's C printer (docs/targets.md, "The C printer"): C11 with GNU
 * extensions. Functions return 0, or 1 when an assertion failed, 2 when memory ran out. */
"""

_FREESTANDING_HEADER = """\
/* Generated by passhost's C printer (docs/targets.md, "The C printer"): freestanding C99
 * with GNU attributes, no threads and no heap. Functions return 0 on success. */
"""

_DIAGNOSTICS = """
/* Comparisons TIR may hold that are always true or false for a type are not mistakes. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wtautological-compare"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wtautological-compare"
#endif
"""

#: The headers a unit includes only when its text names something they declare (parsing
#: them is a good part of compiling a small unit).
_OPTIONAL_INCLUDES = (
    ("<stdbool.h>", frozenset({"bool", "true", "false"})),
    ("<math.h>", frozenset({
        *(n for i in INTRINSICS.values() for n in i.c_names.values() if not n.startswith("ph_")),
        "isnan", "isinf", "isfinite", "NAN", "INFINITY", "fmod", "fmodf", "floor", "floorf",
        "copysign", "copysignf", "sqrt", "sqrtf", "exp", "expf", "fabs", "fabsf"})),
    ("<stdlib.h>", frozenset({"malloc", "free", "aligned_alloc"})),
    ("<string.h>", frozenset({"memcpy", "memset"})),
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _header(body: str, freestanding: bool) -> str:
    """The unit's opening comment, <stddef.h> and <stdint.h>, the headers of
    :data:`_OPTIONAL_INCLUDES` that ``body`` needs, and the diagnostics it silences."""
    words = set(_WORD.findall(body))
    headers = ["<stddef.h>", "<stdint.h>"]
    headers += [h for h, names in _OPTIONAL_INCLUDES if words & names]
    head = _FREESTANDING_HEADER if freestanding else _HOSTED_HEADER
    return head + "".join(f"#include {h}\n" for h in sorted(headers)) + _DIAGNOSTICS


def _globals(state: UnitState) -> str:
    prefix = state.prefix
    parts = []
    if not state.freestanding:
        parts.append(f"""\
/* The threads of parallel loops: 0 means OpenMP's default (1 without OpenMP). */
int32_t {prefix}_num_threads = 0;

/* The thread pool running parallel loops, set by the loader: pool(tasks, threads, task, ctx)
 * runs task(ctx, t) for every t < tasks on up to `threads` threads. NULL: OpenMP's threads. */
void (*{prefix}_parallel)(int64_t, int, void (*)(void *, int64_t), void *) = NULL;
""")
    if state.last_error:
        local = "" if state.freestanding else "_Thread_local "
        where = "" if state.freestanding else " in the calling thread"
        parts.append(f"""\
static {local}const char *ph_last_error_message = NULL;

/* The message of the last failure of a function of this unit{where}. */
const char *{prefix}_last_error(void)
{{
    return ph_last_error_message;
}}
""")
    if state.scratch_bytes:
        words = -(-state.scratch_bytes // 8)
        parts.append(f"/* The scratch memory of every function: {state.scratch_bytes} bytes, "
                     f"8-byte aligned. */\nstatic int64_t {state.scratch_symbol}[{words}];\n")
    return "\n".join(parts)


class CPrinter:
    """Prints PrimFuncs into one C unit.

    ``prefix`` names the unit's exported symbols (``<prefix>_num_threads``,
    ``<prefix>_last_error``, ``<prefix>_scratch``); ``stack_limit`` is the stack budget in
    bytes of each region's allocations (larger ones go on the heap); ``kernel_printer(call,
    args)`` prints ``call_kernel`` calls (without it they are a :class:`CCodegenError`);
    ``extern_printer`` prints ``call_extern`` statements (:mod:`.extern`).

    ``freestanding`` units have no threads (parallel and vectorized loops print serial), no
    heap (an allocation past the stack budget is an error) and no thread-locals, and include
    only the freestanding headers they need; without ``last_error`` the unit keeps no
    message of the last failure (failures only return their status); without ``restrict``
    pointer parameters are plain pointers; allocations in memory scope ``scratch_scope`` are
    not the function's own but part of one static array ``<prefix>_scratch`` shared by every
    function of the unit, sized for the function needing most, 8-byte aligned.
    """

    def __init__(self, *, prefix: str = "ph", stack_limit: int = STACK_LIMIT,
                 kernel_printer: KernelPrinter | None = None,
                 extern_printer: ExternPrinter | None = None, freestanding: bool = False,
                 last_error: bool = True, restrict: bool = True,
                 scratch_scope: str | None = None) -> None:
        if not is_identifier(prefix):
            raise CCodegenError(f"the unit prefix must be a C identifier, found {prefix!r}")
        self.state = UnitState(prefix, stack_limit, kernel_printer, extern_printer,
                               freestanding=freestanding, last_error=last_error,
                               restrict=restrict, scratch_scope=scratch_scope)
        self.functions: dict[str, CFunction] = {}
        self.texts: list[str] = []

    def _prepare(self, func: PrimFunc, name: str) -> FunctionPrinter:
        if not isinstance(func, PrimFunc):
            raise CCodegenError(f"{name!r}: the C printer prints PrimFuncs, found {func!r}")
        if name in self.functions:
            raise CCodegenError(f"a function named {name!r} is already in the unit")
        printer = FunctionPrinter(self.state, name, func)
        clash = sorted(n for n in printer.externs if n in self.state.namer.taken)
        if clash:
            raise CCodegenError(f"PrimFunc {name!r}: call_extern of {clash[0]!r}, which the "
                                "unit already defines")
        self.state.externs.update(printer.externs)
        return printer

    def _print(self, printer: FunctionPrinter) -> str:
        printer.symbol = self.state.namer.fresh(printer.name)
        text, params = printer.print()
        self.functions[printer.name] = CFunction(printer.name, printer.symbol, params)
        self.texts.append(text)
        return text

    def print_function(self, func: PrimFunc, symbol: str) -> str:
        """Add ``func`` to the unit as a C function named after ``symbol`` (sanitised, made
        unique: see ``functions[symbol].symbol``); returns its text (its constant arrays,
        then its definition)."""
        return self._print(self._prepare(func, symbol))

    def print_unit(self, funcs: Mapping[str, PrimFunc], preamble: str = "") -> CUnit:
        """Add every function of ``funcs`` (in order) and return the unit."""
        printers = [self._prepare(func, name) for name, func in funcs.items()]
        for printer in printers:
            self._print(printer)
        return self.unit(preamble)

    def unit(self, preamble: str = "") -> CUnit:
        """The unit of the functions printed so far; ``preamble`` (declarations of the
        functions ``call_extern`` calls, includes...) goes after the standard includes."""
        state = self.state
        parts = []
        if preamble:
            parts.append(preamble.rstrip("\n") + "\n")
        globals_ = _globals(state)
        if globals_:
            parts.append(globals_)
        if not state.freestanding:
            parts.append(threads_section(state.prefix))
        helpers = state.runtime.source()
        if helpers:
            parts.append(helpers)
        parts += self.texts
        body = "\n".join(parts)
        head = _header(body, state.freestanding)
        return CUnit(f"{head}\n{body}", dict(self.functions), tuple(sorted(state.flags)),
                     state.prefix)


def print_unit(funcs: Mapping[str, PrimFunc], preamble: str = "", **options: Any) -> CUnit:
    """The C unit of ``funcs`` (name -> PrimFunc); ``options`` are :class:`CPrinter`'s."""
    return CPrinter(**options).print_unit(funcs, preamble)
