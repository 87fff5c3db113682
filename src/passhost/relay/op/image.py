"""Image operators: resizing (nearest, linear, cubic) of any axes of a tensor, and sampling
channels-first data at the positions of a grid.

``resize`` follows ONNX's Resize. Each axis is resized on its own (interpolation is
separable): output index ``x`` maps to a coordinate ``x_in`` of the input axis by the
coordinate transformation mode, with ``scale`` the axis' scale (``size / in`` unless given)
and ``out = scale * in`` (a fraction):

* ``half_pixel``: ``(x + 0.5) / scale - 0.5``; ``pytorch_half_pixel`` the same, but 0 when
  ``out`` is 1; ``half_pixel_symmetric`` shifts it by ``in / 2 * (1 - size / out)``;
* ``align_corners``: ``x * (in - 1) / (out - 1)`` (0 when ``out`` is 1);
* ``asymmetric``: ``x / scale``; ``tf_half_pixel_for_nn``: ``(x + 0.5) / scale``;
* ``tf_crop_and_resize``: ``x`` spans the region ``[start, end]`` of ``roi`` (fractions of
  ``in - 1``); coordinates outside the input give ``extrapolation_value``.

A scale is a fraction (``scales[i] / scale_divisors[i]``, or ``size / in``) and the
coordinates are computed in a form that is exact whenever ``x_in`` is a whole or a half
number, so that ``nearest`` rounds as in exact arithmetic (ONNX's definition).

``nearest`` takes the input element nearest to ``x_in`` (``nearest_mode`` breaks ties or
always rounds down or up); ``linear`` weighs the two neighbours, ``cubic`` four, with Keys'
kernel of parameter ``cubic_coeff_a``. Neighbours beyond the edges repeat the edge element
or, with ``exclude_outside``, weigh 0 (the other weights renormalised). With ``antialias``,
a downscaling linear or cubic resize stretches its kernel by ``1 / scale`` (a low-pass
filter). Integer data is interpolated in float64 and rounded half to even, saturating.

Compiled to loops (its TE compute), ``resize`` evaluates the same float64 coordinate and
weight formulas per output element, in the reference's order of operations (the weights'
total in NumPy's summation order), so that both give the same bits when the compiler does
not contract multiply-adds. It keeps the kernel when interpolating int64 or uint64 data
(whose saturation bounds are no float64 numbers) and for kernels of more than
:data:`RESIZE_TE_MAX_TAPS` taps.

``grid_sample`` follows ONNX's GridSample (and PyTorch's grid_sample): a position ``g`` in
[-1, 1] along an axis of length ``n`` is the coordinate ``(g + 1) / 2 * (n - 1)`` with
``align_corners`` (-1 and 1 are the centres of the edge elements), else
``((g + 1) * n - 1) / 2`` (their outer edges). ``nearest`` rounds it half to even;
``linear`` weighs the two neighbours, ``cubic`` four (Keys' kernel, ``a = -0.75``), on every
axis. A neighbour outside the data reads 0 (``zeros``), the nearest edge element
(``border``) or the element it lands on when reflected at -1 and 1 (``reflection``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from attrs import field

from passhost import te
from passhost.errors import AttrError
from passhost.ir.attrs import (
    Attrs,
    attrs_class,
    bool_field,
    float_field,
    ints_field,
    str_field,
)
from passhost.ir.types import ANY_FLOAT_DTYPES, INT_DTYPES, TensorType, Type, is_float_dtype
from passhost.relay.op.accumulate import acc_float
from passhost.relay.op.registry import ArgTypes, OpPattern, define_op
from passhost.tir.expr import Max, Min, PrimExpr, Select, const

__all__ = ["GridSampleAttrs", "ResizeAttrs", "grid_sample", "resize"]

#: The coordinate transformation modes of ``resize``.
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                    "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                    "tf_crop_and_resize")
#: How ``nearest`` resizing rounds a coordinate to an input index.
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _floats_field():
    """A tuple of floats (ints accepted and converted); empty by default."""

    def convert(v: Any) -> Any:
        if isinstance(v, (list, tuple, np.ndarray)):
            return tuple(float(x) if isinstance(x, (int, float, np.integer, np.floating))
                         and not isinstance(x, bool) else x for x in v)
        return v

    def check(_inst: Any, attribute: Any, v: Any) -> None:
        if not (isinstance(v, tuple) and all(isinstance(x, float) for x in v)):
            raise AttrError(f"attribute '{attribute.name}': expected a tuple of numbers, "
                            f"found {v!r}")

    return field(default=(), converter=convert, validator=check)


@attrs_class
class ResizeAttrs(Attrs):
    """Attributes of ``resize``: the output shape, the per-axis scales of the coordinate
    transformation (empty: output / input, exactly) and the divisors that make them exact
    fractions (empty: 1), the region of interest of ``tf_crop_and_resize`` (all starts, then
    all ends; empty: the whole input) and the interpolation options."""

    size: tuple[int, ...] = ints_field(())
    scales: tuple[float, ...] = _floats_field()
    scale_divisors: tuple[int, ...] = ints_field(())
    roi: tuple[float, ...] = _floats_field()
    method: str = str_field("nearest", choices=("nearest", "linear", "cubic"))
    coordinate_transformation_mode: str = str_field("half_pixel", choices=COORDINATE_MODES)
    nearest_mode: str = str_field("round_prefer_floor", choices=NEAREST_MODES)
    cubic_coeff_a: float = float_field(-0.75)
    exclude_outside: bool = bool_field(False)
    extrapolation_value: float = float_field(0.0)
    antialias: bool = bool_field(False)


def _resize_rel(args: ArgTypes, attrs_value: ResizeAttrs) -> Type:
    nearest = attrs_value.method == "nearest"
    dtypes = (*ANY_FLOAT_DTYPES, *INT_DTYPES) + (("bool",) if nearest else ())
    data = args.tensor(0, dtypes=dtypes)
    size, scales, roi = attrs_value.size, attrs_value.scales, attrs_value.roi
    if len(size) != data.ndim or min(size, default=0) < 0:
        args.fail_attr("size", f"{data.ndim} non-negative ints (the output shape)", size)
    if scales and (len(scales) != data.ndim
                   or not all(s > 0 and math.isfinite(s) for s in scales)):
        args.fail_attr("scales", f"none or {data.ndim} positive numbers", scales)
    divisors = attrs_value.scale_divisors
    if divisors and (not scales or len(divisors) != data.ndim or min(divisors) < 1):
        args.fail_attr("scale_divisors", f"none, or {data.ndim} positive ints with scales",
                       divisors)
    if roi and (len(roi) != 2 * data.ndim or not all(math.isfinite(r) for r in roi)):
        args.fail_attr("roi", f"none or {2 * data.ndim} numbers (starts, then ends)", roi)
    for n, m in zip(data.shape, size):
        if n == 0 and m > 0:
            args.fail(0, f"a tensor with elements to resize into {size}", data)
    return TensorType(size, data.dtype)


def _taps(attrs_value: ResizeAttrs, n: int, m: int, ratio: tuple[float, float], start: float,
          end: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Resizing one axis from ``n`` to ``m`` with the scale ``ratio[0] / ratio[1]``: the
    input indices ``(m, taps)``, their weights (None for nearest) and which outputs are
    extrapolated (or None)."""
    x_in, outside = _coordinates(attrs_value, n, m, ratio, start, end,
                                 np.arange(m, dtype=np.float64))
    if attrs_value.method == "nearest":
        index = _round(x_in, attrs_value.nearest_mode)[:, None]
        return np.clip(index, 0, n - 1), None, outside
    base = np.floor(x_in)
    frac = x_in - base
    stretch, offsets = _tap_offsets(attrs_value, ratio)
    dist = np.abs(offsets[None, :] - frac[:, None]) * stretch
    if attrs_value.method == "cubic":
        weights = _keys_kernel(dist, attrs_value.cubic_coeff_a)
    else:
        weights = np.clip(1.0 - dist, 0.0, 1.0)
    index = base.astype(np.int64)[:, None] + offsets[None, :]
    if attrs_value.exclude_outside:
        weights = np.where((index < 0) | (index >= n), 0.0, weights)
    total = weights.sum(axis=1, keepdims=True)
    weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, n - 1), weights, outside


