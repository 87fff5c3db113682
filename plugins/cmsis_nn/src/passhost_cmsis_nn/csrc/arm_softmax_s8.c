/*
 * passhost-cmsis-nn portable kernels: TFLite int8 softmax (gemmlowp fixed point, 5 input
 * integer bits, 12 accumulator bits). Written for passhost (Apache-2.0).
 */
#include "arm_nnfunctions.h"
#include "phnn_support.h"

#define SOFTMAX_ACCUM_BITS 12

/* exp(diff * input scale) in Q0.31: diff is scaled into Q5.26 by 2^shift and mult. */
static int32_t softmax_exp(int32_t diff, int32_t mult, int32_t shift)
{
    const int32_t s = shift < 0 ? 0 : (shift > 32 ? 32 : shift);
    const int32_t scaled = phnn_doubling_high_mult(phnn_wrap32((int64_t)diff * ((int64_t)1 << s)), mult);
    return phnn_exp_on_negative_values(scaled);
}

void arm_softmax_s8(const int8_t *input,
                    const int32_t num_rows,
                    const int32_t row_size,
                    const int32_t mult,
                    const int32_t shift,
                    const int32_t diff_min,
                    int8_t *output)
{
    int32_t r, c;
    if (row_size <= 0)
    {
        return;
    }
    for (r = 0; r < num_rows; ++r)
    {
        const int8_t *row = input + r * row_size;
        int8_t *out = output + r * row_size;
        int32_t max = row[0];
        uint32_t sum = 0; /* wraps modulo 2^32 like the reference's int32 sum */
        int32_t headroom, scale, exponent;
        uint32_t normalised;
        for (c = 1; c < row_size; ++c)
        {
            max = row[c] > max ? row[c] : max;
        }
        for (c = 0; c < row_size; ++c)
        {
            const int32_t diff = row[c] - max;
            if (diff >= diff_min)
            {
                sum += (uint32_t)phnn_divide_by_power_of_two(softmax_exp(diff, mult, shift), SOFTMAX_ACCUM_BITS);
            }
        }
        /* 1/sum: normalise sum to [1, 2) as a Q0.31 fraction x + 1, then 1/(1 + x). */
        headroom = phnn_clz32(sum);
        normalised = headroom >= 32 ? 0u : sum << headroom;
        scale = phnn_one_over_one_plus_x(phnn_wrap32((int64_t)normalised - ((int64_t)1 << 31)));
        exponent = SOFTMAX_ACCUM_BITS - headroom + 31 - 8;
        for (c = 0; c < row_size; ++c)
        {
            const int32_t diff = row[c] - max;
            int32_t y = -128;
            if (diff >= diff_min)
            {
                const int32_t prob = phnn_doubling_high_mult(scale, softmax_exp(diff, mult, shift));
                y = phnn_clamp(phnn_divide_by_power_of_two(prob, exponent) - 128, -128, 127);
            }
            out[c] = (int8_t)y;
        }
    }
}
