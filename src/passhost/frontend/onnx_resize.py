"""Converters of the ONNX Resize and Upsample: both become ``image.resize``, with the output
shape computed while importing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_ops import axis_index
from passhost.frontend.onnx_registry import Entry
from passhost.relay.expr import Expr
from passhost.relay.op.image import COORDINATE_MODES, NEAREST_MODES

__all__ = ["CONVERTERS"]

_POLICIES = ("stretch", "not_larger", "not_smaller")


def _choice(ctx: NodeContext, name: str, default: str, choices: Sequence[str]) -> str:
    """String attribute ``name``, which must be one of ``choices``."""
    value = ctx.attr(name, default)
    if value not in choices:
        raise ctx.error(f"expected {name} {', '.join(choices)}, found {value!r}")
    return value


def _floats(ctx: NodeContext, index: int) -> list[float] | None:
    """Input ``index`` as floats known while importing; None when absent or empty."""
    if not ctx.has_input(index):
        return None
    values = [float(v) for v in ctx.known(index).reshape(-1)]
    return values or None


def _check_scales(ctx: NodeContext, scales: Sequence[float], count: int, *,
                  upsample: bool = False) -> None:
    """``count`` finite scales, positive (at least 1 for Upsample), or an error."""
    ok = len(scales) == count and all(
        math.isfinite(s) and (s >= 1.0 if upsample else s > 0.0) for s in scales)
    if not ok:
        bound = ">= 1" if upsample else "> 0"
        raise ctx.error(f"expected {count} finite scales {bound}, found {list(scales)}")


def _floor_sizes(shape: Sequence[int], scales: Sequence[float]) -> list[int]:
    """ONNX's output shape for ``scales``: ``floor(input * scale)`` on each axis."""
    return [math.floor(n * s) for n, s in zip(shape, scales)]


# -- Resize 11, 13, 18, 19 -------------------------------------------------------------------
def _resize(ctx: NodeContext) -> Value:
    """ONNX Resize becomes ``image.resize`` (any rank, every mode, coordinate transformation,
    nearest mode, antialias, axes and aspect-ratio policy). ``scales`` or ``sizes`` (and
    ``roi`` for tf_crop_and_resize) must be known while compiling."""
    shape = ctx.shape(0)
    rank = len(shape)
    method = _choice(ctx, "mode", "nearest", ("nearest", "linear", "cubic"))
    coordinate_mode = _choice(ctx, "coordinate_transformation_mode", "half_pixel",
                              COORDINATE_MODES)
    nearest_mode = _choice(ctx, "nearest_mode", "round_prefer_floor", NEAREST_MODES)
    axes = _axes(ctx, rank)
    sizes, scales, divisors = _sizes_and_scales(ctx, [shape[a] for a in axes])
    roi = _roi(ctx, axes, rank) if coordinate_mode == "tf_crop_and_resize" else ()
    full_sizes, full_scales, full_divisors = list(shape), [1.0] * rank, [1] * rank
    for i, a in enumerate(axes):
        full_sizes[a] = sizes[i]
        if scales:
            full_scales[a] = scales[i]
        if divisors:
            full_divisors[a] = divisors[i]
    return relay.resize(
        ctx.input(0), size=tuple(full_sizes), scales=tuple(full_scales) if scales else (),
        scale_divisors=tuple(full_divisors) if divisors else (), roi=roi,
        method=method, coordinate_transformation_mode=coordinate_mode,
        nearest_mode=nearest_mode, cubic_coeff_a=float(ctx.attr("cubic_coeff_a", -0.75)),
        exclude_outside=bool(ctx.attr("exclude_outside", 0)),
        extrapolation_value=float(ctx.attr("extrapolation_value", 0.0)),
        antialias=bool(ctx.attr("antialias", 0)))


def _sizes_and_scales(ctx: NodeContext, in_shape: Sequence[int],
                      ) -> tuple[list[int], list[float] | None, list[int] | None]:
    """The output lengths of the resized axes (of lengths ``in_shape``), from scales
    (input 2) or sizes (input 3) and keep_aspect_ratio_policy, and their coordinate scales
    as fractions ``scales / divisors``: scales None means output / input (stretched sizes),
    divisors None means 1 (given scales)."""
    policy = _choice(ctx, "keep_aspect_ratio_policy", "stretch", _POLICIES)
    scales, sizes = _floats(ctx, 2), ctx.known_ints(3) or None
    if (scales is None) == (sizes is None):
        raise ctx.error("expected exactly one of scales (input 2) and sizes (input 3), found "
                        + ("both" if scales else "neither"))
    if scales is not None:
        _check_scales(ctx, scales, len(in_shape))
        return _floor_sizes(in_shape, scales), scales, None
    if len(sizes) != len(in_shape) or min(sizes) < 0:
        raise ctx.error(f"expected {len(in_shape)} sizes >= 0, found {sizes}")
    if policy == "stretch":
        return sizes, None, None
    # ONNX: one scale min / max(sizes / in) for every axis, output lengths rounded half up;
    # kept an exact fraction so that the coordinates are exact.
    ratios = [Fraction(m, n) for n, m in zip(in_shape, sizes) if n] or [Fraction(1)]
    common = min(ratios) if policy == "not_larger" else max(ratios)
    sizes = [math.floor(common * n + Fraction(1, 2)) for n in in_shape]
    if common == 0:
        return sizes, None, None
    count = len(in_shape)
    return sizes, [float(common.numerator)] * count, [common.denominator] * count


