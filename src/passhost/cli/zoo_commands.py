"""``passhost zoo``: list, show and run the built-in models."""

from __future__ import annotations

import argparse
import time
from typing import Any

from passhost.cli.flags import count, seed

__all__ = ["add_commands"]


def _zoo_list(_args: argparse.Namespace) -> int:
    from passhost.workloads.zoo import list_models

    for name, desc in list_models():
        print(f"{name:<14} {desc}")
    return 0


def _zoo_show(args: argparse.Namespace) -> int:
    from passhost.workloads.zoo import get_model

    mod, _params = get_model(args.model)
    print(mod.astext(show_meta_data=False))
    return 0


def _zoo_run(args: argparse.Namespace) -> int:
    import numpy as np

    from passhost.relay.expr import Function
    from passhost.relay.interpreter import Interpreter
    from passhost.workloads.inputs import random_arrays
    from passhost.workloads.zoo import get_model

    mod, params = get_model(args.model)
    main = mod["main"]
    assert isinstance(main, Function)  # a zoo model's main is a graph function
    data_params = [p for p in main.params if p.name_hint not in params]
    arrays = random_arrays([p.checked_type for p in data_params], seed=args.seed)
    inputs = {p.name_hint: a for p, a in zip(data_params, arrays)}
    inputs.update(params)
    print(f"model {args.model}: {len(main.params)} parameters, inputs "
          + ", ".join(f"%{p.name_hint}: {p.checked_type}" for p in data_params))
    start = time.perf_counter()
    out = Interpreter(mod).run("main", inputs)
    elapsed = time.perf_counter() - start
    print(f"reference interpreter: {elapsed * 1e3:.1f} ms")
    flat = np.asarray(out).reshape(-1)
    top = np.argsort(flat)[::-1][: args.top]
    print(f"output {np.asarray(out).shape} {np.asarray(out).dtype}; top {len(top)}:")
    for i in top:
        print(f"  [{i}] {flat[i]:.6f}")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``zoo list``, ``zoo show`` and ``zoo run`` to the ``passhost`` subcommands."""
    zoo = sub.add_parser("zoo", help="the built-in model zoo")
    zoo_sub = zoo.add_subparsers(dest="zoo_command", metavar="ZOO_COMMAND", required=True)
    zoo_sub.add_parser("list", help="list the zoo's models").set_defaults(func=_zoo_list)
    show = zoo_sub.add_parser("show", help="print a model's IR (constants elided)")
    show.add_argument("model")
    show.set_defaults(func=_zoo_show)
    run = zoo_sub.add_parser("run", help="run a model in the reference interpreter")
    run.add_argument("model")
    run.add_argument("--seed", type=seed, default=0, help="seed of the random input")
    run.add_argument("--top", type=count, default=5, help="how many top outputs to print")
    run.set_defaults(func=_zoo_run)
