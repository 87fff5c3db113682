"""Converters of the ONNX signal-processing operators (DFT, STFT, the window functions,
MelWeightMatrix) and of Det.

The window functions and MelWeightMatrix are folded into constants while importing. DFT
becomes the ``dft`` operator, which keeps ONNX's layout (a trailing [real, imag] axis); STFT
gathers the frames with ``take``, multiplies them by the window and transforms each with
``dft``. Det becomes the ``det`` operator.
"""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_data import passhost_dtype
from passhost.frontend.onnx_registry import Entry
from passhost.ir.types import is_float_dtype
from passhost.relay.expr import const

__all__ = ["CONVERTERS"]

_SIGNAL_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _scalar_int(ctx: NodeContext, index: int, what: str) -> int:
    """Input ``index``, a scalar (or one-element) integer known while importing."""
    value = ctx.known(index, what, "it decides the output's shape")
    if value.size != 1 or value.dtype.kind not in "iu":
        raise ctx.error(f"expected {what} (input {index}) to be one integer, found "
                        f"{value.dtype.name} of shape {list(value.shape)}")
    return int(value.reshape(-1)[0])


def _flag(ctx: NodeContext, name: str, default: int) -> bool:
    value = int(ctx.attr(name, default))
    if value not in (0, 1):
        raise ctx.error(f"expected attribute {name!r} 0 or 1, found {value}")
    return bool(value)


def _output_dtype(ctx: NodeContext) -> str:
    return passhost_dtype(int(ctx.attr("output_datatype", 1)),
                          f"{ctx.where}: attribute 'output_datatype'")


# -- window functions --------------------------------------------------------------------------
def _window(ctx: NodeContext, cosines: tuple[float, ...]) -> Value:
    """The window sum_m c_m cos(2 pi m n / N) of ``size`` points: N is the size when
    periodic, one less otherwise."""
    size = _scalar_int(ctx, 0, "size")
    if size < 1:
        raise ctx.error(f"expected a size of at least 1, found {size}")
    period = size if _flag(ctx, "periodic", 1) else size - 1
    with np.errstate(invalid="ignore"):  # one symmetric point: 0 / 0, NaN as in ONNX
        phase = 2 * np.pi * np.arange(size) / period
        out = sum(c * np.cos(m * phase) for m, c in enumerate(cosines))
        return np.asarray(out, dtype=np.float64).astype(_output_dtype(ctx))


def _hann_window(ctx: NodeContext) -> Value:
    """HannWindow: a constant (0.5 - 0.5 cos(2 pi n / N)) of the dtype ``output_datatype``;
    periodic (N = size) or symmetric (N = size - 1). The size must be known while
    compiling."""
    return _window(ctx, (0.5, -0.5))


def _hamming_window(ctx: NodeContext) -> Value:
    """HammingWindow: a constant (25/46 - 21/46 cos(2 pi n / N)) of the dtype
    ``output_datatype``; periodic (N = size) or symmetric (N = size - 1). The size must be
    known while compiling."""
    return _window(ctx, (25 / 46, -21 / 46))


def _blackman_window(ctx: NodeContext) -> Value:
    """BlackmanWindow: a constant (0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)) of the
    dtype ``output_datatype``; periodic (N = size) or symmetric (N = size - 1). The size must
    be known while compiling."""
    return _window(ctx, (0.42, -0.5, 0.08))


