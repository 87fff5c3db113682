/*
 * passhost-cmsis-nn portable kernels: int8 and int16 elementwise add and mul.
 * Written for passhost (Apache-2.0).
 */
#include "arm_nnfunctions.h"
#include "phnn_support.h"

/* TFLite add of two offset values: each scaled by 2^left_shift (wrapping like int32) and
 * its multiplier, the sum rescaled by the output multiplier, offset and clamped. */
static int32_t add_one(int32_t a, int32_t b, int32_t a_mult, int32_t a_shift, int32_t b_mult, int32_t b_shift,
                       int32_t left_shift, int32_t out_offset, int32_t out_mult, int32_t out_shift, int32_t lo,
                       int32_t hi)
{
    const int64_t scale = (int64_t)1 << (left_shift < 0 ? 0 : (left_shift > 32 ? 32 : left_shift));
    const int32_t a_scaled = phnn_requantize(phnn_wrap32(a * scale), a_mult, a_shift);
    const int32_t b_scaled = phnn_requantize(phnn_wrap32(b * scale), b_mult, b_shift);
    const int32_t sum = phnn_requantize(phnn_wrap32((int64_t)a_scaled + b_scaled), out_mult, out_shift);
    return phnn_clamp(phnn_wrap32((int64_t)sum + out_offset), lo, hi);
}

/* TFLite mul of two offset values: the product (wrapping like int32) rescaled, offset and
 * clamped. */
static int32_t mul_one(int32_t a, int32_t b, int32_t out_offset, int32_t out_mult, int32_t out_shift, int32_t lo,
                       int32_t hi)
{
    const int32_t product = phnn_requantize(phnn_wrap32((int64_t)a * b), out_mult, out_shift);
    return phnn_clamp(phnn_wrap32((int64_t)product + out_offset), lo, hi);
}

arm_cmsis_nn_status arm_elementwise_add_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_1_mult,
                                           const int32_t input_1_shift,
                                           const int32_t input_2_offset,
                                           const int32_t input_2_mult,
                                           const int32_t input_2_shift,
                                           const int32_t left_shift,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size)
{
    int32_t i;
    for (i = 0; i < block_size; ++i)
    {
        output[i] = (int8_t)add_one(phnn_wrap32((int64_t)input_1_vect[i] + input_1_offset),
                                    phnn_wrap32((int64_t)input_2_vect[i] + input_2_offset), input_1_mult,
                                    input_1_shift, input_2_mult, input_2_shift, left_shift, out_offset, out_mult,
                                    out_shift, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status arm_elementwise_add_s16(const int16_t *input_1_vect,
                                            const int16_t *input_2_vect,
                                            const int32_t input_1_offset,
                                            const int32_t input_1_mult,
                                            const int32_t input_1_shift,
                                            const int32_t input_2_offset,
                                            const int32_t input_2_mult,
                                            const int32_t input_2_shift,
                                            const int32_t left_shift,
                                            int16_t *output,
                                            const int32_t out_offset,
                                            const int32_t out_mult,
                                            const int32_t out_shift,
                                            const int32_t out_activation_min,
                                            const int32_t out_activation_max,
                                            const int32_t block_size)
{
    int32_t i;
    (void)input_1_offset;
    (void)input_2_offset;
    (void)out_offset;
    for (i = 0; i < block_size; ++i)
    {
        output[i] = (int16_t)add_one(input_1_vect[i], input_2_vect[i], input_1_mult, input_1_shift, input_2_mult,
                                     input_2_shift, left_shift, 0, out_mult, out_shift, out_activation_min,
                                     out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_2_offset,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size)
{
    int32_t i;
    for (i = 0; i < block_size; ++i)
    {
        output[i] = (int8_t)mul_one(phnn_wrap32((int64_t)input_1_vect[i] + input_1_offset),
                                    phnn_wrap32((int64_t)input_2_vect[i] + input_2_offset), out_offset, out_mult,
                                    out_shift, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

arm_cmsis_nn_status arm_elementwise_mul_s16(const int16_t *input_1_vect,
                                            const int16_t *input_2_vect,
                                            const int32_t input_1_offset,
                                            const int32_t input_2_offset,
                                            int16_t *output,
                                            const int32_t out_offset,
                                            const int32_t out_mult,
                                            const int32_t out_shift,
                                            const int32_t out_activation_min,
                                            const int32_t out_activation_max,
                                            const int32_t block_size)
{
    int32_t i;
    (void)input_1_offset;
    (void)input_2_offset;
    (void)out_offset;
    for (i = 0; i < block_size; ++i)
    {
        output[i] = (int16_t)mul_one(input_1_vect[i], input_2_vect[i], 0, out_mult, out_shift, out_activation_min,
                                     out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
