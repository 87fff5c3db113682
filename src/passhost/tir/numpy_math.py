"""NumPy references of the math functions NumPy lacks, or computes unstably: the meaning of
the TIR intrinsics and graph operators of the same names."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["erf_float64", "rsqrt", "sigmoid"]


def rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x), elementwise, in the array's dtype."""
    return np.reciprocal(np.sqrt(x))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function of a float array, in its dtype (only ever exponentiates a
    non-positive number, so large |x| neither overflows nor loses precision)."""
    e = np.exp(-np.abs(x))
    one = np.ones((), x.dtype)
    return np.where(x >= 0, one / (one + e), e / (one + e))


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ERF_SPLIT = 2.0
_ERF_TERMS = 40


def erf_float64(x: np.ndarray) -> np.ndarray:
    """The error function of a float64 array, vectorised (relative error about 1e-15)."""
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    out = np.empty_like(ax)
    small = ax < _ERF_SPLIT
    # |x| < 2: erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (1 * 3 * ... * (2n+1)),
    # a series of positive terms (Abramowitz & Stegun 7.1.6), converged after 40 terms.
    xs = ax[small]
    x2 = xs * xs
    term = xs
    total = xs
    for n in range(1, _ERF_TERMS):
        term = term * (2.0 * x2) / (2 * n + 1)
        total = total + term
    out[small] = _TWO_OVER_SQRT_PI * np.exp(-x2) * total
    # |x| >= 2 (and NaN): 1 - erfc(|x|), with erfc(z) = exp(-z^2) / sqrt(pi) / K(z) and the
    # continued fraction K(z) = z + (1/2) / (z + 1 / (z + (3/2) / (z + ...))) (A&S 7.1.14),
    # evaluated bottom-up from 40 levels.
    xl = ax[~small]
    k = xl
    for n in range(_ERF_TERMS, 0, -1):
        k = xl + (n / 2.0) / k
    out[~small] = 1.0 - np.exp(-xl * xl) / math.sqrt(math.pi) / k
    return np.copysign(out, x)
