"""The C printer's options for external targets (passhost.backend.c): an ExternPrinter for
``call_extern`` statements (struct initialisers, a checked status), read-only parameters,
constants, the shared scratch memory, freestanding units and units without last-error state.

One freestanding unit is compiled once per module (``-std=c99 -ffreestanding -Werror``) and
called through ctypes; its results are compared with NumPy. The same source is compiled to an
object whose undefined symbols must be none (no libc, no OpenMP, no TLS), and for Cortex-M
with ``arm-none-eabi-gcc`` when that is installed.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from c_unit_helpers import CC, needs_cc
from passhost.backend.c import (
    CCodegenError,
    CUnit,
    ExternArgs,
    ExternCall,
    ExternPrinter,
    print_unit,
)
from passhost.tir import (
    Add,
    Allocate,
    AllocateConst,
    Buffer,
    BufferStore,
    Call,
    DeclBuffer,
    Evaluate,
    For,
    IntImm,
    PrimFunc,
    SeqStmt,
    Stmt,
    Var,
    call_extern,
    const,
    decl_buffer,
    intrinsic_call,
)

SCRATCH = "global.workspace"
STRICT = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding"]

#: The external function the target's calls go to, with a struct argument and a status.
PREAMBLE = """\
typedef struct
{
    int32_t count;
    int32_t factor;
} scale_params;

/* y = factor * x, through scratch memory; -3 when count is negative. */
static int32_t scale_into(const scale_params *p, const int32_t *x, int32_t *y,
                          int32_t *scratch)
{
    int32_t i;
    if (p->count < 0)
        return -3;
    for (i = 0; i < p->count; ++i)
        scratch[i] = x[i];
    for (i = 0; i < p->count; ++i)
        y[i] = p->factor * scratch[i];
    return 0;
}

