"""The float32 vector math of :mod:`passhost.backend.vector_math`, compiled with the system C
compiler as the cpu target compiles its loops and called through ctypes: the error in ulps
against float64 references (NumPy, :func:`passhost.tir.numpy_math.erf_float64`) on a sweep
of bit patterns over all floats and a dense grid on [-10, 10], with and without fused
multiply-adds; C99's special values exactly; GCC's report that every loop is vectorised;
and a run under AddressSanitizer and UndefinedBehaviorSanitizer."""

from __future__ import annotations

import ctypes
import platform
import re
import subprocess

import numpy as np
import pytest

from passhost.backend.vector_math import VECTOR_MATH, VECTOR_MATH_SOURCE
from passhost.testing.sanitizers import SANITIZER_FLAGS, build_sanitized
from passhost.tir.numpy_math import erf_float64
from passhost_cpu_target.native.build import find_compiler

#: The loops' flags, as the cpu target compiles its generated loops.
FLAGS = ("-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-std=gnu11")
#: The documented bound on the error, in ulps of the float32 result.
MAX_ULPS = {"exp": 2.0, "log": 2.0, "tanh": 2.0, "sigmoid": 2.5, "erf": 3.0}
NAMES = tuple(MAX_ULPS)
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")
#: Flag sets the functions are checked under: the native one (fused multiply-adds where
#: the machine has them) and, on x86, the same without (the other branch of PH_MADD).
VARIANTS = ("native", "no-fma") if _X86 else ("native",)


def _function(name: str) -> str:
    return VECTOR_MATH[f"tir.{name}"]


def _loops() -> str:
    """The source under test plus one loop per function, ``loop_<name>(x, y, n)``."""
    loops = [f"void loop_{name}(const float *restrict x, float *restrict y, long n)\n{{\n"
             f"#pragma omp simd\n"
             f"    for (long i = 0; i < n; i++) y[i] = {_function(name)}(x[i]);\n}}\n"
             for name in NAMES]
    return VECTOR_MATH_SOURCE + "\n" + "\n".join(loops)


@pytest.fixture(scope="module")
def compiler() -> str:
    found = find_compiler()
    if found is None:
        pytest.skip("no C compiler found ($CC, cc, gcc or clang)")
    return found


