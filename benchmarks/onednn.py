"""oneDNN's matrix product against the cpu target's native one, on the layers of the race
models, in one process, in rounds of turns (issue 20, item 8: use a well-kept library where
it beats our kernels).

Run: python benchmarks/onednn.py --lib DIR [--threads 1,2] [--rounds N]

``DIR`` holds ``libdnnl.so.3`` and the libraries it needs: ``pip install onednn`` into a
separate environment and pass its ``lib`` folder (the wheel is 330 MB and needs Intel's
SYCL, OpenCL, OpenMP and TBB runtimes, about 1 GB more, so it is not a project
dependency). oneDNN's PyPI build runs its CPU work on TBB, which sizes its pool from the
process's CPU affinity, so each thread count runs in a child process pinned to that many
cores with ``taskset``; passhost's kernel gets the same count. Both compute
``y = a @ b`` in float32 with ``b`` a constant weight (packed once by passhost, as in a
model); the table gives the median ms per product and passhost / oneDNN (below 1: passhost
is faster).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: (name, rows, depth, columns): BERT-base and GPT-2's projections (128 tokens), ViT-B/16's
#: QKV (197 tokens), ConvNeXt-T's first-stage MLP (56 x 56 positions), a LLaMA-style
#: decoder's gate (512 -> 1536), and ResNet-50's first 1x1 convolution as a product.
LAYERS = [("bert qkv/out", 128, 768, 768), ("bert ffn up", 128, 768, 3072),
          ("bert ffn down", 128, 3072, 768), ("vit qkv", 197, 768, 2304),
          ("convnext mlp up", 3136, 96, 384), ("convnext mlp down", 3136, 384, 96),
          ("llama gate", 128, 512, 1536), ("resnet-50 1x1", 3136, 64, 256)]


def _onednn_sgemm(lib_dir: Path):
    """``sgemm(a, b, y)`` through oneDNN's ``dnnl_sgemm`` (row-major)."""
    lib = ctypes.CDLL(str(lib_dir / "libdnnl.so.3"))
    sgemm = lib.dnnl_sgemm
    i64, fp = ctypes.c_int64, ctypes.c_void_p
    sgemm.argtypes = [ctypes.c_char, ctypes.c_char, i64, i64, i64, ctypes.c_float, fp, i64,
                      fp, i64, ctypes.c_float, fp, i64]
    sgemm.restype = ctypes.c_int

    def run(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
        (m, k), n = a.shape, b.shape[1]
        status = sgemm(b"N", b"N", m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, n, 0.0,
                       y.ctypes.data, n)
        if status != 0:
            raise RuntimeError(f"dnnl_sgemm failed with status {status}")

    return run


def _passhost_matmul(threads: int):
    """``matmul(a, b, y)`` through the cpu target's native matrix-product kernel."""
    from passhost_cpu_target import native_kernels

    bounds = np.array([-np.inf, np.inf], np.float32)

    def run(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> None:
        (m, k), n = a.shape, b.shape[1]
        geometry = np.array([1, m, n, k, 0, k, 1, 0, n, 1, 0, threads, m * n], np.int64)
        native_kernels.matmul(y, a, b, None, None, None, geometry, bounds)

    return run


def _race(lib_dir: Path, threads: int, rounds: int) -> None:
    """Print one row per layer (this process is already pinned to ``threads`` cores)."""
    ours, theirs = _passhost_matmul(threads), _onednn_sgemm(lib_dir)
    rng = np.random.default_rng(0)
    for name, m, k, n in LAYERS:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        b.flags.writeable = False
        outputs = {"passhost": np.empty((m, n), np.float32),
                   "onednn": np.empty((m, n), np.float32)}
        runners = {"passhost": ours, "onednn": theirs}
        for key, run in runners.items():
            run(a, b, outputs[key])
        np.testing.assert_allclose(outputs["passhost"], outputs["onednn"], rtol=1e-3,
                                   atol=1e-3)
        times: dict[str, list[float]] = {key: [] for key in runners}
        ratios = []
        for _ in range(rounds):
            best = {}
            for key, run in runners.items():
                samples = []
                for _ in range(5):
                    start = time.perf_counter()
                    run(a, b, outputs[key])
                    samples.append(time.perf_counter() - start)
                best[key] = min(samples)
                times[key].append(best[key])
            ratios.append(best["passhost"] / best["onednn"])
        print(f"{name:<18} {threads:>3} {m:>5}x{k:<4}x{n:<5} "
              f"{statistics.median(times['passhost']) * 1e3:>11.3f} "
              f"{statistics.median(times['onednn']) * 1e3:>10.3f} "
              f"{statistics.median(ratios):>8.2f}", flush=True)


def main() -> None:
    """Race both at each thread count, each in a child process pinned to that many cores."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", type=Path, required=True,
                        help="folder of libdnnl.so.3 and its runtimes")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _race(args.lib, args.child, args.rounds)
        return
    print(f"{'layer':<18} {'thr':>3} {'m x k x n':>16} {'passhost ms':>11} {'onednn ms':>10} "
          f"{'ph/dnnl':>8}")
    env = {**os.environ, "LD_LIBRARY_PATH": f"{args.lib}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    for threads in (int(t) for t in args.threads.split(",")):
        cores = ",".join(str(c) for c in range(threads))
        subprocess.run(["taskset", "-c", cores, sys.executable, __file__, "--lib",
                        str(args.lib), "--rounds", str(args.rounds), "--child", str(threads)],
                       env=env, check=True)


if __name__ == "__main__":
    main()
