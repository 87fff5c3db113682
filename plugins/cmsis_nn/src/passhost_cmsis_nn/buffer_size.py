"""Scratch-buffer sizes (bytes) of the CMSIS-NN v4.1 kernels, per processor.

The same rules as CMSIS-NN v4.1's ``*_get_buffer_size`` functions and the plugin's own
kernels in ``csrc/``: the buffer a kernel needs depends on the path the wrapper dispatches
to and on the processor the library is built for, given here as the target features
``has_dsp`` (the DSP extension: Cortex-M4, M7, M33, M55) and ``has_mve`` (Helium: Cortex-M55).
Every MVE processor has the DSP extension, so ``has_mve`` selects the MVE sizes whatever
``has_dsp`` says.

Dimensions are ``(n, h, w, c)`` tuples in ``cmsis_nn_dims`` order (filters: conv ``(C_out,
KH, KW, C_in)``, depthwise ``(1, KH, KW, C_out)``); strides, paddings and dilations are
``(h, w)`` pairs.

Unlike TVM's copy of these formulas, the conv rules follow the library's real dispatch: a
1xN convolution is one with input height 1, filter height 1, dilation width 1 and
``stride_w * C_in`` a multiple of 4 (TVM tested ``out_w % 4`` and so returned 0 on MVE for
shapes that go to ``arm_convolve_s8``, which needs a buffer), and a 1x1 convolution needs no
``C_in % 4``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "avgpool_s8", "avgpool_s16", "convolve_wrapper_s8", "convolve_wrapper_s8_kernel",
    "convolve_wrapper_s16", "depthwise_conv_wrapper_s8", "depthwise_conv_wrapper_s16",
]

Dims = tuple[int, int, int, int]
Pair = tuple[int, int]

_INT16_BYTES = 2
_INT32_BYTES = 4
_DW_MVE_CHANNEL_BLOCK = 124
_FAST_S16_MAX_VOLUME = 512  # the fast s16 kernels take filter volumes (KH*KW*C) below this


def _dims(value: Sequence[int], what: str) -> Dims:
    dims = tuple(value)
    if len(dims) != 4 or not all(isinstance(d, int) and d > 0 for d in dims):
        raise ValueError(f"{what}: expected 4 positive ints (n, h, w, c), found {value!r}")
    return dims  # type: ignore[return-value]


def _pair(value: Sequence[int], what: str, minimum: int) -> Pair:
    pair = tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v >= minimum for v in pair):
        raise ValueError(f"{what}: expected 2 ints (h, w) of at least {minimum}, "
                         f"found {value!r}")
    return pair  # type: ignore[return-value]


def _positive(value: int, what: str) -> int:
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what}: expected a positive int, found {value!r}")
    return value


def convolve_wrapper_s8_kernel(*, input_dims: Sequence[int], filter_dims: Sequence[int],
                               stride_hw: Sequence[int], padding_hw: Sequence[int],
                               dilation_hw: Sequence[int]) -> str:
    """The kernel ``arm_convolve_wrapper_s8`` dispatches to: ``arm_convolve_1x1_s8_fast``,
    ``arm_convolve_1x1_s8``, ``arm_convolve_1_x_n_s8`` or ``arm_convolve_s8``."""
    _, in_h, _, in_c = _dims(input_dims, "input_dims")
    _, k_h, k_w, _ = _dims(filter_dims, "filter_dims")
    stride_h, stride_w = _pair(stride_hw, "stride_hw", 1)
    pad_h, pad_w = _pair(padding_hw, "padding_hw", 0)
    dil_h, dil_w = _pair(dilation_hw, "dilation_hw", 1)
    if (pad_h, pad_w, k_h, k_w, dil_h, dil_w) == (0, 0, 1, 1, 1, 1):
        return "arm_convolve_1x1_s8_fast" if (stride_h, stride_w) == (1, 1) else \
            "arm_convolve_1x1_s8"
    if in_h == 1 and dil_w == 1 and k_h == 1 and (stride_w * in_c) % 4 == 0:
        return "arm_convolve_1_x_n_s8"
    return "arm_convolve_s8"


def convolve_wrapper_s8(*, input_dims: Sequence[int], filter_dims: Sequence[int],
                        stride_hw: Sequence[int], padding_hw: Sequence[int],
                        dilation_hw: Sequence[int], has_dsp: bool = False,
                        has_mve: bool = False) -> int:
    """``arm_convolve_wrapper_s8_get_buffer_size`` (``_dsp``/``_mve``): 0 for 1x1 paths; for
    1xN 0 with MVE, else as ``arm_convolve_s8``; ``arm_convolve_s8`` needs ``4 * ceil(C *
    KH * KW / 8) * 8`` bytes with MVE, else ``2 * C * KH * KW`` int16s (plain C and DSP
    builds alike, so ``has_dsp`` does not matter here)."""
    kernel = convolve_wrapper_s8_kernel(input_dims=input_dims, filter_dims=filter_dims,
                                        stride_hw=stride_hw, padding_hw=padding_hw,
                                        dilation_hw=dilation_hw)
    _, k_h, k_w, _ = _dims(filter_dims, "filter_dims")
    volume = _dims(input_dims, "input_dims")[3] * k_h * k_w
    if kernel in ("arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8"):
        return 0
    if has_mve:
        return 0 if kernel == "arm_convolve_1_x_n_s8" else 4 * ((volume + 7) // 8) * 8
    return 2 * volume * _INT16_BYTES


def convolve_wrapper_s16(*, input_dims: Sequence[int], filter_dims: Sequence[int],
                         dilation_hw: Sequence[int], has_dsp: bool = False,
                         has_mve: bool = False) -> int:
    """``arm_convolve_wrapper_s16_get_buffer_size``: only the DSP (non-MVE) fast kernel, for
    dilation 1 and ``KH * KW * C < 512``, needs ``2 * C * KH * KW`` int16s."""
    in_c = _dims(input_dims, "input_dims")[3]
    _, k_h, k_w, _ = _dims(filter_dims, "filter_dims")
    volume = in_c * k_h * k_w
    dilated = _pair(dilation_hw, "dilation_hw", 1) != (1, 1)
    if has_mve or not has_dsp or dilated or volume >= _FAST_S16_MAX_VOLUME:
        return 0
    return 2 * volume * _INT16_BYTES


def depthwise_conv_wrapper_s8(*, input_dims: Sequence[int], filter_dims: Sequence[int],
                              output_dims: Sequence[int], dilation_hw: Sequence[int],
                              has_dsp: bool = False, has_mve: bool = False) -> int:
    """``arm_depthwise_conv_wrapper_s8_get_buffer_size``: when ``C_in == C_out``, batch 1
    and dilation 1, ``4 * 124 * KH * KW`` bytes with MVE, ``C * KH * KW`` int16s with DSP;
    otherwise (and on plain C) 0."""
    n, _, _, in_c = _dims(input_dims, "input_dims")
    _, k_h, k_w, _ = _dims(filter_dims, "filter_dims")
    out_c = _dims(output_dims, "output_dims")[3]
    if in_c != out_c or n != 1 or _pair(dilation_hw, "dilation_hw", 1) != (1, 1):
        return 0
    if has_mve:
        return 4 * _DW_MVE_CHANNEL_BLOCK * k_h * k_w
    return in_c * k_h * k_w * _INT16_BYTES if has_dsp else 0


def depthwise_conv_wrapper_s16(*, input_dims: Sequence[int], filter_dims: Sequence[int],
                               ch_mult: int, dilation_hw: Sequence[int], has_dsp: bool = False,
                               has_mve: bool = False) -> int:
    """``arm_depthwise_conv_wrapper_s16_get_buffer_size``: for ``ch_mult == 1``, dilation 1
    and ``KH * KW * C < 512``, ``4 * C * KH * KW`` int16s + 8 bytes with MVE, ``C * KH * KW``
    int16s with DSP; otherwise (and on plain C) 0."""
    in_c = _dims(input_dims, "input_dims")[3]
    _, k_h, k_w, _ = _dims(filter_dims, "filter_dims")
    volume = in_c * k_h * k_w
    if (_positive(ch_mult, "ch_mult") != 1 or _pair(dilation_hw, "dilation_hw", 1) != (1, 1)
            or volume >= _FAST_S16_MAX_VOLUME):
        return 0
    if has_mve:
        return 4 * volume * _INT16_BYTES + 8
    return volume * _INT16_BYTES if has_dsp else 0


def avgpool_s8(*, output_width: int, channels: int, has_dsp: bool = False,
               has_mve: bool = False) -> int:
    """``arm_avgpool_s8_get_buffer_size``: one int32 sum per channel with DSP and no MVE,
    otherwise 0 (``output_width`` is part of the API but does not matter)."""
    _positive(output_width, "output_width")
    _positive(channels, "channels")
    return channels * _INT32_BYTES if has_dsp and not has_mve else 0


def avgpool_s16(*, output_width: int, channels: int, has_dsp: bool = False,
                has_mve: bool = False) -> int:
    """``arm_avgpool_s16_get_buffer_size``: the same rule as :func:`avgpool_s8`."""
    return avgpool_s8(output_width=output_width, channels=channels, has_dsp=has_dsp,
                      has_mve=has_mve)
