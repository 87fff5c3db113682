"""Costs of the IR foundation: type inference, printing, parsing, hashing and the reference
interpreter on ResNet-18, and the same operations on a 100 000-node chain.

Run: python benchmarks/ir_foundation.py   (prints milliseconds; medians of a few runs)
These are absolute figures for orientation; the peer ratios of benchmarks/README.md are
measured by the pass-manager and pass benchmarks.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from timing import median_ms

from passhost import relay, text
from passhost.ir import structural_equal, structural_hash
from passhost.relay.testing import resnet
from passhost.relay.type_infer import infer_type


def infer_fresh_ms(printed: str, repeat: int = 10) -> float:
    """Median time of type inference on freshly parsed (untyped) copies of a module."""
    copies = [text.parse_module(printed)["main"] for _ in range(repeat)]
    times = []
    for func in copies:
        start = time.perf_counter()
        infer_type(func)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    """Print the figures."""
    mod, params = resnet.get_workload(num_layers=18)
    printed = text.print_module(mod)
    print(f"ResNet-18 ({len(relay.post_order(mod['main']))} nodes)")
    print(f"  type inference from scratch {infer_fresh_ms(printed):8.2f} ms")
    print(f"  print                       {median_ms(lambda: text.print_module(mod)):8.2f} ms")
    print(f"  parse                       {median_ms(lambda: text.parse_module(printed)):8.2f} ms")
    print(f"  structural_hash             {median_ms(lambda: structural_hash(mod)):8.2f} ms")
    other = text.parse_module(printed)
    print(f"  structural_equal            {median_ms(lambda: structural_equal(mod, other)):8.2f} ms")  # noqa: E501
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype("float32")
    run = relay.Interpreter(mod)
    print(f"  interpreter run             {median_ms(lambda: run.run('main', {'data': data, **params}), 3):8.2f} ms")  # noqa: E501

    x = relay.var("x", shape=(4,))
    e: relay.Expr = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    chain = relay.IRModule({"main": relay.Function([x], e)})
    chain_text = text.print_module(chain)
    print("100 000-node chain")
    print(f"  type inference (cached)     {median_ms(lambda: chain['main'].checked_type):8.2f} ms")
    print(f"  print                       {median_ms(lambda: text.print_module(chain), 1):8.0f} ms")
    print(f"  parse                       {median_ms(lambda: text.parse_module(chain_text), 1):8.0f} ms")  # noqa: E501
    print(f"  structural_hash             {median_ms(lambda: structural_hash(chain), 1):8.0f} ms")


if __name__ == "__main__":
    main()
