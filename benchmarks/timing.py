"""Timing helpers shared by the benchmark scripts (run from this folder's parent as
``python benchmarks/<script>.py``; Python puts this folder on the import path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np


def median_ms(fn: Callable[[], object], repeat: int = 5) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def interleaved_medians_ms(runners: dict[str, Callable[[], object]], repeat: int = 5,
                           runs_per_turn: int = 3, quiet_s: float = 0.1,
                           settle_ms: float = 20.0) -> list[dict[str, float]]:
    """Each round's median wall time in milliseconds of each runner, over ``repeat`` rounds.

    Each round takes the runners in turn, the order rotating every round, so that a slow
    spell of a shared machine falls on all of them alike and ratios taken within a round
    compare runs made close together. A turn first waits ``quiet_s`` (the previous
    runner's idle threads may spin for tens of milliseconds after its last run and take the
    cores), runs its runner untimed for ``settle_ms`` (at least once: warm caches and
    threads), then times ``runs_per_turn`` runs back to back.
    """
    names = list(runners)
    rounds = []
    for round_ in range(repeat):
        shift = round_ % len(names)
        medians = {}
        for name in names[shift:] + names[:shift]:
            run = runners[name]
            time.sleep(quiet_s)
            settle_end = time.perf_counter() + settle_ms / 1e3
            run()
            while time.perf_counter() < settle_end:
                run()
            times = []
            for _ in range(runs_per_turn):
                start = time.perf_counter()
                run()
                times.append((time.perf_counter() - start) * 1e3)
            medians[name] = statistics.median(times)
        rounds.append(medians)
    return rounds


def cold_rounds_ms(runners: dict[str, Callable[[], object]], repeat: int = 5,
                   evict_mb: int = 400) -> list[dict[str, float]]:
    """Each round's wall time in milliseconds of one run of each runner, over ``repeat``
    rounds, each run just after writing ``evict_mb`` megabytes elsewhere (which evicts the
    caches: the runner's operands come from memory, as a layer's do inside a model). The
    order rotates every round, as in :func:`interleaved_medians_ms`; each runner runs once
    untimed first."""
    junk = np.zeros(evict_mb << 20, np.uint8)
    names = list(runners)
    for run in runners.values():
        run()
    rounds = []
    for round_ in range(repeat):
        shift = round_ % len(names)
        times = {}
        for name in names[shift:] + names[:shift]:
            junk += 1
            start = time.perf_counter()
            runners[name]()
            times[name] = (time.perf_counter() - start) * 1e3
        rounds.append(times)
    return rounds


def median_of(rounds: list[dict[str, float]], name: str, over: str | None = None) -> float:
    """The median over ``rounds`` (from :func:`interleaved_medians_ms`) of runner ``name``'s
    time, or, with ``over``, of its time divided by runner ``over``'s in the same round."""
    return statistics.median(r[name] / (r[over] if over else 1.0) for r in rounds)
