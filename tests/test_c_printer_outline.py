"""Parallel loops outlined into task functions (:mod:`passhost.backend.c.outline`): what they
capture, how their iterations are split into tasks, and that they run on the thread pool a
loader sets in ``<prefix>_parallel``.

One unit is compiled once for the module with ``-Wall -Wextra -Werror`` and called through
ctypes, its pool pointer set to a recording pool defined in the unit's preamble, which runs
the tasks last to first (so no result depends on their order). Expected values are NumPy's.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from c_unit_helpers import CC, compile_unit
from passhost.backend.c import STATUS_ASSERT, CUnit, print_unit
from passhost.tir import (
    GE,
    AssertStmt,
    Buffer,
    BufferStore,
    Cast,
    DeclBuffer,
    For,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
    decl_buffer,
)

FLAGS = ["-std=gnu11", "-O2", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"]

#: A pool recording how it is called, running the tasks last to first on the calling thread.
PREAMBLE = """\
int64_t pool_calls = 0, pool_tasks = 0;
int pool_threads = 0;

void recording_pool(int64_t tasks, int threads, void (*task)(void *, int64_t), void *ctx)
{
    pool_calls += 1;
    pool_tasks = tasks;
    pool_threads = threads;
    for (int64_t t = tasks - 1; t >= 0; --t)
        task(ctx, t);
}
"""


def _func(params: list[Buffer | Var], body: Any) -> PrimFunc:
    return PrimFunc([p.data if isinstance(p, Buffer) else p for p in params],
                    {p.data: p for p in params if isinstance(p, Buffer)}, body)


def _scale() -> PrimFunc:
    """out[i] = 2 * x[i] over n (a parameter) iterations, in parallel."""
    n, i = Var("n"), Var("i")
    x, out = (decl_buffer((10,), "float32", name) for name in ("x", "out"))
    return _func([n, x, out], For(i, 0, n, "parallel",
                                  BufferStore(out, x[i] * Cast("float32", 2), [i])))


def _nested() -> PrimFunc:
    """out[i, j] = 2 x[i] + y[j] + i: a let value and the outer loop's variable captured by
    an inner parallel loop, which reads ``out`` through a flat view too."""
    i, j, s = Var("i"), Var("j"), Var("s", "float32")
    x, y = decl_buffer((4,), "float32", "x"), decl_buffer((8,), "float32", "y")
    out = decl_buffer((4, 8), "float32", "out")
    flat = decl_buffer((32,), "float32", "flat", data=out.data)
    inner = For(j, 0, 8, "parallel", SeqStmt([
        BufferStore(out, s + y[j], [i, j]),
        BufferStore(flat, flat[i * 8 + j] + Cast("float32", i), [i * 8 + j])]))
    body = DeclBuffer(flat, For(i, 0, 4, "parallel",
                                LetStmt(s, x[i] * Cast("float32", 2), inner)))
    return _func([x, y, out], body)


def _checked() -> PrimFunc:
    """out[i] = x[i], asserting x[i] >= 0, in parallel."""
    i = Var("i")
    x, out = (decl_buffer((6,), "float32", name) for name in ("x", "out"))
    return _func([x, out], For(i, 0, 6, "parallel", AssertStmt(
        GE(x[i], 0.0), "x must not be negative", BufferStore(out, x[i], [i]))))


@pytest.fixture(scope="module")
def unit() -> CUnit:
    return print_unit({"scale": _scale(), "nested": _nested(), "checked": _checked()},
                      PREAMBLE)


@pytest.fixture(scope="module")
def lib(unit: CUnit, tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    if CC is None:
        pytest.skip("no C compiler (set $CC or install cc)")
    library = compile_unit(unit, FLAGS, tmp_path_factory.mktemp("outline"))
    lib = ctypes.CDLL(str(library))
    pool = ctypes.cast(lib.recording_pool, ctypes.c_void_p).value
    ctypes.c_void_p.in_dll(lib, unit.parallel_symbol).value = pool
    return lib


def _call(lib: ctypes.CDLL, unit: CUnit, name: str, *args: Any, threads: int) -> int:
    ctypes.c_int32.in_dll(lib, unit.num_threads_symbol).value = threads
    ctypes.c_int64.in_dll(lib, "pool_calls").value = 0
    fn = getattr(lib, unit.functions[name].symbol)
    fn.argtypes = unit.functions[name].argtypes
    fn.restype = ctypes.c_int32
    return fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])


def _pool(lib: ctypes.CDLL) -> tuple[int, int, int]:
    """How often the pool ran since the last call, and its last job's tasks and threads."""
    return (ctypes.c_int64.in_dll(lib, "pool_calls").value,
            ctypes.c_int64.in_dll(lib, "pool_tasks").value,
            ctypes.c_int.in_dll(lib, "pool_threads").value)


@pytest.mark.parametrize(("n", "threads", "tasks"), [(10, 3, 3), (10, 2, 2), (2, 4, 2)])
def test_a_parallel_loop_runs_one_task_per_thread_on_the_pool(lib, unit, n, threads, tasks):
    x = np.arange(10, dtype=np.float32) - 3
    out = np.full(10, -1, np.float32)
    assert _call(lib, unit, "scale", n, x, out, threads=threads) == 0
    np.testing.assert_array_equal(out[:n], x[:n] * 2)  # every iteration once
    np.testing.assert_array_equal(out[n:], -1)  # and no other
    assert _pool(lib) == (1, tasks, threads)


@pytest.mark.parametrize("n", [0, 1, -3])
def test_one_task_or_none_runs_without_the_pool(lib, unit, n):
    x, out = np.ones(10, np.float32), np.zeros(10, np.float32)
    assert _call(lib, unit, "scale", n, x, out, threads=4) == 0
    np.testing.assert_array_equal(out, np.where(np.arange(10) < n, 2, 0))
    assert _pool(lib)[0] == 0


def test_nested_parallel_loops_capture_lets_loop_variables_and_views(lib, unit):
    x = np.array([1, -2, 3.5, 0], np.float32)
    y = np.arange(8, dtype=np.float32) / 4
    out = np.zeros((4, 8), np.float32)
    assert _call(lib, unit, "nested", x, y, out, threads=2) == 0
    want = 2 * x[:, None] + y[None, :] + np.arange(4, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(out, want)
    assert _pool(lib)[0] == 1 + 4  # the outer loop, then the inner one per outer iteration


def test_a_captured_parameter_another_capture_points_into_is_not_restrict(unit):
    inner = unit.source[unit.source.index("static void nested_par2_body("):]
    signature = inner[:inner.index("\n")]
    assert "float *out" in signature and "float *flat" in signature
    assert "restrict out" not in signature and "restrict flat" not in signature
    assert "const float *restrict y" in signature  # nothing else points into y


def test_an_assertion_failing_in_a_task_fails_the_call(lib, unit):
    x = np.array([1, 2, 3, -1, 5, 6], np.float32)
    out = np.zeros(6, np.float32)
    assert _call(lib, unit, "checked", x, out, threads=2) == STATUS_ASSERT
    last_error = getattr(lib, unit.last_error_symbol)
    last_error.restype = ctypes.c_char_p
    assert last_error() == b"checked: x must not be negative"
    ok = x >= 0
    np.testing.assert_array_equal(out[ok], x[ok])  # the other iterations still ran
