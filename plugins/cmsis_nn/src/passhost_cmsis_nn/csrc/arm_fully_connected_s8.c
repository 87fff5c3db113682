/*
 * passhost-cmsis-nn portable kernels: int8 fully connected layer.
 * Written for passhost (Apache-2.0).
 */
#include "arm_nnfunctions.h"
#include "phnn_support.h"

arm_cmsis_nn_status arm_fully_connected_s8(const cmsis_nn_context *ctx,
                                           const cmsis_nn_fc_params *fc_params,
                                           const cmsis_nn_per_tensor_quant_params *quant_params,
                                           const cmsis_nn_dims *input_dims,
                                           const int8_t *input_data,
                                           const cmsis_nn_dims *filter_dims,
                                           const int8_t *filter_data,
                                           const cmsis_nn_dims *bias_dims,
                                           const int32_t *bias_data,
                                           const cmsis_nn_dims *output_dims,
                                           int8_t *output_data)
{
    /* filter_dims->n is the accumulation depth, output_dims->c the number of units; the
     * filter is [units][depth] row-major. */
    const int32_t depth = filter_dims->n;
    const int32_t units = output_dims->c;
    int32_t b, u, k;
    (void)ctx;
    (void)bias_dims;
    if (!phnn_dims_ok(input_dims) || depth <= 0 || units <= 0 || output_dims->n != input_dims->n ||
        (int64_t)input_dims->h * input_dims->w * input_dims->c != depth)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (b = 0; b < input_dims->n; ++b)
    {
        const int8_t *x = input_data + b * depth;
        for (u = 0; u < units; ++u)
        {
            const int8_t *w = filter_data + u * depth;
            int64_t acc = bias_data != NULL ? bias_data[u] : 0;
            int32_t y;
            for (k = 0; k < depth; ++k)
            {
                acc += ((int64_t)x[k] + fc_params->input_offset) * w[k];
            }
            y = phnn_requantize(phnn_wrap32(acc), quant_params->multiplier, quant_params->shift);
            output_data[b * units + u] = (int8_t)phnn_clamp(
                phnn_wrap32((int64_t)y + fc_params->output_offset), fc_params->activation.min,
                fc_params->activation.max);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
