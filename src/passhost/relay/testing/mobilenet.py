"""MobileNet v1 (as TVM's relay.testing.mobilenet) and MobileNetV2.

v1: a 3x3 stride-2 conv block, 13 depthwise-separable blocks, global average pooling and a
dense classifier. v2: a 3x3 stride-2 conv, 17 inverted residual blocks (expansion, depthwise
3x3, linear 1x1 projection; a residual add when the stride is 1 and the channels match),
a 1x1 conv to 1280 channels, global average pooling and a dense classifier. ReLU6 is
``clip(x, 0, 6)``.
"""

from __future__ import annotations

import numpy as np

from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.analysis import free_vars
from passhost.relay.expr import Expr, Function, var
from passhost.relay.testing import layers
from passhost.relay.testing.init import create_workload

__all__ = [
    "V2_BLOCKS", "conv_block", "get_workload", "get_workload_v2", "inverted_residual_block",
    "mobile_net", "mobile_net_v2", "separable_conv_block",
]


def conv_block(data: Expr, name: str, channels: int, kernel_size: tuple[int, int] = (3, 3),
               strides: tuple[int, int] = (1, 1), padding: tuple[int, int] = (1, 1),
               epsilon: float = 1e-5, layout: str = "NCHW") -> Expr:
    """Convolution (``<name>_conv``) + batch norm (``<name>_bn``) + relu."""
    conv = layers.conv2d(data, name=f"{name}_conv", channels=channels, kernel_size=kernel_size,
                         strides=strides, padding=padding, data_layout=layout,
                         kernel_layout=layers.conv_kernel_layout(layout))
    bn = layers.batch_norm_infer(conv, name=f"{name}_bn", axis=layout.index("C"),
                                 epsilon=epsilon)
    return nn.relu(bn)


def separable_conv_block(data: Expr, name: str, depthwise_channels: int,
                         pointwise_channels: int, kernel_size: tuple[int, int] = (3, 3),
                         downsample: bool = False, padding: tuple[int, int] = (1, 1),
                         epsilon: float = 1e-5, layout: str = "NCHW", dtype: str = "float32",
                         ) -> Expr:
    """Depthwise conv (weight ``<name>_weight``) + bn1 + relu, then 1x1 conv2 + bn2 + relu."""
    strides = (2, 2) if downsample else (1, 1)
    if layout == "NCHW":
        wshape = (depthwise_channels, 1, *kernel_size)
    elif layout == "NHWC":
        wshape = (*kernel_size, depthwise_channels, 1)
    else:
        raise ValueError(f"unsupported layout {layout!r}")
    weight = var(f"{name}_weight", shape=wshape, dtype=dtype)
    axis = layout.index("C")
    conv1 = layers.conv2d(data, weight, name=f"{name}_depthwise_conv1",
                          channels=depthwise_channels, groups=depthwise_channels,
                          kernel_size=kernel_size, strides=strides, padding=padding,
                          data_layout=layout, kernel_layout=layers.conv_kernel_layout(layout, True))
    act1 = nn.relu(layers.batch_norm_infer(conv1, name=f"{name}_bn1", axis=axis,
                                           epsilon=epsilon))
    conv2 = layers.conv2d(act1, name=f"{name}_conv2", channels=pointwise_channels,
                          kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), data_layout=layout,
                          kernel_layout=layers.conv_kernel_layout(layout))
    return nn.relu(layers.batch_norm_infer(conv2, name=f"{name}_bn2", axis=axis,
                                           epsilon=epsilon))


def _classifier(body: Expr, num_classes: int, layout: str, name: str = "fc") -> Expr:
    pool = nn.global_avg_pool2d(body, layout=layout)
    flat = nn.batch_flatten(pool)
    fc = layers.dense_add_bias(flat, units=num_classes, name=name)
    return nn.softmax(fc)


def mobile_net(num_classes: int = 1000, data_shape: tuple[int, ...] = (1, 3, 224, 224),
               dtype: str = "float32", alpha: float = 1.0, is_shallow: bool = False,
               layout: str = "NCHW") -> Function:
    """The MobileNet v1 graph function (width multiplier ``alpha``)."""
    def ch(n: int) -> int:
        return int(n * alpha)

    data = var("data", shape=data_shape, dtype=dtype)
    body = conv_block(data, "conv_block_1", ch(32), strides=(2, 2), layout=layout)
    # (input channels, output channels, downsample) of the separable blocks
    blocks = [(32, 64, False), (64, 128, True), (128, 128, False), (128, 256, True),
              (256, 256, False), (256, 512, True)]
    if is_shallow:
        blocks += [(512, 1024, True), (1024, 1024, True)]
    else:
        blocks += [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]
    for i, (cin, cout, down) in enumerate(blocks, start=1):
        body = separable_conv_block(body, f"separable_conv_block_{i}", ch(cin), ch(cout),
                                    downsample=down, layout=layout, dtype=dtype)
    net = _classifier(body, num_classes, layout)
    return Function(free_vars(net), net)


