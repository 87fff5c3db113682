"""Operators of signal and audio models: ``dft``, the discrete Fourier transform of signals
stored as real numbers, and ``det``, the determinant of square matrices.

A ``dft`` signal keeps complex values in a trailing axis of size 2 ([real, imag]) or, for a
real signal, of size 1 (ONNX's layout). The transform runs along ``axis`` (not the trailing
one) over ``length`` points: the signal is truncated or zero-padded to that length. Its
variants (``inverse`` and ``onesided``):

* forward: all ``length`` bins (``onesided``: the first ``length // 2 + 1``), complex;
* inverse: the inverse transform (divided by ``length``), complex;
* inverse and onesided: the real signal of ``length`` points whose spectrum is Hermitian with
  the given first bins (IRFFT); the output's trailing axis has size 1.

Kernels compute in the input's precision (float16 and bfloat16 in float32, rounded back).
"""

from __future__ import annotations

import numpy as np

from passhost.ir.attrs import Attrs, attrs_class, bool_field, int_field
from passhost.ir.types import BFLOAT16_DTYPES, FLOAT_DTYPES, TensorType, Type
from passhost.relay.op.registry import ArgTypes, OpPattern, define_op

__all__ = ["DFTAttrs", "det", "dft", "dft_bins"]

_SIGNAL_DTYPES = (*FLOAT_DTYPES, *BFLOAT16_DTYPES)


def _wide(x: np.ndarray) -> np.ndarray:
    """``x`` in a precision NumPy's FFT and linear algebra compute in."""
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


# -- dft ---------------------------------------------------------------------------------------
@attrs_class
class DFTAttrs(Attrs):
    """Attributes of ``dft``: the signal axis, the transform's length and its variant."""

    axis: int = int_field(0)
    length: int = int_field(1, minimum=1)
    inverse: bool = bool_field(False)
    onesided: bool = bool_field(False)


def dft_bins(length: int, inverse: bool, onesided: bool) -> int:
    """How many points a ``dft`` of ``length`` points gives along its axis."""
    return length // 2 + 1 if onesided and not inverse else length


def _dft_rel(args: ArgTypes, attrs_value: DFTAttrs) -> Type:
    data = args.tensor(0, dtypes=_SIGNAL_DTYPES)
    if data.ndim < 2 or data.shape[-1] not in (1, 2):
        args.fail(0, "a tensor of rank >= 2 whose last axis holds [real] or [real, imag] "
                     "(size 1 or 2)", data)
    if not 0 <= attrs_value.axis < data.ndim - 1:
        args.fail_attr("axis", f"an axis in [0, {data.ndim - 1}) (not the [real, imag] "
                               f"axis)", attrs_value.axis)
    shape = list(data.shape)
    shape[attrs_value.axis] = dft_bins(attrs_value.length, attrs_value.inverse,
                                       attrs_value.onesided)
    shape[-1] = 1 if attrs_value.inverse and attrs_value.onesided else 2
    return TensorType(tuple(shape), data.dtype)


def _dft(attrs_value: DFTAttrs, x: np.ndarray) -> np.ndarray:
    wide = _wide(x)
    axis, length = attrs_value.axis, attrs_value.length
    signal = wide[..., 0] if wide.shape[-1] == 1 else wide[..., 0] + 1j * wide[..., 1]
    with np.errstate(all="ignore"):
        if attrs_value.inverse and attrs_value.onesided:
            return np.fft.irfft(signal, n=length, axis=axis)[..., None].astype(x.dtype)
        if attrs_value.inverse:
            out = np.fft.ifft(signal, n=length, axis=axis)
        else:
            out = np.fft.fft(signal, n=length, axis=axis)
            if attrs_value.onesided:
                out = np.take(out, np.arange(length // 2 + 1), axis=axis)
        return np.stack([out.real, out.imag], axis=-1).astype(x.dtype)


dft = define_op(
    "dft", inputs=("data",), type_rel=_dft_rel, compute=_dft, attrs=DFTAttrs,
    pattern=OpPattern.OPAQUE,
    description="Discrete Fourier transform along an axis of a signal whose last axis holds "
                "[real, imag] (or [real]): forward, inverse, one-sided forward (RFFT) or "
                "one-sided inverse (IRFFT, real output), truncated or zero-padded to length.")


# -- det ---------------------------------------------------------------------------------------
def _det_rel(args: ArgTypes, _attrs: object) -> Type:
    data = args.tensor(0, dtypes=_SIGNAL_DTYPES)
    if data.ndim < 2 or data.shape[-1] != data.shape[-2]:
        args.fail(0, "a tensor of rank >= 2 whose last two axes are equal (square matrices)",
                  data)
    return TensorType(data.shape[:-2], data.dtype)


def _det(_attrs: object, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(np.linalg.det(_wide(x)), dtype=x.dtype)


det = define_op(
    "det", inputs=("data",), type_rel=_det_rel, compute=_det, pattern=OpPattern.OPAQUE,
    description="The determinant of each square matrix in the last two axes (LU "
                "factorisation).")
