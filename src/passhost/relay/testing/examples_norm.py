"""Example functions for the normalisation and image operators (see op_examples.py)."""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _instance_norm() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4, 5))
    g = relay.var("g", shape=(3,))
    b = relay.var("b", shape=(3,))
    return relay.Function([x, g, b], relay.nn.instance_norm(x, g, b, epsilon=1e-3))


def _instance_norm_nhwc() -> relay.Function:
    x = relay.var("x", shape=(2, 4, 3), dtype="float64")
    g = relay.var("g", shape=(3,), dtype="float64")
    b = relay.var("b", shape=(3,), dtype="float64")
    return relay.Function([x, g, b], relay.nn.instance_norm(x, g, b, axis=-1, center=False))


def _group_norm() -> relay.Function:
    x = relay.var("x", shape=(2, 6, 3, 2))
    g = relay.var("g", shape=(6,))
    b = relay.var("b", shape=(6,))
    return relay.Function([x, g, b], relay.nn.group_norm(x, g, b, num_groups=3))


def _group_norm_f16_last_axis() -> relay.Function:
    x = relay.var("x", shape=(1, 5, 4), dtype="float16")
    g = relay.var("g", shape=(4,), dtype="float16")
    b = relay.var("b", shape=(4,), dtype="float16")
    return relay.Function([x, g, b], relay.nn.group_norm(x, g, b, num_groups=2, axis=2,
                                                         epsilon=1e-2, scale=False))


def _rms_norm() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 8))
    g = relay.var("g", shape=(8,))
    return relay.Function([x, g], relay.nn.rms_norm(x, g, epsilon=1e-6))


def _rms_norm_axis() -> relay.Function:
    x = relay.var("x", shape=(4, 6), dtype="float16")
    g = relay.var("g", shape=(4,), dtype="float16")
    return relay.Function([x, g], relay.nn.rms_norm(x, g, axis=0))


def _lp_normalize() -> relay.Function:
    x = relay.var("x", shape=(3, 4))
    return relay.Function([x], relay.nn.lp_normalize(x))


def _l1_normalize_zeros() -> relay.Function:
    x = relay.var("x", shape=(2, 3))
    zero_row = relay.const(np.array([[1.0], [0.0]], "float32"))
    return relay.Function([x], relay.nn.lp_normalize(relay.multiply(x, zero_row), axis=1, p=1))


def _lrn() -> relay.Function:
    x = relay.var("x", shape=(1, 6, 3, 3))
    return relay.Function([x], relay.nn.lrn(x, size=3, alpha=1e-3, beta=0.5, bias=2.0))


def _lrn_even_window() -> relay.Function:
    x = relay.var("x", shape=(2, 4, 5), dtype="float64")
    return relay.Function([x], relay.nn.lrn(x, size=4, axis=-1))


def _nll_loss() -> relay.Function:
    x = relay.var("x", shape=(3, 5, 2))
    w = relay.var("w", shape=(5,))
    t = relay.const(np.array([[0, 4], [2, -1], [3, 1]], "int64"))
    return relay.Function([x, w], relay.nn.nll_loss(x, t, w, ignore_index=-1))


def _nll_loss_none() -> relay.Function:
    x = relay.var("x", shape=(4, 3))
    w = relay.const(np.ones(3, "float32"))
    t = relay.const(np.array([2, 0, 1, 1], "int32"))
    return relay.Function([x], relay.nn.nll_loss(x, t, w, reduction="none"))


def _resize_nearest() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 3, 4))
    return relay.Function([x], relay.resize(x, size=(1, 2, 6, 6)))


def _resize_linear_align_corners() -> relay.Function:
    x = relay.var("x", shape=(2, 5, 3))
    y = relay.resize(x, size=(2, 3, 7), scales=(1.0, 0.6, 2.5), method="linear",
                     coordinate_transformation_mode="align_corners")
    return relay.Function([x], y)


def _resize_cubic_antialias() -> relay.Function:
    x = relay.var("x", shape=(1, 1, 8, 8))
    y = relay.resize(x, size=(1, 1, 3, 5), method="cubic", antialias=True,
                     exclude_outside=True, cubic_coeff_a=-0.5)
    return relay.Function([x], y)


def _resize_exact_fraction_scales() -> relay.Function:
    x = relay.var("x", shape=(1, 5, 2))
    y = relay.resize(x, size=(1, 18, 7), scales=(1.0, 7.0, 7.0), scale_divisors=(1, 2, 2),
                     coordinate_transformation_mode="half_pixel_symmetric", nearest_mode="ceil")
    return relay.Function([x], y)


def _resize_crop() -> relay.Function:
    x = relay.var("x", shape=(1, 4, 4), dtype="int8")
    y = relay.resize(x, size=(1, 3, 3), roi=(0.0, 0.2, -0.1, 1.0, 0.8, 1.3), method="linear",
                     coordinate_transformation_mode="tf_crop_and_resize",
                     extrapolation_value=-1.0)
    return relay.Function([x], y)


EXAMPLES: list[tuple[str, Builder]] = [
    ("nn.instance_norm", _instance_norm),
    ("nn.instance_norm", _instance_norm_nhwc),
    ("nn.group_norm", _group_norm),
    ("nn.group_norm", _group_norm_f16_last_axis),
    ("nn.rms_norm", _rms_norm),
    ("nn.rms_norm", _rms_norm_axis),
    ("nn.lp_normalize", _lp_normalize),
    ("nn.lp_normalize", _l1_normalize_zeros),
    ("nn.lrn", _lrn),
    ("nn.lrn", _lrn_even_window),
    ("nn.nll_loss", _nll_loss),
    ("nn.nll_loss", _nll_loss_none),
    ("image.resize", _resize_nearest),
    ("image.resize", _resize_linear_align_corners),
    ("image.resize", _resize_cubic_antialias),
    ("image.resize", _resize_crop),
    ("image.resize", _resize_exact_fraction_scales),
]
