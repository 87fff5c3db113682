"""Example functions for the reduction and search operators (see op_examples.py)."""

from __future__ import annotations

from passhost.relay.testing.op_examples import Builder

EXAMPLES: list[tuple[str, Builder]] = []
