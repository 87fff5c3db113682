"""The ``passhost compile`` and ``passhost run`` commands."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from passhost.cli.common import CommandError, read_model, render_instruments
from passhost.cli.flags import (
    add_context_flags,
    add_output_flags,
    context_settings,
    count,
    seed,
    writable_file,
)

__all__ = ["add_commands", "compile_command", "run_command"]

#: The most bytes an ``--input`` file may hold (a bigger one is refused before reading).
MAX_INPUT_BYTES = 1 << 31


def compile_command(args: argparse.Namespace) -> int:
    """Compile MODEL for --target and write the artifact to -o."""
    from passhost.backend import build
    from passhost.target import parse_targets
    from passhost.transform import PassContext, build_pipeline

    targets = parse_targets(args.target)
    writable_file(args.output, "artifact")
    settings = context_settings(args)
    passes = build_pipeline(args.passes) if args.passes else None
    mod, params = read_model(args.model)
    start = time.perf_counter()
    with PassContext(**settings):
        try:
            if passes is not None:
                mod = passes(mod)
            compiled = build(mod, targets, params)
        finally:
            render_instruments(settings["instruments"])
    elapsed = time.perf_counter() - start
    try:
        compiled.save(args.output)
    except OSError as err:
        raise CommandError(f"cannot write {args.output}: {err.strerror or err}") from None
    plan = compiled.plan
    print(f"compiled {args.model} for {compiled.target} in {elapsed * 1e3:.0f} ms: "
          f"{len(plan.steps)} calls, tensors in {plan.arena_size / 1e6:.1f} MB, "
          f"{len(compiled.params)} parameters")
    print(f"wrote {args.output}")
    return 0


def _read_array(path: str, name: str) -> Any:
    """The array of the ``.npy`` file ``path`` (input ``name``), or a :class:`CommandError`
    saying why it is not one: missing, empty, too big, not a ``.npy``, holding objects, or
    declaring more data than it holds."""
    from passhost.runtime.npz import NpzError, read_npy

    def refuse(why: str) -> CommandError:
        return CommandError(f"cannot read input {name!r} from {path}: {why}")

    try:
        size = os.path.getsize(path)
        if size > MAX_INPUT_BYTES:
            raise refuse(f"the file holds {size} bytes, more than the {MAX_INPUT_BYTES} an "
                         f"input may")
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as err:
        raise refuse(err.strerror or str(err)) from None
    if not raw:
        raise refuse("the file is empty")
    try:
        return read_npy(raw, name)
    except NpzError as err:
        raise refuse(str(err)) from None


def _read_inputs(items: list[str], names: list[str]) -> dict[str, Any]:
    inputs = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            if len(names) != 1:
                raise CommandError(f"--input takes NAME=FILE.npy (the inputs are {names}), "
                                   f"found {item!r}")
            name, path = names[0], item
        inputs[name] = _read_array(path, name)
    return inputs


def _summary(arr: Any) -> str:
    import numpy as np

    flat = np.asarray(arr).reshape(-1)
    text = f"{arr.dtype.name}{list(arr.shape)}"
    if flat.size == 0:
        return text
    f = flat.astype(np.float64)
    text += f"  min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}"
    if flat.size > 1:
        top = np.argsort(f)[::-1][:5]
        text += "  top: " + ", ".join(f"[{i}] {f[i]:.4g}" for i in top)
    return text


def run_command(args: argparse.Namespace) -> int:
    """Load an artifact, run it on the given (or random) inputs, print the outputs."""
    import numpy as np

    from passhost.ir.types import TensorType
    from passhost.runtime import load_artifact
    from passhost.runtime.artifact import restore_dtype
    from passhost.workloads.inputs import random_arrays

    if args.output:
        writable_file(args.output, "output")
    compiled = load_artifact(args.artifact)
    executor = compiled.executor()
    info = executor.input_info()
    given = _read_inputs(args.input, [n for n, _, _ in info])
    randoms = random_arrays([TensorType(shape, dtype) for _, shape, dtype in info],
                            seed=args.seed)
    for (name, _, dtype), arr in zip(info, randoms):
        executor.set_input(name, restore_dtype(given.pop(name), dtype) if name in given else arr)
    if given:
        raise CommandError(f"unknown inputs {sorted(given)}; the model's inputs are "
                           f"{[n for n, _, _ in info]}")
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        executor.run()
        times.append(time.perf_counter() - start)
    print(f"ran {args.artifact} ({compiled.target})")
    outputs = [executor.get_output(i) for i in range(executor.num_outputs)]
    for i, out in enumerate(outputs):
        print(f"output {i}: {_summary(out)}")
    if args.repeat > 1:
        ms = sorted(t * 1e3 for t in times)
        print(f"latency over {len(ms)} runs: median {ms[len(ms) // 2]:.2f} ms, "
              f"min {ms[0]:.2f} ms")
    if args.output:
        named = {f"output{i}": o for i, o in enumerate(outputs)}
        np.savez(args.output, **named)  # type: ignore[arg-type]  # numpy's stub: allow_pickle
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def add_commands(sub: Any) -> None:
    """Add ``compile`` and ``run`` to the ``passhost`` subcommand parsers."""
    comp = sub.add_parser("compile", help="compile a model for a target into an artifact")
    comp.add_argument("model", metavar="MODEL",
                      help="a zoo model (resnet18, resnet50, mobilenet, mlp, ...; see passhost "
                           "zoo list), an ONNX file (.onnx), a module in the IR text format, or - "
                           "for stdin")
    comp.add_argument("--target", required=True, metavar="TARGET",
                      help='the targets, e.g. "cpu" or "cmsis-nn -mcpu=cortex-m55, cpu"')
    comp.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="the artifact file to write (.tar)")
    comp.add_argument("--passes", metavar="PIPELINE",
                      help="passes to run on the model before the build flow, in the "
                           "textual pipeline syntax")
    add_context_flags(comp, 3, "the PassContext opt level (default 3)")
    add_output_flags(comp)
    comp.set_defaults(func=compile_command)

    run = sub.add_parser("run", help="run a compiled artifact")
    run.add_argument("artifact", metavar="ARTIFACT", help="a .tar written by passhost compile")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                     help="an input from a .npy file (repeatable; random inputs otherwise)")
    run.add_argument("--repeat", type=count, default=1, metavar="N",
                     help="run N times and print the latency (median, min)")
    run.add_argument("--seed", type=seed, default=0, help="seed of the random inputs")
    run.add_argument("-o", "--output", metavar="OUT.npz", help="save the outputs here")
    run.set_defaults(func=run_command)