static void note(int32_t *y)
{
    y[0] += 1000;
}
"""


class ScaleCalls(ExternPrinter):
    """``call_extern("scale_into", x, y, scratch, count, factor)`` as a struct and a call
    whose status is checked; other calls print plainly."""

    def read_only(self, call: Call) -> Collection[int]:
        return (0,) if call.args[0].value == "scale_into" else ()

    def statement(self, call: Call, args: ExternArgs) -> ExternCall | None:
        if call.args[0].value != "scale_into":
            return None
        x, y, scratch, count, factor = args.texts
        params, status = args.fresh("params"), args.fresh("status")
        return ExternCall([f"scale_params {params} = {{{count}, {factor}}};",
                           f"const int32_t {status} = scale_into(&{params}, {x}, {y}, "
                           f"{scratch});"], status, "scale_into")


def func(params: list[Buffer | Var], body: Stmt) -> PrimFunc:
    return PrimFunc([p.data if isinstance(p, Buffer) else p for p in params],
                    {p.data: p for p in params if isinstance(p, Buffer)}, body)


def scale_call(x: Any, y: Buffer, scratch: Var, count: Any, factor: int) -> Evaluate:
    return Evaluate(call_extern("scale_into", x, y, scratch, count, const(factor, "int32")))


def _scale() -> PrimFunc:
    """y = 3 * x for the first n elements, through 24 bytes of scratch memory."""
    x, y = decl_buffer((6,), "int32", "x"), decl_buffer((6,), "int32", "y")
    n, scratch = Var("n", "int32"), Var("scratch", "handle")
    return func([x, y, n], Allocate(scratch, "int32", (6,), scale_call(x, y, scratch, n, 3),
                                    scope=SCRATCH))


W = np.array([5, -7, 11, -(2 ** 29)], np.int32)


def _weighted() -> PrimFunc:
    """y = -2 * W (a constant), through the second of two scratch allocations (8 + 40
    bytes), then a plain call adding 1000 to y[0]."""
    y = decl_buffer((4,), "int32", "y")
    w = decl_buffer((4,), "int32", "w")
    pad, scratch = Var("pad", "handle"), Var("scratch", "handle")
    body: Stmt = SeqStmt([scale_call(w, y, scratch, const(4, "int32"), -2),
                          Evaluate(call_extern("note", y))])
    body = Allocate(pad, "int8", (3,), Allocate(scratch, "int32", (10,), body, scope=SCRATCH),
                    scope=SCRATCH)
    return func([y], AllocateConst(w.data, "int32", (4,), W, DeclBuffer(w, body)))


def _loops() -> PrimFunc:
    """out = a + 1 in a parallel loop around a vectorized one."""
    a, out = decl_buffer((4, 8), "int32", "a"), decl_buffer((4, 8), "int32", "out")
    i, j = Var("i"), Var("j")
    store = BufferStore(out, Add(a[i, j], IntImm("int32", 1)), [i, j])
    return func([a, out], For(i, 0, 4, "parallel", For(j, 0, 8, "vectorized", store)))


FUNCS = {"scale": _scale(), "weighted": _weighted(), "loops": _loops()}
OPTIONS: dict[str, Any] = dict(prefix="tgt", extern_printer=ScaleCalls(), freestanding=True,
                               restrict=False, scratch_scope=SCRATCH)


@pytest.fixture(scope="module")
def unit() -> CUnit:
    return print_unit(FUNCS, PREAMBLE, **OPTIONS)


def _compile(unit: CUnit, directory: Path, flags: list[str], out: str,
             compiler: str | None = None) -> Path:
    source, target = directory / "unit.c", directory / out
    source.write_text(unit.source, encoding="utf-8")
    result = subprocess.run([compiler or CC, *flags, str(source), "-o", str(target)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(flags)} failed:\n{result.stderr[-6000:]}\n{unit.source}")
    return target


@pytest.fixture(scope="module")
def lib(unit: CUnit, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    if CC is None:
        pytest.skip("no C compiler (set $CC or install cc)")
    path = _compile(unit, tmp_path_factory.mktemp("unit"), [*STRICT, "-shared", "-fPIC"],
                    "unit.so")
    library = ctypes.CDLL(str(path))
    for f in unit.functions.values():
        fn = getattr(library, f.symbol)
        fn.restype, fn.argtypes = ctypes.c_int32, f.argtypes
    library.tgt_last_error.restype = ctypes.c_char_p
    return library


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


@needs_cc
def test_the_extern_printer_writes_the_call_and_its_status_is_checked(lib, unit):
    x = np.array([1, -2, 3, 40, -50, 600], np.int32)
    y = np.zeros(6, np.int32)
    assert lib.scale(ptr(x), ptr(y), 6) == 0
    np.testing.assert_array_equal(y, 3 * x)
    assert lib.tgt_last_error() is None
    y[:] = 7
    assert lib.scale(ptr(x), ptr(y), -1) == -3  # the call's own status, returned
    assert lib.tgt_last_error() == b"scale: scale_into"
    np.testing.assert_array_equal(y, np.full(6, 7, np.int32))
    assert "scale_params params = {n, 3};" in unit.source


def test_parameters_the_call_only_reads_are_const(unit):
    assert unit.functions["scale"].signature == "int32_t scale(const int32_t *x, int32_t *y, " \
                                                "int32_t n)"
    hosted = print_unit({"scale": _scale()}, PREAMBLE, extern_printer=ScaleCalls(),
                        scratch_scope=SCRATCH)
    assert hosted.functions["scale"].signature == (
        "int32_t scale(const int32_t *restrict x, int32_t *restrict y, int32_t n)")
    plain = print_unit({"scale": _scale()}, PREAMBLE, scratch_scope=SCRATCH)
    assert plain.functions["scale"].params[0].declaration == "int32_t *restrict x"


@needs_cc
def test_constants_are_static_const_arrays_of_the_unit(lib, unit):
    y = np.zeros(4, np.int32)
    assert lib.weighted(ptr(y)) == 0
    want = -2 * W
    want[0] += 1000  # the plain call, printed as `note(y);`
    np.testing.assert_array_equal(y, want)
    text = unit.source
    decl = text.index("static const int32_t weighted_w[4]")
    assert decl < text.index("int32_t weighted(int32_t *y)") and "note(y);" in text


@needs_cc
def test_scratch_allocations_share_one_static_array(lib, unit):
    # scale: 24 bytes; weighted: 3 bytes (8 with alignment) then 40: 48 bytes, 6 words.
    assert "static int64_t tgt_scratch[6];" in unit.source
    assert "scale_into(&params, x, y, ((int32_t *)tgt_scratch));" in unit.source
    assert "((int32_t *)(tgt_scratch + 1))" in unit.source
    x = np.arange(6, dtype=np.int32)
    y = np.zeros(6, np.int32)
    assert lib.scale(ptr(x), ptr(y), 6) == 0
    np.testing.assert_array_equal(y, 3 * x)


@needs_cc
def test_freestanding_loops_run_serially(lib):
    a = np.arange(32, dtype=np.int32).reshape(4, 8)
    out = np.zeros_like(a)
    assert lib.loops(ptr(a), ptr(out)) == 0
    np.testing.assert_array_equal(out, a + 1)


def test_a_freestanding_unit_uses_no_threads_heap_or_hosted_headers(unit):
    text = unit.source
    for hosted in ("#pragma omp", "PH_OMP", "_Thread_local", "malloc", "aligned_alloc",
                   "free(", "__atomic", "num_threads"):
        assert hosted not in text, hosted
    includes = {line for line in text.splitlines() if line.startswith("#include <")}
    assert includes == {"#include <stddef.h>", "#include <stdint.h>"}


@needs_cc
def test_a_freestanding_unit_needs_nothing_from_the_c_library(unit, tmp_path):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm (binutils) to list the object's undefined symbols")
    obj = _compile(unit, tmp_path, [*STRICT, "-c"], "unit.o")
    undefined = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True,
                               check=True).stdout.split()
    assert undefined == []


def test_a_freestanding_unit_compiles_for_cortex_m(unit, tmp_path):
    compiler = shutil.which("arm-none-eabi-gcc")
    if compiler is None:
        pytest.skip("arm-none-eabi-gcc not found (package gcc-arm-none-eabi)")
    _compile(unit, tmp_path, [*STRICT, "-mthumb", "-mcpu=cortex-m3", "-c"], "unit.o",
             compiler=compiler)


def test_a_freestanding_unit_includes_math_only_when_it_uses_it():
    x, out = decl_buffer((2,), "float64", "x"), decl_buffer((2,), "float64", "out")
    i = Var("i")
    f = func([x, out], For(i, 0, 2, "serial",
                           BufferStore(out, intrinsic_call("tir.exp", x[i]), [i])))
    text = print_unit({"f": f}, freestanding=True).source
    assert "#include <math.h>" in text and "#include <stdlib.h>" not in text


def test_without_last_error_a_failure_only_returns_its_status():
    text = print_unit({"scale": _scale()}, PREAMBLE, **{**OPTIONS, "last_error": False}).source
    assert "last_error" not in text and "return ph_status;" in text


def test_a_freestanding_allocation_past_the_stack_budget_is_an_error():
    out = decl_buffer((1,), "int8", "out")
    big = Var("big", "handle")
    f = func([out], Allocate(big, "int8", (1 << 20,), Evaluate(call_extern("note", big))))
    with pytest.raises(CCodegenError, match=r"PrimFunc 'f': allocation %big of 1048576 bytes "
                                            r"does not fit .* a freestanding unit has no heap"):
        print_unit({"f": f}, freestanding=True)


def test_scratch_memory_in_a_parallel_loop_is_an_error():
    out = decl_buffer((4,), "int32", "out")
    i, scratch = Var("i"), Var("scratch", "handle")
    body = Allocate(scratch, "int32", (4,), Evaluate(call_extern("note", scratch)),
                    scope=SCRATCH)
    f = func([out], For(i, 0, 4, "parallel", body))
    with pytest.raises(CCodegenError, match=r"allocation %scratch in the shared scratch memory "
                                            r"\('global.workspace'\) is inside a parallel loop"):
        print_unit({"f": f}, scratch_scope=SCRATCH)
