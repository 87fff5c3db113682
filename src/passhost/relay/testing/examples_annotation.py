"""Example functions for the ``annotation.*`` operators (see op_examples.py)."""

from __future__ import annotations

from passhost import relay
from passhost.relay.op import annotation
from passhost.relay.testing.op_examples import Builder


def _region() -> relay.Function:
    # A one-call region for target kind "ext": begin on each input, end on the result.
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    begin_x = annotation.compiler_begin(x, compiler="ext")
    begin_y = annotation.compiler_begin(y, compiler="ext")
    out = annotation.compiler_end(relay.add(begin_x, begin_y), compiler="ext")
    return relay.Function([x, y], out)


def _tuple_value() -> relay.Function:
    # The annotations pass tuples through unchanged.
    x = relay.var("x", shape=(2, 2))
    tup = annotation.compiler_begin(relay.Tuple([x, relay.exp(x)]), compiler="cmsis-nn")
    return relay.Function([x], relay.concatenate(tup, axis=1))


EXAMPLES: list[tuple[str, Builder]] = [
    ("annotation.compiler_begin", _region),
    ("annotation.compiler_begin", _tuple_value),
    ("annotation.compiler_end", _region),
]
