"""TFLite / CMSIS-NN integer arithmetic: fixed-point primitives and quantisation parameters.

These are the integer semantics of the TFLite (and TFLite Micro) reference kernels, which
CMSIS-NN reproduces bit for bit: ``QuantizeMultiplier``, gemmlowp's
``SaturatingRoundingDoublingHighMul`` and ``RoundingDivideByPOT``, double-rounding
``MultiplyByQuantizedMultiplier``, ``CalculateActivationRangeQuantized``, the effective
scales of each operator and the int8 softmax fixed-point functions.

Every primitive is vectorised over NumPy arrays (computing in int64 and modelling C int32
wrap-around where the C code relies on it) and also accepts plain Python numbers: when all
of its integer arguments are scalars it returns a Python ``int``, otherwise an ``int64``
array whose values lie in the int32 range.

The parameter derivations here (multipliers, shifts, clip bounds, softmax parameters) are
the single source of truth: the ``qnn.*`` reference kernels and the CMSIS-NN target both
use them, so the constants a target emits are exactly those the reference computes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "INT32_MAX", "INT32_MIN", "SOFTMAX_INT8_OUTPUT_SCALE", "SOFTMAX_INT8_OUTPUT_ZERO_POINT",
    "AddParams", "SoftmaxParams", "activation_range", "add_params", "conv_effective_scales",
    "dtype_range", "exp_on_negative_values", "fc_effective_scale",
    "is_softmax_int8_output_scale", "mul_effective_scale", "multiply_by_quantized_multiplier",
    "one_over_one_plus_x_for_x_in_0_1", "quantize_multiplier", "quantize_multipliers",
    "quantized_add", "quantized_mul", "requantize_effective_scales", "round_half_away",
    "rounding_divide_by_pot", "saturating_rounding_doubling_high_mul",
    "saturating_rounding_multiply_by_pot",
    "softmax_int8", "softmax_params", "wrap_int32",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1

_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
_INT_RANGES = {
    "int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767),
    "int32": (INT32_MIN, INT32_MAX),
}


# -- helpers ----------------------------------------------------------------------------------
def _is_scalar(*values: Any) -> bool:
    return all(not isinstance(v, np.ndarray) and np.ndim(v) == 0 for v in values)


def _ints(value: Any, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iub":
        raise TypeError(f"{what}: expected integers, found dtype {arr.dtype.name}")
    return arr.astype(np.int64)


def _result(value: np.ndarray, scalar: bool) -> Any:
    return int(value) if scalar else value


def _wrap(x: np.ndarray) -> np.ndarray:
    # C int32 wrap-around of an int64 array (two's complement truncation).
    return x.astype(np.int32).astype(np.int64)


def wrap_int32(x: Any) -> Any:
    """``x`` converted to int32 with two's-complement wrap-around, as C does."""
    return _result(_wrap(_ints(x, "wrap_int32")), _is_scalar(x))


def dtype_range(dtype: str) -> tuple[int, int]:
    """The ``(min, max)`` of integer dtype ``dtype`` (int8, uint8, int16 or int32)."""
    if dtype not in _INT_RANGES:
        raise ValueError(f"expected one of {', '.join(_INT_RANGES)}, found dtype {dtype!r}")
    return _INT_RANGES[dtype]


def round_half_away(x: Any) -> Any:
    """Round to the nearest integer, ties away from zero (C ``round``), keeping the dtype."""
    arr = np.asarray(x)
    mag = np.abs(arr)
    low = np.floor(mag)
    # ``mag - low`` is exact, unlike ``mag + 0.5`` (which can round up just below a tie).
    out = np.copysign(np.where(mag - low >= 0.5, low + 1, low), arr).astype(arr.dtype)
    return out if isinstance(x, np.ndarray) or np.ndim(x) else out[()]


