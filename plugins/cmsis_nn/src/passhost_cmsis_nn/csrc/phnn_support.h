/*
 * passhost-cmsis-nn portable kernels: integer arithmetic and argument checks shared by the
 * kernels (not part of the CMSIS-NN API; the phnn_ prefix keeps them apart).
 *
 * The arithmetic is TFLite's reference fixed point (gemmlowp): every function is defined
 * for every int32 input, computing in int64 where C's int32 arithmetic would overflow and
 * wrapping modulo 2^32 where the reference kernels wrap, so no input is undefined behaviour.
 * The functions have external linkage so tests can call them directly.
 */
#ifndef PHNN_SUPPORT_H
#define PHNN_SUPPORT_H

#include "arm_nn_types.h"

/* v modulo 2^32 as an int32 (C's int32 wrap-around, without implementation-defined
 * conversions). */
int32_t phnn_wrap32(int64_t v);

/* gemmlowp SaturatingRoundingDoublingHighMul: the high half of 2*a*b rounded half away from
 * zero; INT32_MIN * INT32_MIN saturates to INT32_MAX. */
int32_t phnn_doubling_high_mult(int32_t a, int32_t b);

/* gemmlowp RoundingDivideByPOT: x / 2^exponent rounded half away from zero (exponent 0..62;
 * larger exponents act like 62). */
int32_t phnn_divide_by_power_of_two(int32_t x, int32_t exponent);

/* gemmlowp SaturatingRoundingMultiplyByPOT for exponent 0..31: x * 2^exponent, saturated. */
int32_t phnn_mult_by_power_of_two(int32_t x, int32_t exponent);

/* TFLite MultiplyByQuantizedMultiplier with double rounding: the left shift (shift > 0)
 * wraps like an int32 multiplication, then the doubling high multiply, then the rounding
 * right shift (shift < 0). Meant for shift -31..31. */
int32_t phnn_requantize(int32_t x, int32_t multiplier, int32_t shift);

/* gemmlowp exp_on_negative_values for a Q5.26 input <= 0: exp(a) in Q0.31; 0 gives
 * INT32_MAX. */
int32_t phnn_exp_on_negative_values(int32_t a);

/* gemmlowp one_over_one_plus_x_for_x_in_0_1: 1 / (1 + a) for Q0.31 a in [0, 1), as Q0.31
 * (three Newton-Raphson steps; 1 saturates to INT32_MAX). */
int32_t phnn_one_over_one_plus_x(int32_t a);

/* Leading zero bits of u (32 for 0). */
int32_t phnn_clz32(uint32_t u);

/* v clamped to [lo, hi]. */
int32_t phnn_clamp(int32_t v, int32_t lo, int32_t hi);

/* Whether ctx offers at least required scratch bytes (always true for required <= 0). */
int phnn_context_ok(const cmsis_nn_context *ctx, int32_t required);

/* Whether all four dimensions are positive. */
int phnn_dims_ok(const cmsis_nn_dims *dims);

/* Whether a stride/dilation tile is positive and a padding tile non-negative. */
int phnn_window_ok(const cmsis_nn_tile *stride, const cmsis_nn_tile *padding, const cmsis_nn_tile *dilation);

#endif /* PHNN_SUPPORT_H */
