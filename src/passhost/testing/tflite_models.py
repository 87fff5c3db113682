"""Random quantised weights and small example networks for tests that build ``.tflite``
models with :class:`~passhost.testing.tflite_builder.TfliteBuilder`.

- :func:`seeded_rng`: one reproducible generator per test case, from a file's seed and the
  case's key;
- :func:`zero_point`, :func:`q_input`, :func:`q_weight`, :func:`q_bias`,
  :func:`matmul_out_scale`: random int8 tensors and quantisation parameters, added to a
  builder (weights are symmetric, int8 in [-127, 127]; biases int32);
- :func:`int8_cnn`, :func:`int8_residual`: two small int8 networks covering convolutions,
  pools, fully connected, softmax and elementwise operators;
- :func:`random_inputs` and :func:`run_tflm`: inputs for a built model, and TFLite Micro's
  outputs for them (the oracle the tests compare against).

Importing this module needs only NumPy: the ``tflite``/``flatbuffers`` bindings are imported
by :meth:`TfliteBuilder.to_bytes` and ``tflite_micro`` by :func:`run_tflm`, on first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from passhost.testing.tflite_builder import TfliteBuilder

__all__ = [
    "int8_cnn", "int8_residual", "matmul_out_scale", "q_bias", "q_input", "q_weight",
    "random_inputs", "run_tflm", "seeded_rng", "zero_point",
]


def seeded_rng(seed: int, *key: int) -> np.random.Generator:
    """A NumPy generator for the case ``key`` under ``seed``: the same stream every run, and
    an independent one for every distinct key."""
    return np.random.default_rng([seed, *key])


# -- random quantised tensors --------------------------------------------------------------

def zero_point(rng: np.random.Generator) -> int:
    """A random int8 zero point: usually small, sometimes at either end of the range."""
    return int(rng.choice([-128, 127])) if rng.random() < 0.15 else int(rng.integers(-40, 40))


def q_input(b: TfliteBuilder, rng: np.random.Generator, shape: Sequence[int],
            name: str = "x") -> tuple[int, float]:
    """Add an int8 graph input of ``shape`` with a random scale and zero point; return its
    tensor index and its scale."""
    scale = float(np.float32(rng.uniform(0.005, 0.1)))
    return b.input(shape, "int8", name=name, scale=scale, zero_point=zero_point(rng)), scale


def q_weight(b: TfliteBuilder, rng: np.random.Generator, shape: Sequence[int], axis: int,
             per_channel: bool, zp: int = 0) -> tuple[int, np.ndarray]:
    """Add a random int8 weight constant of ``shape`` (values in [-127, 127]), with one
    float32 scale per channel along ``axis`` or a single one, and zero point ``zp``; return
    its tensor index and its scales."""
    channels = shape[axis] if per_channel else 1
    scales = rng.uniform(0.002, 0.02, channels).astype("float32")
    data = rng.integers(-127, 128, shape).astype("int8")
    return b.constant(data, name="w", scale=scales, zero_point=zp,
                      quantized_dimension=axis if per_channel else 0), scales


def q_bias(b: TfliteBuilder, rng: np.random.Generator, channels: int) -> int:
    """Add a random int32 bias constant of ``channels`` values; return its tensor index."""
    return b.constant(rng.integers(-3000, 3000, channels).astype("int32"), name="bias")


def matmul_out_scale(rng: np.random.Generator, s_in: float, s_w: np.ndarray,
                     depth: int) -> float:
    """An output scale for a sum of ``depth`` products of int8 values with input scale
    ``s_in`` and weight scales ``s_w``, that puts most accumulators inside int8 (some
    saturate)."""
    return float(s_in * float(s_w.mean()) * 74 * 74 * math.sqrt(depth) / 40
                 * rng.uniform(0.5, 2.0))


# -- example networks ----------------------------------------------------------------------

def int8_cnn(rng: np.random.Generator) -> TfliteBuilder:
    """A small image classifier with a float32 input and output: quantize -> conv (RELU6)
    -> depthwise conv (RELU) -> average pool -> reshape -> fully connected -> softmax ->
    dequantize, with random weights from ``rng``."""
    b = TfliteBuilder()
    f = b.input((1, 10, 10, 3), "float32", name="image")
    x = b.quantize(f, scale=0.02, zero_point=-5)
    w1, s1 = q_weight(b, rng, (8, 3, 3, 3), 0, per_channel=True)
    y = b.conv2d(x, w1, q_bias(b, rng, 8), stride=2, activation="RELU6",
                 scale=matmul_out_scale(rng, 0.02, s1, 27), zero_point=-128)
    w2, s2 = q_weight(b, rng, (1, 3, 3, 16), 3, per_channel=True)
    y = b.depthwise_conv2d(y, w2, q_bias(b, rng, 16), activation="RELU",
                           scale=matmul_out_scale(rng, 0.05, s2, 9), zero_point=-128)
    y = b.average_pool2d(y, 2, padding="SAME")
    y = b.reshape(y, (1, -1))
    w3, s3 = q_weight(b, rng, (10, 144), 0, per_channel=False)
    y = b.fully_connected(y, w3, q_bias(b, rng, 10),
                          scale=matmul_out_scale(rng, 0.1, s3, 144), zero_point=3)
    b.outputs(b.dequantize(b.softmax(y)))
    return b


def int8_residual(rng: np.random.Generator) -> TfliteBuilder:
    """A small int8 residual block with two outputs: conv -> add(input) -> pad -> max pool
    -> mul(constant), and the sum of the block's add with a broadcast constant; random
    weights and constants from ``rng``."""
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (1, 6, 6, 4))
    w, _ = q_weight(b, rng, (4, 3, 3, 4), 0, per_channel=True)
    y = b.conv2d(x, w, q_bias(b, rng, 4), scale=s_in * 1.5, zero_point=2)
    r = b.add(y, x, activation="RELU", scale=s_in * 2, zero_point=-10)
    p = b.max_pool2d(b.pad(r, [[0, 0], [1, 1], [1, 1], [0, 0]]), 2)
    k = b.constant(rng.integers(-128, 128, (1, 4, 4, 4)).astype("int8"), name="k",
                   scale=0.03, zero_point=4)
    m = b.mul(p, k, scale=s_in * 0.5, zero_point=0, activation="RELU_N1_TO_1")
    c = b.constant(rng.integers(-128, 128, (4,)).astype("int8"), name="c", scale=0.05,
                   zero_point=-1)
    b.outputs(m, b.add(r, c, scale=s_in * 3, zero_point=1))
    return b


# -- running a model -----------------------------------------------------------------------

def random_inputs(b: TfliteBuilder, rng: np.random.Generator) -> list[np.ndarray]:
    """One random array for each graph input of ``b``: any int8 value for int8 inputs,
    normal values (standard deviation 2) for float inputs."""
    arrays = []
    for t in b.graph_inputs:
        shape, dtype = b.shape(t), b.dtype(t)
        if dtype == "int8":
            arrays.append(rng.integers(-128, 128, shape).astype("int8"))
        else:
            arrays.append((rng.standard_normal(shape) * 2).astype(dtype))
    return arrays


def run_tflm(model: bytes, inputs: Sequence[np.ndarray], n_out: int) -> list[np.ndarray]:
    """The first ``n_out`` outputs of TFLite Micro's reference kernels running the
    ``.tflite`` bytes ``model`` on ``inputs`` (imports ``tflite_micro``)."""
    from tflite_micro import runtime

    interp = runtime.Interpreter.from_bytes(model, arena_size=4 << 20)
    for i, x in enumerate(inputs):
        interp.set_input(x, i)
    interp.invoke()
    return [interp.get_output(i) for i in range(n_out)]
