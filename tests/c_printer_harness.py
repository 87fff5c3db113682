"""Running hand-built PrimFuncs printed as C in tests of the TIR -> C printer
(passhost.backend.c): the compiler flags, a runner (in a subprocess with ASan preloaded, or in
this process), helpers that build PrimFuncs, and the two fixtures of a test module's unit.

A test module collects its functions and their calls in a :class:`UnitCases` at import
time; :func:`unit_fixtures` gives it the ``unit`` fixture (every function of the module in
one unit) and the ``run`` fixture (the unit compiled with ASan and UBSan, ``-Werror``, run
in a subprocess, and with ``-O3 -march=native -fopenmp``, run in this process), whose
result each test compares with values it computes with NumPy (or Python integers).
"""

from __future__ import annotations

import copy
import ctypes
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from c_unit_helpers import CC, compile_unit
from passhost.backend.c import CUnit, print_unit
from passhost.ir.types import INT_DTYPES
from passhost.tir import Buffer, BufferStore, Call, For, PrimExpr, PrimFunc, Stmt, Var, decl_buffer

WARNINGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror"]
SANITIZED = ["-O1", *WARNINGS, "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", "-fopenmp", "-shared", "-fPIC"]
# -ffp-contract=off: no fused multiply-add, so float results equal NumPy's bit for bit.
NATIVE = ["-O3", "-march=native", "-fopenmp", "-ffp-contract=off", *WARNINGS, "-shared",
          "-fPIC"]
#: Runs the calls of a unit; executed in a subprocess (sanitised builds) or in this process.
RUNNER = '''
import ctypes
import pickle
import sys

import ml_dtypes  # noqa: F401 - unpickles bfloat16 arrays
import numpy as np


def run_cases(lib, calls):
    last_error = lib.ph_last_error
    last_error.restype = ctypes.c_char_p
    threads = ctypes.c_int32.in_dll(lib, "ph_num_threads")
    out = {}
    for key, (symbol, argtypes, args, num_threads) in calls.items():
        fn = getattr(lib, symbol)
        fn.restype = ctypes.c_int32
        fn.argtypes = argtypes
        threads.value = num_threads
        status = fn(*[a.ctypes.data if isinstance(a, np.ndarray) else a for a in args])
        error = last_error()
        out[key] = (status, args, None if error is None else error.decode())
    return out


if __name__ == "__main__":
    with open(sys.argv[2], "rb") as f:
        calls = pickle.load(f)
    result = run_cases(ctypes.CDLL(sys.argv[1]), calls)
    with open(sys.argv[3], "wb") as f:
        pickle.dump(result, f)
'''


