/*
 * passhost-cmsis-nn portable kernels: the public types of the CMSIS-NN v4.1 API.
 *
 * Written for passhost (Apache-2.0). The type names, member order and member types match
 * CMSIS-NN v4.1's Include/arm_nn_types.h, so code written against that header compiles and
 * links unchanged against either library.
 */
#ifndef ARM_NN_TYPES_H
#define ARM_NN_TYPES_H

#include <stddef.h> /* NULL: generated code passes it for an absent scratch buffer */
#include <stdint.h>

/* Status returned by the kernels. */
typedef enum
{
    ARM_CMSIS_NN_SUCCESS = 0,
    ARM_CMSIS_NN_ARG_ERROR = -1,
    ARM_CMSIS_NN_NO_IMPL_ERROR = -2
} arm_cmsis_nn_status;

/* A width/height pair (strides, paddings, dilations). */
typedef struct
{
    int32_t w;
    int32_t h;
} cmsis_nn_tile;

/* Scratch memory handed to a kernel: buf may be NULL when size is 0. */
typedef struct
{
    void *buf;
    int32_t size;
} cmsis_nn_context;

/* Tensor dimensions; the meaning of n depends on the function (batch or channel count). */
typedef struct
{
    int32_t n;
    int32_t h;
    int32_t w;
    int32_t c;
} cmsis_nn_dims;

/* One multiplier and shift per output channel. */
typedef struct
{
    int32_t *multiplier;
    int32_t *shift;
} cmsis_nn_per_channel_quant_params;

/* One multiplier and shift for the whole tensor. */
typedef struct
{
    int32_t multiplier;
    int32_t shift;
} cmsis_nn_per_tensor_quant_params;

/* Output clamp bounds (the fused activation). */
typedef struct
{
    int32_t min;
    int32_t max;
} cmsis_nn_activation;

/* Convolution parameters; offsets are the negated zero points (input) and the zero point
 * (output). */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_conv_params;

/* Depthwise convolution parameters; ch_mult * input channels = output channels. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    int32_t ch_mult;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_dw_conv_params;

/* Pooling parameters. */
typedef struct
{
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_activation activation;
} cmsis_nn_pool_params;

/* Fully connected parameters; filter_offset is not used (kernel zero point 0). */
typedef struct
{
    int32_t input_offset;
    int32_t filter_offset;
    int32_t output_offset;
    cmsis_nn_activation activation;
} cmsis_nn_fc_params;

/* The two 513-entry lookup tables of the s16 softmax. */
typedef struct
{
    const int16_t *exp_lut;
    const int16_t *one_by_one_lut;
} cmsis_nn_softmax_lut_s16;

#endif /* ARM_NN_TYPES_H */
