"""Example functions for the grid-sampling, region and block operators (see op_examples.py)."""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _grid_sample() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4, 5))
    g = relay.var("g", shape=(2, 3, 2, 2))
    return relay.Function([x, g], relay.grid_sample(x, g))


def _grid_sample_cubic_reflection() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 3, 4), dtype="float64")
    g = relay.var("g", shape=(1, 2, 5, 2), dtype="float64")
    return relay.Function([x, g], relay.grid_sample(x, g, method="cubic",
                                                    padding_mode="reflection",
                                                    align_corners=True))


def _grid_sample_nearest_3d() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 3, 2, 4), dtype="int16")
    g = relay.var("g", shape=(1, 2, 2, 2, 3), dtype="float16")
    return relay.Function([x, g], relay.grid_sample(x, g, method="nearest",
                                                    padding_mode="border"))


def _roi_align() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 6, 5))
    rois = relay.const(np.array([[0.5, 1.0, 4.0, 5.5], [-1.0, 0.0, 2.0, 2.5],
                                 [1.0, 1.0, 1.5, 1.2]], "float32"))
    index = relay.const(np.array([1, 0, 1], "int64"))
    return relay.Function([x], relay.roi_align(x, rois, index, output_size=(2, 3),
                                               spatial_scale=0.5))


def _roi_align_max() -> relay.Function:
    x = relay.var("x", shape=(1, 2, 4, 4), dtype="float16")
    rois = relay.var("rois", shape=(2, 4), dtype="float16")
    index = relay.const(np.array([0, 0], "int32"))
    return relay.Function([x, rois], relay.roi_align(x, rois, index, output_size=(2, 2),
                                                     sampling_ratio=2, mode="max",
                                                     aligned=False))


def _col2im() -> relay.Function:
    x = relay.var("x", shape=(2, 8, 6))
    return relay.Function([x], relay.col2im(x, image_shape=(3, 4), block_shape=(2, 2)))


def _col2im_strided_1d() -> relay.Function:
    x = relay.var("x", shape=(1, 6, 3), dtype="int32")
    return relay.Function([x], relay.col2im(x, image_shape=(7,), block_shape=(3,),
                                            strides=(2,), dilation=(2,), padding=(1, 2)))


EXAMPLES: list[tuple[str, Builder]] = [
    ("image.grid_sample", _grid_sample),
    ("image.grid_sample", _grid_sample_cubic_reflection),
    ("image.grid_sample", _grid_sample_nearest_3d),
    ("vision.roi_align", _roi_align),
    ("vision.roi_align", _roi_align_max),
    ("nn.col2im", _col2im),
    ("nn.col2im", _col2im_strided_1d),
]
