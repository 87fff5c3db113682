"""Example functions for the ``nn.*`` operators (see op_examples.py)."""

from __future__ import annotations

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _relu() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.nn.relu(x))


EXAMPLES: list[tuple[str, Builder]] = [
    ("nn.relu", _relu),
]