def _tap_offsets(attrs_value: ResizeAttrs, ratio: tuple[float, float],
                 ) -> tuple[float, np.ndarray]:
    """How much a linear or cubic kernel is stretched (``min(scale, 1)`` when an
    antialiased resize shrinks the axis, else 1) and the offsets of its taps from
    ``floor(x_in)``: ``-half + 1 .. half``."""
    scale = ratio[0] / ratio[1]
    stretch = min(scale, 1.0) if attrs_value.antialias else 1.0
    reach = 2.0 if attrs_value.method == "cubic" else 1.0
    half = math.ceil(reach / stretch) if stretch < 1.0 else int(reach)
    return stretch, np.arange(1 - half, half + 1)


def _coordinates(attrs_value: ResizeAttrs, n: int, m: int, ratio: tuple[float, float],
                 start: float, end: float, x: Any) -> tuple[Any, Any]:
    """The input coordinate of the output indices ``x`` (float64: an array, or a TIR
    expression for the TE compute) at the scale ``ratio`` (numerator, denominator), and
    whether they lie outside the input (``tf_crop_and_resize`` only, else None). Each is
    one division of exact products, then an exact shift, so that coordinates that are
    whole or half numbers come out exact."""
    num, den = ratio
    halves = 2 * x + 1  # twice x + 0.5
    out_minus_1 = num * n - den  # (out - 1) * den
    mode = attrs_value.coordinate_transformation_mode
    if mode in ("half_pixel", "pytorch_half_pixel"):
        if mode == "pytorch_half_pixel" and out_minus_1 == 0:
            return 0 * x, None
        return halves * den / (2 * num) - 0.5, None
    if mode == "half_pixel_symmetric":
        # in / 2 * (1 - m / out) + (x + 0.5) / scale - 0.5, rearranged
        return (n - 1) / 2 + (halves - m) * den / (2 * num), None
    if mode == "align_corners":
        return (0 * x if out_minus_1 == 0 else x * (n - 1) * den / out_minus_1), None
    if mode == "asymmetric":
        return x * den / num, None
    if mode == "tf_half_pixel_for_nn":
        return halves * den / (2 * num), None
    if out_minus_1 == 0:
        x_in = 0 * x + (end - start) * (n - 1) / 2
    else:
        x_in = x * (end - start) * (n - 1) * den / out_minus_1
    x_in = x_in + start * (n - 1)
    return x_in, (x_in < 0) | (x_in > n - 1)