def get_workload(batch_size: int = 1, num_classes: int = 1000,
                 image_shape: tuple[int, int, int] = (3, 224, 224), dtype: str = "float32",
                 layout: str = "NCHW", version: int = 1,
                 ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """A MobileNet module and its deterministic parameters (v1 by default; ``version=2``
    gives MobileNetV2)."""
    data_shape = (batch_size, *image_shape)
    if version == 1:
        net = mobile_net(num_classes, data_shape, dtype, alpha=1.0, is_shallow=False,
                         layout=layout)
    elif version == 2:
        net = mobile_net_v2(num_classes, data_shape, dtype, layout=layout)
    else:
        raise ValueError(f"no MobileNet version {version}; choose 1 or 2")
    return create_workload(net)


# -- MobileNetV2 ------------------------------------------------------------------------------

#: MobileNetV2's inverted residual stages: (expansion t, output channels c, repeats n,
#: stride s of the first block).
V2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1))


def _relu6(x: Expr) -> Expr:
    return relay.clip(x, a_min=0.0, a_max=6.0)


def _conv_bn(data: Expr, name: str, channels: int, kernel: int, strides: int, layout: str,
             groups: int = 1, act: bool = True) -> Expr:
    pad = kernel // 2
    depthwise = groups > 1
    conv = layers.conv2d(data, name=name, channels=channels, kernel_size=(kernel, kernel),
                         strides=(strides, strides), padding=(pad, pad), groups=groups,
                         data_layout=layout,
                         kernel_layout=layers.conv_kernel_layout(layout, depthwise))
    out = layers.batch_norm_infer(conv, name=f"{name}_bn", axis=layout.index("C"))
    return _relu6(out) if act else out


def inverted_residual_block(data: Expr, name: str, out_channels: int, stride: int,
                            expansion: int, layout: str = "NCHW") -> Expr:
    """MobileNetV2's block: 1x1 expansion (skipped when ``expansion`` is 1) + relu6, 3x3
    depthwise + relu6, linear 1x1 projection, and a residual add when shapes allow."""
    in_channels = layers.tensor_type(data).shape[layout.index("C")]
    hidden = in_channels * expansion
    body = data
    if expansion != 1:
        body = _conv_bn(body, f"{name}_expand", hidden, 1, 1, layout)
    body = _conv_bn(body, f"{name}_depthwise", hidden, 3, stride, layout, groups=hidden)
    body = _conv_bn(body, f"{name}_project", out_channels, 1, 1, layout, act=False)
    if stride == 1 and in_channels == out_channels:
        body = relay.add(body, data)
    return body


def mobile_net_v2(num_classes: int = 1000, data_shape: tuple[int, ...] = (1, 3, 224, 224),
                  dtype: str = "float32", layout: str = "NCHW") -> Function:
    """The MobileNetV2 graph function (width multiplier 1.0)."""
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"unsupported layout {layout!r}")
    data = var("data", shape=data_shape, dtype=dtype)
    body = _conv_bn(data, "conv_stem", 32, 3, 2, layout)
    index = 0
    for t, c, n, s in V2_BLOCKS:
        for k in range(n):
            index += 1
            body = inverted_residual_block(body, f"block{index}", c, s if k == 0 else 1, t,
                                           layout)
    body = _conv_bn(body, "conv_head", 1280, 1, 1, layout)
    net = _classifier(body, num_classes, layout)
    return Function(free_vars(net), net)


def get_workload_v2(batch_size: int = 1, num_classes: int = 1000,
                    image_shape: tuple[int, int, int] = (3, 224, 224), dtype: str = "float32",
                    layout: str = "NCHW") -> tuple[IRModule, dict[str, np.ndarray]]:
    """A MobileNetV2 module and its deterministic parameters."""
    return get_workload(batch_size, num_classes, image_shape, dtype, layout, version=2)
