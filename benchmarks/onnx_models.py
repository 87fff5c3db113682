"""ONNX models for the inference race (``race_models.py``): ResNet-18, MobileNetV2 and an
MLP, built with ``onnx.helper`` (opset 17, IR version 8) and He-scaled random weights from a
fixed seed, so every runtime in the race loads the same file with the same weights;
``to_torch`` rebuilds a model as PyTorch eager layers with those weights.

Each model has one float32 input ``x`` and one output ``y`` (1000 logits for the CNNs, 10
for the MLP).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
#: MobileNetV2's inverted-residual table: (expansion, output channels, repeats, first stride).
MOBILENET_V2_TABLE = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                      (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


class TorchTwinError(ValueError):
    """An ONNX node the PyTorch twin cannot build."""


class _Graph:
    """Accumulates nodes and initializers, naming values uniquely."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self._count = 0

    def _name(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def const(self, prefix: str, value: np.ndarray) -> str:
        """Add ``value`` as an initializer and return its name."""
        name = self._name(prefix)
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        """Add one single-output node and return its output's name."""
        out = self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, kernel: int, stride: int = 1,
             groups: int = 1) -> str:
        """Bias-free ``kernel`` x ``kernel`` convolution with 'same'-style padding."""
        fan_in = cin // groups * kernel * kernel
        w = self.rng.standard_normal((cout, cin // groups, kernel, kernel)) * np.sqrt(2 / fan_in)
        pad = kernel // 2
        return self.node("Conv", [x, self.const("w", w)], kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[pad] * 4, group=groups)

    def batch_norm(self, x: str, channels: int) -> str:
        """Inference BatchNormalization with random statistics near the identity."""
        gamma = self.rng.uniform(0.5, 1.0, channels)
        beta = self.rng.uniform(-0.1, 0.1, channels)
        mean = self.rng.uniform(-0.1, 0.1, channels)
        var = self.rng.uniform(0.5, 1.5, channels)
        names = [self.const(p, v) for p, v in
                 (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var))]
        return self.node("BatchNormalization", [x, *names], epsilon=1e-5)

    def relu6(self, x: str) -> str:
        """ReLU6 as ``Clip(x, 0, 6)`` with the bounds as inputs (opset 11 and later)."""
        low = self.const("clip_min", np.array(0.0))
        high = self.const("clip_max", np.array(6.0))
        return self.node("Clip", [x, low, high])

    def gemm(self, x: str, cin: int, cout: int) -> str:
        """Fully connected layer ``x @ W.T + b`` (``transB=1``, W is cout x cin)."""
        w = self.rng.standard_normal((cout, cin)) * np.sqrt(2 / cin)
        b = self.rng.uniform(-0.1, 0.1, cout)
        return self.node("Gemm", [x, self.const("w", w), self.const("b", b)], transB=1)

    def head(self, x: str, channels: int, classes: int) -> str:
        """Global average pool, flatten and the classifier."""
        pooled = self.node("Flatten", [self.node("GlobalAveragePool", [x])], axis=1)
        return self.gemm(pooled, channels, classes)

    def model(self, name: str, out: str, in_shape: list[int], out_shape: list[int]) -> ModelProto:
        """Close the graph: rename ``out`` to ``y`` and wrap everything in a checked model."""
        self.nodes.append(helper.make_node("Identity", [out], ["y"], name="output"))
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
            initializer=self.inits)
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="passhost-benchmarks")
        proto.ir_version = IR_VERSION
        onnx.checker.check_model(proto)
        return proto


def _basic_block(g: _Graph, x: str, cin: int, cout: int, stride: int) -> str:
    """ResNet basic block: two conv-bn pairs, a projection shortcut when the shape changes."""
    y = g.node("Relu", [g.batch_norm(g.conv(x, cin, cout, 3, stride), cout)])
    y = g.batch_norm(g.conv(y, cout, cout, 3), cout)
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = g.batch_norm(g.conv(x, cin, cout, 1, stride), cout)
    return g.node("Relu", [g.node("Add", [y, shortcut])])


