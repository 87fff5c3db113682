"""Speed of passhost's float32 vector math (:mod:`passhost.backend.vector_math`) against
libm's scalar functions and NumPy's ufuncs, single thread, on one array of float32.

Each C function runs in a loop ``for (i...) y[i] = f(x[i]);`` under ``#pragma omp simd``,
compiled with ``cc -O3 -march=native -fopenmp -ffp-contract=off`` (the flags of the cpu
target's generated loops) and called through ctypes; the NumPy column is the ufunc on the
same array (``1 / (1 + exp(-x))`` for sigmoid; NumPy has no erf). Runners are timed in
turns (:func:`timing.interleaved_medians_ms`) and the table shows median milliseconds and
the ratios libm / ours and NumPy / ours (above 1: ours is faster).

    python benchmarks/vector_math.py [--size 1000000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from timing import interleaved_medians_ms, median_of

from passhost.backend.vector_math import VECTOR_MATH, VECTOR_MATH_SOURCE
from passhost_cpu_target.native.build import find_compiler

#: The functions compared: name -> (libm function, NumPy expression or None, input range).
FUNCTIONS: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray] | None,
                           tuple[float, float]]] = {
    "exp": ("expf", np.exp, (-80.0, 80.0)),
    "log": ("logf", np.log, (1e-30, 1e30)),
    "tanh": ("tanhf", np.tanh, (-10.0, 10.0)),
    "sigmoid": ("ph_libm_sigmoid", lambda x: 1 / (1 + np.exp(-x)), (-20.0, 20.0)),
    "erf": ("erff", None, (-5.0, 5.0)),
}
_FLAGS = ("-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-std=gnu11", "-shared",
          "-fPIC")


def _loop(name: str, function: str) -> str:
    return (f"void {name}(const float *restrict x, float *restrict y, long n)\n{{\n"
            f"#pragma omp simd\n    for (long i = 0; i < n; i++)\n"
            f"        y[i] = {function}(x[i]);\n}}\n")


def build(compiler: str, directory: Path) -> ctypes.CDLL:
    """The shared library with ``ours_<name>`` and ``libm_<name>`` loops for each function."""
    parts = [VECTOR_MATH_SOURCE,
             "static inline float ph_libm_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }"]
    for name, (libm, _, _) in FUNCTIONS.items():
        parts += [_loop(f"ours_{name}", VECTOR_MATH[f"tir.{name}"]),
                  _loop(f"libm_{name}", libm)]
    source = directory / "vector_math_bench.c"
    source.write_text("\n".join(parts))
    library = directory / "vector_math_bench.so"
    subprocess.run([compiler, *_FLAGS, str(source), "-o", str(library), "-lm"], check=True)
    return ctypes.CDLL(str(library))


def _runner(function: Any, x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
    args = (x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_long(x.size))
    return lambda: function(*args)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="array length")
    parser.add_argument("--rounds", type=int, default=7, help="timing rounds")
    args = parser.parse_args()
    compiler = find_compiler()
    if compiler is None:
        raise SystemExit("no C compiler found ($CC, cc, gcc or clang)")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(compiler, Path(tmp))
        print(f"{args.size} float32, single thread, median ms over {args.rounds} rounds")
        print(f"{'function':8s} {'ours':>8s} {'libm':>8s} {'numpy':>8s} "
              f"{'libm/ours':>9s} {'numpy/ours':>10s}")
        for name, (_, numpy_fn, (low, high)) in FUNCTIONS.items():
            x = rng.uniform(low, high, args.size).astype(np.float32)
            y = np.empty_like(x)
            runners = {"ours": _runner(getattr(lib, f"ours_{name}"), x, y),
                       "libm": _runner(getattr(lib, f"libm_{name}"), x, y)}
            if numpy_fn is not None:
                runners["numpy"] = lambda fn=numpy_fn, x=x: fn(x)
            rounds = interleaved_medians_ms(runners, repeat=args.rounds)
            ms = {runner: median_of(rounds, runner) for runner in runners}
            libm_ratio = median_of(rounds, "libm", over="ours")
            numpy_cell = f"{ms['numpy']:8.3f}" if "numpy" in ms else f"{'-':>8s}"
            numpy_ratio = (f"{median_of(rounds, 'numpy', over='ours'):10.2f}"
                           if "numpy" in ms else f"{'-':>10s}")
            print(f"{name:8s} {ms['ours']:8.3f} {ms['libm']:8.3f} {numpy_cell} "
                  f"{libm_ratio:9.2f} {numpy_ratio}")


if __name__ == "__main__":
    main()
