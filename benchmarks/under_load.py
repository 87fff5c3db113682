"""Latency under load (issue 20, item 6): the MLP 784-512-512-10 at 2 threads, quiet and
with another process busy on one core, for passhost's cpu target and onnxruntime.

Run: python benchmarks/under_load.py [--threads N] [--rounds N] [--quick]

The busy process is a ``multiprocessing`` child spinning in a Python loop; the script starts
it (before any runtime starts its threads) and stops it. Each round times both runtimes in
turns (``timing.interleaved_medians_ms``, many runs per turn) once with the child idle and
once with it spinning; a runtime's slowdown is the median over the rounds of its loaded
median over its quiet median in the same round. Target: passhost's at most 2x (no long
spin-waits, no more threads than cores).
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event

import numpy as np
import onnx_models
from runtimes import check, ort_session, passhost_executor
from timing import interleaved_medians_ms, median_of

from passhost.frontend import from_onnx

#: The largest loaded / quiet latency ratio that meets the target.
TARGET_RATIO = 2.0
#: Runs timed back to back in each turn (the MLP takes about 0.1 ms).
RUNS_PER_TURN = 201


def _spin(busy: Event, stop: Event, seconds: Synchronized) -> None:
    """Keep one core busy in a Python loop while ``busy`` is set, until ``stop`` is; add
    the CPU time spent spinning to ``seconds``."""
    while not stop.is_set():
        if busy.wait(timeout=0.05):
            start = time.process_time()
            while busy.is_set():
                for _ in range(10_000):
                    pass
            with seconds.get_lock():
                seconds.value += time.process_time() - start


def _round(runners: dict[str, Callable[[], object]], busy: Event,
           load: bool) -> dict[str, float]:
    """One round of turns of ``runners``, the child spinning when ``load``: each runner's
    median in milliseconds."""
    if load:
        busy.set()
    else:
        busy.clear()
    time.sleep(0.05)
    return interleaved_medians_ms(runners, 1, runs_per_turn=RUNS_PER_TURN)[0]


def main() -> None:
    """Measure and print quiet and loaded medians and their ratio for each runtime."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="threads of each runtime (2)")
    parser.add_argument("--rounds", type=int, help="rounds (10; --quick 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 10)
    context = multiprocessing.get_context("fork")
    busy, stop, spun = context.Event(), context.Event(), context.Value("d", 0.0)
    # Forked before the runtimes start their threads: the child holds none of them.
    spinner = context.Process(target=_spin, args=(busy, stop, spun), daemon=True)
    spinner.start()
    try:
        model = onnx_models.mlp()
        x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
        session = ort_session(model, args.threads)
        expected = session.run(None, {"x": x})[0]
        executor = passhost_executor(*from_onnx(model), args.threads, {"x": x})
        executor.run()
        check("passhost", "mlp", executor.get_output(0), expected)
        runners = {"passhost": executor.run,
                   "onnxruntime": lambda: session.run(None, {"x": x})}
        quiet, loaded = [], []
        loaded_s = 0.0
        for _ in range(rounds):
            quiet.append(_round(runners, busy, load=False))
            start = time.perf_counter()
            loaded.append(_round(runners, busy, load=True))
            loaded_s += time.perf_counter() - start
        busy.clear()
    finally:
        stop.set()
        busy.clear()
        spinner.join(timeout=5)
        if spinner.is_alive():
            spinner.terminate()
            spinner.join()
    print(f"MLP 784-512-512-10, {args.threads} threads, another process busy on one core "
          f"({rounds} rounds of {RUNS_PER_TURN} runs per turn; it had "
          f"{spun.value:.1f} s of CPU in the loaded phases' {loaded_s:.1f} s):")
    for name in runners:
        ratio = statistics.median(busy_round[name] / quiet_round[name]
                                  for quiet_round, busy_round in zip(quiet, loaded))
        mark = "!" if ratio > TARGET_RATIO else ""
        print(f"  {name:<12} quiet {median_of(quiet, name):7.3f} ms   loaded "
              f"{median_of(loaded, name):7.3f} ms   loaded / quiet {ratio:5.2f}{mark}"
              + (f" (target <= {TARGET_RATIO})" if name == "passhost" else ""))


if __name__ == "__main__":
    main()
