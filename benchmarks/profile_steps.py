"""Where passhost's time goes on one race model: the executor's steps timed one by one.

Run: python benchmarks/profile_steps.py MODEL [--threads N] [--runs R] [--cache DIR] [--unbound]
                                         [--ort] [--steps] [--layout L]

Builds MODEL (a name of ``race_models.MODELS``) for ``cpu -num-threads=N`` at opt_level 3,
runs it twice untimed, then times every step inside the executor's own runs over R
inferences (``Executor.run_timed``: a run of native steps times each step in the native
loop, with nothing between the steps, as an inference runs them), or with ``--unbound``
each step called alone from Python (a few microseconds more per step, and at two threads
the pool's workers may have gone to sleep in between). It prints the total per inference
and the time per kind of step (the PrimFunc name without its number), largest first. With
``--ort``, onnxruntime's own profiler times the same model on the same threads over R
inferences after two untimed, in turns with passhost's (one inference each per round,
after a pause and 20 ms of untimed ones: this machine's speed drifts by up to 1.6x within
a minute, and two profiles taken one after the other compared different phases), and its
time per operator type follows (the
kernels' time: no session overhead). With ``--steps``, every step is listed in order (with
its output's shape) instead of the kinds, and onnxruntime's nodes in order (with their
outputs' shapes), so that a layer's two times can be read side by side. With ``--layout``
(``NHWC``, ``NCHW16c``), passhost's convolutions are converted to that layout first.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from race_models import MODELS, example_inputs, onnx_file
from runtimes import ort_session, with_conv_layout

import passhost
from passhost.frontend import from_onnx
from passhost.runtime.module import find_function, run_scope
from passhost.transform import PassContext


def _steps(executor: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    """The executor's steps one by one, none bound into a native run."""
    return [(find_function(executor.module, step.func),
             tuple(executor._arrays[a] for a in step.args)) for step in executor.plan.steps]


def _step_key(index: int, func: Any, args: tuple[Any, ...]) -> str:
    """A step's line in the ``--steps`` listing: its number, name and output's shape."""
    shape = list(getattr(args[-1], "shape", ())) if args else []
    return f"{index:3d} {getattr(func, '__name__', type(func).__name__):36s} {shape}"


def _kind(func: Any) -> str:
    """A step's kind: its function's name without the number."""
    return getattr(func, "__name__", type(func).__name__).rstrip("_0123456789")


class _PasshostSteps:
    """MODEL built for ``cpu -num-threads=N`` at opt_level 3, run twice untimed, and its
    steps ready to be timed, inference after inference: inside the executor's runs, or
    (``unbound``) each called alone."""

    def __init__(self, name: str, threads: int, cache: Path, unbound: bool,
                 steps: bool, layout: str | None) -> None:
        mod, params = from_onnx(onnx.load(onnx_file(name, cache)))
        if layout:
            mod, params = with_conv_layout(mod, params, layout), {}
        with PassContext(opt_level=3):
            compiled = passhost.build(mod, f"cpu -num-threads={threads}", params=params)
        self.executor = compiled.executor()
        for key, value in example_inputs(name).items():
            self.executor.set_input(key, value)
        self.executor.run()
        self.executor.run()
        self.steps = steps
        self.unbound = _steps(self.executor) if unbound else None
        self.keys = [_step_key(i, func, args) if steps else _kind(func)
                     for i, (func, args) in enumerate(_steps(self.executor))]
        self.seconds = np.zeros(len(self.keys))

    def time_once(self) -> None:
        """One inference, its steps timed."""
        if self.unbound is None:
            self.executor.run_timed(self.seconds)
            return
        with run_scope(self.executor.module):
            for index, (func, args) in enumerate(self.unbound):
                start = time.perf_counter()
                func(*args)
                self.seconds[index] += time.perf_counter() - start

    def result(self, runs: int) -> dict[str, float]:
        """Milliseconds per inference by kind of step (or by step), and ``"total"``."""
        seconds: collections.Counter[str] = collections.Counter()
        for key, spent in zip(self.keys, self.seconds):
            seconds[key] += float(spent)
        order = seconds.items() if self.steps else seconds.most_common()
        per_run = {key: s / runs * 1e3 for key, s in order}
        return {"total": sum(per_run.values()), **per_run}


#: Before each runtime's turn in a round: a pause, since the other runtime's idle threads
#: may spin for tens of milliseconds after its run and take the cores (onnxruntime's do:
#: MobileNetV2 at two threads took 2x its time run right after onnxruntime's), then
#: untimed inferences for at least SETTLE_S, so that caches and threads are warm again
#: after the other's: with one untimed inference before each timed one, passhost's
#: MobileNetV2 at two threads read 10.0 ms where a loop of inferences took 5.3 (machine of
#: 2026-11-27: after an idle spell, its CPUs take a while to run at full speed again).
QUIET_S = 0.1
SETTLE_S = 0.02