def _round(x: np.ndarray, mode: str) -> np.ndarray:
    """Coordinates rounded to indices as ``nearest_mode`` says."""
    if mode == "floor":
        out = np.floor(x)
    elif mode == "ceil":
        out = np.ceil(x)
    else:
        base = np.floor(x)
        frac = x - base
        up = frac > 0.5 if mode == "round_prefer_floor" else frac >= 0.5
        out = base + up
    return out.astype(np.int64)


def _keys_kernel(d: Any, a: float, where: Any = np.where) -> Any:
    """Keys' cubic convolution kernel of parameter ``a`` at distances ``d >= 0`` (arrays,
    or TIR expressions with ``where`` a select)."""
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return where(d <= 1, near, where(d < 2, far, 0.0))


def _resize_axis(x: np.ndarray, axis: int, index: np.ndarray, weights: np.ndarray | None,
                 outside: np.ndarray | None, fill: float) -> np.ndarray:
    """Resize axis ``axis`` of ``x``: a weighted sum of the gathered taps."""
    if weights is None:
        out = np.take(x, index[:, 0], axis=axis)
    else:
        shape = [1] * x.ndim
        shape[axis] = index.shape[0]
        out = np.zeros((), x.dtype)
        for k in range(index.shape[1]):
            out = out + np.take(x, index[:, k], axis=axis) * \
                weights[:, k].astype(x.dtype).reshape(shape)
    if outside is not None and outside.any():
        shape = [1] * x.ndim
        shape[axis] = outside.shape[0]
        out = np.where(outside.reshape(shape), np.asarray(fill).astype(out.dtype), out)
    return out


