"""Chains of convolutions, passhost against onnxruntime in one process: the layers' own
speed inside a model, onnxruntime's layout changes paid once per chain.

Run: python benchmarks/conv_chains.py [--threads 1,2] [--rounds 20] [--layouts NCHW,NHWC]
                                      [--only TEXT]

A one-layer model (``conv_layers.py``) makes onnxruntime reorder its input and output
between NCHW and its channel-blocked NCHWc layout on every run, which a model pays only
at its ends; here each chain (``CHAINS``: twelve 1x1 layers of a ResNet-50 stage,
alternating C -> C/4 and C/4 -> C with a ReLU after each, no residual, so that
onnxruntime keeps NCHWc from the first layer to the last; six MobileNetV2 inverted
residual blocks of one stage) is one ONNX model, and the ratio is per layer of the chain.
passhost compiles it as imported (NCHW) or, with ``--layouts NHWC``, after
``ConvertLayout`` to NHWC (its two layout transforms counted). Both outputs must agree
(``runtimes.check``); the table gives each runtime's median ms over rounds of turns
(``timing.interleaved_medians_ms``) and the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from runtimes import check, ort_session, passhost_executor
from timing import interleaved_medians_ms, median_of

from passhost.frontend import from_onnx
from passhost.relay.transform import ConvertLayout


class Chain(NamedTuple):
    """Blocks of one model stage at ``hw`` x ``hw`` with ``c`` channels between blocks."""

    name: str
    kind: str  # "bottleneck-1x1" or "inverted-residual"
    c: int
    hw: int
    blocks: int


CHAINS = [Chain("resnet-50 1x1 56x56", "bottleneck-1x1", 256, 56, 6),
          Chain("resnet-50 1x1 28x28", "bottleneck-1x1", 512, 28, 6),
          Chain("resnet-50 1x1 14x14", "bottleneck-1x1", 1024, 14, 6),
          Chain("mobilenet-v2 28x28", "inverted-residual", 32, 28, 6),
          Chain("mobilenet-v2 14x14", "inverted-residual", 64, 14, 6)]


class _Builder:
    """The nodes and initializers of a chain being built, random weights."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.nodes: list[onnx.NodeProto] = []
        self.inits = [numpy_helper.from_array(np.float32(v), n) for n, v in (("lo", 0), ("hi", 6))]

    def conv(self, x: str, c: int, o: int, act: str, name: str, k: int = 1, groups: int = 1,
             residual: str | None = None) -> str:
        """A convolution with its bias, an optional residual add, then ``act``."""
        w = self.rng.standard_normal((o, c // groups, k, k), np.float32)
        w *= np.float32(1 / np.sqrt(c // groups * k * k))
        b = (self.rng.standard_normal(o) * 0.1).astype(np.float32)
        self.inits += [numpy_helper.from_array(w, f"{name}_w"),
                       numpy_helper.from_array(b, f"{name}_b")]
        self.nodes.append(helper.make_node(
            "Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_conv"], group=groups,
            kernel_shape=[k, k], pads=[k // 2] * 4))
        y = f"{name}_conv"
        if residual:
            self.nodes.append(helper.make_node("Add", [y, residual], [f"{name}_add"]))
            y = f"{name}_add"
        if act == "relu":
            self.nodes.append(helper.make_node("Relu", [y], [f"{name}_act"]))
            y = f"{name}_act"
        elif act == "relu6":
            self.nodes.append(helper.make_node("Clip", [y, "lo", "hi"], [f"{name}_act"]))
            y = f"{name}_act"
        return y


def _model(chain: Chain) -> onnx.ModelProto:
    """``chain`` as an ONNX model."""
    built, x, c = _Builder(), "x", chain.c
    for i in range(chain.blocks):
        if chain.kind == "bottleneck-1x1":
            x = built.conv(built.conv(x, c, c // 4, "relu", f"b{i}a"), c // 4, c, "relu",
                           f"b{i}b")
        else:
            wide = built.conv(x, c, 6 * c, "relu6", f"b{i}a")
            wide = built.conv(wide, 6 * c, 6 * c, "relu6", f"b{i}d", k=3, groups=6 * c)
            x = built.conv(wide, 6 * c, c, "none", f"b{i}b", residual=x)
    shape = [1, c, chain.hw, chain.hw]
    graph = helper.make_graph(built.nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
                              built.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def race_chain(chain: Chain, layout: str, threads: int,
               rounds: int) -> tuple[float, float, float]:
    """passhost's and onnxruntime's median ms per layer on ``chain`` and the median
    ratio, passhost's convolutions in ``layout``."""
    model = _model(chain)
    data = np.random.default_rng(1).standard_normal((1, chain.c, chain.hw, chain.hw),
                                                    np.float32)
    session = ort_session(model, threads)
    mod, params = from_onnx(model)
    if layout != "NCHW":
        mod = ConvertLayout({"nn.conv2d": [layout, "default"]})(mod)
    executor = passhost_executor(mod, params, threads, {"x": data})
    executor.run()
    check("passhost", chain.name, executor.get_output(0), session.run(None, {"x": data})[0])
    medians = interleaved_medians_ms(
        {"passhost": executor.run, "ort": lambda: session.run(None, {"x": data})}, rounds)
    layers = sum(node.op_type == "Conv" for node in model.graph.node)
    return (median_of(medians, "passhost") / layers, median_of(medians, "ort") / layers,
            median_of(medians, "passhost", "ort"))


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--layouts", default="NCHW",
                        help="passhost's convolution layouts, comma-separated (NCHW, NHWC)")
    parser.add_argument("--only", default="", help="race only chains whose name has this")
    args = parser.parse_args()
    print(f"{'chain':22s} {'layout':6s} thr  passhost ms/layer  ort ms/layer  ph/ort")
    for chain in CHAINS:
        if args.only not in chain.name:
            continue
        for layout in args.layouts.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                ph, ort, ratio = race_chain(chain, layout, threads, args.rounds)
                flag = "!" if ratio > 1.0 else " "
                print(f"{chain.name:22s} {layout:6s} {threads:3d} {ph:18.3f} {ort:13.3f} "
                      f"{ratio:7.2f}{flag}", flush=True)


if __name__ == "__main__":
    main()
