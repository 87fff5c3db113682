"""Float32 exp, log, erf, tanh and sigmoid as C source that compilers vectorise.

The cpu target compiles operator loop nests to C with ``-ffp-contract=off`` and without
``-ffast-math`` (which would break NaN and infinity semantics); under those flags GCC calls
libm's ``expf``, ``erff`` or ``tanhf`` once per element and never vectorises the loop.
:data:`VECTOR_MATH_SOURCE` holds our own ``static inline`` float32 functions instead, and
:data:`VECTOR_MATH` maps a TIR intrinsic on float32 to the one to call (float64 stays on
libm). A loop ``for (i...) y[i] = ph_erf_f32(x[i]);`` is vectorised by GCC (12) at ``-O3``
on every x86-64 level (SSE2 up to AVX-512), with or without ``#pragma omp simd``:

* every function is branch-free: both sides of a case split are computed and one is chosen
  by ``ph_f32_select``, a select by bit masks (GCC turns a ternary operator whose arm is
  used nowhere else into a branch around that arm, which stops vectorisation unless the
  target has AVX-512's masked instructions);
* no libm calls but ``fabsf`` (a bit mask); float/int bit casts go through ``memcpy``;
  nothing converts an out-of-range float to an int (integers are read from the bits of
  a float clamped beforehand) and no signed value is shifted;
* ``PH_MADD(a, b, c)`` is ``a * b + c`` rounded once (``__builtin_fmaf``) where the target
  has a fused multiply-add (``__FMA__``, ``__ARM_FEATURE_FMA``), twice otherwise; results
  may differ in the last bit between the two, both are within the bounds below.

Methods (the coefficients are our own minimax fits: Lawson's iteratively reweighted least
squares in float64 on 4000 Chebyshev points, rounded to float32):

* exp: x = n ln 2 + r with |r| <= ln 2 / 2 (Cody and Waite's two-part ln 2, n * hi exact),
  exp(r) = 1 + r + r^2 q(r) with q of degree 4 fitted for relative error, and 2^n applied
  as two normal powers of two so that subnormal results round once and n = 128 overflows;
  x is clamped to [-104, 89], where the result is 0 or inf anyway.
* log: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first),
  log(m) = 2 atanh(s) with s = (m - 1) / (m + 1), written f - s (f - R(s^2)) so that
  f = m - 1 carries the leading bits exactly; e ln 2 in two parts as for exp.
* tanh: |x| < 0.55: |x| + |x|^3 p(x^2), p of degree 4; above, 1 - 2 / (exp(2|x|) + 1)
  with |x| clamped to 9.5 (tanh rounds to 1 from 9.01 on); the sign of x copied on
  (-0 stays -0).
* sigmoid: with e = exp(-|x|) (exp's 1 + t rounded once, times 2^n), 1 / (1 + e) for
  x >= 0 and e / (1 + e) below (no overflow, subnormal results kept), both taken with e
  scaled by 2^64: normal throughout, so one power of two forms it and a subnormal result
  is rounded once, by the division. No correction for the rounding of 1 + e: it would
  bring the bound under 2 ulp for 40% more time, and this function is the activation the
  cpu kernels apply to every element of EfficientNet-B0's SiLU layers, where its
  arithmetic is most of their epilogue's cost.
* erf: |x| < 1: |x| + |x| (2/sqrt(pi) - 1 + x^2 p(x^2)), p of degree 5; above,
  1 - exp(l(|x| - 1)) with l of degree 6 fitted to log(erfc) on [1, 4] weighted by erfc
  (the absolute error of erfc is what reaches the result); from 4 on erf rounds to 1.

Accuracy, measured over every one of the 2^32 float32 inputs against float64 references
(``np.exp``, ``np.log``, ``np.tanh``, 1 / (1 + exp(-x)) and
:func:`passhost.tir.numpy_math.erf_float64`), in ulps of the float32 result (2^-149 among
subnormals):

=========  ==========  =============  =======  =======================================
function   with FMA    without FMA    bound    worst input (with FMA)
=========  ==========  =============  =======  =======================================
exp        1.009       0.976          2        -27.379135 (5 inputs above 1 ulp)
log        0.953       0.954          2        0.64138037
tanh       1.333       1.347          2        +-0.55494231 (just above the split)
sigmoid    2.402       2.402          2.5      -4.1572938
erf        0.991       1.319          3        +-0.99831879 (just below the split)
=========  ==========  =============  =======  =======================================

"Without FMA" is ``-mno-fma`` on the same machine (x86-64 with AVX-512); tanh and erf are
exactly odd (f(-x) = -f(x) bit for bit).

Special values follow C99 Annex F: exp(+inf) = inf, exp(-inf) = 0, exp overflows to inf
from 88.72284 on and underflows to 0 below -103.97208; log(+-0) = -inf, log(x < 0) = NaN,
log(+inf) = inf; erf(+-inf) = +-1, tanh(+-inf) = +-1, erf and tanh keep the sign of zero;
sigmoid(+inf) = 1, sigmoid(-inf) = 0; a NaN gives a NaN. ``benchmarks/vector_math.py``
compares the speed with libm and NumPy.
"""