def _warm_runs(run: Callable[[], object]) -> int:
    """How many untimed runs of ``run`` (timed once here) fill :data:`SETTLE_S`: at least
    one."""
    start = time.perf_counter()
    run()
    return max(1, math.ceil(SETTLE_S / (time.perf_counter() - start)))


def _ort_result(events: list[dict[str, Any]], runs: int, warm: int, steps: bool,
                ) -> dict[str, float]:
    """onnxruntime's milliseconds per inference by operator type (or by node, in the order
    they ran) and ``"total"``, from its profiler's node events: the first three runs
    (untimed) left out, then each round's ``warm`` first ones (its warm-up)."""
    seconds: collections.Counter[str] = collections.Counter()
    seen: collections.Counter[str] = collections.Counter()
    for event in events:
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        seen[event["name"]] += 1
        run = seen[event["name"]] - 4  # runs in order; the first three untimed
        if run >= 0 and run % (warm + 1) == warm:
            seconds[_node_key(event) if steps else event["args"]["op_name"]] += \
                event["dur"] * 1e-6
    order = seconds.items() if steps else seconds.most_common()
    per_run = {kind: s / runs * 1e3 for kind, s in order}
    return {"total": sum(per_run.values()), **per_run}


def profiles(name: str, threads: int, runs: int, cache: Path, unbound: bool = False,
             steps: bool = False, ort: bool = False, layout: str | None = None,
             ) -> tuple[dict[str, float], dict[str, float] | None]:
    """passhost's milliseconds per inference by kind of step (and ``"total"``; ``unbound``
    times every step called alone instead of inside the executor's runs; ``steps`` gives
    each step in order instead of the kinds) and, with ``ort``, onnxruntime's by
    operator type or node; ``layout`` converts passhost's convolutions to it first. The two
    are timed in turns, one inference each per round after a pause and untimed ones
    (:data:`QUIET_S`), so that both sample the same phases of a machine whose speed
    drifts."""
    timer = _PasshostSteps(name, threads, cache, unbound, steps, layout)
    if not ort:
        for _ in range(runs):
            timer.time_once()
        return timer.result(runs), None
    with tempfile.TemporaryDirectory() as folder:
        session = ort_session(onnx_file(name, cache), threads, f"{folder}/ort")
        inputs = example_inputs(name)
        for _ in range(2):
            session.run(None, inputs)

        def ort_run() -> None:
            session.run(None, inputs)

        ort_warm = _warm_runs(ort_run)
        turns = ((timer.executor.run, timer.time_once, _warm_runs(timer.executor.run)),
                 (ort_run, ort_run, ort_warm))
        for _ in range(runs):
            for warm, timed, count in turns:
                time.sleep(QUIET_S)
                for _ in range(count):
                    warm()
                timed()
        events = json.loads(Path(session.end_profiling()).read_text())
    return timer.result(runs), _ort_result(events, runs, ort_warm, steps)


def _node_key(event: dict[str, Any]) -> str:
    """A node's line in the ``--steps`` listing: its operator type, name and outputs'
    shapes."""
    args = event["args"]
    shapes = [shape for output in args.get("output_type_shape", [])
              for shape in output.values()]
    name = event["name"].removesuffix("_kernel_time")
    return f"{args['op_name']:14s} {name:44s} {shapes}"


def _print(title: str, result: dict[str, float], every: bool = False) -> None:
    print(f"{title}: {result.pop('total'):.2f} ms per inference")
    for kind, ms in list(result.items())[:None if every else 12]:
        print(f"  {ms:9.3f} ms  {kind}")


def main() -> None:
    """Print the profile of one model."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "bench")
    parser.add_argument("--unbound", action="store_true",
                        help="time each step called alone, not inside the executor's runs")
    parser.add_argument("--ort", action="store_true",
                        help="also onnxruntime's profile of the model, by operator type")
    parser.add_argument("--steps", action="store_true",
                        help="every step (and onnxruntime node) in order, not the kinds")
    parser.add_argument("--layout", help="passhost's convolutions converted to this data "
                        "layout first (NHWC, NCHW16c)")
    args = parser.parse_args()
    threads = f"{args.threads} thread(s)"
    ours, theirs = profiles(args.model, args.threads, args.runs, args.cache, args.unbound,
                            args.steps, args.ort, args.layout)
    _print(f"{args.model}, {threads}", ours, args.steps)
    if theirs is not None:
        _print(f"onnxruntime, {threads}", theirs, args.steps)


if __name__ == "__main__":
    main()
