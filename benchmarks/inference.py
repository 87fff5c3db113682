"""Inference on the cpu target: the race against onnxruntime and PyTorch, the reference
interpreter comparison on zoo models, and compile time.

Run: python benchmarks/inference.py [--quick]

The race (issue 7): ResNet-18, MobileNetV2 and the MLP 784-512-512-10 are built as ONNX
models (``onnx_models.py``), and for 1 and 2 threads the script times, in the same process on
the same file and weights, passhost's cpu target (``from_onnx`` + ``build`` at opt_level 3),
onnxruntime (intra-op threads = threads, inter-op 1, all graph optimisations) and, when torch
is importable, PyTorch eager (same layers and weights, ``torch.inference_mode``). Outputs are
checked against onnxruntime before timing. The runtimes are timed in turns, in rounds
(``timing.interleaved_medians_ms``): a quiet gap and untimed runs before each turn keep one
runtime's idle spinning threads off the next one's cores, and each ratio is the median of
the ratios within a round, so that the machine's slow spells cancel. Target: passhost at
most 1.5x onnxruntime.

Then each zoo model runs on the cpu target beside passhost's reference interpreter (plain
NumPy, one array per operator). Last, the compile time of ResNet-18 from ONNX
(``from_onnx`` + ``build`` + ``save``), beside TVM 0.27's 1.27 s (import 0.20 s + compile
1.07 s, shared/BENCHMARKS.md); target: at most 0.20 of it.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx_models import MODELS, to_torch
from timing import interleaved_medians_ms, median_ms, median_of

import passhost
from passhost.frontend import from_onnx
from passhost.relay.interpreter import Interpreter
from passhost.relay.testing.zoo import get_model
from passhost.runtime import Executor, load_artifact
from passhost.transform import PassContext

#: TVM 0.27 on ResNet-18 from ONNX: import 0.20 s + compile 1.07 s.
TVM_COMPILE_S = 1.27
#: passhost's latency over onnxruntime's that the race aims for.
TARGET_RATIO = 1.5
#: Outputs must match onnxruntime's to this relative tolerance (atol scaled to the output).
RTOL = 1e-3


class OutputMismatchError(AssertionError):
    """A runtime's output differs from onnxruntime's on the same model and input."""


def _check(runtime: str, model: str, found: np.ndarray, expected: np.ndarray) -> float:
    """Max abs difference of ``found`` from ``expected``, raising when out of tolerance."""
    diff = float(np.max(np.abs(found - expected)))
    atol = RTOL * float(np.max(np.abs(expected)))
    if found.shape != expected.shape or not np.allclose(found, expected, RTOL, atol):
        raise OutputMismatchError(f"{model}: {runtime} output {found.shape} differs from "
                                  f"onnxruntime's {expected.shape}: max abs diff {diff:.3g}, "
                                  f"expected within rtol {RTOL} (atol {atol:.3g})")
    return diff


def ort_session(model: onnx.ModelProto, threads: int) -> ort.InferenceSession:
    """An onnxruntime CPU session with ``threads`` intra-op threads."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def passhost_executor(model: onnx.ModelProto, threads: int,
                      inputs: dict[str, np.ndarray]) -> Executor:
    """passhost's executor for ``model`` on ``cpu -num-threads=threads`` (opt_level 3) with
    ``inputs`` set (arrays by input name)."""
    mod, params = from_onnx(model)
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, f"cpu -num-threads={threads}", params)
    executor = compiled.executor()
    for name, value in inputs.items():
        executor.set_input(name, value)
    return executor


