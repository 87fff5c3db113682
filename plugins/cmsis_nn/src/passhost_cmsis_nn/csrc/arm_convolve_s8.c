/*
 * passhost-cmsis-nn portable kernels: int8 convolution, its CMSIS-NN v4.1 dispatch and
 * scratch-buffer sizes. Written for passhost (Apache-2.0).
 *
 * All four entry points compute the same convolution; they differ, as in CMSIS-NN, in the
 * arguments they accept and the scratch buffer their path needs.
 */
#include "arm_nnfunctions.h"
#include "phnn_support.h"

typedef enum
{
    CONV_1X1_FAST,
    CONV_1X1,
    CONV_1XN,
    CONV_GENERAL
} conv_path;

/* The kernel arm_convolve_wrapper_s8 picks (the conditions of CMSIS-NN v4.1). */
static conv_path conv_dispatch(const cmsis_nn_conv_params *p, const cmsis_nn_dims *input_dims,
                               const cmsis_nn_dims *filter_dims)
{
    if (p->padding.w == 0 && p->padding.h == 0 && filter_dims->w == 1 && filter_dims->h == 1 &&
        p->dilation.w == 1 && p->dilation.h == 1)
    {
        return (p->stride.w == 1 && p->stride.h == 1) ? CONV_1X1_FAST : CONV_1X1;
    }
    if (input_dims->h == 1 && p->dilation.w == 1 && filter_dims->h == 1 &&
        (p->stride.w * input_dims->c) % 4 == 0)
    {
        return CONV_1XN;
    }
    return CONV_GENERAL;
}

/* im2col buffer of the plain-C and DSP arm_convolve_s8: two int16 columns. */
static int32_t conv_buffer_size_dsp(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return 2 * input_dims->c * filter_dims->w * filter_dims->h * (int32_t)sizeof(int16_t);
}

/* im2col buffer of the MVE arm_convolve_s8: four columns rounded up to 8-byte lanes. */
static int32_t conv_buffer_size_mve(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    const int32_t lanes = (input_dims->c * filter_dims->w * filter_dims->h + 7) / 8;
    return 4 * lanes * 8 * (int32_t)sizeof(int8_t);
}

static int32_t wrapper_buffer_size(const cmsis_nn_conv_params *p, const cmsis_nn_dims *input_dims,
                                   const cmsis_nn_dims *filter_dims, int mve)
{
    switch (conv_dispatch(p, input_dims, filter_dims))
    {
    case CONV_1X1_FAST:
    case CONV_1X1:
        return 0;
    case CONV_1XN:
        return mve ? 0 : conv_buffer_size_dsp(input_dims, filter_dims);
    default:
        return mve ? conv_buffer_size_mve(input_dims, filter_dims) : conv_buffer_size_dsp(input_dims, filter_dims);
    }
}

