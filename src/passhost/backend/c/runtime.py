"""The ``static inline`` helpers a C unit defines before its functions, each only when used:
wrapping integer arithmetic, division and remainder kinds, NaN-propagating min/max,
saturating float-to-integer conversion, float16/bfloat16 rounding, the intrinsics libm does
not have, aligned allocation and failure reporting.

Helper names start with ``ph_`` and name the C value type they work on (``ph_add_i32``,
``ph_min_f32``). :class:`Runtime` collects the helpers a unit uses and prints them in first-use
order, each after the helpers it uses.
"""

from __future__ import annotations

import re

import numpy as np

from passhost.backend.c.dtypes import STORAGE_TYPES, float_literal, int_literal
from passhost.backend.c.errors import CCodegenError
from passhost.backend.vector_math import VECTOR_MATH, VECTOR_MATH_SOURCE

__all__ = ["Runtime", "threads_section"]

_INT_TYPES = {"i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32",
              "u32": "uint32", "i64": "int64", "u64": "uint64"}
_FLOAT_TYPES = {"f32": "float32", "f64": "float64"}
_NAME = re.compile(r"ph_(?P<op>[a-z]+)_(?P<t>[iuf](?:8|16|32|64))\Z")
_CONVERSION = re.compile(r"ph_(f32|f64)_to_([iu](?:8|16|32|64))\Z")


def _ctype(sfx: str) -> str:
    return STORAGE_TYPES[_INT_TYPES.get(sfx) or _FLOAT_TYPES[sfx]]


def _wide_unsigned(sfx: str) -> str:
    return "uint64_t" if sfx.endswith("64") else "uint32_t"


def _wrapping(op: str, sfx: str) -> str:
    t, u = _ctype(sfx), _wide_unsigned(sfx)
    sign = {"add": "+", "sub": "-", "mul": "*"}[op]
    return (f"static inline {t} ph_{op}_{sfx}({t} a, {t} b)\n"
            f"{{\n    return ({t})(({u})a {sign} ({u})b);\n}}\n")


def _int_division(op: str, sfx: str) -> str:
    t, u = _ctype(sfx), _wide_unsigned(sfx)
    head = f"static inline {t} ph_{op}_{sfx}({t} a, {t} b)\n{{\n"
    if sfx.startswith("u"):
        sign = "/" if op == "div" else "%"
        return head + f"    return b == 0 ? 0 : ({t})(a {sign} b);\n}}\n"
    negate = f"({t})(0u - ({u})a)"
    if op == "div":
        body = f"    return b == 0 ? 0 : b == -1 ? {negate} : ({t})(a / b);\n"
    elif op == "mod":
        body = f"    return (b == 0 || b == -1) ? 0 : ({t})(a % b);\n"
    elif op == "floordiv":
        body = (f"    if (b == 0)\n        return 0;\n"
                f"    if (b == -1)\n        return {negate};\n"
                f"    {t} q = ({t})(a / b), r = ({t})(a % b);\n"
                f"    return (r != 0 && (r < 0) != (b < 0)) ? ({t})(q - 1) : q;\n")
    else:
        body = (f"    if (b == 0 || b == -1)\n        return 0;\n"
                f"    {t} r = ({t})(a % b);\n"
                f"    return (r != 0 && (r < 0) != (b < 0)) ? ({t})(r + b) : r;\n")
    return head + body + "}\n"


def _min_max(op: str, sfx: str) -> str:
    t = _ctype(sfx)
    cmp = "<" if op == "min" else ">"
    cond = f"a {cmp} b" if sfx in _INT_TYPES else f"a {cmp} b || isnan(a)"
    return (f"static inline {t} ph_{op}_{sfx}({t} a, {t} b)\n"
            f"{{\n    return ({cond}) ? a : b;\n}}\n")


def _float_division(op: str, sfx: str) -> str:
    """NumPy's floor division and remainder of floats (``npy_divmod``), exactly."""
    t = _ctype(sfx)
    f = "f" if sfx == "f32" else ""
    one, half, zero = (float_literal(v, _FLOAT_TYPES[sfx]) for v in (1.0, 0.5, 0.0))
    head = f"static inline {t} ph_{op}_{sfx}({t} a, {t} b)\n{{\n"
    if op == "floormod":
        return head + (
            f"    {t} mod = fmod{f}(a, b);\n"
            f"    if (b == 0)\n        return mod;\n"
            f"    if (mod != 0)\n        return ((b < 0) != (mod < 0)) ? mod + b : mod;\n"
            f"    return copysign{f}({zero}, b);\n}}\n")
    return head + (
        f"    if (b == 0)\n        return a / b;\n"
        f"    {t} mod = fmod{f}(a, b);\n"
        f"    {t} div = (a - mod) / b;\n"
        f"    if (mod != 0 && (b < 0) != (mod < 0))\n        div -= {one};\n"
        f"    if (div == 0)\n        return copysign{f}({zero}, a / b);\n"
        f"    {t} floordiv = floor{f}(div);\n"
        f"    return (div - floordiv > {half}) ? floordiv + {one} : floordiv;\n}}\n")


