"""Inference on the cpu target: batch-1 latency of zoo models, and compile time.

Run: python benchmarks/inference.py [--quick]

For each model the script builds an artifact for ``cpu -num-threads=1`` and ``-num-threads=2``
and times ``Executor.run`` (median of several runs), beside passhost's reference interpreter
(plain NumPy, one array per operator) on the same inputs in the same process, and prints the
ratio. The onnxruntime and PyTorch comparisons need the ONNX frontend (issue 7); their
figures from shared/BENCHMARKS.md are printed for orientation only (not measured here).
Last, the compile time of ResNet-18 (build and save an artifact, parameters bound), beside
TVM 0.27's 1.27 s (import + compile, shared/BENCHMARKS.md).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from timing import median_ms

import passhost
from passhost.relay.interpreter import Interpreter
from passhost.relay.testing.zoo import get_model
from passhost.runtime import load_artifact
from passhost.transform import PassContext

#: shared/BENCHMARKS.md, ms at (1 thread, 2 threads): onnxruntime 1.31, PyTorch 2.13 eager.
PEERS = {"resnet-18": {"onnxruntime": (33.5, 25.4), "pytorch": (60.8, 35.9)},
         "mobilenet-v2": {"onnxruntime": (10.8, 6.1), "pytorch": (26.9, 26.5)},
         "mlp": {"onnxruntime": (None, 0.105), "pytorch": (None, 0.209)}}
#: TVM 0.27 on ResNet-18 from ONNX: import 0.20 s + compile 1.07 s.
TVM_COMPILE_S = 1.27


def _inputs(mod, params) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {p.name_hint: rng.standard_normal(p.checked_type.shape).astype(p.checked_type.dtype)
            for p in mod["main"].params if p.name_hint not in params}


def _latency(name: str, repeat: int) -> None:
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
        peers = PEERS.get(name, {})
        quoted = ", ".join(f"{peer} {vals[threads - 1]} ms" for peer, vals in peers.items()
                           if vals[threads - 1] is not None)
        print(f"{name:<13} {threads} thr  cpu target {ms:8.2f} ms   reference interpreter "
              f"{ref_ms:8.2f} ms   ratio {ms / ref_ms:5.2f}"
              + (f"   (quoted: {quoted})" if quoted else ""))


def _compile_time() -> None:
    mod, params = get_model("resnet-18")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "resnet18.tar"

        def compile_and_save() -> None:
            with PassContext(opt_level=3):
                passhost.build(mod, "cpu", params).save(path)

        ms = median_ms(compile_and_save, 3)
        start = time.perf_counter()
        load_artifact(path)
        load_ms = (time.perf_counter() - start) * 1e3
    print(f"compile ResNet-18 (build + save): {ms:.0f} ms   TVM 0.27 {TVM_COMPILE_S * 1e3:.0f} "
          f"ms   ratio {ms / (TVM_COMPILE_S * 1e3):.2f} (target: at most 0.20); "
          f"load {load_ms:.0f} ms")


def main() -> None:
    """Print latency for each model, then the compile time."""
    quick = "--quick" in sys.argv
    models = ["mlp", "resnet-18"] if quick else ["mlp", "resnet-18", "mobilenet-v2",
                                                  "resnet-50", "transformer"]
    for name in models:
        _latency(name, 5 if quick else 20)
    _compile_time()


if __name__ == "__main__":
    main()
