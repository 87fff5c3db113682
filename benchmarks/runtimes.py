"""The runtimes the benchmarks race, set up alike: passhost's cpu target, onnxruntime and
PyTorch eager, each at a given thread count; the check of an output against onnxruntime's;
an error in one line, for a table's row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

import passhost
from passhost.ir import IRModule
from passhost.relay.transform import (
    CanonicalizeOps,
    ConvertLayout,
    FoldConstant,
    FoldScaleAxis,
    InferType,
    SimplifyInference,
    bind_params_by_name,
)
from passhost.runtime import Executor
from passhost.transform import PassContext

#: Outputs must match onnxruntime's to this relative tolerance (atol scaled to the output).
RTOL = 1e-3


class OutputMismatchError(AssertionError):
    """A runtime's output differs from onnxruntime's on the same model and input."""


def check(runtime: str, model: str, found: np.ndarray, expected: np.ndarray) -> float:
    """Max abs difference of ``found`` from ``expected``, raising
    :class:`OutputMismatchError` when out of tolerance (:data:`RTOL`, absolute tolerance
    :data:`RTOL` times the largest magnitude of ``expected``)."""
    if found.shape != expected.shape:
        raise OutputMismatchError(f"{model}: {runtime} output shape {found.shape}, expected "
                                  f"onnxruntime's {expected.shape}")
    diff = float(np.max(np.abs(found - expected), initial=0.0))
    atol = RTOL * float(np.max(np.abs(expected), initial=0.0))
    if not np.allclose(found, expected, RTOL, atol):
        raise OutputMismatchError(f"{model}: {runtime} output differs from onnxruntime's: "
                                  f"max abs diff {diff:.3g}, expected within rtol {RTOL} "
                                  f"(atol {atol:.3g})")
    return diff


def ort_session(model: onnx.ModelProto | Path, threads: int,
                profile_prefix: str | None = None) -> ort.InferenceSession:
    """An onnxruntime CPU session for ``model`` (a model or an ONNX file) with ``threads``
    intra-op threads, one inter-op thread and every graph optimisation; with
    ``profile_prefix``, its profiler on, writing ``<prefix>*.json``."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def with_conv_layout(mod: IRModule, params: dict[str, np.ndarray], layout: str) -> IRModule:
    """``mod`` with ``params`` bound and its convolutions converted to data ``layout``
    (``NHWC``, or a blocked ``NCHW16c``), after the rewrites the build's Optimize step
    would make first (batch norms folded into the weights and biases, biases added as
    broadcasts), so that the layout flows on from one convolution to the next."""
    kernel = "HWIO" if layout == "NHWC" else "OIHW"
    mod = mod.with_function("main", bind_params_by_name(mod["main"], params))
    steps = [InferType(), SimplifyInference(), FoldConstant(), FoldScaleAxis(),
             CanonicalizeOps(), FoldConstant(), ConvertLayout({"nn.conv2d": [layout, kernel]})]
    with PassContext(opt_level=3):
        for step in steps:
            mod = step(mod)
    return mod


def passhost_executor(mod: IRModule, params: dict[str, np.ndarray], threads: int,
                      inputs: dict[str, np.ndarray], layout: str | None = None,
                      config: dict[str, Any] | None = None) -> Executor:
    """passhost's executor for ``mod`` (as ``from_onnx`` returns it, with ``params``) on
    ``cpu -num-threads=threads`` (opt_level 3, PassContext ``config`` options), with
    ``inputs`` set (arrays by name); with ``layout``, its convolutions converted to it first
    (:func:`with_conv_layout`)."""
    if layout:
        mod, params = with_conv_layout(mod, params, layout), {}
    with PassContext(opt_level=3, config=config or {}):
        compiled = passhost.build(mod, f"cpu -num-threads={threads}", params)
    executor = compiled.executor()
    for name, value in inputs.items():
        executor.set_input(name, value)
    return executor


def torch_runner(forward: Callable[..., Any], inputs: dict[str, np.ndarray],
                 threads: int) -> Callable[[], np.ndarray]:
    """A PyTorch eager run of ``forward`` on ``inputs`` (passed positionally) under
    ``torch.inference_mode``, returning the output as an array; sets torch's thread count
    to ``threads`` (process-wide)."""
    import torch

    torch.set_num_threads(threads)
    tensors = [torch.from_numpy(value) for value in inputs.values()]

    def run() -> np.ndarray:
        with torch.inference_mode():
            return forward(*tensors).numpy()

    return run


def one_line(err: BaseException) -> str:
    """An error's type and message on one line."""
    first, *rest = [line.strip() for line in str(err).splitlines() if line.strip()] or [""]
    return " ".join([f"{type(err).__name__}: {first}", "; ".join(rest)]).strip()