@pytest.fixture(scope="module")
def builds(compiler, tmp_path_factory) -> dict[str, tuple[ctypes.CDLL, str]]:
    """Per variant, the loops' library and the compiler's vectorisation report."""
    directory = tmp_path_factory.mktemp("vector_math")
    source = directory / "loops.c"
    source.write_text(_loops())
    built = {}
    for variant in VARIANTS:
        library = directory / f"loops-{variant}.so"
        extra = ("-mno-fma",) if variant == "no-fma" else ()
        result = subprocess.run(
            [compiler, *FLAGS, *extra, "-shared", "-fPIC", "-fopt-info-vec-optimized",
             str(source), "-o", str(library)], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stderr
        built[variant] = (ctypes.CDLL(str(library)), result.stderr)
    return built


def _call(library: ctypes.CDLL, name: str, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.empty_like(x)
    getattr(library, f"loop_{name}")(x.ctypes.data_as(ctypes.c_void_p),
                                     y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
    return y


def _reference(name: str, x: np.ndarray) -> np.ndarray:
    """The float64 value of the function at the float32 points ``x``."""
    with np.errstate(all="ignore"):
        x = x.astype(np.float64)
        if name == "exp":
            return np.exp(x)
        if name == "log":
            return np.log(x)
        if name == "tanh":
            return np.tanh(x)
        if name == "sigmoid":
            e = np.exp(-np.abs(x))
            return np.where(x >= 0, 1.0, e) / (1.0 + e)
        return erf_float64(x)


def _ulps(found: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|found - expected| in ulps of expected rounded to float32 (the spacing of floats
    there; 2^-149 among subnormals); 0 where both are NaN or found is the rounded value
    (infinities included), inf where only one is NaN."""
    with np.errstate(all="ignore"):
        rounded = expected.astype(np.float32)
        finite = np.isfinite(rounded)
        ulp = np.spacing(np.abs(np.where(finite, rounded, np.float32(1)))).astype(np.float64)
        error = np.abs(found.astype(np.float64) - expected) / ulp
    exact = (found == rounded) | (np.isnan(found) & np.isnan(expected))
    return np.where(exact, 0.0, np.where(np.isnan(error) | ~finite, np.inf, error))


@pytest.fixture(scope="module")
def sweep() -> np.ndarray:
    """2^20 bit patterns evenly spread over all 2^32 (every sign, exponent, subnormals,
    infinities and NaNs included), then 2^20 points evenly spread over [-10, 10]."""
    patterns = (np.arange(2**20, dtype=np.uint64) * 4096 + 1234).astype(np.uint32)
    dense = np.linspace(-10.0, 10.0, 2**20).astype(np.float32)
    return np.concatenate([patterns.view(np.float32), dense])


@pytest.fixture(scope="module")
def references(sweep) -> dict[str, np.ndarray]:
    return {name: _reference(name, sweep) for name in NAMES}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", NAMES)
def test_error_is_within_the_documented_ulps(builds, sweep, references, name, variant):
    found = _call(builds[variant][0], name, sweep)
    errors = _ulps(found, references[name])
    worst = int(np.argmax(errors))
    assert errors[worst] <= MAX_ULPS[name], (
        f"{name} ({variant}): {errors[worst]:.3f} ulp at x = {sweep[worst]!r}: "
        f"{found[worst]!r}, expected {references[name][worst]!r}")


INF, NAN = float("inf"), float("nan")
#: (input, exact result) per function: C99's special values, the overflow and underflow
#: thresholds, and inputs whose float32 result is exact.
SPECIAL = {
    "exp": [(INF, INF), (-INF, 0.0), (NAN, NAN), (0.0, 1.0), (-0.0, 1.0), (1e-45, 1.0),
            (-1e-45, 1.0), (88.72284, INF), (89.0, INF), (1e30, INF), (3.4028235e38, INF),
            (-103.98, 0.0), (-104.0, 0.0), (-1e30, 0.0), (-3.4028235e38, 0.0)],
    "log": [(0.0, -INF), (-0.0, -INF), (-1e-45, NAN), (-1.0, NAN), (-INF, NAN), (INF, INF),
            (NAN, NAN), (1.0, 0.0)],
    "tanh": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (1e-45, 1e-45),
             (-1e-45, -1e-45), (9.5, 1.0), (-20.0, -1.0), (3.4028235e38, 1.0)],
    "sigmoid": [(INF, 1.0), (-INF, 0.0), (NAN, NAN), (0.0, 0.5), (-0.0, 0.5), (20.0, 1.0),
                (3.4028235e38, 1.0), (-104.0, 0.0), (-3.4028235e38, 0.0)],
    "erf": [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (4.0, 1.0),
            (-4.0, -1.0), (3.4028235e38, 1.0), (-3.4028235e38, -1.0)],
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", NAMES)
def test_special_values_are_exact(builds, name, variant):
    x = np.array([point for point, _ in SPECIAL[name]], dtype=np.float32)
    expected = np.array([value for _, value in SPECIAL[name]], dtype=np.float32)
    found = _call(builds[variant][0], name, x)
    same = (found.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(found)
                                                                   & np.isnan(expected))
    assert same.all(), [(float(a), float(b), float(c))
                        for a, b, c, ok in zip(x, found, expected, same, strict=True) if not ok]


def test_the_largest_finite_and_smallest_nonzero_results(builds):
    """exp's last finite result and first infinity, and its last subnormal result and first
    zero, fall where the correctly rounded values do (the thresholds, from the reference)."""
    # The floats around log(FLT_MAX) and around log(2^-150) (half the smallest subnormal).
    top = np.float32(88.72283)
    bottom = np.float32(-103.97208)
    points = np.concatenate([top + np.arange(-4, 5, dtype=np.float32) * np.spacing(top),
                             bottom + np.arange(-4, 5, dtype=np.float32) * np.spacing(bottom)])
    with np.errstate(over="ignore"):
        expected = _reference("exp", points).astype(np.float32)
    assert np.isinf(expected).any() and np.isfinite(expected).any()
    assert (expected == 0).any() and (expected > 0).any()
    for library, _ in builds.values():
        found = _call(library, "exp", points)
        assert ((found == 0) == (expected == 0)).all()
        assert (np.isinf(found) == np.isinf(expected)).all()
        assert _ulps(found, _reference("exp", points)).max() <= MAX_ULPS["exp"]


def _is_gcc(compiler: str) -> bool:
    result = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                            check=False)
    return "Free Software Foundation" in result.stdout and "clang" not in result.stdout


def _assert_vectorised(report: str, what: str) -> None:
    """Each function's loop is reported vectorised in GCC's -fopt-info ``report``."""
    lines = _loops().splitlines()
    for name in NAMES:
        line = 1 + next(i for i, text in enumerate(lines)
                        if f"y[i] = {_function(name)}(x[i]);" in text)
        assert re.search(rf":{line}:\d+: optimized: loop vectorized", report), (
            f"the loop over {_function(name)} (line {line}) is not vectorised ({what}):\n"
            f"{report}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_loop_is_vectorised(compiler, builds, variant):
    if not _is_gcc(compiler):
        pytest.skip(f"the vectorisation report is GCC's (-fopt-info); {compiler} is not GCC")
    _assert_vectorised(builds[variant][1], variant)


@pytest.mark.skipif(not _X86, reason="x86 instruction set levels")
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3"])
def test_every_loop_is_vectorised_without_masked_instructions(compiler, tmp_path, march):
    """SSE2 and AVX2 have no masked instructions, which let AVX-512 code (the machine's
    own, maybe) vectorise a branch that would stop the loop elsewhere."""
    if not _is_gcc(compiler):
        pytest.skip(f"the vectorisation report is GCC's (-fopt-info); {compiler} is not GCC")
    source = tmp_path / "loops.c"
    source.write_text(_loops())
    flags = [flag for flag in FLAGS if not flag.startswith("-march")]
    result = subprocess.run([compiler, *flags, f"-march={march}", "-fopt-info-vec-optimized",
                             "-c", str(source), "-o", str(tmp_path / "loops.o")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    _assert_vectorised(result.stderr, f"-march={march}")


def test_the_table_maps_tir_intrinsics_to_functions_of_the_source():
    assert sorted(VECTOR_MATH) == sorted(f"tir.{name}" for name in NAMES)
    for function in VECTOR_MATH.values():
        assert re.search(rf"static inline float {function}\(float x\)", VECTOR_MATH_SOURCE)


SANITIZED_MAIN = r"""
#include <stdio.h>

int main(void)
{
    static const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                                     -NAN, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0x1.fffffep127f,
                                     -0x1.fffffep127f, 88.72284f, -103.97208f};
    float sum = 0.0f;
    for (uint64_t i = 0; i < (1u << 20) + 15; i++) {
        float x;
        if (i < 15) {
            x = specials[i];
        } else {
            uint32_t bits = (uint32_t)((i - 15) * 4096u + 77u);
            memcpy(&x, &bits, sizeof x);
        }
        float y = ph_exp_f32(x) + ph_log_f32(x) + ph_erf_f32(x) + ph_tanh_f32(x)
                  + ph_sigmoid_f32(x);
        sum += y == y ? 0.0f : 1.0f;
    }
    printf("%g\n", (double)sum);
    return 0;
}
"""


def test_no_undefined_behaviour_under_the_sanitizers(compiler, tmp_path):
    """Every function on a sweep of bit patterns and the special values, compiled with
    warnings as errors and run under AddressSanitizer and UndefinedBehaviorSanitizer (no
    shift out of range, no overflowing conversion or arithmetic)."""
    source = tmp_path / "sanitized.c"
    source.write_text(VECTOR_MATH_SOURCE + SANITIZED_MAIN)
    program = build_sanitized(compiler, [
        "-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Wconversion", "-Wsign-conversion",
        "-Wshadow", "-Werror", source], tmp_path / "sanitized",
        (*SANITIZER_FLAGS, "-fsanitize=float-cast-overflow"))
    run = subprocess.run([str(program)], capture_output=True, text=True, check=False,
                         timeout=120)
    assert run.returncode == 0 and "runtime error" not in run.stderr, run.stderr
    assert float(run.stdout) > 0  # the NaN results were seen (the calls were not dropped)