def _axis_steps(attrs_value: ResizeAttrs, shape: tuple[int, ...],
                ) -> list[tuple[int, int, int, tuple[float, float], float, float]]:
    """The axes that are resized (in order), each as ``(axis, n, m, (num, den), start,
    end)``: from length ``n`` to ``m`` at the scale ``num / den``, over the region
    ``[start, end]`` of ``tf_crop_and_resize``. Axes the resize leaves as they are are left
    out."""
    nd, size = len(shape), attrs_value.size
    if attrs_value.scales:
        ratios = list(zip(attrs_value.scales, attrs_value.scale_divisors or (1,) * nd))
    else:
        ratios = [(m, n) if n else (1, 1) for n, m in zip(shape, size)]
    roi = attrs_value.roi or (0.0,) * nd + (1.0,) * nd
    mode = attrs_value.coordinate_transformation_mode
    steps = []
    for axis, (n, m, (num, den)) in enumerate(zip(shape, size, ratios)):
        start, end = roi[axis], roi[axis + nd]
        if n == m and num == den and mode != "tf_half_pixel_for_nn" and \
                (mode != "tf_crop_and_resize" or (start, end) == (0.0, 1.0)):
            continue  # the identity on this axis
        steps.append((axis, n, m, (float(num), float(den)), start, end))
    return steps


def _work_dtype(attrs_value: ResizeAttrs, dtype: np.dtype) -> np.dtype:
    """The dtype the resize computes in: float64 to interpolate integers, else the one the
    data's kernels compute in."""
    if is_float_dtype(dtype.name) or attrs_value.method == "nearest":
        return acc_float(dtype)
    return np.dtype(np.float64)


def _resize(attrs_value: ResizeAttrs, data: np.ndarray) -> np.ndarray:
    x = data.astype(_work_dtype(attrs_value, data.dtype), copy=False)
    for axis, n, m, ratio, start, end in _axis_steps(attrs_value, data.shape):
        if m == 0:
            x = np.take(x, np.zeros(0, np.int64), axis=axis)
            continue
        index, weights, outside = _taps(attrs_value, n, m, ratio, start, end)
        x = _resize_axis(x, axis, index, weights, outside, attrs_value.extrapolation_value)
    if attrs_value.method != "nearest":
        x = _as_dtype(x, data.dtype)
    return np.ascontiguousarray(x.astype(data.dtype, copy=False))


def _as_dtype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Interpolated values ``x`` as ``dtype``: integers rounded half to even, saturating."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = np.clip(np.rint(x), info.min, info.max)
    return x.astype(dtype, copy=False)


# -- image.resize as loops -----------------------------------------------------------------
#: The most taps per output element (an antialiased downscale widens the kernel) the TE
#: compute of ``resize`` expands; wider kernels keep the NumPy kernel.
RESIZE_TE_MAX_TAPS = 64
_F64 = "float64"


def _clip_te(v: PrimExpr, lo: float, hi: float) -> PrimExpr:
    """``np.clip(v, lo, hi)`` of a float expression (NaN stays NaN)."""
    return Select(v < lo, const(lo, v.dtype), Select(v > hi, const(hi, v.dtype), v))


def _to_index(v: PrimExpr, lo: int, hi: int) -> PrimExpr:
    """The whole float ``v`` as an index clamped into ``[lo, hi]`` (NaN gives ``lo``, as
    the reference's integer conversion and clip do), so that the conversion never
    overflows."""
    inside = Select(v <= hi, v, const(float(hi), v.dtype))
    return te.cast(Select(v >= lo, inside, const(float(lo), v.dtype)), te.INDEX_DTYPE)