def _round_down(value: int, dtype: str) -> float:
    """The largest ``dtype`` float at most ``value``."""
    kind = np.dtype(dtype).type
    out = kind(value)
    if int(out) > value:
        out = np.nextafter(out, kind(-np.inf))
    return float(out)


def _saturating(src: str, dst: str) -> str:
    """Float to integer conversion: truncation toward zero, saturating out of range, NaN 0."""
    t, f = STORAGE_TYPES[_INT_TYPES[dst]], _ctype(src)
    info = np.iinfo(_INT_TYPES[dst])
    lo = float_literal(_round_down(int(info.min) - 1, _FLOAT_TYPES[src]), _FLOAT_TYPES[src])
    hi = float_literal(float(int(info.max) + 1), _FLOAT_TYPES[src])
    low, high = (int_literal(int(v), _INT_TYPES[dst]) for v in (info.min, info.max))
    return (f"static inline {t} ph_{src}_to_{dst}({f} x)\n{{\n"
            f"    if (isnan(x))\n        return 0;\n"
            f"    if (x <= {lo})\n        return {low};\n"
            f"    if (x >= {hi})\n        return {high};\n"
            f"    return ({t})x;\n}}\n")


def _bitwise(op: str, sfx: str) -> str:
    """``&``, ``|``, ``^``, or a shift: left shifts in unsigned arithmetic (no overflow),
    right shifts of signed values arithmetic (as NumPy's, and GCC's and Clang's ``>>``)."""
    t, u = _ctype(sfx), _wide_unsigned(sfx)
    value = {"band": "a & b", "bor": "a | b", "bxor": "a ^ b",
             "shl": f"({t})(({u})a << b)", "shr": "a >> b"}[op]
    return f"static inline {t} ph_{op}_{sfx}({t} a, {t} b)\n{{\n    return ({t})({value});\n}}\n"


def _abs(sfx: str) -> str:
    t, u = _ctype(sfx), _wide_unsigned(sfx)
    value = "a" if sfx.startswith("u") else f"a < 0 ? ({t})(0u - ({u})a) : a"
    return f"static inline {t} ph_abs_{sfx}({t} a)\n{{\n    return {value};\n}}\n"


_FIXED: dict[str, tuple[str, tuple[str, ...]]] = {
    "ph_float16": ("""\
#if !defined(__FLT16_MAX__)
#error "this unit uses float16 and needs a C compiler with _Float16 (GCC >= 12, Clang >= 15)"
#endif
""", ()),
    "ph_f16_round": ("""\
/* A float rounded to the nearest float16 (ties to even), as a float. */
static inline float ph_f16_round(float x)
{
    return (float)(_Float16)x;
}
""", ("ph_float16",)),
    "ph_f16_from_f64": ("""\
/* A double rounded to the nearest float16 (ties to even, one rounding), as a float. */
static inline float ph_f16_from_f64(double x)
{
    return (float)(_Float16)x;
}
""", ("ph_float16",)),
    "ph_bf16_to_f32": ("""\
/* The float a bfloat16 (given as its bits) stands for, exactly. */
static inline float ph_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
""", ()),
    "ph_f32_to_bf16": ("""\
/* The bits of the bfloat16 nearest a float (ties to even); NaN stays a quiet NaN. */
static inline uint16_t ph_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
""", ()),
    "ph_bf16_round": ("""\
/* A float rounded to the nearest bfloat16, as a float. */
static inline float ph_bf16_round(float x)
{
    return ph_bf16_to_f32(ph_f32_to_bf16(x));
}
""", ("ph_bf16_to_f32", "ph_f32_to_bf16")),
    "ph_rsqrtf": ("""\
static inline float ph_rsqrtf(float x)
{
    return 1.0f / sqrtf(x);
}
""", ()),
    "ph_rsqrt": ("""\
static inline double ph_rsqrt(double x)
{
    return 1.0 / sqrt(x);
}
""", ()),
    "ph_sigmoidf": ("""\
/* 1 / (1 + exp(-x)), exponentiating only non-positive numbers. */
static inline float ph_sigmoidf(float x)
{
    float e = expf(-fabsf(x));
    return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
""", ()),
    "ph_sigmoid": ("""\
/* 1 / (1 + exp(-x)), exponentiating only non-positive numbers. */
static inline double ph_sigmoid(double x)
{
    double e = exp(-fabs(x));
    return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
""", ()),
    "ph_alloc": ("""\
/* Heap memory for an allocation too large for the stack: 64-byte aligned, NULL on failure. */
static inline void *ph_alloc(size_t bytes)
{
    return aligned_alloc(64, bytes == 0 ? 64 : (bytes + 63) & ~(size_t)63);
}
""", ()),
    "ph_fail": ("""\
/* Record a failure (from any thread): the status to return and its message. */
static inline void ph_fail(int32_t *status, const char **error, int32_t code,
                           const char *message)
{
    __atomic_store_n(status, code, __ATOMIC_RELAXED);
    __atomic_store_n(error, message, __ATOMIC_RELAXED);
}
""", ()),
    "ph_failed": ("""\
static inline int32_t ph_failed(const int32_t *status)
{
    return __atomic_load_n(status, __ATOMIC_RELAXED);
}
""", ()),
}