# -- QuantizeMultiplier -----------------------------------------------------------------------
def _quantize_multipliers(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = np.asarray(m, dtype=np.float64)
    if not np.all(np.isfinite(m)):
        raise ValueError(f"quantize_multiplier: expected finite multipliers, found {m}")
    q, e = np.frexp(m)
    # q * 2^31 is exact in float64, and |q * 2^31| + 0.5 is exact too (its ulp is 2^-22).
    qf = np.copysign(np.floor(np.abs(q) * 2.0**31 + 0.5), q).astype(np.int64)
    e = e.astype(np.int64)
    carry = qf == (1 << 31)
    qf = np.where(carry, 1 << 30, qf)
    e = np.where(carry, e + 1, e)
    flush = (e < -31) | (m == 0)
    qf = np.where(flush, 0, qf)
    e = np.where(flush, 0, e)
    return qf.astype(np.int32), e.astype(np.int32)


def quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplier``: ``m ~= multiplier * 2^(shift - 31)`` as ``(multiplier,
    shift)``; a positive shift is a left shift; exponents below -31 flush to ``(0, 0)``."""
    qf, e = _quantize_multipliers(np.asarray(float(m)))
    return int(qf), int(e)


def quantize_multipliers(m: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`quantize_multiplier` elementwise over an array: int32 multiplier and shift
    arrays of ``m``'s shape."""
    return _quantize_multipliers(np.asarray(m, dtype=np.float64))


# -- gemmlowp / CMSIS-NN primitives -----------------------------------------------------------
def _srdhm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # C: nudge = (a*b >= 0) ? 2^30 : 1 - 2^30; (a*b + nudge) / 2^31 with truncation. For
    # integers that equals floor((a*b + 2^30) / 2^31), an arithmetic shift.
    p = a * b
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, (p + (1 << 30)) >> 31)