def _round_te(x: PrimExpr, mode: str) -> PrimExpr:
    """:func:`_round` of one coordinate (before its conversion to an integer)."""
    if mode == "floor":
        return te.floor(x)
    if mode == "ceil":
        return te.ceil(x)
    base = te.floor(x)
    frac = x - base
    up = frac > 0.5 if mode == "round_prefer_floor" else frac >= 0.5
    return Select(up, base + 1.0, base)


def _pairwise_sum(terms: list[PrimExpr]) -> PrimExpr:
    """The sum of ``terms`` in the order NumPy's ``sum`` adds up to 128 values (pairwise:
    below 8 one after the other, else in 8 running sums combined as a tree, then the rest),
    so that the weights of :func:`_taps` are normalised by the same total."""
    if len(terms) < 8:
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total
    runs = list(terms[:8])
    whole = len(terms) - len(terms) % 8
    for k in range(8, whole):
        runs[k % 8] = runs[k % 8] + terms[k]
    total = ((runs[0] + runs[1]) + (runs[2] + runs[3])) + ((runs[4] + runs[5])
                                                           + (runs[6] + runs[7]))
    for t in terms[whole:]:
        total = total + t
    return total


def _taps_te(attrs_value: ResizeAttrs, n: int, ratio: tuple[float, float],
             x_in: PrimExpr) -> list[tuple[PrimExpr, PrimExpr | None]]:
    """:func:`_taps` of one output element at input coordinate ``x_in``: the input index
    of every tap and its weight (None for nearest)."""
    if attrs_value.method == "nearest":
        return [(_to_index(_round_te(x_in, attrs_value.nearest_mode), 0, n - 1), None)]
    base = te.floor(x_in)
    frac = x_in - base
    stretch, offsets = _tap_offsets(attrs_value, ratio)
    half = int(offsets[-1])
    # floor(x_in) clamped to where every tap is still outside the axis as it was.
    first = _to_index(base, -half - 1, n + half)
    weights, indices = [], []
    for offset in offsets.tolist():
        dist = te.fabs(offset - frac)
        if stretch != 1.0:
            dist = dist * stretch
        if attrs_value.method == "cubic":
            weight = _keys_kernel(dist, attrs_value.cubic_coeff_a, te.if_then_else)
        else:
            weight = _clip_te(1.0 - dist, 0.0, 1.0)
        index = first + offset
        if attrs_value.exclude_outside:
            weight = Select((index < 0) | (index >= n), const(0.0, _F64), weight)
        weights.append(weight)
        indices.append(index)
    total = _pairwise_sum(weights)
    total = Select(total.equal(0.0), const(1.0, _F64), total)
    return [(Min(Max(index, const(0, te.INDEX_DTYPE)), const(n - 1, te.INDEX_DTYPE)),
             weight / total) for index, weight in zip(indices, weights)]


def _resize_axis_te(attrs_value: ResizeAttrs, x: te.Tensor, step: tuple) -> te.Tensor:
    """:func:`_resize_axis` of one axis as a compute: the weighted sum of its taps, in
    the order and the dtype of the reference."""
    axis, n, m, ratio, start, end = step
    shape = (*x.shape[:axis], m, *x.shape[axis + 1:])

    def element(*i: PrimExpr) -> PrimExpr:
        x_in, outside = _coordinates(attrs_value, n, m, ratio, start, end,
                                     te.cast(i[axis], _F64))
        value = te.fill(0, x.dtype) if attrs_value.method != "nearest" else None
        for index, weight in _taps_te(attrs_value, n, ratio, x_in):
            load = x[(*i[:axis], index, *i[axis + 1:])]
            value = load if weight is None else value + load * te.cast(weight, x.dtype)
        if outside is not None:
            value = Select(outside, te.fill(attrs_value.extrapolation_value, x.dtype), value)
        return value

    return te.compute(shape, element, name=f"resize_axis{axis}")


