"""Iterative depth-first traversal shared by both IR kinds (no recursion over IR depth)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

N = TypeVar("N")


def post_order(roots: Iterable[N], children_of: Callable[[N], Sequence[N]],
               stop: Callable[[N], bool] | None = None) -> list[N]:
    """Every node reachable from ``roots`` through ``children_of``, each once (by identity),
    children before parents, siblings left to right. Nodes for which ``stop`` is true are
    listed but not entered."""
    seen: set[int] = set()
    order: list[N] = []
    for root in roots:
        if id(root) in seen:
            continue
        stack: list[tuple[N, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            if stop is not None and stop(node):
                continue
            for child in reversed(children_of(node)):
                if id(child) not in seen:
                    stack.append((child, False))
    return order
