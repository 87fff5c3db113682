"""Example functions for the windowed network operators: 1-D, 3-D, transposed (see
op_examples.py)."""

from __future__ import annotations

from passhost.relay.testing.op_examples import Builder

EXAMPLES: list[tuple[str, Builder]] = []
