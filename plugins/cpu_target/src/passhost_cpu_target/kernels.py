"""Fast NumPy kernels: elementwise and broadcast math, matrix products, softmax,
reductions and data movement. Convolution lives in :mod:`.conv`, pooling in :mod:`.pool`.

Every kernel writes its result into a preallocated ``out`` (outputs first, then inputs,
then scratch arrays, then attributes as keywords) and returns nothing. Elementwise and
broadcast kernels stay correct when ``out`` is one of their inputs: NumPy ufuncs read
each element before writing it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "abs_", "add", "batch_matmul", "bias_add", "cast", "clip", "concatenate", "copy",
    "copy_reshaped", "dense", "divide", "exp", "log", "matmul", "maximum", "minimum",
    "multiply", "negative", "power", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum",
    "relu", "rsqrt", "sigmoid", "silu", "softmax", "sqrt", "subtract", "tanh", "transpose",
]


# -- binary broadcast math ---------------------------------------------------------------------
def add(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = a + b`` (broadcasting)."""
    np.add(a, b, out=out)


def subtract(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = a - b`` (broadcasting)."""
    np.subtract(a, b, out=out)


def multiply(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = a * b`` (broadcasting)."""
    np.multiply(a, b, out=out)


def divide(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = a / b`` for floats (broadcasting; IEEE results, no warnings)."""
    with np.errstate(all="ignore"):
        np.true_divide(a, b, out=out)


def power(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = a ** b`` for floats (broadcasting; IEEE results, no warnings)."""
    with np.errstate(all="ignore"):
        np.power(a, b, out=out)


def maximum(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = max(a, b)`` elementwise (NaN propagates)."""
    np.maximum(a, b, out=out)


def minimum(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = min(a, b)`` elementwise (NaN propagates)."""
    np.minimum(a, b, out=out)


def bias_add(out: np.ndarray, data: np.ndarray, bias: np.ndarray, *,
             shape: tuple[int, ...]) -> None:
    """``out = data + bias`` with the 1-D ``bias`` viewed as ``shape`` (its axis kept)."""
    np.add(data, bias.reshape(shape), out=out)


# -- unary math --------------------------------------------------------------------------------
def relu(out: np.ndarray, x: np.ndarray) -> None:
    """``out = max(x, 0)``."""
    np.maximum(x, 0, out=out)


def exp(out: np.ndarray, x: np.ndarray) -> None:
    """``out = e ** x``."""
    with np.errstate(all="ignore"):
        np.exp(x, out=out)


def log(out: np.ndarray, x: np.ndarray) -> None:
    """``out = ln(x)``."""
    with np.errstate(all="ignore"):
        np.log(x, out=out)


def sqrt(out: np.ndarray, x: np.ndarray) -> None:
    """``out = sqrt(x)``."""
    with np.errstate(all="ignore"):
        np.sqrt(x, out=out)


def rsqrt(out: np.ndarray, x: np.ndarray) -> None:
    """``out = 1 / sqrt(x)``."""
    with np.errstate(all="ignore"):
        np.sqrt(x, out=out)
        np.reciprocal(out, out=out)


def tanh(out: np.ndarray, x: np.ndarray) -> None:
    """``out = tanh(x)``."""
    with np.errstate(all="ignore"):
        np.tanh(x, out=out)


def negative(out: np.ndarray, x: np.ndarray) -> None:
    """``out = -x`` (integers wrap around)."""
    np.negative(x, out=out)


def abs_(out: np.ndarray, x: np.ndarray) -> None:
    """``out = |x|``."""
    np.absolute(x, out=out)


def sigmoid(out: np.ndarray, x: np.ndarray, positive: np.ndarray, denominator: np.ndarray,
            ) -> None:
    """``out = 1 / (1 + e ** -x)``, never exponentiating a positive number: with
    ``e = e ** -|x|`` it is ``1 / (1 + e)`` where x >= 0 and ``e / (1 + e)`` elsewhere.
    ``positive`` (bool) and ``denominator`` are scratch arrays shaped like ``out``."""
    with np.errstate(all="ignore"):
        np.greater_equal(x, 0, out=positive)
        np.absolute(x, out=out)
        np.negative(out, out=out)
        np.exp(out, out=out)
        np.add(out, 1, out=denominator)
        np.copyto(out, 1, where=positive)
        np.divide(out, denominator, out=out)


def silu(out: np.ndarray, x: np.ndarray, positive: np.ndarray, work: np.ndarray) -> None:
    """``out = x * sigmoid(x)``, the sigmoid as :func:`sigmoid` computes it (``positive`` as
    there; ``work`` is two scratch arrays shaped like ``out``, stacked)."""
    denominator, sigmoid_x = work[0, ...], work[1, ...]  # views, 0-d ones included
    sigmoid(sigmoid_x, x, positive, denominator)
    np.multiply(x, sigmoid_x, out=out)


def clip(out: np.ndarray, x: np.ndarray, *, a_min: float, a_max: float) -> None:
    """``out = x`` limited to ``[a_min, a_max]`` (floats)."""
    with np.errstate(all="ignore"):
        lo = np.asarray(a_min, dtype=out.dtype)
        hi = np.asarray(a_max, dtype=out.dtype)
    np.clip(x, lo, hi, out=out)


def cast(out: np.ndarray, x: np.ndarray) -> None:
    """``out = x`` converted to ``out``'s dtype as NumPy ``astype`` converts."""
    with np.errstate(all="ignore"):
        np.copyto(out, x, casting="unsafe")


# -- matrix products ---------------------------------------------------------------------------
def dense(out: np.ndarray, data: np.ndarray, weight: np.ndarray) -> None:
    """``out = data @ weight.T`` (weight of shape (units, in))."""
    np.matmul(data, weight.T, out=out)


def matmul(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out = a @ b`` with broadcast batch axes."""
    with np.errstate(all="ignore"):
        np.matmul(a, b, out=out)


def batch_matmul(out: np.ndarray, x: np.ndarray, y: np.ndarray, *, transpose_a: bool,
                 transpose_b: bool) -> None:
    """``out = x @ y`` of 3-D tensors, either one transposed in its last two axes first."""
    a = x.transpose(0, 2, 1) if transpose_a else x
    b = y.transpose(0, 2, 1) if transpose_b else y
    np.matmul(a, b, out=out)


# -- softmax -----------------------------------------------------------------------------------
def softmax(out: np.ndarray, x: np.ndarray, peak: np.ndarray, total: np.ndarray, *,
            axis: int) -> None:
    """``out = e ** (x - max) / sum(e ** (x - max))`` along ``axis``; ``peak`` and
    ``total`` are scratch arrays shaped like ``x`` with ``axis`` of length 1."""
    np.max(x, axis=axis, keepdims=True, out=peak)
    np.subtract(x, peak, out=out)
    np.exp(out, out=out)
    np.sum(out, axis=axis, keepdims=True, out=total)
    np.divide(out, total, out=out)


# -- reductions --------------------------------------------------------------------------------
def reduce_sum(out: np.ndarray, x: np.ndarray, *, axes: tuple[int, ...],
               shape: tuple[int, ...]) -> None:
    """``out`` = the sum of ``x`` over ``axes``; ``shape`` is ``out``'s shape with the
    reduced axes kept as length 1."""
    np.sum(x, axis=axes, keepdims=True, out=out.reshape(shape))


def reduce_mean(out: np.ndarray, x: np.ndarray, *, axes: tuple[int, ...],
                shape: tuple[int, ...], count: int) -> None:
    """``out`` = the mean of ``x`` over ``axes`` (``count`` elements each); ``shape`` as
    for :func:`reduce_sum`."""
    kept = out.reshape(shape)
    np.sum(x, axis=axes, keepdims=True, out=kept)
    np.divide(kept, count, out=kept)


def reduce_max(out: np.ndarray, x: np.ndarray, *, axes: tuple[int, ...],
               shape: tuple[int, ...]) -> None:
    """``out`` = the largest element of ``x`` over ``axes``; ``shape`` as for
    :func:`reduce_sum`."""
    np.max(x, axis=axes, keepdims=True, out=out.reshape(shape))


def reduce_min(out: np.ndarray, x: np.ndarray, *, axes: tuple[int, ...],
               shape: tuple[int, ...]) -> None:
    """``out`` = the smallest element of ``x`` over ``axes``; ``shape`` as for
    :func:`reduce_sum`."""
    np.min(x, axis=axes, keepdims=True, out=out.reshape(shape))


# -- data movement -----------------------------------------------------------------------------
def copy(out: np.ndarray, x: np.ndarray) -> None:
    """``out = x``."""
    np.copyto(out, x)


def copy_reshaped(out: np.ndarray, x: np.ndarray) -> None:
    """``out = x`` read in row-major order (reshape, flatten, squeeze, expand_dims)."""
    np.copyto(out, x.reshape(out.shape))


def transpose(out: np.ndarray, x: np.ndarray, *, axes: tuple[int, ...]) -> None:
    """``out = x`` with its axes permuted (output axis i is input axis ``axes[i]``)."""
    np.copyto(out, x.transpose(axes))


def concatenate(out: np.ndarray, xs: tuple[np.ndarray, ...], *, axis: int) -> None:
    """``out`` = the arrays ``xs`` joined along ``axis``."""
    np.concatenate(xs, axis=axis, out=out)
