/*
 * passhost-cmsis-nn portable kernels: fixed-point arithmetic and argument checks.
 * See phnn_support.h. Written for passhost (Apache-2.0).
 */
#include "phnn_support.h"

#define PHNN_INT32_MAX 2147483647
#define PHNN_INT32_MIN (-PHNN_INT32_MAX - 1)

int32_t phnn_wrap32(int64_t v)
{
    const uint32_t u = (uint32_t)v; /* conversion to unsigned is modulo 2^32 */
    if (u <= (uint32_t)PHNN_INT32_MAX)
    {
        return (int32_t)u;
    }
    return (int32_t)(u - 2147483648u) + PHNN_INT32_MIN;
}

/* floor(x / 2^e) for 0 <= e <= 62, without right-shifting a negative value. */
static int64_t floor_div_pot(int64_t x, int32_t e)
{
    if (x >= 0)
    {
        return x >> e;
    }
    return -((-(x + 1)) >> e) - 1;
}

int32_t phnn_doubling_high_mult(int32_t a, int32_t b)
{
    const int64_t product = (int64_t)a * (int64_t)b;
    const int64_t nudge = product >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    if (a == PHNN_INT32_MIN && b == PHNN_INT32_MIN)
    {
        return PHNN_INT32_MAX;
    }
    /* C99 division truncates towards zero, as the reference requires. */
    return (int32_t)((product + nudge) / ((int64_t)1 << 31));
}

int32_t phnn_divide_by_power_of_two(int32_t x, int32_t exponent)
{
    const int32_t e = exponent < 0 ? 0 : (exponent > 62 ? 62 : exponent);
    const int64_t quotient = floor_div_pot(x, e);
    const int64_t remainder = (int64_t)x - quotient * ((int64_t)1 << e);
    const int64_t mask = ((int64_t)1 << e) - 1;
    const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (int32_t)(quotient + (remainder > threshold ? 1 : 0));
}

int32_t phnn_mult_by_power_of_two(int32_t x, int32_t exponent)
{
    const int32_t e = exponent < 0 ? 0 : (exponent > 31 ? 31 : exponent);
    int64_t threshold;
    if (e == 0)
    {
        return x;
    }
    threshold = ((int64_t)1 << (31 - e)) - 1;
    if (x > threshold)
    {
        return PHNN_INT32_MAX;
    }
    if (x < -threshold)
    {
        return PHNN_INT32_MIN;
    }
    return phnn_wrap32((int64_t)x * ((int64_t)1 << e));
}

int32_t phnn_requantize(int32_t x, int32_t multiplier, int32_t shift)
{
    /* A left shift of 32 or more wraps to 0 like 32 does; a right shift past 62 rounds like
     * 62 does: clamping keeps every shift defined without changing a result. */
    const int32_t left = shift > 0 ? (shift > 32 ? 32 : shift) : 0;
    const int64_t right = shift < 0 ? -(int64_t)shift : 0;
    const int32_t shifted = phnn_wrap32((int64_t)x * ((int64_t)1 << left));
    return phnn_divide_by_power_of_two(phnn_doubling_high_mult(shifted, multiplier),
                                       right > 62 ? 62 : (int32_t)right);
}

/* gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl: Q0.31 in and out. */
static int32_t exp_on_interval(int32_t a)
{
    const int32_t constant_term = 1895147668; /* exp(-1/8) */
    const int32_t one_third = 715827883;
    const int32_t x = phnn_wrap32((int64_t)a + ((int64_t)1 << 28));
    const int32_t x2 = phnn_doubling_high_mult(x, x);
    const int32_t x3 = phnn_doubling_high_mult(x2, x);
    const int32_t x4 = phnn_doubling_high_mult(x2, x2);
    const int32_t x4_over_4 = phnn_divide_by_power_of_two(x4, 2);
    const int32_t cubic = phnn_doubling_high_mult(phnn_wrap32((int64_t)x4_over_4 + x3), one_third);
    const int32_t poly = phnn_divide_by_power_of_two(phnn_wrap32((int64_t)cubic + x2), 1);
    return phnn_wrap32((int64_t)constant_term +
                       phnn_doubling_high_mult(constant_term, phnn_wrap32((int64_t)x + poly)));
}

int32_t phnn_exp_on_negative_values(int32_t a)
{
    /* exp(-2^k / 4) in Q0.31 for k = 0..6: the barrel shifter of gemmlowp. */
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t quarter = (int32_t)1 << 24; /* 1/4 in Q5.26 */
    /* int32_t is two's complement (C99 7.18.1.1), so & on negative values is defined. */
    const int32_t a_mod = phnn_wrap32((int64_t)(a & (quarter - 1)) - quarter);
    const int32_t remainder = phnn_wrap32((int64_t)a_mod - a);
    int32_t result = exp_on_interval(phnn_mult_by_power_of_two(a_mod, 5));
    int k;
    for (k = 0; k < 7; ++k)
    {
        if (remainder & ((int32_t)1 << (24 + k)))
        {
            result = phnn_doubling_high_mult(result, barrel[k]);
        }
    }
    return a == 0 ? PHNN_INT32_MAX : result;
}

int32_t phnn_one_over_one_plus_x(int32_t a)
{
    const int64_t total = (int64_t)a + PHNN_INT32_MAX;
    /* gemmlowp RoundingHalfSum(a, 1): half the sum, rounded half away from zero. */
    const int32_t half_denominator = (int32_t)((total + (total >= 0 ? 1 : -1)) / 2);
    const int32_t one = (int32_t)1 << 29; /* 1 in Q2.29 */
    int32_t x = phnn_wrap32((int64_t)1515870810 + phnn_doubling_high_mult(half_denominator, -1010580540));
    int i;
    for (i = 0; i < 3; ++i)
    {
        const int32_t half_denominator_times_x = phnn_doubling_high_mult(half_denominator, x);
        const int32_t one_minus = phnn_wrap32((int64_t)one - half_denominator_times_x);
        x = phnn_wrap32((int64_t)x + phnn_mult_by_power_of_two(phnn_doubling_high_mult(x, one_minus), 2));
    }
    return phnn_mult_by_power_of_two(x, 1);
}

int32_t phnn_clz32(uint32_t u)
{
    int32_t n = 0;
    if (u == 0)
    {
        return 32;
    }
    while ((u & 0x80000000u) == 0)
    {
        u <<= 1;
        ++n;
    }
    return n;
}

int32_t phnn_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

int phnn_context_ok(const cmsis_nn_context *ctx, int32_t required)
{
    if (required <= 0)
    {
        return 1;
    }
    return ctx != NULL && ctx->buf != NULL && ctx->size >= required;
}

int phnn_dims_ok(const cmsis_nn_dims *dims)
{
    return dims->n > 0 && dims->h > 0 && dims->w > 0 && dims->c > 0;
}

int phnn_window_ok(const cmsis_nn_tile *stride, const cmsis_nn_tile *padding, const cmsis_nn_tile *dilation)
{
    return stride->w > 0 && stride->h > 0 && padding->w >= 0 && padding->h >= 0 && dilation->w > 0 &&
        dilation->h > 0;
}