from __future__ import annotations

__all__ = ["VECTOR_MATH", "VECTOR_MATH_SOURCE"]

#: The C source (gnu11) of the functions, to be put before the code that calls them.
VECTOR_MATH_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

/* a * b + c, rounded once where the target has a fused multiply-add, twice otherwise. */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define PH_MADD(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define PH_MADD(a, b, c) ((a) * (b) + (c))
#endif

/* ln 2 split in two: 45426 * 2^-16 (exact times any integer of 8 bits) plus the rest. */
#define PH_LN2_HI 0x1.62e400p-1f
#define PH_LN2_LO 0x1.7f7d1cp-20f
/* 1.5 * 2^23: adding and removing it rounds a float of magnitude below 2^22 to an integer. */
#define PH_ROUNDER 0x1.8p23f

static inline uint32_t ph_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float ph_f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* c ? a : b for c 0 or 1, by bit masks. Every choice between computed values is made so:
   GCC turns a ternary whose arm is used nowhere else into a branch around that arm's
   computation, which stops vectorisation unless the target has masked instructions
   (AVX-512). */
static inline float ph_f32_select(uint32_t c, float a, float b)
{
    uint32_t mask = 0u - c;
    return ph_f32_from_bits((ph_f32_bits(a) & mask) | (ph_f32_bits(b) & ~mask));
}

/* y with the sign bit of x (y >= 0). */
static inline float ph_f32_signed_like(float y, float x)
{
    return ph_f32_from_bits(ph_f32_bits(y) | (ph_f32_bits(x) & 0x80000000u));
}

/* exp(x) = (1 + t) * 2^n for x in [-104, 89] (no NaN): t = exp(r) - 1 for the reduced
   argument r, in [-0.30, 0.42], and n in [-150, 128] as an int32 in uint32. */
struct ph_exp_core {
    float t;
    uint32_t n;
};

static inline struct ph_exp_core ph_exp_core_f32(float x)
{
    /* n = round(x / ln 2) and r = x - n ln 2, |r| <= 0.35 (n * PH_LN2_HI is exact). */
    float shifted = PH_MADD(x, 0x1.715476p+0f, PH_ROUNDER);
    float n = shifted - PH_ROUNDER;
    float r = PH_MADD(-n, PH_LN2_LO, PH_MADD(-n, PH_LN2_HI, x));
    /* exp(r) = 1 + r + r^2 q(r), q a minimax fit on [-0.35, 0.35]. */
    float q = PH_MADD(r, PH_MADD(r, PH_MADD(r, PH_MADD(r, 0x1.6a1a8ep-10f, 0x1.123fb4p-7f),
                                         0x1.555916p-5f), 0x1.55548ap-3f), 0x1.fffffcp-2f);
    struct ph_exp_core core;
    core.t = PH_MADD(r * r, q, r);
    /* The low bits of shifted hold n. */
    core.n = ph_f32_bits(shifted) - ph_f32_bits(PH_ROUNDER);
    return core;
}

/* 2^n for n in [-126, 127] (an int32 in uint32). */
static inline float ph_exp2_int_f32(uint32_t n)
{
    return ph_f32_from_bits((n + 127u) << 23);
}

/* exp(x) = (1 + t) * s1 * s2 for x in [-104, 89] (no NaN; callers clamp: beyond, the
   result is 0 or inf anyway): t as in ph_exp_core_f32, and s1, s2 powers of two, both
   normal, whose product may be subnormal or overflow. */
struct ph_exp_parts {
    float t, s1, s2;
};

static inline struct ph_exp_parts ph_exp_parts_f32(float x)
{
    struct ph_exp_core core = ph_exp_core_f32(x);
    struct ph_exp_parts parts;
    parts.t = core.t;
    /* 2^n = 2^k1 * 2^(n - k1), k1 = floor(n / 2); both within [-75, 64] (n + 200 >= 0). */
    uint32_t bits1 = (((core.n + 200u) >> 1) + 27u) << 23;
    parts.s1 = ph_f32_from_bits(bits1);
    parts.s2 = ph_f32_from_bits(((core.n + 254u) << 23) - bits1);
    return parts;
}

static inline float ph_exp_f32(float x)
{
    /* A NaN is taken as -104 here and passed through below. */
    float xc = ph_f32_select(x > -104.0f, x, -104.0f);
    struct ph_exp_parts e = ph_exp_parts_f32(ph_f32_select(xc < 89.0f, xc, 89.0f));
    return ph_f32_select(x != x, x, ((1.0f + e.t) * e.s1) * e.s2);
}

static inline float ph_log_f32(float x)
{
    /* Subnormals are scaled by 2^23 first (sub is 0 or 1). */
    uint32_t sub = (uint32_t)(x < 0x1p-126f);
    float xs = x * ph_f32_from_bits(0x3f800000u + ((23u * sub) << 23));
    /* x = 2^e * m with m in [sqrt(1/2), sqrt(2)). */
    uint32_t u = ph_f32_bits(xs) + (0x3f800000u - 0x3f3504f3u);
    int32_t e = (int32_t)(u >> 23) - 127 - (int32_t)(23u * sub);
    float m = ph_f32_from_bits((u & 0x7fffffu) + 0x3f3504f3u);
    /* log(1 + f) = 2 atanh(s) with s = f / (2 + f), = f - s (f - R(s^2)), R a minimax fit
       of 2 atanh(s) / s - 2. */
    float f = m - 1.0f;
    float s = f / (2.0f + f);
    float z = s * s;
    float rz = z * PH_MADD(z, PH_MADD(z, 0x1.31e1fcp-2f, 0x1.995ec6p-2f), 0x1.55557ap-1f);
    float lg = PH_MADD(-s, f - rz, f);
    float fe = (float)e;
    float y = fe * PH_LN2_HI + PH_MADD(fe, PH_LN2_LO, lg);
    float special = x == 0.0f ? -INFINITY : (x == INFINITY ? INFINITY : NAN);
    return ph_f32_select((x > 0.0f) & (x < INFINITY), y, special);
}

static inline float ph_tanh_f32(float x)
{
    float a = fabsf(x);
    /* |x| < 0.55: a + a^3 p(a^2), p a minimax fit; above, 1 - 2 / (exp(2 |x|) + 1). */
    float z = a * a;
    float p = PH_MADD(z, PH_MADD(z, PH_MADD(z, PH_MADD(z, -0x1.9b3048p-8f, 0x1.593d08p-6f),
                                         -0x1.b9287ap-5f), 0x1.110d26p-3f), -0x1.55554ap-2f);
    float small = PH_MADD(a, z * p, a);
    /* From |x| = 9.5 on the result rounds to 1; a NaN gives small, a NaN. */
    struct ph_exp_core e = ph_exp_core_f32(2.0f * ph_f32_select(a < 9.5f, a, 9.5f));
    float scale = ph_exp2_int_f32(e.n);
    float big = 1.0f - 2.0f / PH_MADD(e.t, scale, scale + 1.0f);
    return ph_f32_signed_like(ph_f32_select(a >= 0.55f, big, small), x);
}

static inline float ph_sigmoid_f32(float x)
{
    /* m = -|x| clamped at -104 (a NaN stays a NaN, and every step below passes it on). */
    float m = ph_f32_from_bits(ph_f32_bits(x) | 0x80000000u);
    struct ph_exp_core core = ph_exp_core_f32(ph_f32_select(m < -104.0f, -104.0f, m));
    /* e = exp(m) 2^64 = (1 + t) 2^(n + 64), n in [-150, 0]: normal, so the result
       1 / (1 + e) for x >= 0, e / (1 + e) below, is taken as 2^64 / (2^64 + e) and
       e / (2^64 + e), which rounds as they do with e rounded to float32 first (a subnormal
       exp(m) rounds once, in the division, the sum 1 + exp(m) is then 1). */
    float scale = ph_f32_from_bits((core.n + 191u) << 23);
    float e = PH_MADD(core.t, scale, scale);
    return ph_f32_select(x >= 0.0f, 0x1p64f, e) / (0x1p64f + e);
}

static inline float ph_erf_f32(float x)
{
    float a = fabsf(x);
    /* |x| < 1: erf(|x|) = a + a (c0 + z p(z)), z = x^2, c0 = 2 / sqrt(pi) - 1 (so that the
       leading term a is exact). */
    float z = a * a;
    float ps = PH_MADD(z, PH_MADD(z, PH_MADD(z, PH_MADD(z, PH_MADD(z, PH_MADD(z,
               0x1.496a84p-14f, -0x1.a3f722p-11f), 0x1.5405b8p-8f), -0x1.b7f90ep-6f),
               0x1.ce2cf8p-4f), -0x1.81273ep-2f), 0x1.06eba8p-3f);
    float small = PH_MADD(a, ps, a);
    /* |x| >= 1: erf(|x|) = 1 - exp(l(|x| - 1)), l a fit of log(erfc) on [1, 4] weighted by
       erfc, in [-18, -1.8]; from 4 on the result rounds to 1. A NaN gives small, a NaN. */
    float t = ph_f32_select(a < 4.0f, a, 4.0f) - 1.0f;
    float l = PH_MADD(t, PH_MADD(t, PH_MADD(t, PH_MADD(t, PH_MADD(t, PH_MADD(t,
              0x1.852d4cp-13f, -0x1.deb7bep-10f), 0x1.441ad0p-7f), -0x1.53f940p-5f),
              -0x1.afad34p-1f), -0x1.51c9aap+1f), -0x1.d97fc0p+0f);
    struct ph_exp_core e = ph_exp_core_f32(l);
    float scale = ph_exp2_int_f32(e.n);
    float big = (1.0f - scale) - e.t * scale;
    return ph_f32_signed_like(ph_f32_select(a >= 1.0f, big, small), x);
}
"""

#: TIR intrinsic -> the function of :data:`VECTOR_MATH_SOURCE` computing it on float32.
VECTOR_MATH: dict[str, str] = {
    "tir.exp": "ph_exp_f32",
    "tir.log": "ph_log_f32",
    "tir.erf": "ph_erf_f32",
    "tir.tanh": "ph_tanh_f32",
    "tir.sigmoid": "ph_sigmoid_f32",
}
