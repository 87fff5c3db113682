/*
 * passhost-cmsis-nn portable kernels: int8 and int16 average and max pooling, and the
 * average pool's scratch-buffer sizes. Written for passhost (Apache-2.0).
 *
 * Windows are clipped to the image: padding taps neither count towards an average nor win
 * a maximum.
 */
#include "arm_nnfunctions.h"
#include "phnn_support.h"

/* A tensor of int8 (bytes 1) or int16 (bytes 2) elements. */
typedef struct
{
    const void *data;
    int bytes;
} pool_source;

static int32_t pool_read(pool_source src, int32_t index)
{
    return src.bytes == 1 ? ((const int8_t *)src.data)[index] : ((const int16_t *)src.data)[index];
}

static void pool_write(void *dst, int bytes, int32_t index, int32_t value)
{
    if (bytes == 1)
    {
        ((int8_t *)dst)[index] = (int8_t)value;
    }
    else
    {
        ((int16_t *)dst)[index] = (int16_t)value;
    }
}

/* Average (average != 0) or max pooling over NHWC tensors of src.bytes-sized elements. */
static arm_cmsis_nn_status pool_compute(int average,
                                        const cmsis_nn_pool_params *p,
                                        const cmsis_nn_dims *in_d,
                                        pool_source src,
                                        const cmsis_nn_dims *f_d,
                                        const cmsis_nn_dims *out_d,
                                        void *dst)
{
    static const cmsis_nn_tile unit = {1, 1};
    const int32_t lowest = src.bytes == 1 ? -128 : -32768;
    int32_t b, oy, ox, c, ky, kx;
    if (!phnn_dims_ok(in_d) || !phnn_dims_ok(out_d) || f_d->h <= 0 || f_d->w <= 0 || out_d->c != in_d->c ||
        out_d->n != in_d->n || !phnn_window_ok(&p->stride, &p->padding, &unit))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (b = 0; b < in_d->n; ++b)
    {
        for (oy = 0; oy < out_d->h; ++oy)
        {
            const int32_t y0 = oy * p->stride.h - p->padding.h;
            const int32_t ky_start = y0 < 0 ? -y0 : 0;
            const int32_t ky_end = f_d->h < in_d->h - y0 ? f_d->h : in_d->h - y0;
            for (ox = 0; ox < out_d->w; ++ox)
            {
                const int32_t x0 = ox * p->stride.w - p->padding.w;
                const int32_t kx_start = x0 < 0 ? -x0 : 0;
                const int32_t kx_end = f_d->w < in_d->w - x0 ? f_d->w : in_d->w - x0;
                const int32_t count = (ky_end - ky_start) * (kx_end - kx_start);
                const int32_t out_base = ((b * out_d->h + oy) * out_d->w + ox) * out_d->c;
                if (average && (ky_end <= ky_start || kx_end <= kx_start))
                {
                    return ARM_CMSIS_NN_ARG_ERROR;
                }
                for (c = 0; c < in_d->c; ++c)
                {
                    int64_t sum = 0;
                    int32_t best = lowest;
                    int32_t value;
                    for (ky = ky_start; ky < ky_end; ++ky)
                    {
                        for (kx = kx_start; kx < kx_end; ++kx)
                        {
                            const int32_t v =
                                pool_read(src, ((b * in_d->h + y0 + ky) * in_d->w + x0 + kx) * in_d->c + c);
                            sum += v;
                            best = v > best ? v : best;
                        }
                    }
                    /* C division truncates: adding half the count first rounds half away from 0. */
                    value = average ? (int32_t)(sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count) : best;
                    pool_write(dst, src.bytes, out_base + c,
                               phnn_clamp(value, p->activation.min, p->activation.max));
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* The DSP average pools keep one int32 sum per channel; plain C and MVE need nothing. */
static int32_t avgpool_buffer_size_dsp(int ch_src)
{
    return ch_src * (int32_t)sizeof(int32_t);
}

int32_t arm_avgpool_s8_get_buffer_size_dsp(const int dim_dst_width, const int ch_src)
{
    (void)dim_dst_width;
    return avgpool_buffer_size_dsp(ch_src);
}

int32_t arm_avgpool_s8_get_buffer_size_mve(const int dim_dst_width, const int ch_src)
{
    (void)dim_dst_width;
    (void)ch_src;
    return 0;
}

int32_t arm_avgpool_s8_get_buffer_size(const int dim_dst_width, const int ch_src)
{
#if defined(ARM_MATH_MVEI)
    return arm_avgpool_s8_get_buffer_size_mve(dim_dst_width, ch_src);
#elif defined(ARM_MATH_DSP)
    return arm_avgpool_s8_get_buffer_size_dsp(dim_dst_width, ch_src);
#else
    (void)dim_dst_width;
    (void)ch_src;
    return 0;
#endif
}

int32_t arm_avgpool_s16_get_buffer_size_dsp(const int dim_dst_width, const int ch_src)
{
    return arm_avgpool_s8_get_buffer_size_dsp(dim_dst_width, ch_src);
}

int32_t arm_avgpool_s16_get_buffer_size_mve(const int dim_dst_width, const int ch_src)
{
    return arm_avgpool_s8_get_buffer_size_mve(dim_dst_width, ch_src);
}

int32_t arm_avgpool_s16_get_buffer_size(const int dim_dst_width, const int ch_src)
{
    return arm_avgpool_s8_get_buffer_size(dim_dst_width, ch_src);
}

arm_cmsis_nn_status arm_avgpool_s8(const cmsis_nn_context *ctx,
                                   const cmsis_nn_pool_params *pool_params,
                                   const cmsis_nn_dims *input_dims,
                                   const int8_t *input_data,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims,
                                   int8_t *output_data)
{
    const pool_source src = {input_data, 1};
    if (!phnn_context_ok(ctx, arm_avgpool_s8_get_buffer_size(output_dims->w, input_dims->c)))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return pool_compute(1, pool_params, input_dims, src, filter_dims, output_dims, output_data);
}

arm_cmsis_nn_status arm_avgpool_s16(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int16_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int16_t *output_data)
{
    const pool_source src = {input_data, 2};
    if (!phnn_context_ok(ctx, arm_avgpool_s16_get_buffer_size(output_dims->w, input_dims->c)))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return pool_compute(1, pool_params, input_dims, src, filter_dims, output_dims, output_data);
}

arm_cmsis_nn_status arm_max_pool_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data)
{
    const pool_source src = {input_data, 1};
    (void)ctx;
    return pool_compute(0, pool_params, input_dims, src, filter_dims, output_dims, output_data);
}

arm_cmsis_nn_status arm_max_pool_s16(const cmsis_nn_context *ctx,
                                     const cmsis_nn_pool_params *pool_params,
                                     const cmsis_nn_dims *input_dims,
                                     const int16_t *src,
                                     const cmsis_nn_dims *filter_dims,
                                     const cmsis_nn_dims *output_dims,
                                     int16_t *dst)
{
    const pool_source source = {src, 2};
    (void)ctx;
    return pool_compute(0, pool_params, input_dims, source, filter_dims, output_dims, dst);
}
