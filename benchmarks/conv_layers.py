"""The race models' convolution layers one at a time: passhost against onnxruntime, each
layer alone as a one-layer model, warm, in one process, in rounds of turns.

Run: python benchmarks/conv_layers.py [--threads 1,2] [--rounds N] [--only TEXT] [--cold MB]

Each layer (``LAYERS``: MobileNetV2's, EfficientNet-B0's and ResNet-50's distinct
convolutions) is an ONNX model of one ``Conv`` with its bias and the activation that
follows it in the model (ReLU6 as ``Clip``, ReLU, SiLU as ``Sigmoid`` then ``Mul``, or
none), which passhost applies in the convolution's epilogue and onnxruntime fuses or runs
after it. Both outputs must agree (``runtimes.check``); the two are then timed in turns
(``timing.interleaved_medians_ms``) and the table gives each one's median ms and the
median of the per-round ratios passhost / onnxruntime (below 1: passhost is faster).

Inside a model a layer's operands are mostly not in the cache when it starts (see
``profile_steps.py --steps``); here they are, so the table separates what the kernels
themselves cost from what the memory traffic between layers adds. With ``--cold MB`` each
timed run follows the writing of MB megabytes elsewhere (``timing.cold_rounds_ms``), so
that weights and data come from memory, as inside a model; take 20 rounds or more, as
each round times one run.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from runtimes import check, ort_session, passhost_executor
from timing import cold_rounds_ms, interleaved_medians_ms, median_of

from passhost.frontend import from_onnx


class Layer(NamedTuple):
    """A convolution: input channels, plane size, output channels, kernel size, stride,
    groups (0: depthwise), and the activation after it."""

    name: str
    c: int
    hw: int
    o: int
    k: int
    s: int
    groups: int
    act: str


def _layers() -> list[Layer]:
    """The layers raced, by model."""
    mobilenet = [("stem", 3, 224, 32, 3, 2, 1), ("dw", 32, 112, 32, 3, 1, 0),
                 ("proj", 32, 112, 16, 1, 1, 1), ("exp", 16, 112, 96, 1, 1, 1),
                 ("dw s2", 96, 112, 96, 3, 2, 0), ("proj", 96, 56, 24, 1, 1, 1),
                 ("exp", 24, 56, 144, 1, 1, 1), ("dw", 144, 56, 144, 3, 1, 0),
                 ("dw s2", 144, 56, 144, 3, 2, 0), ("exp", 32, 28, 192, 1, 1, 1),
                 ("dw", 192, 28, 192, 3, 1, 0), ("dw s2", 192, 28, 192, 3, 2, 0),
                 ("proj", 192, 28, 32, 1, 1, 1),
                 ("exp", 64, 14, 384, 1, 1, 1), ("dw", 384, 14, 384, 3, 1, 0),
                 ("proj", 384, 14, 64, 1, 1, 1), ("exp", 96, 14, 576, 1, 1, 1),
                 ("proj", 576, 14, 96, 1, 1, 1), ("exp", 160, 7, 960, 1, 1, 1),
                 ("dw s2", 576, 14, 576, 3, 2, 0), ("dw", 960, 7, 960, 3, 1, 0),
                 ("proj", 960, 7, 160, 1, 1, 1),
                 ("head", 320, 7, 1280, 1, 1, 1)]
    efficientnet = [("stem", 3, 224, 32, 3, 2, 1), ("dw", 32, 112, 32, 3, 1, 0),
                    ("exp", 16, 112, 96, 1, 1, 1), ("dw s2", 96, 112, 96, 3, 2, 0),
                    ("dw5 s2", 144, 56, 144, 5, 2, 0), ("dw5", 240, 28, 240, 5, 1, 0),
                    ("dw5", 672, 14, 672, 5, 1, 0)]
    resnet = [("stem", 3, 224, 64, 7, 2, 1), ("1x1", 64, 56, 256, 1, 1, 1),
              ("3x3", 64, 56, 64, 3, 1, 1), ("1x1", 256, 56, 64, 1, 1, 1),
              ("3x3", 128, 28, 128, 3, 1, 1), ("3x3", 256, 14, 256, 3, 1, 1),
              ("3x3", 512, 7, 512, 3, 1, 1), ("1x1", 2048, 7, 512, 1, 1, 1),
              ("3x3 s2", 128, 56, 128, 3, 2, 1), ("3x3 s2", 256, 28, 256, 3, 2, 1),
              ("3x3 s2", 512, 14, 512, 3, 2, 1)]
    return ([Layer(f"mobilenet-v2 {n}", *g, act="relu6") for n, *g in mobilenet]
            + [Layer(f"efficientnet-b0 {n}", *g, act="silu") for n, *g in efficientnet]
            + [Layer(f"resnet-50 {n}", *g, act="relu") for n, *g in resnet])


def _model(layer: Layer) -> onnx.ModelProto:
    """``layer`` as a one-layer ONNX model with random weights."""
    rng = np.random.default_rng(0)
    groups = layer.c if layer.groups == 0 else layer.groups
    weight = rng.standard_normal((layer.o, layer.c // groups, layer.k, layer.k), np.float32)
    weight *= np.float32(1.0 / np.sqrt(weight[0].size))
    bias = rng.standard_normal(layer.o).astype(np.float32)
    pad = layer.k // 2
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["conv"], group=groups,
                              kernel_shape=[layer.k, layer.k], strides=[layer.s, layer.s],
                              pads=[pad] * 4)]
    inits = [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")]
    if layer.act == "relu6":
        inits += [numpy_helper.from_array(np.float32(v), n) for n, v in (("lo", 0), ("hi", 6))]
        nodes.append(helper.make_node("Clip", ["conv", "lo", "hi"], ["y"]))
    elif layer.act == "relu":
        nodes.append(helper.make_node("Relu", ["conv"], ["y"]))
    else:
        nodes += [helper.make_node("Sigmoid", ["conv"], ["gate"]),
                  helper.make_node("Mul", ["conv", "gate"], ["y"])]
    out = (layer.hw + 2 * pad - layer.k) // layer.s + 1
    graph = helper.make_graph(
        nodes, "layer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, layer.c, layer.hw, layer.hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, layer.o, out, out])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def race_layer(layer: Layer, threads: int, rounds: int,
               cold_mb: int = 0) -> tuple[float, float, float]:
    """passhost's and onnxruntime's median ms on ``layer`` and the median ratio, warm, or
    with ``cold_mb`` megabytes written before each run."""
    model = _model(layer)
    data = np.random.default_rng(1).standard_normal((1, layer.c, layer.hw, layer.hw),
                                                    np.float32)
    session = ort_session(model, threads)
    mod, params = from_onnx(model)
    executor = passhost_executor(mod, params, threads, {"x": data})
    executor.run()
    check("passhost", layer.name, executor.get_output(0), session.run(None, {"x": data})[0])
    runners = {"passhost": executor.run, "ort": lambda: session.run(None, {"x": data})}
    medians = (cold_rounds_ms(runners, rounds, cold_mb) if cold_mb
               else interleaved_medians_ms(runners, rounds))
    return (median_of(medians, "passhost"), median_of(medians, "ort"),
            median_of(medians, "passhost", "ort"))


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", default="", help="race only layers whose name has this")
    parser.add_argument("--cold", type=int, default=0, metavar="MB",
                        help="write MB megabytes before each timed run (caches evicted)")
    args = parser.parse_args()
    print(f"{'layer':28s} {'c->o':>10s} {'plane':>6s} {'k/s':>5s} thr  passhost ms"
          f"    ort ms  ph/ort")
    for layer in _layers():
        if args.only not in layer.name:
            continue
        for threads in (int(t) for t in args.threads.split(",")):
            ph, ort, ratio = race_layer(layer, threads, args.rounds, args.cold)
            flag = "!" if ratio > 1.0 else " "
            print(f"{layer.name:28s} {f'{layer.c}->{layer.o}':>10s} {layer.hw:6d} "
                  f"{f'{layer.k}/{layer.s}':>5s} {threads:3d} {ph:12.3f} {ort:9.3f} "
                  f"{ratio:6.2f}{flag}", flush=True)


if __name__ == "__main__":
    main()