#: ``ph_fail`` of a unit without threads (freestanding): plain stores.
_SERIAL_FAIL = """\
/* Record a failure: the status to return and its message. */
static inline void ph_fail(int32_t *status, const char **error, int32_t code,
                           const char *message)
{
    *status = code;
    *error = message;
}
"""

_FIXED["ph_vector_math"] = (VECTOR_MATH_SOURCE.strip("\n") + "\n", ())
_FIXED.update({name: ("", ("ph_vector_math",)) for name in VECTOR_MATH.values()})


def _generated(name: str) -> str | None:
    """The definition of a per-type helper ``name``, or None when it is not one."""
    conv = _CONVERSION.match(name)
    if conv is not None:
        return _saturating(conv[1], conv[2])
    m = _NAME.match(name)
    if m is None:
        return None
    op, sfx = m["op"], m["t"]
    if sfx in _INT_TYPES:
        if op in ("add", "sub", "mul"):
            return _wrapping(op, sfx)
        if op in ("div", "mod", "floordiv", "floormod"):
            return _int_division(op, sfx)
        if op == "abs":
            return _abs(sfx)
        if op in ("band", "bor", "bxor", "shl", "shr"):
            return _bitwise(op, sfx)
    if op in ("min", "max"):
        return _min_max(op, sfx)
    if sfx in _FLOAT_TYPES and op in ("floordiv", "floormod"):
        return _float_division(op, sfx)
    return None


def threads_section(prefix: str) -> str:
    """The threads part of the preamble: ``ph_threads()`` (``<prefix>_num_threads`` when
    positive, else OpenMP's default, else 1), the iteration ranges of a parallel loop's
    tasks, and ``ph_parallel_for``, which runs them on the pool ``<prefix>_parallel`` when
    the loader set one, else on OpenMP's threads, else serially (:mod:`.outline`)."""
    return f"""\
#ifdef _OPENMP
#include <omp.h>
#define PH_OMP_SIMD _Pragma("omp simd")
#else
#define PH_OMP_SIMD
#endif

static inline int ph_threads(void)
{{
#ifdef _OPENMP
    return {prefix}_num_threads > 0 ? (int){prefix}_num_threads : omp_get_max_threads();
#else
    return {prefix}_num_threads > 0 ? (int){prefix}_num_threads : 1;
#endif
}}

/* The iterations of a parallel loop: the first, how many, and the tasks they are split in. */
struct ph_range {{
    int64_t first, count, tasks;
}};

/* The iterations [*first, *last) of task `task`: consecutive shares differing by one at most. */
static inline void ph_task_range(const struct ph_range *range, int64_t task,
                                 int64_t *first, int64_t *last)
{{
    const int64_t share = range->count / range->tasks, extra = range->count % range->tasks;
    *first = range->first + task * share + (task < extra ? task : extra);
    *last = *first + share + (task < extra);
}}

/* Runs task(range, t) for every task t of a parallel loop: one task per thread, at most one
 * per iteration. `range` is the first member of the loop's struct. */
static inline void ph_parallel_for(struct ph_range *range, void (*task)(void *, int64_t))
{{
    const int threads = ph_threads();
    range->tasks = range->count < threads ? range->count : threads;
    if (range->tasks > 1 && {prefix}_parallel != NULL) {{
        {prefix}_parallel(range->tasks, threads, task, range);
        return;
    }}
#ifdef _OPENMP
    if (range->tasks > 1) {{
        const int64_t tasks = range->tasks;
        _Pragma("omp parallel for schedule(static) num_threads(threads)")
        for (int64_t t = 0; t < tasks; ++t)
            task(range, t);
        return;
    }}
#endif
    for (int64_t t = 0; t < range->tasks; ++t)
        task(range, t);
}}
"""


class Runtime:
    """The helpers one unit uses, defined in first-use order after their own helpers
    (``single_thread``: for a unit without threads, failures are recorded without atomics)."""

    def __init__(self, single_thread: bool = False) -> None:
        self._defs: dict[str, str] = {}
        self._single_thread = single_thread

    def use(self, name: str) -> str:
        """``name``, after making sure the unit defines it."""
        if name in self._defs:
            return name
        fixed = _FIXED.get(name)
        if name == "ph_fail" and self._single_thread:
            fixed = (_SERIAL_FAIL, ())
        if fixed is not None:
            code, deps = fixed
            for dep in deps:
                self.use(dep)
        else:
            code = _generated(name)
            if code is None:
                raise CCodegenError(f"the C printer has no helper {name!r}")
        self._defs[name] = code
        return name

    def knows(self, name: str) -> bool:
        """Whether ``name`` is a helper this module can define."""
        return name in _FIXED or _generated(name) is not None

    def source(self) -> str:
        """The definitions of every helper used, in order."""
        return "\n".join(code for code in self._defs.values() if code)
