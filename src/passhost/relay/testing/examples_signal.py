"""Example functions for the operators of signal models: Fourier transforms and
determinants (see op_examples.py)."""

from __future__ import annotations

from passhost import relay
from passhost.relay.testing.op_examples import Builder


def _dft() -> relay.Function:
    x = relay.var("x", shape=(2, 6, 3, 2))
    return relay.Function([x], relay.dft(x, axis=1, length=8, inverse=True))


def _rfft() -> relay.Function:
    x = relay.var("x", shape=(5, 1), dtype="float64")
    return relay.Function([x], relay.dft(x, axis=0, length=4, onesided=True))


def _irfft() -> relay.Function:
    x = relay.var("x", shape=(3, 4, 2), dtype="float16")
    return relay.Function([x], relay.dft(x, axis=1, length=6, inverse=True, onesided=True))


def _det() -> relay.Function:
    x = relay.var("x", shape=(2, 3, 3))
    return relay.Function([x], relay.det(x))


def _det_float16() -> relay.Function:
    x = relay.var("x", shape=(4, 4), dtype="float16")
    return relay.Function([x], relay.det(x))


EXAMPLES: list[tuple[str, Builder]] = [
    ("dft", _dft),
    ("dft", _rfft),
    ("dft", _irfft),
    ("det", _det),
    ("det", _det_float16),
]