def _axes(ctx: NodeContext, rank: int) -> list[int]:
    """The resized axes (attribute ``axes``, all by default), distinct and non-negative."""
    given = ctx.attr("axes")
    if given is None:
        return list(range(rank))
    axes = [axis_index(ctx, int(a), rank) for a in given]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"expected distinct axes, found {list(given)}")
    return axes


def _roi(ctx: NodeContext, axes: Sequence[int], rank: int) -> tuple[float, ...]:
    """The region of interest of every axis (starts, then ends) from input 1 for ``axes``."""
    given = _floats(ctx, 1)
    if given is None:
        return ()
    if len(given) != 2 * len(axes):
        raise ctx.error(f"expected a roi of {2 * len(axes)} numbers (starts, then ends of "
                        f"axes {list(axes)}), found {given}")
    roi = [0.0] * rank + [1.0] * rank
    for i, a in enumerate(axes):
        roi[a], roi[rank + a] = given[i], given[len(axes) + i]
    return tuple(roi)


# -- Resize 10 and Upsample ------------------------------------------------------------------
def _upsample_like(ctx: NodeContext, scales: Sequence[float], method: str) -> Expr:
    """Resize-10 / Upsample semantics: ``asymmetric`` coordinates; nearest rounds down on
    axes that grow and up on axes that shrink (two resizes when both occur)."""
    data = ctx.input(0)
    shape = list(ctx.shape(0))
    if method != "nearest":
        return relay.resize(data, size=tuple(_floor_sizes(shape, scales)),
                            scales=tuple(scales), method=method,
                            coordinate_transformation_mode="asymmetric")
    for rounding, shrinks in (("ceil", True), ("floor", False)):
        part = [s if (s < 1.0) == shrinks else 1.0 for s in scales]
        if all(s == 1.0 for s in part):
            continue
        size = _floor_sizes(shape, part)
        data = relay.resize(data, size=tuple(size), scales=tuple(part),
                            coordinate_transformation_mode="asymmetric", nearest_mode=rounding)
        shape = size
    return data


def _resize_10(ctx: NodeContext) -> Value:
    """ONNX Resize-10 becomes ``image.resize`` with asymmetric coordinates (nearest rounds
    down when upsampling and up when downsampling, as onnxruntime); ``scales`` must be
    known while compiling."""
    method = _choice(ctx, "mode", "nearest", ("nearest", "linear"))
    scales = _floats(ctx, 1) or []
    _check_scales(ctx, scales, len(ctx.shape(0)))
    return _upsample_like(ctx, scales, method)


def _upsample_mode(ctx: NodeContext) -> str:
    mode = _choice(ctx, "mode", "nearest", ("nearest", "linear", "bilinear"))
    return "linear" if mode == "bilinear" else mode


def _upsample_1(ctx: NodeContext) -> Value:
    """ONNX Upsample-1 (NCHW, height_scale and width_scale >= 1) becomes ``image.resize``
    with asymmetric coordinates."""
    if len(ctx.shape(0)) != 4:
        raise ctx.error(f"expected a 4-D NCHW input, found shape {ctx.shape(0)}")
    scales = [1.0, 1.0, float(ctx.required_attr("height_scale")),
              float(ctx.required_attr("width_scale"))]
    _check_scales(ctx, scales, 4, upsample=True)
    return _upsample_like(ctx, scales, _upsample_mode(ctx))


def _upsample_7(ctx: NodeContext) -> Value:
    """ONNX Upsample-7 (attribute scales >= 1) becomes ``image.resize`` with asymmetric
    coordinates; nearest rounds down."""
    scales = [float(s) for s in ctx.required_attr("scales")]
    _check_scales(ctx, scales, len(ctx.shape(0)), upsample=True)
    return _upsample_like(ctx, scales, _upsample_mode(ctx))


def _upsample_9(ctx: NodeContext) -> Value:
    """ONNX Upsample-9 (input scales >= 1, known while compiling) becomes ``image.resize``
    with asymmetric coordinates; nearest rounds down."""
    scales = _floats(ctx, 1) or []
    _check_scales(ctx, scales, len(ctx.shape(0)), upsample=True)
    return _upsample_like(ctx, scales, _upsample_mode(ctx))


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Resize": {10: _resize_10, 11: _resize},
    "Upsample": {1: _upsample_1, 7: _upsample_7, 9: _upsample_9},
}