def resnet18(seed: int = 0) -> ModelProto:
    """ResNet-18 for 1x3x224x224 images, 1000 classes."""
    g = _Graph(seed)
    x = g.node("Relu", [g.batch_norm(g.conv("x", 3, 64, 7, 2), 64)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        x = _basic_block(g, x, cin, cout, 1 if stage == 0 else 2)
        x = _basic_block(g, x, cout, cout, 1)
        cin = cout
    return g.model("resnet18", g.head(x, 512, 1000), [1, 3, 224, 224], [1, 1000])


def _inverted_residual(g: _Graph, x: str, cin: int, cout: int, expansion: int,
                       stride: int) -> str:
    """MobileNetV2 block: 1x1 expand, 3x3 depthwise, 1x1 linear projection, residual add
    when the stride is 1 and the channel count is unchanged."""
    hidden = cin * expansion
    y = x
    if expansion != 1:
        y = g.relu6(g.batch_norm(g.conv(y, cin, hidden, 1), hidden))
    y = g.relu6(g.batch_norm(g.conv(y, hidden, hidden, 3, stride, groups=hidden), hidden))
    y = g.batch_norm(g.conv(y, hidden, cout, 1), cout)
    return g.node("Add", [x, y]) if stride == 1 and cin == cout else y


def mobilenet_v2(seed: int = 0) -> ModelProto:
    """MobileNetV2 (width 1.0) for 1x3x224x224 images, 1000 classes."""
    g = _Graph(seed)
    x = g.relu6(g.batch_norm(g.conv("x", 3, 32, 3, 2), 32))
    cin = 32
    for expansion, cout, repeats, stride in MOBILENET_V2_TABLE:
        for i in range(repeats):
            x = _inverted_residual(g, x, cin, cout, expansion, stride if i == 0 else 1)
            cin = cout
    x = g.relu6(g.batch_norm(g.conv(x, cin, 1280, 1), 1280))
    return g.model("mobilenet_v2", g.head(x, 1280, 1000), [1, 3, 224, 224], [1, 1000])


def mlp(seed: int = 0) -> ModelProto:
    """MLP 784-512-512-10 with ReLU between the layers, for a 1x784 input."""
    g = _Graph(seed)
    x = g.node("Relu", [g.gemm("x", 784, 512)])
    x = g.node("Relu", [g.gemm(x, 512, 512)])
    return g.model("mlp", g.gemm(x, 512, 10), [1, 784], [1, 10])


def to_torch(model: ModelProto) -> Callable[[Any], Any]:
    """The same network as PyTorch eager ``torch.nn`` layers, weights copied from the
    model's initializers; returns ``forward(x) -> y`` with the layers in eval mode.

    Needs torch (optional: ImportError when it is missing) and covers the operators the
    builders above use.
    """
    import torch
    from torch import nn

    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    steps = []
    with torch.no_grad():
        for node in model.graph.node:
            layer = _torch_layer(torch, nn, node, weights)
            if isinstance(layer, nn.Module):
                layer.eval()
            args = [name for name in node.input if name not in weights]
            steps.append((node.output[0], args, layer))

    def forward(x: Any) -> Any:
        values = {"x": x}
        for out, args, layer in steps:
            values[out] = layer(*(values[a] for a in args))
        return values["y"]

    return forward


def _torch_layer(torch: Any, nn: Any, node: onnx.NodeProto,
                 weights: dict[str, np.ndarray]) -> Callable[..., Any]:
    """One ONNX node as a torch layer (or function) holding a copy of its weights."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    params = [torch.from_numpy(weights[name].copy()) for name in node.input if name in weights]
    op = node.op_type
    if op == "Conv":
        (w,) = params
        groups = attrs.get("group", 1)
        layer = nn.Conv2d(w.shape[1] * groups, w.shape[0], tuple(w.shape[2:]),
                          stride=tuple(attrs["strides"]), padding=tuple(attrs["pads"][:2]),
                          groups=groups, bias=False)
        layer.weight.copy_(w)
        return layer
    if op == "BatchNormalization":
        gamma, beta, mean, var = params
        layer = nn.BatchNorm2d(gamma.shape[0], eps=attrs.get("epsilon", 1e-5))
        for dest, src in ((layer.weight, gamma), (layer.bias, beta),
                          (layer.running_mean, mean), (layer.running_var, var)):
            dest.copy_(src)
        return layer
    if op == "Gemm":
        w, b = params
        layer = nn.Linear(w.shape[1], w.shape[0])
        layer.weight.copy_(w)
        layer.bias.copy_(b)
        return layer
    if op == "Clip":
        low, high = params
        return nn.Hardtanh(float(low), float(high))
    if op == "MaxPool":
        return nn.MaxPool2d(tuple(attrs["kernel_shape"]), stride=tuple(attrs["strides"]),
                            padding=tuple(attrs["pads"][:2]))
    simple = {"Relu": nn.ReLU, "Identity": nn.Identity,
              "GlobalAveragePool": lambda: nn.AdaptiveAvgPool2d(1),
              "Flatten": lambda: nn.Flatten(attrs.get("axis", 1)),
              "Add": lambda: torch.add}
    if op not in simple:
        raise TorchTwinError(f"node {node.name!r}: expected one of Conv, BatchNormalization, "
                             f"Gemm, Clip, MaxPool, {', '.join(simple)}; found {op}")
    return simple[op]()
