"""The executor's memory plan: first-fit offsets in one arena against whole blocks reused
by size, on the cpu target, in one process.

Run: python benchmarks/memory_plan.py [--models a,b] [--threads 1,2] [--rounds N]
                                      [--cache DIR]

Each race model (``race_models.py``) is built twice for ``cpu -num-threads=N`` at
opt_level 3: with passhost's plan (:mod:`passhost.backend.memory_plan`: each tensor at the
lowest offset of the arena free of live tensors) and with the plan it replaced (storage
blocks reused whole: a tensor takes the smallest free block that fits, or grows the largest
free one; the blocks laid end to end). Both executors' outputs must be equal; they are
then timed in turns, in rounds (``timing.interleaved_medians_ms``), and the table gives
each one's median ms, the arena sizes and the median of the per-round ratios first fit /
blocks (below 1.0: first fit is faster).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import race_models
from runtimes import passhost_executor
from timing import interleaved_medians_ms, median_of

from passhost.backend import memory_plan
from passhost.frontend import from_onnx
from passhost.runtime.aligned import CACHE_LINE
from passhost.runtime.plan import ExecutorPlan, Step, TensorEntry

DEFAULT_MODELS = ("mobilenet-v2", "efficientnet-b0", "resnet-50")


def _whole_blocks(tensors: list[TensorEntry], calls: list[tuple[str, list[int], list[int]]],
                  outputs: list[int]) -> ExecutorPlan:
    """The replaced plan: blocks reused whole (smallest free fit, else the largest free
    block grown), laid end to end in the arena."""
    last_use = {a: i for i, (_, args, _) in enumerate(calls) for a in args}
    keep = set(outputs)
    sizes: list[int] = []
    free: list[int] = []
    block: dict[int, int] = {}
    steps = []
    for i, (func, args, outs) in enumerate(calls):
        for o in outs:
            nbytes = tensors[o].nbytes
            fitting = [b for b in free if sizes[b] >= nbytes]
            if fitting or free:
                chosen = (min(fitting, key=sizes.__getitem__) if fitting
                          else max(free, key=sizes.__getitem__))
                sizes[chosen] = max(sizes[chosen], nbytes)
                free.remove(chosen)
            else:
                sizes.append(nbytes)
                chosen = len(sizes) - 1
            block[o] = chosen
        freed = [o for o in outs if o not in keep and o not in last_use]
        freed += [a for a in dict.fromkeys(args) if last_use[a] == i and a in block
                  and a not in keep]
        free.extend(block[t] for t in freed)
        steps.append(Step(func, (*args, *outs)))
    offsets, end = [], 0
    for size in sizes:
        offsets.append(end)
        end += -(-max(size, 1) // CACHE_LINE) * CACHE_LINE
    final = tuple(TensorEntry(t.kind, t.shape, t.dtype, t.name, block[i])
                  if t.kind == "storage" else t for i, t in enumerate(tensors))
    return ExecutorPlan(final, tuple(sizes), tuple(steps), tuple(outputs), tuple(offsets))


def _executor(planner: Callable[..., ExecutorPlan], mod: Any, params: dict[str, np.ndarray],
              threads: int, inputs: dict[str, np.ndarray]) -> Any:
    """An executor whose plan ``planner`` assigned."""
    chosen, memory_plan._assign_storage = memory_plan._assign_storage, planner
    try:
        return passhost_executor(mod, params, threads, inputs)
    finally:
        memory_plan._assign_storage = chosen


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "passhost-bench")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"{'model':<18}{'thr':>3}  {'first fit ms':>12}  {'blocks ms':>9}  "
          f"{'arena MB':>8}  {'blocks MB':>9}  {'ratio':>6}")
    for name in args.models.split(","):
        mod, params = from_onnx(onnx.load(race_models.onnx_file(name, args.cache)))
        inputs = race_models.example_inputs(name)
        for threads in (int(t) for t in args.threads.split(",")):
            executors = {"first fit": _executor(memory_plan._assign_storage, mod, params,
                                                threads, inputs),
                         "blocks": _executor(_whole_blocks, mod, params, threads, inputs)}
            outputs = {}
            for key, executor in executors.items():
                executor.run()
                outputs[key] = [np.array(executor.get_output(i))
                                for i in range(len(executor.plan.outputs))]
            if not all(np.array_equal(a, b) for a, b in zip(*outputs.values())):
                raise SystemExit(f"{name}: the two plans' outputs differ")
            rounds = interleaved_medians_ms({k: e.run for k, e in executors.items()},
                                            args.rounds)
            first, blocks = (e.plan.arena_size / 1e6 for e in executors.values())
            print(f"{name:<18}{threads:>3}  {median_of(rounds, 'first fit'):>12.3f}  "
                  f"{median_of(rounds, 'blocks'):>9.3f}  {first:>8.1f}  {blocks:>9.1f}  "
                  f"{median_of(rounds, 'first fit', 'blocks'):>6.3f}")


if __name__ == "__main__":
    main()
