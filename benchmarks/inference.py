"""Inference on the cpu target: the race against onnxruntime and PyTorch, the reference
interpreter comparison on zoo models, and compile time.

Run: python benchmarks/inference.py [--models a,b] [--threads 1,2] [--rounds N] [--quick]
     [--cache DIR] [--parts race,zoo,compile]

The race (``race.py``): for each model of ``race_models.py`` (ResNet-50, MobileNetV2,
EfficientNet-B0, ConvNeXt-T, ViT-B/16, BERT-base, GPT-2, a LLaMA-style decoder from
transformers configurations; a one-layer encoder, the MLP and ResNet-18) and each thread
count, passhost's cpu target, onnxruntime and PyTorch eager (when importable) run the same
ONNX file on the same inputs, checked against onnxruntime, then timed in turns, in rounds.
Target: passhost at most 1.0x onnxruntime on every model and thread count ("!" marks a
ratio over it). Exported files are cached in ``--cache`` (default: a temporary folder).

Then each zoo model runs on the cpu target beside passhost's reference interpreter (plain
NumPy, one array per operator). Last, the compile time of ResNet-50 from ONNX, cold and
warm cache, beside TVM 0.27 in the same run (``compile_time.py``).

``--quick``: 5 rounds instead of 20, the small models only (the MLP and the encoder), two
zoo models, and compile time on ResNet-18.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import compile_time
import numpy as np
import race_models
from race import race
from runtimes import passhost_executor
from timing import median_ms

from passhost.relay.interpreter import Interpreter
from passhost.workloads.zoo import get_model

#: The parts of the benchmark, in the order they run.
PARTS = ("race", "zoo", "compile")


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
        executor = passhost_executor(mod, params, threads, inputs)
        executor.run()
        ms = median_ms(executor.run, repeat)
        print(f"{name:<13} {threads} thr  cpu target {ms:8.2f} ms   reference interpreter "
              f"{ref_ms:8.2f} ms   ratio {ms / ref_ms:5.2f}")


def _names(text: str, known: list[str] | tuple[str, ...], what: str,
           parser: argparse.ArgumentParser) -> list[str]:
    """The comma-separated names of ``text``, each one of ``known``."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"unknown {what} {unknown}; expected some of {', '.join(known)}")
    return names


def main() -> None:
    """Run the parts asked for: the race, the interpreter comparison, the compile time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated race models (default: all of "
                        f"{', '.join(race_models.MODELS)})")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts (1,2)")
    parser.add_argument("--rounds", type=int, help="rounds per measurement (20; --quick 5)")
    parser.add_argument("--quick", action="store_true",
                        help="5 rounds, the small models, two zoo models, ResNet-18 compile")
    parser.add_argument("--cache", type=Path, help="folder of the exported ONNX files, "
                        "reused across runs (default: a temporary one)")
    parser.add_argument("--layout", help="race passhost with its convolutions converted to "
                        "this data layout (NHWC, NCHW16c; default: as imported, NCHW)")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated parts to run ({','.join(PARTS)})")
    args = parser.parse_args()
    parts = _names(args.parts, PARTS, "parts", parser)
    default_models = race_models.SMALL if args.quick else list(race_models.MODELS)
    models = (_names(args.models, list(race_models.MODELS), "models", parser)
              if args.models else default_models)
    threads = [int(count) for count in args.threads.split(",")]
    rounds = args.rounds or (5 if args.quick else 20)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp)
        if "race" in parts:
            race(models, threads, rounds, cache, layout=args.layout)
        if "zoo" in parts:
            zoo = ["mlp", "resnet-18"] if args.quick else ["mlp", "resnet-18", "mobilenet-v2",
                                                           "resnet-50", "transformer"]
            for name in zoo:
                _latency(name, rounds)
        if "compile" in parts:
            name = "resnet-18" if args.quick else "resnet-50"
            runs = compile_time.measure(race_models.onnx_file(name, cache), 1)
            print("\n".join(compile_time.report(name, runs)))


if __name__ == "__main__":
    main()