def saturating_rounding_doubling_high_mul(a: Any, b: Any) -> Any:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` (``arm_nn_doubling_high_mult``): the
    high 32 bits of ``2*a*b`` rounded half up; ``INT32_MIN * INT32_MIN`` saturates."""
    out = _srdhm(_wrap(_ints(a, "a")), _wrap(_ints(b, "b")))
    return _result(out, _is_scalar(a, b))


def _check_exponent(e: np.ndarray, low: int, high: int, what: str) -> None:
    if e.size and (int(e.min()) < low or int(e.max()) > high):
        raise ValueError(f"{what}: expected values in [{low}, {high}], "
                         f"found [{int(e.min())}, {int(e.max())}]")


def _rdbpot(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    mask = np.left_shift(np.int64(1), e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def rounding_divide_by_pot(x: Any, exponent: Any) -> Any:
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2^exponent`` rounded half away from zero.

    ``exponent`` is 0..31 as in C; larger exponents (undefined in C, up to 62) round the
    same way mathematically.
    """
    e = _ints(exponent, "exponent")
    _check_exponent(e, 0, 62, "rounding_divide_by_pot exponent")
    return _result(_rdbpot(_wrap(_ints(x, "x")), e), _is_scalar(x, exponent))


def _sat_mul_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    # gemmlowp SaturatingRoundingMultiplyByPOT for exponent >= 0 (arm_nn_mult_by_power_of_two).
    if exponent == 0:
        return x
    threshold = (1 << (31 - exponent)) - 1
    out = _wrap(x << exponent)
    out = np.where(x > threshold, INT32_MAX, out)
    return np.where(x < -threshold, INT32_MIN, out)


def saturating_rounding_multiply_by_pot(x: Any, exponent: int) -> Any:
    """gemmlowp ``SaturatingRoundingMultiplyByPOT``: ``x * 2^exponent``, saturating when
    ``exponent > 0`` and rounding half away from zero when ``exponent < 0``."""
    arr = _wrap(_ints(x, "x"))
    if not -31 <= exponent <= 31:
        raise ValueError(f"saturating_rounding_multiply_by_pot: expected an exponent in "
                         f"[-31, 31], found {exponent}")
    out = _sat_mul_pot(arr, exponent) if exponent >= 0 else _rdbpot(arr, np.int64(-exponent))
    return _result(out, _is_scalar(x))


def _mbqm(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return _rdbpot(_srdhm(_wrap(x << left), multiplier), right)


def multiply_by_quantized_multiplier(x: Any, multiplier: Any, shift: Any) -> Any:
    """TFLite ``MultiplyByQuantizedMultiplier`` with double rounding (``arm_nn_requantize``):
    ``RDBPOT(SRDHM(x << max(shift, 0), multiplier), max(-shift, 0))``.

    ``multiplier`` and ``shift`` broadcast against ``x`` (per element or per channel). The
    left shift is an int32 multiplication and wraps on overflow, as in the reference kernels.
    """
    s = _ints(shift, "shift")
    _check_exponent(s, -31, 31, "multiply_by_quantized_multiplier shift")
    out = _mbqm(_wrap(_ints(x, "x")), _wrap(_ints(multiplier, "multiplier")), s)
    return _result(out, _is_scalar(x, multiplier, shift))


# -- activation ranges ------------------------------------------------------------------------
def _quantize_value(f: float, scale: float, zero_point: int) -> int:
    q = np.float32(f) / np.float32(scale)
    if not np.isfinite(q):
        raise ValueError(f"activation_range: cannot quantise {f} with scale {scale}")
    return int(zero_point) + int(round_half_away(q))


def activation_range(activation: str, scale: float, zero_point: int, dtype: str = "int8",
                     ) -> tuple[int, int]:
    """TFLite ``CalculateActivationRangeQuantized``: the ``(min, max)`` clip bounds of a fused
    activation ("NONE", "RELU", "RELU6" or "RELU_N1_TO_1") for an output quantisation."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation_range: expected one of {', '.join(_ACTIVATIONS)}, "
                         f"found {activation!r}")
    qmin, qmax = dtype_range(dtype)
    if activation == "NONE":
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, _quantize_value(0.0, scale, zero_point)), qmax
    if activation == "RELU6":
        return (max(qmin, _quantize_value(0.0, scale, zero_point)),
                min(qmax, _quantize_value(6.0, scale, zero_point)))
    return (max(qmin, _quantize_value(-1.0, scale, zero_point)),
            min(qmax, _quantize_value(1.0, scale, zero_point)))


# -- effective scales -------------------------------------------------------------------------
def _f64(value: Any) -> np.ndarray:
    # float32 values convert to float64 exactly; float64 values are kept as they are.
    return np.asarray(value, dtype=np.float64)


def conv_effective_scales(input_scale: Any, kernel_scale: Any, output_scale: Any,
                          ) -> np.ndarray:
    """Conv/depthwise multipliers per output channel: ``(double)s_in * (double)s_w[c] /
    (double)s_out`` (a float64 array shaped like ``kernel_scale``)."""
    return _f64(input_scale) * _f64(kernel_scale) / _f64(output_scale)


def fc_effective_scale(input_scale: float, kernel_scale: float, output_scale: float) -> float:
    """Fully-connected multiplier (TFLite ``GetQuantizedConvolutionMultipler``), per tensor:
    ``(double)s_in * (double)s_w / (double)s_out`` as for convolutions. (Older TFLite
    releases took the product in float32; TFLite Micro, the oracle, takes it in double.)"""
    return float(conv_effective_scales(input_scale, kernel_scale, output_scale))


def requantize_effective_scales(input_scale: Any, output_scale: Any) -> np.ndarray:
    """Requantize multipliers: ``(double)s_in[c] / (double)s_out[c]`` (broadcast)."""
    return _f64(input_scale) / _f64(output_scale)


def mul_effective_scale(lhs_scale: float, rhs_scale: float, output_scale: float) -> float:
    """Elementwise-mul multiplier: ``(double)s1 * (double)s2 / (double)s_out``."""
    return float(_f64(lhs_scale) * _f64(rhs_scale) / _f64(output_scale))


class AddParams(NamedTuple):
    """Integer parameters of TFLite's quantised elementwise add."""

    left_shift: int
    lhs_multiplier: int
    lhs_shift: int
    rhs_multiplier: int
    rhs_shift: int
    output_multiplier: int
    output_shift: int


def add_params(lhs_scale: float, rhs_scale: float, output_scale: float, dtype: str = "int8",
               ) -> AddParams:
    """TFLite add parameters: ``left_shift`` 20 (15 for int16), ``twice_max = 2*max(s1, s2)``,
    input multipliers ``s_i / twice_max`` and output multiplier
    ``twice_max / (2^left_shift * s_out)``."""
    left_shift = 15 if dtype == "int16" else 20
    s1, s2, so = float(_f64(lhs_scale)), float(_f64(rhs_scale)), float(_f64(output_scale))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = quantize_multiplier(s1 / twice_max)
    m2, sh2 = quantize_multiplier(s2 / twice_max)
    mo, sho = quantize_multiplier(twice_max / (float(1 << left_shift) * so))
    return AddParams(left_shift, m1, sh1, m2, sh2, mo, sho)


def quantized_add(lhs: Any, rhs: Any, lhs_offset: int, rhs_offset: int, params: AddParams,
                  output_offset: int) -> np.ndarray:
    """TFLite's integer add (``arm_elementwise_add_s8/_s16``) of integer arrays (broadcast):
    each input plus its offset (the negated zero point) is shifted left by ``left_shift`` and
    scaled by its multiplier, the sum is rescaled by the output multiplier, and
    ``output_offset`` is added with int32 wrap-around. Not clamped: an int64 array."""
    a = _wrap((_ints(lhs, "lhs") + int(lhs_offset)) << params.left_shift)
    b = _wrap((_ints(rhs, "rhs") + int(rhs_offset)) << params.left_shift)
    a = multiply_by_quantized_multiplier(a, params.lhs_multiplier, params.lhs_shift)
    b = multiply_by_quantized_multiplier(b, params.rhs_multiplier, params.rhs_shift)
    total = _wrap(np.asarray(a) + np.asarray(b))
    out = multiply_by_quantized_multiplier(total, params.output_multiplier, params.output_shift)
    return _wrap(np.asarray(out) + int(output_offset))


def quantized_mul(lhs: Any, rhs: Any, lhs_offset: int, rhs_offset: int, multiplier: int,
                  shift: int, output_offset: int) -> np.ndarray:
    """TFLite's integer multiply (``arm_elementwise_mul_s8/_s16``) of integer arrays
    (broadcast): the product of the offset inputs, rescaled by ``(multiplier, shift)``, plus
    ``output_offset`` with int32 wrap-around. Not clamped: an int64 array."""
    prod = _wrap((_ints(lhs, "lhs") + int(lhs_offset)) * (_ints(rhs, "rhs") + int(rhs_offset)))
    out = multiply_by_quantized_multiplier(prod, multiplier, shift)
    return _wrap(np.asarray(out) + int(output_offset))


# -- int8 softmax -----------------------------------------------------------------------------
SOFTMAX_INPUT_INTEGER_BITS = 5
SOFTMAX_ACCUM_INTEGER_BITS = 12
_EXP_BARREL = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


SOFTMAX_INT8_OUTPUT_SCALE = 1.0 / 256
SOFTMAX_INT8_OUTPUT_ZERO_POINT = -128


def is_softmax_int8_output_scale(scale: float) -> bool:
    """Whether ``scale`` is int8 softmax's output scale 1/256, within TFLite's 0.1 %."""
    return abs(float(scale) - SOFTMAX_INT8_OUTPUT_SCALE) <= 0.001 * SOFTMAX_INT8_OUTPUT_SCALE


class SoftmaxParams(NamedTuple):
    """Integer parameters of TFLite's int8 softmax."""

    multiplier: int
    shift: int
    diff_min: int


def softmax_params(input_scale: float, beta: float = 1.0) -> SoftmaxParams:
    """TFLite ``PreprocessSoftmaxScaling`` and ``CalculateInputRadius`` for int8 softmax:
    ``(mult, shift) = QuantizeMultiplier(min(beta*s_in*2^26, 2^31-1))`` (shift >= 0) and
    ``diff_min = -floor(31*2^26 / 2^shift)``."""
    bits = SOFTMAX_INPUT_INTEGER_BITS
    beta = float(np.float32(beta))  # TFLite stores beta as a float32
    real = min(beta * float(_f64(input_scale)) * float(1 << (31 - bits)),
               float((1 << 31) - 1))
    if not real > 1.0:
        raise ValueError(f"softmax: beta * input_scale must exceed 2^-26 (TFLite "
                         f"QuantizeMultiplierGreaterThanOne), found {real / 2.0**26!r}")
    mult, shift = quantize_multiplier(real)
    diff_min = -((((1 << bits) - 1) << (31 - bits)) >> shift)
    return SoftmaxParams(mult, shift, diff_min)


def _exp_on_interval(a: np.ndarray) -> np.ndarray:
    # gemmlowp exp_on_interval_between_negative_one_quarter_and_0_excl, Q0.31 in and out.
    constant_term = 1895147668  # exp(-1/8)
    one_third = 715827883
    x = a + (1 << 28)
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = _rdbpot(x4, np.int64(2))
    poly = _rdbpot(_wrap(_srdhm(_wrap(x4_over_4 + x3), one_third) + x2), np.int64(1))
    return _wrap(constant_term + _srdhm(np.int64(constant_term), _wrap(x + poly)))


def _exp_on_negative_values(a: np.ndarray) -> np.ndarray:
    frac_bits = 31 - SOFTMAX_INPUT_INTEGER_BITS
    quarter = 1 << (frac_bits - 2)
    a_mod = _wrap((a & (quarter - 1)) - quarter)
    result = _exp_on_interval(_sat_mul_pot(a_mod, SOFTMAX_INPUT_INTEGER_BITS))
    remainder = _wrap(a_mod - a)
    for k, multiplier in enumerate(_EXP_BARREL):
        bit = 1 << (frac_bits - 2 + k)
        result = np.where((remainder & bit) != 0, _srdhm(result, np.int64(multiplier)), result)
    return np.where(a == 0, INT32_MAX, result)


def exp_on_negative_values(a: Any) -> Any:
    """gemmlowp ``exp_on_negative_values`` for a Q5.26 input ``a <= 0``: ``exp(a)`` in Q0.31
    (``arm_nn_exp_on_negative_values``); ``a == 0`` gives INT32_MAX."""
    return _result(_exp_on_negative_values(_wrap(_ints(a, "a"))), _is_scalar(a))


def _one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    # gemmlowp one_over_one_plus_x_for_x_in_0_1: Newton-Raphson in Q2.29.
    total = a + INT32_MAX
    half_denominator = np.where(total >= 0, (total + 1) // 2, -((-(total - 1)) // 2))
    x = _wrap(1515870810 + _srdhm(half_denominator, np.int64(-1010580540)))
    one = 1 << 29
    for _ in range(3):
        half_denominator_times_x = _srdhm(half_denominator, x)
        one_minus = _wrap(one - half_denominator_times_x)
        x = _wrap(x + _sat_mul_pot(_srdhm(x, one_minus), 2))
    return _sat_mul_pot(x, 1)


def one_over_one_plus_x_for_x_in_0_1(a: Any) -> Any:
    """gemmlowp ``one_over_one_plus_x_for_x_in_0_1``: ``1 / (1 + a)`` for ``a`` in Q0.31
    within [0, 1), as Q0.31 (``arm_nn_one_over_one_plus_x_for_x_in_0_1``)."""
    return _result(_one_over_one_plus_x(_wrap(_ints(a, "a"))), _is_scalar(a))


def _clz32(u: np.ndarray) -> np.ndarray:
    # Leading zeros of uint32 values held in int64 (32 for 0); frexp is exact below 2^53.
    _, e = np.frexp(u.astype(np.float64))
    return np.where(u == 0, 32, 32 - e).astype(np.int64)


def softmax_int8(data: np.ndarray, params: SoftmaxParams) -> np.ndarray:
    """TFLite int8 softmax over the last axis of int8 ``data`` (output scale 1/256, zero
    point -128), vectorised over the rows."""
    x = np.asarray(data).astype(np.int64)
    if x.shape[-1] == 0:
        return np.empty(x.shape, dtype=np.int8)
    diff = x - x.max(axis=-1, keepdims=True)
    valid = diff >= params.diff_min
    scaled = _srdhm(_wrap(diff << params.shift), np.int64(params.multiplier))
    exps = np.where(valid, _exp_on_negative_values(scaled), 0)
    terms = _rdbpot(exps, np.int64(SOFTMAX_ACCUM_INTEGER_BITS))
    total = _wrap(terms.sum(axis=-1, keepdims=True))
    unsigned = total & 0xFFFFFFFF
    headroom = _clz32(unsigned)
    shifted_minus_one = _wrap(((unsigned << headroom) & 0xFFFFFFFF) - (1 << 31))
    scale = _one_over_one_plus_x(shifted_minus_one)
    exponent = SOFTMAX_ACCUM_INTEGER_BITS - headroom + 31 - 8
    out = _rdbpot(_srdhm(scale, exps), exponent) - 128
    out = np.where(valid, np.clip(out, -128, 127), -128)
    return out.astype(np.int8)