def _rint_te(v: PrimExpr) -> PrimExpr:
    """``np.rint`` of a float64 expression: halves round to the even neighbour."""
    base = te.floor(v)
    frac = v - base
    odd = (base - te.floor(base * 0.5) * 2.0).equal(1.0)
    up = (frac > 0.5) | (frac.equal(0.5) & odd)
    return Select(up, base + 1.0, base)


def _resize_te(attrs_value: ResizeAttrs, inputs: Sequence[te.Tensor],
               out: TensorType) -> te.Tensor | None:
    data = inputs[0]
    interpolate = attrs_value.method != "nearest"
    if interpolate and out.dtype in ("int64", "uint64"):
        return None  # their saturation bounds are not float64 numbers
    if math.prod(out.shape) == 0:
        return te.compute(out.shape, lambda *_: te.fill(0, out.dtype), name="resize")
    steps = _axis_steps(attrs_value, data.shape)
    if any(len(_tap_offsets(attrs_value, ratio)[1]) > RESIZE_TE_MAX_TAPS
           for _, _, _, ratio, _, _ in steps if interpolate):
        return None
    work = _work_dtype(attrs_value, np.dtype(out.dtype)).name
    x = te.compute(data.shape, lambda *i: te.cast(data[i], work), name="resize_in")
    for step in steps:
        x = _resize_axis_te(attrs_value, x, step)

    def result(*i: PrimExpr) -> PrimExpr:
        value = x[i]
        if interpolate and out.dtype in INT_DTYPES:  # rounded half to even, saturating
            info = np.iinfo(out.dtype)
            value = _clip_te(_rint_te(value), float(info.min), float(info.max))
        return te.cast(value, out.dtype)

    return te.compute(out.shape, result, name="resize")


resize = define_op(
    "image.resize", inputs=("data",), attrs=ResizeAttrs, type_rel=_resize_rel,
    compute=_resize, pattern=OpPattern.INJECTIVE, te_compute=_resize_te,
    description="Resize any axes to `size` (ONNX Resize): nearest, linear or cubic "
                "interpolation, one axis at a time, with ONNX's coordinate transformation "
                "modes, region of interest and antialiasing.")


# -- image.grid_sample ------------------------------------------------------------------------
#: How ``grid_sample`` treats positions outside the data.
PADDING_MODES = ("zeros", "border", "reflection")


@attrs_class
class GridSampleAttrs(Attrs):
    """Attributes of ``grid_sample``: the interpolation, how positions outside the data are
    read, and whether -1 and 1 are the centres (else the outer edges) of the corner
    elements."""

    method: str = str_field("linear", choices=("nearest", "linear", "cubic"))
    padding_mode: str = str_field("zeros", choices=PADDING_MODES)
    align_corners: bool = bool_field(False)


def _grid_sample_rel(args: ArgTypes, attrs_value: GridSampleAttrs) -> Type:
    nearest = attrs_value.method == "nearest"
    dtypes = (*ANY_FLOAT_DTYPES, *INT_DTYPES) + (("bool",) if nearest else ())
    data = args.tensor(0, dtypes=dtypes)
    rank = data.ndim - 2
    if rank < 1:
        args.fail(0, "a tensor (N, C, *spatial) with at least one spatial axis", data)
    grid = args.tensor(1, dtypes=ANY_FLOAT_DTYPES)
    if grid.ndim != data.ndim or grid.shape[0] != data.shape[0] or grid.shape[-1] != rank:
        args.fail(1, f"a grid ({data.shape[0]}, *out, {rank}) of {rank}-D positions "
                  f"({data.ndim}-D, as data {data})", grid)
    out = (*data.shape[:2], *grid.shape[1:-1])
    if 0 in data.shape[2:] and math.prod(out):
        args.fail(0, "a tensor with non-empty spatial axes to sample", data)
    return TensorType(out, data.dtype)


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``x`` reflected at ``lo`` and ``hi`` (again and again) until it lies between them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below = x < lo
    dist = np.where(below, lo - x, x - hi)
    flips = np.trunc(dist / span)
    rest = dist - flips * span
    even = flips % 2 == 0
    near, far = np.where(below, lo + rest, hi - rest), np.where(below, hi - rest, lo + rest)
    return np.where(below | (x > hi), np.where(even, near, far), x)