# -- MelWeightMatrix ---------------------------------------------------------------------------
def _mel_weight_matrix(ctx: NodeContext) -> Value:
    """MelWeightMatrix: a constant [dft_length // 2 + 1, num_mel_bins] matrix of triangular
    filters on the mel scale, of the dtype ``output_datatype``, computed in the edges'
    precision (float32 for half-precision edges). Every input must be known while
    compiling."""
    bins = _scalar_int(ctx, 0, "num_mel_bins")
    length = _scalar_int(ctx, 1, "dft_length")
    rate = _scalar_int(ctx, 2, "sample_rate")
    if bins < 1 or length < 1 or rate < 1:
        raise ctx.error(f"expected num_mel_bins, dft_length and sample_rate of at least 1, "
                        f"found {bins}, {length} and {rate}")
    edges = []
    for index, what in ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")):
        value = ctx.known(index, what, "the matrix is built while compiling")
        if value.size != 1 or not is_float_dtype(value.dtype.name):
            raise ctx.error(f"expected {what} (input {index}) to be one floating-point "
                            f"number, found {value.dtype.name} of shape {list(value.shape)}")
        edges.append(value.reshape(()))
    if not 0 <= edges[0] <= edges[1] < np.inf:
        raise ctx.error(f"expected 0 <= lower_edge_hertz <= upper_edge_hertz (finite), found "
                        f"{edges[0]} and {edges[1]}")
    # The points are computed in the edges' dtype with the operations ONNX's reference uses
    # (log1p and expm1 over ln 10): the filters' integer corners are floors, and an edge on
    # a bin (832.5 to 1665 Hz, 27 points at 3330 Hz) rounds to one side or the other with
    # log10 and 10 ** x. Half-precision edges are taken in float32.
    work = edges[0].dtype if edges[0].dtype.itemsize >= 4 else np.dtype(np.float32)
    low, high = (e.astype(work) for e in edges)
    mel_low, mel_high = (2595 * np.log1p(f / 700) / np.log(10) for f in (low, high))
    points = np.arange(bins + 2)
    mels = points * ((mel_high - mel_low) / points.size) + mel_low
    hertz = 700 * np.expm1(mels / 2595 * np.log(10))
    corner = (((length + 1) * hertz) // rate).astype(np.int64)
    left, centre, right = corner[:-2], corner[1:-1], corner[2:]
    j = np.arange(length // 2 + 1).reshape(-1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rising = np.where(centre > left, (j - left) / (centre - left), j == centre)
        falling = (right - j) / (right - centre)
    out = np.where((j >= centre) & (j < right), falling,
                   np.where((j >= left) & (j <= centre), rising, 0.0))
    return out.astype(_output_dtype(ctx))


# -- DFT and STFT ------------------------------------------------------------------------------
def _signal_dtype(ctx: NodeContext, index: int, what: str) -> str:
    dtype = ctx.dtype(index)
    if dtype not in _SIGNAL_DTYPES:
        raise ctx.error(f"expected {what} (input {index}) of type "
                        f"{', '.join(_SIGNAL_DTYPES)}, found {dtype}")
    return dtype


def _check_signal(ctx: NodeContext, what: str, rank: int | None) -> tuple[int, ...]:
    """The shape of input 0, a float signal of ``rank`` (None: 2 or more) whose last axis
    holds [real] or [real, imag]."""
    _signal_dtype(ctx, 0, what)
    shape = ctx.shape(0)
    if len(shape) < 2 or rank not in (None, len(shape)) or shape[-1] not in (1, 2):
        want = "2 or more" if rank is None else str(rank)
        raise ctx.error(f"expected {what} (input 0) of rank {want} whose last axis holds "
                        f"[real] or [real, imag] (size 1 or 2), found shape {list(shape)}")
    return shape


def _dft(ctx: NodeContext, axis: int) -> Value:
    shape = _check_signal(ctx, "input", None)
    rank = len(shape)
    if not -rank <= axis <= rank - 2 or axis == -1:
        raise ctx.error(f"expected an axis in [{-rank}, -2] or [0, {rank - 2}] (not the "
                        f"[real, imag] axis), found {axis}")
    axis %= rank
    inverse, onesided = _flag(ctx, "inverse", 0), _flag(ctx, "onesided", 0)
    if onesided and shape[-1] != (2 if inverse else 1):
        raise ctx.error(f"expected {'complex' if inverse else 'real'} input (a last axis of "
                        f"{2 if inverse else 1}) for a one-sided {'inverse ' * inverse}DFT, "
                        f"found shape {list(shape)}")
    points = shape[axis]
    if ctx.has_input(1):
        length = _scalar_int(ctx, 1, "dft_length")
    else:
        length = 2 * (points - 1) if inverse and onesided else points
    if length < 1:
        raise ctx.error(f"expected a dft_length of at least 1, found {length}")
    return relay.dft(ctx.input(0), axis=axis, length=length, inverse=inverse,
                     onesided=onesided)


def _dft_17(ctx: NodeContext) -> Value:
    """DFT (opset 17): the ``dft`` operator; real or complex input (a trailing axis of 1 or
    2), attribute ``axis``, ``inverse``, ``onesided`` (RFFT of a real input, IRFFT of a
    complex one) and ``dft_length`` (truncate or zero-pad), which must be known while
    compiling."""
    return _dft(ctx, int(ctx.attr("axis", 1)))


def _dft_20(ctx: NodeContext) -> Value:
    """DFT (opset 20): as at opset 17 with the axis an input (default -2), which must be
    known while compiling."""
    axis = _scalar_int(ctx, 2, "axis") if ctx.has_input(2) else -2
    return _dft(ctx, axis)


def _stft(ctx: NodeContext) -> Value:
    """STFT: the frames gathered by ``take``, multiplied by the window, then the ``dft``
    operator over each frame; real or complex signal, window, frame_length and onesided.
    frame_step and frame_length must be known while compiling."""
    shape = _check_signal(ctx, "signal", 3)
    dtype = _signal_dtype(ctx, 0, "signal")
    points = shape[1]
    step = _scalar_int(ctx, 1, "frame_step")
    window_shape = ctx.shape(2) if ctx.has_input(2) else None
    if window_shape is not None and len(window_shape) != 1:
        raise ctx.error(f"expected a 1-D window, found shape {list(window_shape)}")
    if ctx.has_input(3):
        length = _scalar_int(ctx, 3, "frame_length")
        if window_shape is not None and window_shape[0] != length:
            raise ctx.error(f"expected a window of frame_length {length} points, found "
                            f"{window_shape[0]}")
    else:
        length = window_shape[0] if window_shape is not None else points
    if step < 1 or not 1 <= length <= points:
        raise ctx.error(f"expected frame_step >= 1 and frame_length in [1, {points}] (the "
                        f"signal's length), found {step} and {length}")
    onesided = _flag(ctx, "onesided", 1)
    frames = (points - length) // step + 1
    starts = step * np.arange(frames).reshape(-1, 1)
    index = (starts + np.arange(length).reshape(1, -1)).astype(np.int64)
    x = relay.take(ctx.input(0), const(index), axis=1)  # (batch, frames, length, channels)
    if window_shape is not None:
        if _signal_dtype(ctx, 2, "window") != dtype:
            raise ctx.error(f"expected a window of type {dtype} (the signal's), found "
                            f"{ctx.dtype(2)}")
        window = relay.reshape(ctx.input(2), newshape=(1, 1, length, 1))
        x = relay.multiply(x, window)
    return relay.dft(x, axis=2, length=length, onesided=onesided)


# -- Det ---------------------------------------------------------------------------------------
def _det(ctx: NodeContext) -> Value:
    """Det: the ``det`` operator (the determinant of each matrix in the last two axes)."""
    shape = ctx.shape(0)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"expected square matrices in the last two axes, found shape "
                        f"{list(shape)}")
    return relay.det(ctx.input(0))


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "HannWindow": _hann_window,
    "HammingWindow": _hamming_window,
    "BlackmanWindow": _blackman_window,
    "MelWeightMatrix": _mel_weight_matrix,
    "DFT": {17: _dft_17, 20: _dft_20},
    "STFT": _stft,
    "Det": _det,
}
