"""Image operators: resizing (nearest, linear, cubic) of any axes of a tensor.

``resize`` follows ONNX's Resize. Each axis is resized on its own (interpolation is
separable): output index ``x`` maps to a coordinate ``x_in`` of the input axis by the
coordinate transformation mode, with ``scale`` the axis' scale (``size / in`` unless given)
and ``out = scale * in`` (a float):

* ``half_pixel``: ``(x + 0.5) / scale - 0.5``; ``pytorch_half_pixel`` the same, but 0 when
  ``out`` is 1; ``half_pixel_symmetric`` shifts it by ``in / 2 * (1 - size / out)``;
* ``align_corners``: ``x * (in - 1) / (out - 1)`` (0 when ``out`` is 1);
* ``asymmetric``: ``x / scale``; ``tf_half_pixel_for_nn``: ``(x + 0.5) / scale``;
* ``tf_crop_and_resize``: ``x`` spans the region ``[start, end]`` of ``roi`` (fractions of
  ``in - 1``); coordinates outside the input give ``extrapolation_value``.

``nearest`` takes the input element nearest to ``x_in`` (``nearest_mode`` breaks ties or
always rounds down or up); ``linear`` weighs the two neighbours, ``cubic`` four, with Keys'
kernel of parameter ``cubic_coeff_a``. Neighbours beyond the edges repeat the edge element
or, with ``exclude_outside``, weigh 0 (the other weights renormalised). With ``antialias``,
a downscaling linear or cubic resize stretches its kernel by ``1 / scale`` (a low-pass
filter). Integer data is interpolated in float64 and rounded half to even, saturating.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from attrs import field

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

__all__ = ["ResizeAttrs", "resize"]

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
    transformation (empty: output / input), the region of interest of
    ``tf_crop_and_resize`` (all starts, then all ends; empty: the whole input) and the
    interpolation options."""

    size: tuple[int, ...] = ints_field(())
    scales: tuple[float, ...] = _floats_field()
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
    if roi and (len(roi) != 2 * data.ndim or not all(math.isfinite(r) for r in roi)):
        args.fail_attr("roi", f"none or {2 * data.ndim} numbers (starts, then ends)", roi)
    for n, m in zip(data.shape, size):
        if n == 0 and m > 0:
            args.fail(0, f"a tensor with elements to resize into {size}", data)
    return TensorType(size, data.dtype)


def _taps(attrs_value: ResizeAttrs, n: int, m: int, scale: float, start: float,
          end: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Resizing one axis from ``n`` to ``m``: the input indices ``(m, taps)``, their
    weights (None for nearest) and which outputs are extrapolated (or None)."""
    x_in, outside = _coordinates(attrs_value, n, m, scale, start, end)
    if attrs_value.method == "nearest":
        index = _round(x_in, attrs_value.nearest_mode)[:, None]
        return np.clip(index, 0, n - 1), None, outside
    base = np.floor(x_in)
    frac = x_in - base
    # Tap offsets from floor(x_in): -half+1 .. half; the kernel is stretched by 1 / scale
    # when an antialiased resize shrinks the axis.
    cubic = attrs_value.method == "cubic"
    stretch = min(scale, 1.0) if attrs_value.antialias else 1.0
    reach = 2.0 if cubic else 1.0
    half = math.ceil(reach / stretch) if stretch < 1.0 else int(reach)
    offsets = np.arange(1 - half, half + 1)
    dist = np.abs(offsets[None, :] - frac[:, None]) * stretch
    if cubic:
        weights = _keys_kernel(dist, attrs_value.cubic_coeff_a)
    else:
        weights = np.clip(1.0 - dist, 0.0, 1.0)
    index = base.astype(np.int64)[:, None] + offsets[None, :]
    if attrs_value.exclude_outside:
        weights = np.where((index < 0) | (index >= n), 0.0, weights)
    total = weights.sum(axis=1, keepdims=True)
    weights = weights / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, n - 1), weights, outside


def _coordinates(attrs_value: ResizeAttrs, n: int, m: int, scale: float, start: float,
                 end: float) -> tuple[np.ndarray, np.ndarray | None]:
    """The input coordinate of each output index, and which lie outside the input
    (``tf_crop_and_resize`` only, else None)."""
    x = np.arange(m, dtype=np.float64)
    out = scale * n
    mode = attrs_value.coordinate_transformation_mode
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5, None
    if mode == "half_pixel_symmetric":
        return n / 2 * (1 - m / out) + (x + 0.5) / scale - 0.5, None
    if mode == "pytorch_half_pixel":
        return (np.zeros(m) if out == 1 else (x + 0.5) / scale - 0.5), None
    if mode == "align_corners":
        return (np.zeros(m) if out == 1 else x * (n - 1) / (out - 1)), None
    if mode == "asymmetric":
        return x / scale, None
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale, None
    if out == 1:
        x_in = np.full(m, (end - start) * (n - 1) / 2)
    else:
        x_in = x * (end - start) * (n - 1) / (out - 1)
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


def _keys_kernel(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel of parameter ``a`` at distances ``d >= 0``."""
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


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


def _resize(attrs_value: ResizeAttrs, data: np.ndarray) -> np.ndarray:
    nd, size = data.ndim, attrs_value.size
    scales = attrs_value.scales or tuple(m / n if n else 1.0 for n, m in zip(data.shape, size))
    roi = attrs_value.roi or (0.0,) * nd + (1.0,) * nd
    mode = attrs_value.coordinate_transformation_mode
    interpolate = attrs_value.method != "nearest"
    floating = is_float_dtype(data.dtype.name)
    work = acc_float(data.dtype) if floating or not interpolate else np.dtype(np.float64)
    x = data.astype(work, copy=False)
    for axis, (n, m, scale) in enumerate(zip(data.shape, size, scales)):
        start, end = roi[axis], roi[axis + nd]
        if n == m and scale == 1.0 and mode != "tf_half_pixel_for_nn" and \
                (mode != "tf_crop_and_resize" or (start, end) == (0.0, 1.0)):
            continue  # the identity on this axis
        if m == 0:
            x = np.take(x, np.zeros(0, np.int64), axis=axis)
            continue
        index, weights, outside = _taps(attrs_value, n, m, scale, start, end)
        x = _resize_axis(x, axis, index, weights, outside, attrs_value.extrapolation_value)
    if data.dtype.kind in "iu" and interpolate:
        info = np.iinfo(data.dtype)
        x = np.clip(np.rint(x), info.min, info.max)
    return np.ascontiguousarray(x.astype(data.dtype, copy=False))


resize = define_op(
    "image.resize", inputs=("data",), attrs=ResizeAttrs, type_rel=_resize_rel,
    compute=_resize, pattern=OpPattern.INJECTIVE,
    description="Resize any axes to `size` (ONNX Resize): nearest, linear or cubic "
                "interpolation, one axis at a time, with ONNX's coordinate transformation "
                "modes, region of interest and antialiasing.")
