"""Example functions for the reduction and search operators (see op_examples.py)."""

from __future__ import annotations

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _prod() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.prod(x, axis=(0, 2), keepdims=True))


def _prod_int() -> relay.Function:
    x = relay.var("x", shape=(3, 4), dtype="int32")
    return relay.Function([x], relay.prod(x, axis=1, exclude=True))


def _argmax() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 4))
    return relay.Function([x], relay.argmax(x, axis=1))


def _argmin() -> relay.Function:
    x = relay.var("x", shape=(3, 5), dtype="int8")
    return relay.Function([x], relay.argmin(x, axis=-1, keepdims=True,
                                            select_last_index=True))


def _topk() -> relay.Function:
    x = relay.var("x", shape=(2, 6))
    return relay.Function([x], relay.topk(x, k=3))


def _topk_smallest() -> relay.Function:
    x = relay.var("x", shape=(4, 3, 2), dtype="int32")
    out = relay.topk(x, k=2, axis=0, largest=False)
    return relay.Function([x], relay.Tuple([out[0], out[1]]))


EXAMPLES: list[tuple[str, Builder]] = [
    ("prod", _prod),
    ("prod", _prod_int),
    ("argmax", _argmax),
    ("argmin", _argmin),
    ("topk", _topk),
    ("topk", _topk_smallest),
]