def _grid_taps(attrs_value: GridSampleAttrs, g: np.ndarray,
               n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The taps of one axis of length ``n`` at normalised positions ``g``: for each, the
    input index of every position and its weight (for ``nearest`` 1; 0 where zeros padding
    reads outside the axis)."""
    if attrs_value.align_corners:
        x, lo, hi = (g + 1) / 2 * (n - 1), 0.0, n - 1.0
    else:
        x, lo, hi = ((g + 1) * n - 1) / 2, -0.5, n - 0.5
    if attrs_value.method == "nearest":
        base, offsets, weights = np.rint(x), [0], [np.ones_like(x)]
    else:
        base = np.floor(x)
        frac = x - base
        cubic = attrs_value.method == "cubic"
        offsets = [-1, 0, 1, 2] if cubic else [0, 1]
        weights = [_keys_kernel(np.abs(k - frac), -0.75) if cubic else 1 - np.abs(k - frac)
                   for k in offsets]
    taps = []
    for k, w in zip(offsets, weights):
        i = base + k
        if attrs_value.padding_mode == "reflection":
            i = np.trunc(_reflect(i, lo, hi))
        elif attrs_value.padding_mode == "zeros":
            w = np.where((i >= 0) & (i < n), w, 0)
        index = np.clip(np.nan_to_num(i), 0, n - 1).astype(np.intp)
        taps.append((index, w))
    return taps


def _grid_sample(attrs_value: GridSampleAttrs, data: np.ndarray,
                 grid: np.ndarray) -> np.ndarray:
    n, c, *spatial = data.shape
    rank = len(spatial)
    out_shape = (n, c, *grid.shape[1:-1])
    if math.prod(out_shape) == 0:
        return np.zeros(out_shape, data.dtype)
    interpolate = attrs_value.method != "nearest"
    wide = np.float64 in (data.dtype, grid.dtype) or data.dtype.kind in "iu"
    work = np.dtype(np.float64 if wide else np.float32)
    pos = grid.astype(work).reshape(n, -1, rank)
    # Axis i of the data is position component rank - 1 - i (x, the last axis, first).
    with np.errstate(invalid="ignore"):  # non-finite positions read index 0
        axes = [_grid_taps(attrs_value, pos[..., rank - 1 - i], spatial[i])
                for i in range(rank)]
    strides = [math.prod(spatial[i + 1:]) for i in range(rank)]
    flat = data.reshape(n, c, -1)
    if interpolate:
        flat = flat.astype(work)
    out = np.zeros((n, c, pos.shape[1]), work if interpolate else data.dtype)
    for taps in itertools.product(*axes):
        index = sum(t[0] * s for t, s in zip(taps, strides))
        weight = math.prod(t[1] for t in taps)
        picked = np.take_along_axis(flat, index[:, None, :], axis=2)
        if interpolate:
            out += picked * weight[:, None, :]
        else:
            out = np.where(weight[:, None, :] > 0, picked, out)
    out = out.reshape(out_shape)
    return np.ascontiguousarray(_as_dtype(out, data.dtype) if interpolate else out)


grid_sample = define_op(
    "image.grid_sample", inputs=("data", "grid"), attrs=GridSampleAttrs,
    type_rel=_grid_sample_rel, compute=_grid_sample, pattern=OpPattern.OPAQUE,
    description="Sample channels-first data (N, C, *spatial) at the positions of a grid "
                "(N, *out, rank), normalised to [-1, 1] with x (the last axis) first (ONNX "
                "GridSample): nearest, N-linear or N-cubic interpolation; positions outside "
                "read zeros, the border or a reflection.")