def _torch_runner(model: onnx.ModelProto, x: np.ndarray) -> Callable[[], Any] | None:
    """PyTorch eager run of ``model`` on ``x``, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    forward = to_torch(model)
    tensor = torch.from_numpy(x)

    def run() -> Any:
        with torch.inference_mode():
            return forward(tensor)

    return run


def _race(name: str, repeat: int) -> None:
    """Time passhost, onnxruntime and PyTorch on ONNX model ``name`` for 1 and 2 threads,
    in turns (:func:`timing.interleaved_medians_ms`); each ratio is the median of the
    ratios within a round."""
    model = MODELS[name]()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    torch_run = _torch_runner(model, x)
    for threads in (1, 2):
        session = ort_session(model, threads)
        expected = session.run(None, {"x": x})[0]
        executor = passhost_executor(model, threads, {"x": x})
        executor.run()
        diff = _check("passhost", name, executor.get_output(0), expected)
        runners = {"passhost": executor.run,
                   "onnxruntime": lambda s=session: s.run(None, {"x": x})}
        if torch_run is not None:
            import torch
            torch.set_num_threads(threads)
            _check("torch", name, torch_run().numpy(), expected)
            runners["torch"] = torch_run
        rounds = interleaved_medians_ms(runners, repeat)
        ms = {runner: median_of(rounds, runner) for runner in runners}
        ratio = median_of(rounds, "passhost", "onnxruntime")
        row = (f"{name:<13} {threads} thr  passhost {ms['passhost']:8.3f} ms   onnxruntime "
               f"{ms['onnxruntime']:8.3f} ms   ratio {ratio:5.2f} (target <= {TARGET_RATIO})")
        if "torch" in ms:
            row += (f"   torch {ms['torch']:8.3f} ms   ratio "
                    f"{median_of(rounds, 'passhost', 'torch'):5.2f}")
        print(f"{row}   max|passhost-ort| {diff:.2g}")


def _inputs(mod: Any, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Random inputs for zoo model ``mod``'s data parameters."""
    rng = np.random.default_rng(0)
    return {p.name_hint: rng.standard_normal(p.checked_type.shape).astype(p.checked_type.dtype)
            for p in mod["main"].params if p.name_hint not in params}


def _latency(name: str, repeat: int) -> None:
    """Time zoo model ``name`` on the cpu target beside the reference interpreter."""
    mod, params = get_model(name)
    inputs = _inputs(mod, params)
    interp = Interpreter(mod)
    ref_ms = median_ms(lambda: interp.run("main", {**inputs, **params}), max(2, repeat // 4))
    for threads in (1, 2):
        with PassContext(opt_level=3):
            compiled = passhost.build(mod, f"cpu -num-threads={threads}", params)
        executor = compiled.executor()
        for key, value in inputs.items():
            executor.set_input(key, value)
        executor.run()
        ms = median_ms(executor.run, repeat)
        print(f"{name:<13} {threads} thr  cpu target {ms:8.2f} ms   reference interpreter "
              f"{ref_ms:8.2f} ms   ratio {ms / ref_ms:5.2f}")


def _compile_time() -> None:
    """Median time to import ResNet-18 from an ONNX file, build it and save the artifact."""
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = Path(tmp) / "resnet18.onnx"
        onnx.save(MODELS["resnet-18"](), onnx_path)
        path = Path(tmp) / "resnet18.tar"

        def compile_and_save() -> None:
            mod, params = from_onnx(onnx_path)
            with PassContext(opt_level=3):
                passhost.build(mod, "cpu", params).save(path)

        ms = median_ms(compile_and_save, 3)
        start = time.perf_counter()
        load_artifact(path)
        load_ms = (time.perf_counter() - start) * 1e3
    print(f"compile ResNet-18 from ONNX (from_onnx + build + save): {ms:.0f} ms   TVM 0.27 "
          f"{TVM_COMPILE_S * 1e3:.0f} ms   ratio {ms / (TVM_COMPILE_S * 1e3):.2f} "
          f"(target: at most 0.20); load {load_ms:.0f} ms")


def main() -> None:
    """Print the race against onnxruntime and PyTorch, the interpreter comparison on zoo
    models, then the compile time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="5 runs per measurement instead of 20, and fewer zoo models")
    quick = parser.parse_args().quick
    repeat = 5 if quick else 20
    if importlib.util.find_spec("torch") is None:
        print("torch is not installed: the PyTorch eager column is skipped")
    for name in MODELS:
        _race(name, repeat)
    zoo = ["mlp", "resnet-18"] if quick else ["mlp", "resnet-18", "mobilenet-v2",
                                               "resnet-50", "transformer"]
    for name in zoo:
        _latency(name, repeat)
    _compile_time()


if __name__ == "__main__":
    main()