def run_sanitized(library: Path, calls: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Run ``calls`` in a subprocess with ASan preloaded."""
    (directory / "runner.py").write_text(RUNNER, encoding="utf-8")
    (directory / "calls.pkl").write_bytes(pickle.dumps(calls))
    asan = subprocess.run([CC, "-print-file-name=libasan.so"], capture_output=True,
                          text=True, check=True).stdout.strip()
    env = {**os.environ, "LD_PRELOAD": asan, "ASAN_OPTIONS": "detect_leaks=0",
           "UBSAN_OPTIONS": "print_stacktrace=1"}
    result = subprocess.run([sys.executable, str(directory / "runner.py"), str(library),
                             str(directory / "calls.pkl"), str(directory / "out.pkl")],
                            capture_output=True, text=True, env=env, check=False,
                            timeout=300)
    if result.returncode != 0:
        pytest.fail(f"the sanitised run failed ({result.returncode}):\n{result.stderr[-6000:]}")
    return pickle.loads((directory / "out.pkl").read_bytes())


def run_here(library: Path, calls: dict[str, Any]) -> dict[str, Any]:
    """Run ``calls`` in this process."""
    namespace: dict[str, Any] = {"__name__": "runner"}
    exec(RUNNER, namespace)
    return namespace["run_cases"](ctypes.CDLL(str(library)), calls)


# -- building PrimFuncs ------------------------------------------------------------------------
def func(params: list[Buffer | Var], body: Stmt) -> PrimFunc:
    """A PrimFunc over buffers (by their data pointers) and scalar Vars."""
    return PrimFunc([p.data if isinstance(p, Buffer) else p for p in params],
                    {p.data: p for p in params if isinstance(p, Buffer)}, body)


def loop(var: Var, extent: int | PrimExpr, body: Stmt, kind: str = "serial") -> For:
    """``for var in [0, extent)`` of the given kind."""
    return For(var, 0, extent, kind, body)


def buffers(dtype: str, *specs: tuple[str, tuple[int, ...]]) -> list[Buffer]:
    """Buffers of ``dtype``, one per (name, shape)."""
    return [decl_buffer(shape, dtype, name) for name, shape in specs]


def store(value: PrimExpr, dtype: str = "float32") -> PrimFunc:
    """A function storing ``value`` into element 0 of its one buffer."""
    (out,) = buffers(dtype, ("out", (1,)))
    return func([out], BufferStore(out, value, [0]))


BF16 = ml_dtypes.bfloat16
#: Every dtype a buffer or scalar parameter may have.
ALL_DTYPES = ["bool", *INT_DTYPES, "float16", "bfloat16", "float32", "float64"]


def zeros(n: int, dtype: str) -> np.ndarray:
    """n zeros of ``dtype`` (bfloat16 through ml_dtypes)."""
    return np.zeros(n, BF16 if dtype == "bfloat16" else dtype)


def wrap(values: list[int], dtype: str) -> np.ndarray:
    """Python integers wrapped into ``dtype`` (two's complement)."""
    info = np.iinfo(dtype)
    span = int(info.max) - int(info.min) + 1
    return np.array([(v - int(info.min)) % span + int(info.min) for v in values], dtype)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_reference(name: str, a: int, b: int) -> int:
    """TIR's meaning of an integer operation on Python integers (before wrapping); division
    and remainder by zero are 0. ``name`` is add, sub, mul, div, mod, floordiv, floormod,
    min or max, optionally with ``_by_7``, ``_by_3`` or ``_by_4`` (a constant divisor)."""
    if name.endswith("_by_7"):
        b = 7
    elif name.endswith("_by_3"):
        b = 3
    elif name.endswith("_by_4"):
        b = 4
    op = name.split("_by_")[0]
    if op in ("div", "mod", "floordiv", "floormod") and b == 0:
        return 0
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "div": lambda: _trunc_div(a, b), "mod": lambda: a - _trunc_div(a, b) * b,
            "floordiv": lambda: a // b, "floormod": lambda: a % b, "min": lambda: min(a, b),
            "max": lambda: max(a, b)}[op]()


def assert_floats_equal(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit (so -0.0 differs from 0.0), any NaN equal to any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(got.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(want.astype(np.float64)))
    view = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    np.testing.assert_array_equal(got[~nan].view(view), want[~nan].view(view))


# -- a test module's unit: its functions, their calls, compiled twice and run ----------------
PREAMBLE = """\
static inline int32_t bump(int32_t *counter)
{
    return ++*counter;
}

static inline void record(float *out, int32_t i, float value)
{
    out[i] = value;
}

static inline int32_t scale_impl(float *out, float *in, float s, int32_t n)
{
    for (int32_t i = 0; i < n; ++i)
        out[i] = in[i] * s;
    return 0;
}

#ifdef _OPENMP
#include <omp.h>
static inline int32_t thread_id(void)
{
    return omp_get_thread_num();
}
#else
static inline int32_t thread_id(void)
{
    return 0;
}
#endif
"""


def scale_kernel(call: Call, args: Any) -> str:
    """Prints ``call_kernel("scale", out, in, s, n)`` as a call of ``scale_impl``."""
    return f"{call.args[0].value}_impl({', '.join(args.texts)})"


class UnitCases:
    """The hand-built functions of one test module (one unit, with :data:`PREAMBLE` and
    :func:`scale_kernel`) and the calls the module makes of them."""

    def __init__(self) -> None:
        self.funcs: dict[str, PrimFunc] = {}
        self.calls: dict[str, tuple[str, list[Any], int]] = {}

    def case(self, name: str, fn: PrimFunc, *args: Any, threads: int = 0) -> str:
        """Add ``fn`` (once) to the unit and a call of it with ``args`` (arrays are passed
        by pointer); returns the call's key."""
        self.funcs.setdefault(name, fn)
        key = f"{name}#{sum(k.startswith(name + '#') for k in self.calls)}"
        self.calls[key] = (name, list(args), threads)
        return key

    def print(self) -> CUnit:
        """The unit of every function."""
        return print_unit(self.funcs, PREAMBLE, kernel_printer=scale_kernel)


def unit_fixtures(cases: UnitCases) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The ``unit`` and ``run`` fixtures of a test module whose functions are ``cases``."""

    @pytest.fixture(scope="module")
    def unit() -> CUnit:
        """The unit of every function of the module."""
        return cases.print()

    @pytest.fixture(scope="module", params=["sanitized", "native"])
    def run(request: pytest.FixtureRequest, unit: CUnit,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
        """Call key -> (status, the arguments after the call, last error message), from the
        unit built with sanitizers (run in a subprocess) or natively (run here)."""
        if CC is None:
            pytest.skip("no C compiler (set $CC or install cc)")
        directory = tmp_path_factory.mktemp(request.param)
        calls = {}
        for key, (name, args, threads) in cases.calls.items():
            cfunc = unit.functions[name]
            calls[key] = (cfunc.symbol, cfunc.argtypes, copy.deepcopy(args), threads)
        if request.param == "sanitized":
            return run_sanitized(compile_unit(unit, SANITIZED, directory), calls, directory)
        return run_here(compile_unit(unit, NATIVE, directory), calls)

    return unit, run


def outputs(run: dict[str, Any], key: str) -> list[Any]:
    """The arguments of a call that succeeded, after it."""
    status, args, error = run[key]
    assert status == 0, error
    return args
