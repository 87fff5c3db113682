"""Geometry of sliding windows (convolution and pooling): where each window tap reads.

Padding is never materialised by the convolution kernels: for each tap offset along an
axis, :func:`axis_taps` gives the outputs whose tap lands in real data and the input
elements they read, so padded taps are simply skipped (their scratch stays zero).
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["AxisTap", "axis_taps"]

#: (output slice, input slice) of one tap offset along one axis, or None when every
#: output's tap falls in the padding.
AxisTap = tuple[slice, slice] | None


@lru_cache(maxsize=4096)
def axis_taps(size: int, out: int, k: int, stride: int, dilation: int, pad: int,
              ) -> tuple[AxisTap, ...]:
    """For each of the ``k`` tap offsets of an axis of ``size`` inputs and ``out`` outputs
    (output ``o``'s tap ``t`` reads input ``o * stride + t * dilation - pad``): the outputs
    whose tap reads an input, and those inputs."""
    taps: list[AxisTap] = []
    for t in range(k):
        shift = t * dilation - pad
        first = max(0, -(shift // stride))
        stop = min(out, (size - 1 - shift) // stride + 1)
        if stop <= first:
            taps.append(None)
            continue
        start = first * stride + shift
        taps.append((slice(first, stop),
                     slice(start, start + (stop - first - 1) * stride + 1, stride)))
    return tuple(taps)
