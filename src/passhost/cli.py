"""The ``passhost`` command."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from passhost._version import __version__
from passhost.errors import PasshostError


def _zoo_list(_args: argparse.Namespace) -> int:
    from passhost.relay.testing.zoo import list_models

    for name, desc in list_models():
        print(f"{name:<14} {desc}")
    return 0


def _zoo_show(args: argparse.Namespace) -> int:
    from passhost.relay.testing.zoo import get_model

    mod, _params = get_model(args.model)
    print(mod.astext(show_meta_data=False))
    return 0


def _zoo_run(args: argparse.Namespace) -> int:
    import numpy as np

    from passhost.relay.interpreter import Interpreter
    from passhost.relay.testing.op_examples import random_arrays
    from passhost.relay.testing.zoo import get_model

    mod, params = get_model(args.model)
    main = mod["main"]
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``passhost`` command."""
    parser = argparse.ArgumentParser(prog="passhost", description=__doc__)
    parser.add_argument("--version", action="version", version=f"passhost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    zoo = sub.add_parser("zoo", help="the built-in model zoo")
    zoo_sub = zoo.add_subparsers(dest="zoo_command", metavar="ZOO_COMMAND", required=True)
    zoo_sub.add_parser("list", help="list the zoo's models").set_defaults(func=_zoo_list)
    show = zoo_sub.add_parser("show", help="print a model's IR (constants elided)")
    show.add_argument("model")
    show.set_defaults(func=_zoo_show)
    run = zoo_sub.add_parser("run", help="run a model in the reference interpreter")
    run.add_argument("model")
    run.add_argument("--seed", type=int, default=0, help="seed of the random input")
    run.add_argument("--top", type=int, default=5, help="how many top outputs to print")
    run.set_defaults(func=_zoo_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``passhost`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except PasshostError as err:
        print(f"passhost: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
