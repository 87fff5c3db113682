"""Example functions for elementwise, reduction and shape operators (see op_examples.py)."""

from __future__ import annotations

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _add() -> relay.Function:
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    return relay.Function([x, y], relay.add(x, y))


EXAMPLES: list[tuple[str, Builder]] = [
    ("add", _add),
]
