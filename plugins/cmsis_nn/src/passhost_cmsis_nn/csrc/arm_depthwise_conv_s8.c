/*
 * passhost-cmsis-nn portable kernels: int8 depthwise convolution, its CMSIS-NN v4.1 dispatch
 * and scratch-buffer sizes. Written for passhost (Apache-2.0).
 */
#include "arm_nnfunctions.h"
#include "phnn_support.h"

/* Channel blocks of 124 the MVE depthwise kernel works through (its scratch is 4 of them per
 * filter tap). */
#define DW_MVE_CHANNEL_BLOCK 124

static int32_t dw_opt_buffer_size_dsp(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return input_dims->c * filter_dims->w * filter_dims->h * (int32_t)sizeof(int16_t);
}

static int32_t dw_opt_buffer_size_mve(const cmsis_nn_dims *filter_dims)
{
    return 4 * DW_MVE_CHANNEL_BLOCK * filter_dims->w * filter_dims->h * (int32_t)sizeof(int8_t);
}

/* Whether the wrapper's buffer-size query counts the arm_depthwise_conv_s8_opt buffer. */
static int dw_sizes_opt(const cmsis_nn_dw_conv_params *p, const cmsis_nn_dims *input_dims,
                        const cmsis_nn_dims *output_dims)
{
    return input_dims->c == output_dims->c && input_dims->n == 1 && p->dilation.w == 1 && p->dilation.h == 1;
}

/* The depthwise convolution: NHWC input, [1, KH, KW, C_out] filter, output channel
 * ic * ch_mult + m reads input channel ic. */
static arm_cmsis_nn_status dw_compute(const cmsis_nn_dw_conv_params *p,
                                      const cmsis_nn_per_channel_quant_params *quant_params,
                                      const cmsis_nn_dims *in_d,
                                      const int8_t *input,
                                      const cmsis_nn_dims *f_d,
                                      const int8_t *filter,
                                      const int32_t *bias,
                                      const cmsis_nn_dims *out_d,
                                      int8_t *output)
{
    int32_t b, oy, ox, ic, m, ky, kx;
    if (!phnn_dims_ok(in_d) || !phnn_dims_ok(f_d) || !phnn_dims_ok(out_d) ||
        !phnn_window_ok(&p->stride, &p->padding, &p->dilation) || p->ch_mult < 1 || f_d->c != out_d->c ||
        (int64_t)in_d->c * p->ch_mult != out_d->c || out_d->n != in_d->n)
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
                for (ic = 0; ic < in_d->c; ++ic)
                {
                    for (m = 0; m < p->ch_mult; ++m)
                    {
                        const int32_t oc = ic * p->ch_mult + m;
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
                                if (ix >= 0 && ix < in_d->w)
                                {
                                    const int8_t x = input[((b * in_d->h + iy) * in_d->w + ix) * in_d->c + ic];
                                    const int8_t w = filter[(ky * f_d->w + kx) * out_d->c + oc];
                                    acc += ((int64_t)x + p->input_offset) * w;
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
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_depthwise_conv_s8_opt_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
#if defined(ARM_MATH_MVEI)
    (void)input_dims;
    return dw_opt_buffer_size_mve(filter_dims);
#elif defined(ARM_MATH_DSP)
    return dw_opt_buffer_size_dsp(input_dims, filter_dims);
#else
    (void)input_dims;
    (void)filter_dims;
    return 0;
#endif
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims)
{
    return dw_sizes_opt(dw_conv_params, input_dims, output_dims) ? dw_opt_buffer_size_dsp(input_dims, filter_dims)
                                                                  : 0;
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims)
{
    return dw_sizes_opt(dw_conv_params, input_dims, output_dims) ? dw_opt_buffer_size_mve(filter_dims) : 0;
}

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims)
{
#if defined(ARM_MATH_MVEI)
    return arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(dw_conv_params, input_dims, filter_dims, output_dims);
#elif defined(ARM_MATH_DSP)
    return arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(dw_conv_params, input_dims, filter_dims, output_dims);
#else
    (void)dw_conv_params;
    (void)input_dims;
    (void)filter_dims;
    (void)output_dims;
    return 0;
#endif
}

arm_cmsis_nn_status arm_depthwise_conv_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_dw_conv_params *dw_conv_params,
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
    return dw_compute(dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                      output_dims, output_data);
}

arm_cmsis_nn_status arm_depthwise_conv_3x3_s8(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
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
    if (input_dims->c != output_dims->c || filter_dims->w != 3 || filter_dims->h != 3 ||
        dw_conv_params->padding.w > 1 || dw_conv_params->padding.h > 1)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return dw_compute(dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                      output_dims, output_data);
}

arm_cmsis_nn_status arm_depthwise_conv_s8_opt(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
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
    if (input_dims->c != output_dims->c ||
        !phnn_context_ok(ctx, arm_depthwise_conv_s8_opt_get_buffer_size(input_dims, filter_dims)))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return dw_compute(dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data, bias_data,
                      output_dims, output_data);
}

arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(const cmsis_nn_context *ctx,
                                                  const cmsis_nn_dw_conv_params *dw_conv_params,
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
    if (dw_conv_params->ch_mult == 1 && input_dims->n == 1 && dw_conv_params->dilation.w == 1 &&
        dw_conv_params->dilation.h == 1)
    {
#if !defined(ARM_MATH_MVEI)
        if (filter_dims->w == 3 && filter_dims->h == 3 && dw_conv_params->padding.h <= 1 &&
            dw_conv_params->padding.w <= 1)
        {
            return arm_depthwise_conv_3x3_s8(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims,
                                             filter_data, bias_dims, bias_data, output_dims, output_data);
        }
#endif
        return arm_depthwise_conv_s8_opt(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims,
                                         filter_data, bias_dims, bias_data, output_dims, output_data);
    }
    return arm_depthwise_conv_s8(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                 bias_dims, bias_data, output_dims, output_data);
}
