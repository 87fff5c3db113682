"""ResNet (pre-activation, v2) with the structure and parameter names of TVM's
relay.testing.resnet.

ImageNet-sized inputs get 4 stages; inputs of height <= 28 get the 3-stage CIFAR variant
(``num_layers`` = 6n + 2, or 9n + 2 >= 164 with bottlenecks); inputs of height <= 32 use a
3x3 stride-1 stem with no batch norm, relu or pooling after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.analysis import free_vars
from passhost.relay.expr import Expr, Function, var
from passhost.relay.testing import layers
from passhost.relay.testing.init import create_workload

__all__ = ["get_net", "get_workload", "residual_unit", "resnet"]

_EPS = 2e-5

#: Units per stage of the ImageNet-sized networks, by depth.
IMAGENET_UNITS = {
    18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
    152: [3, 8, 36, 3], 200: [3, 24, 36, 3], 269: [3, 30, 48, 8],
}


def residual_unit(data: Expr, num_filter: int, stride: tuple[int, int], dim_match: bool,
                  name: str, bottle_neck: bool = True, data_layout: str = "NCHW",
                  kernel_layout: str = "OIHW") -> Expr:
    """One pre-activation residual unit (basic or bottleneck); ``dim_match=False`` adds a
    1x1 shortcut convolution ``<name>_sc`` on the output of the first relu."""
    bn_axis = data_layout.index("C")

    def bn(x: Expr, suffix: str) -> Expr:
        return layers.batch_norm_infer(x, name=f"{name}_{suffix}", axis=bn_axis, epsilon=_EPS)

    def conv(x: Expr, suffix: str, channels: int, kernel: int, strides: tuple[int, int],
             ) -> Expr:
        pad = kernel // 2
        return layers.conv2d(x, name=f"{name}_{suffix}", channels=channels,
                             kernel_size=(kernel, kernel), strides=strides, padding=(pad, pad),
                             data_layout=data_layout, kernel_layout=kernel_layout)

    act1 = nn.relu(bn(data, "bn1"))
    if bottle_neck:
        mid = int(num_filter * 0.25)
        conv1 = conv(act1, "conv1", mid, 1, stride)
        act2 = nn.relu(bn(conv1, "bn2"))
        conv2 = conv(act2, "conv2", mid, 3, (1, 1))
        act3 = nn.relu(bn(conv2, "bn3"))
        body = conv(act3, "conv3", num_filter, 1, (1, 1))
    else:
        conv1 = conv(act1, "conv1", num_filter, 3, stride)
        act2 = nn.relu(bn(conv1, "bn2"))
        body = conv(act2, "conv2", num_filter, 3, (1, 1))
    shortcut = data if dim_match else conv(act1, "sc", num_filter, 1, stride)
    return relay.add(body, shortcut)


def resnet(units: Sequence[int], num_stages: int, filter_list: Sequence[int],
           num_classes: int, data_shape: tuple[int, ...], bottle_neck: bool = True,
           layout: str = "NCHW", dtype: str = "float32") -> Function:
    """The ResNet graph function for an explicit stage configuration."""
    if len(units) != num_stages:
        raise ValueError(f"{num_stages} stages need {num_stages} unit counts, found {units}")
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"unsupported layout {layout!r}")
    kernel_layout = layers.conv_kernel_layout(layout)
    bn_axis = layout.index("C")
    height = data_shape[layout.index("H")]

    data = var("data", shape=data_shape, dtype=dtype)
    body = layers.batch_norm_infer(data, name="bn_data", axis=bn_axis, epsilon=_EPS,
                                   scale=False)
    if height <= 32:
        body = layers.conv2d(body, name="conv0", channels=filter_list[0], kernel_size=(3, 3),
                             strides=(1, 1), padding=(1, 1), data_layout=layout,
                             kernel_layout=kernel_layout)
    else:
        body = layers.conv2d(body, name="conv0", channels=filter_list[0], kernel_size=(7, 7),
                             strides=(2, 2), padding=(3, 3), data_layout=layout,
                             kernel_layout=kernel_layout)
        body = layers.batch_norm_infer(body, name="bn0", axis=bn_axis, epsilon=_EPS)
        body = nn.relu(body)
        body = nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                             layout=layout)
    for i in range(num_stages):
        stride = (1, 1) if i == 0 else (2, 2)
        body = residual_unit(body, filter_list[i + 1], stride, False,
                             name=f"stage{i + 1}_unit1", bottle_neck=bottle_neck,
                             data_layout=layout, kernel_layout=kernel_layout)
        for j in range(units[i] - 1):
            body = residual_unit(body, filter_list[i + 1], (1, 1), True,
                                 name=f"stage{i + 1}_unit{j + 2}", bottle_neck=bottle_neck,
                                 data_layout=layout, kernel_layout=kernel_layout)
    body = nn.relu(layers.batch_norm_infer(body, name="bn1", axis=bn_axis, epsilon=_EPS))
    body = nn.global_avg_pool2d(body, layout=layout)
    body = nn.batch_flatten(body)
    body = layers.dense_add_bias(body, units=num_classes, name="fc1")
    net = nn.softmax(body)
    return Function(free_vars(net), net)


def get_net(batch_size: int, num_classes: int, num_layers: int = 50,
            image_shape: tuple[int, int, int] = (3, 224, 224), layout: str = "NCHW",
            dtype: str = "float32") -> Function:
    """The ResNet graph function of depth ``num_layers`` (image_shape in ``layout`` order,
    without the batch axis)."""
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"unsupported layout {layout!r}")
    image_shape = tuple(image_shape)
    height = image_shape[layout.index("H") - 1]
    data_shape = (batch_size, *image_shape)
    if height <= 28:
        num_stages = 3
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            per_unit = (num_layers - 2) // 9
            filter_list = [16, 64, 128, 256]
            bottle_neck = True
        elif (num_layers - 2) % 6 == 0 and num_layers < 164:
            per_unit = (num_layers - 2) // 6
            filter_list = [16, 16, 32, 64]
            bottle_neck = False
        else:
            raise ValueError(f"no {num_layers}-layer ResNet for images of height {height}: "
                             f"use 6n+2 (or 9n+2 >= 164) layers")
        units = [per_unit] * num_stages
    else:
        if num_layers not in IMAGENET_UNITS:
            raise ValueError(f"no {num_layers}-layer ResNet; choose from "
                             f"{sorted(IMAGENET_UNITS)}")
        num_stages = 4
        units = IMAGENET_UNITS[num_layers]
        if num_layers >= 50:
            filter_list = [64, 256, 512, 1024, 2048]
            bottle_neck = True
        else:
            filter_list = [64, 64, 128, 256, 512]
            bottle_neck = False
    return resnet(units, num_stages, filter_list, num_classes, data_shape,
                  bottle_neck=bottle_neck, layout=layout, dtype=dtype)


def get_workload(batch_size: int = 1, num_classes: int = 1000, num_layers: int = 18,
                 image_shape: tuple[int, int, int] = (3, 224, 224), layout: str = "NCHW",
                 dtype: str = "float32") -> tuple[IRModule, dict[str, np.ndarray]]:
    """A ResNet module and its deterministic parameters (TVM's resnet.get_workload)."""
    net = get_net(batch_size, num_classes, num_layers, image_shape, layout, dtype)
    return create_workload(net)