/* The convolution itself: NHWC input, OHWI filter, top/left padding, optional bias. */
static arm_cmsis_nn_status conv_compute(const cmsis_nn_conv_params *p,
                                        const cmsis_nn_per_channel_quant_params *quant_params,
                                        const cmsis_nn_dims *in_d,
                                        const int8_t *input,
                                        const cmsis_nn_dims *f_d,
                                        const int8_t *filter,
                                        const int32_t *bias,
                                        const cmsis_nn_dims *out_d,
                                        int8_t *output)
{
    int32_t b, oy, ox, oc, ky, kx, ic;
    if (!phnn_dims_ok(in_d) || !phnn_dims_ok(f_d) || !phnn_dims_ok(out_d) ||
        !phnn_window_ok(&p->stride, &p->padding, &p->dilation) || f_d->c != in_d->c || out_d->c != f_d->n ||
        out_d->n != in_d->n)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (b = 0; b < in_d->n; ++b)
    {
        for (oy = 0; oy < out_d->h; ++oy)
        {
            for (ox = 0; ox < out_d->w; ++ox)
            {
                int8_t *out = output + ((b * out_d->h + oy) * out_d->w + ox) * out_d->c;
                for (oc = 0; oc < out_d->c; ++oc)
                {
                    int64_t acc = bias != NULL ? bias[oc] : 0;
                    int32_t y;
                    for (ky = 0; ky < f_d->h; ++ky)
                    {
                        const int32_t iy = oy * p->stride.h - p->padding.h + ky * p->dilation.h;
                        if (iy < 0 || iy >= in_d->h)
                        {
                            continue;
                        }
                        for (kx = 0; kx < f_d->w; ++kx)
                        {
                            const int32_t ix = ox * p->stride.w - p->padding.w + kx * p->dilation.w;
                            const int8_t *x;
                            const int8_t *w;
                            if (ix < 0 || ix >= in_d->w)
                            {
                                continue;
                            }
                            x = input + ((b * in_d->h + iy) * in_d->w + ix) * in_d->c;
                            w = filter + ((oc * f_d->h + ky) * f_d->w + kx) * f_d->c;
                            for (ic = 0; ic < in_d->c; ++ic)
                            {
                                acc += ((int64_t)x[ic] + p->input_offset) * w[ic];
                            }
                        }
                    }
                    y = phnn_requantize(phnn_wrap32(acc), quant_params->multiplier[oc], quant_params->shift[oc]);
                    out[oc] = (int8_t)phnn_clamp(
                        phnn_wrap32((int64_t)y + p->output_offset), p->activation.min, p->activation.max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_convolve_s8_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
#if defined(ARM_MATH_MVEI)
    return conv_buffer_size_mve(input_dims, filter_dims);
#else
    return conv_buffer_size_dsp(input_dims, filter_dims);
#endif
}

int32_t arm_convolve_1x1_s8_fast_get_buffer_size(const cmsis_nn_dims *input_dims)
{
    (void)input_dims;
    return 0;
}

int32_t arm_convolve_1_x_n_s8_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
#if defined(ARM_MATH_MVEI)
    (void)input_dims;
    (void)filter_dims;
    return 0;
#else
    return conv_buffer_size_dsp(input_dims, filter_dims);
#endif
}

int32_t arm_convolve_wrapper_s8_get_buffer_size_mve(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims)
{
    (void)output_dims;
    return wrapper_buffer_size(conv_params, input_dims, filter_dims, 1);
}

int32_t arm_convolve_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims)
{
    (void)output_dims;
    return wrapper_buffer_size(conv_params, input_dims, filter_dims, 0);
}

int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims)
{
#if defined(ARM_MATH_MVEI)
    return arm_convolve_wrapper_s8_get_buffer_size_mve(conv_params, input_dims, filter_dims, output_dims);
#else
    /* Plain C and DSP builds need the same buffers. */
    return arm_convolve_wrapper_s8_get_buffer_size_dsp(conv_params, input_dims, filter_dims, output_dims);
#endif
}

arm_cmsis_nn_status arm_convolve_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_conv_params *conv_params,
                                    const cmsis_nn_per_channel_quant_params *quant_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const int8_t *filter_data,
                                    const cmsis_nn_dims *bias_dims,
                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data)
{
    (void)bias_dims;
    if (!phnn_context_ok(ctx, arm_convolve_s8_get_buffer_size(input_dims, filter_dims)))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return conv_compute(conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                        output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_1x1_s8_fast(const cmsis_nn_context *ctx,
                                             const cmsis_nn_conv_params *conv_params,
                                             const cmsis_nn_per_channel_quant_params *quant_params,
                                             const cmsis_nn_dims *input_dims,
                                             const int8_t *input_data,
                                             const cmsis_nn_dims *filter_dims,
                                             const int8_t *filter_data,
                                             const cmsis_nn_dims *bias_dims,
                                             const int32_t *bias_data,
                                             const cmsis_nn_dims *output_dims,
                                             int8_t *output_data)
{
    (void)ctx;
    (void)bias_dims;
    if (conv_params->padding.w != 0 || conv_params->padding.h != 0 || conv_params->stride.w != 1 ||
        conv_params->stride.h != 1 || filter_dims->w != 1 || filter_dims->h != 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return conv_compute(conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                        output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_1x1_s8(const cmsis_nn_context *ctx,
                                        const cmsis_nn_conv_params *conv_params,
                                        const cmsis_nn_per_channel_quant_params *quant_params,
                                        const cmsis_nn_dims *input_dims,
                                        const int8_t *input_data,
                                        const cmsis_nn_dims *filter_dims,
                                        const int8_t *filter_data,
                                        const cmsis_nn_dims *bias_dims,
                                        const int32_t *bias_data,
                                        const cmsis_nn_dims *output_dims,
                                        int8_t *output_data)
{
    (void)ctx;
    (void)bias_dims;
    if (conv_params->padding.w != 0 || conv_params->padding.h != 0 || filter_dims->w != 1 || filter_dims->h != 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return conv_compute(conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                        output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_1_x_n_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_conv_params *conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data)
{
    (void)bias_dims;
    if (input_dims->h != 1 || filter_dims->h != 1 || output_dims->h != 1 || conv_params->dilation.w != 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (!phnn_context_ok(ctx, arm_convolve_1_x_n_s8_get_buffer_size(input_dims, filter_dims)))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return conv_compute(conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                        output_dims, output_data);
}

arm_cmsis_nn_status arm_convolve_wrapper_s8(const cmsis_nn_context *ctx,
                                            const cmsis_nn_conv_params *conv_params,
                                            const cmsis_nn_per_channel_quant_params *quant_params,
                                            const cmsis_nn_dims *input_dims,
                                            const int8_t *input_data,
                                            const cmsis_nn_dims *filter_dims,
                                            const int8_t *filter_data,
                                            const cmsis_nn_dims *bias_dims,
                                            const int32_t *bias_data,
                                            const cmsis_nn_dims *output_dims,
                                            int8_t *output_data)
{
    switch (conv_dispatch(conv_params, input_dims, filter_dims))
    {
    case CONV_1X1_FAST:
        return arm_convolve_1x1_s8_fast(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                        filter_data, bias_dims, bias_data, output_dims, output_data);
    case CONV_1X1:
        return arm_convolve_1x1_s8(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                   bias_dims, bias_data, output_dims, output_data);
    case CONV_1XN:
        return arm_convolve_1_x_n_s8(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                     filter_data, bias_dims, bias_data, output_dims, output_data);
    default:
        return arm_convolve_s8(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                               bias_dims, bias_data, output_dims, output_data);
    }
}
