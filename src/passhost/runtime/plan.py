"""The executor plan: what to call in which order, over which memory.

Plain data, saved as JSON in artifacts. Tensors are numbered; each is an input, a
parameter (weights, by name) or a view of a storage block. Storage blocks lie at offsets
in one arena and may overlap where no two tensors in them are live at once (see
:mod:`passhost.backend.memory_plan`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
from attrs import frozen

from passhost.errors import PasshostError
from passhost.ir.types import DTYPES
from passhost.runtime.aligned import CACHE_LINE

__all__ = ["ExecutorPlan", "PlanError", "Step", "TensorEntry", "param_mismatch"]


class PlanError(PasshostError):
    """An executor plan is malformed (in an artifact, or built wrongly)."""


@frozen
class TensorEntry:
    """One tensor: ``kind`` is ``input`` (``name`` is the input's), ``param`` (``name``
    is the parameter's) or ``storage`` (``storage`` is the block it lives in)."""

    kind: str
    shape: tuple[int, ...]
    dtype: str
    name: str = ""
    storage: int = -1

    @property
    def nbytes(self) -> int:
        """The size of the tensor in bytes."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@frozen
class Step:
    """One call: ``func`` (a runtime function name) on tensors ``args`` (inputs, then
    outputs)."""

    func: str
    args: tuple[int, ...]


@frozen
class ExecutorPlan:
    """Tensors, storage block sizes, the calls in order, the output tensors and each
    block's byte offset in the arena (a multiple of a cache line)."""

    tensors: tuple[TensorEntry, ...]
    storage_sizes: tuple[int, ...]
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    storage_offsets: tuple[int, ...]

    @property
    def arena_size(self) -> int:
        """The bytes of the arena holding every storage block."""
        return max((o + s for o, s in zip(self.storage_offsets, self.storage_sizes)),
                   default=0)

    @property
    def inputs(self) -> list[tuple[str, TensorEntry]]:
        """(name, tensor) of every graph input, in order."""
        return [(t.name, t) for t in self.tensors if t.kind == "input"]

    @property
    def param_names(self) -> list[str]:
        """The names of the parameters the plan reads."""
        return [t.name for t in self.tensors if t.kind == "param"]

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-able data."""
        return {
            "tensors": [{"kind": t.kind, "shape": list(t.shape), "dtype": t.dtype,
                         "name": t.name, "storage": t.storage} for t in self.tensors],
            "storage_sizes": list(self.storage_sizes),
            "storage_offsets": list(self.storage_offsets),
            "steps": [{"func": s.func, "args": list(s.args)} for s in self.steps],
            "outputs": list(self.outputs),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExecutorPlan:
        """Read a plan written by :meth:`to_json`, checking every reference."""
        if not isinstance(data, Mapping):
            raise PlanError(f"malformed executor plan: an object expected, found "
                            f"{type(data).__name__}")
        try:
            tensors = tuple(TensorEntry(str(t["kind"]), tuple(int(d) for d in t["shape"]),
                                        str(t["dtype"]), str(t.get("name", "")),
                                        int(t.get("storage", -1)))
                            for t in data["tensors"])
            plan = cls(tensors, tuple(int(s) for s in data["storage_sizes"]),
                       tuple(Step(str(s["func"]), tuple(int(a) for a in s["args"]))
                             for s in data["steps"]),
                       tuple(int(o) for o in data["outputs"]),
                       tuple(int(o) for o in data["storage_offsets"]))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as err:
            raise PlanError(f"malformed executor plan: {type(err).__name__}: {err}") from None
        plan.check()
        return plan

    def check(self) -> None:
        """Raise :class:`PlanError` unless every reference in the plan is valid (and every
        graph input has a name of its own)."""
        n = len(self.tensors)
        bad = [s for s in self.storage_sizes if s < 0]
        if bad:
            raise PlanError(f"negative storage sizes {bad}")
        if len(self.storage_offsets) != len(self.storage_sizes):
            raise PlanError(f"{len(self.storage_offsets)} storage offsets for "
                            f"{len(self.storage_sizes)} storage blocks")
        bad = sorted({o for o in self.storage_offsets if o < 0 or o % CACHE_LINE})
        if bad:
            raise PlanError(f"storage offsets {bad} are not non-negative multiples of "
                            f"{CACHE_LINE}")
        counts = Counter(t.name for t in self.tensors if t.kind == "input")
        twice = sorted(name for name, count in counts.items() if count > 1)
        if twice:
            raise PlanError(f"inputs {twice} appear more than once")
        for i, t in enumerate(self.tensors):
            if t.kind not in ("input", "param", "storage"):
                raise PlanError(f"tensor {i}: unknown kind {t.kind!r}")
            if t.dtype not in DTYPES:
                raise PlanError(f"tensor {i}: unknown dtype {t.dtype!r}")
            if any(d < 0 for d in t.shape):
                raise PlanError(f"tensor {i}: negative dimension in {t.shape}")
            if t.kind == "storage":
                if not 0 <= t.storage < len(self.storage_sizes):
                    raise PlanError(f"tensor {i}: storage {t.storage} does not exist")
                if t.nbytes > self.storage_sizes[t.storage]:
                    raise PlanError(f"tensor {i} ({t.nbytes} bytes) does not fit storage "
                                    f"{t.storage} ({self.storage_sizes[t.storage]} bytes)")
            elif not t.name:
                raise PlanError(f"tensor {i}: an {t.kind} needs a name")
        for j, step in enumerate(self.steps):
            bad = [a for a in step.args if not 0 <= a < n]
            if bad:
                raise PlanError(f"step {j} ({step.func}): unknown tensors {bad}")
        bad = [o for o in self.outputs if not 0 <= o < n]
        if bad:
            raise PlanError(f"unknown output tensors {bad}")
        self._check_overlaps()

    def _check_overlaps(self) -> None:
        """Raise :class:`PlanError` if two storage tensors live at once share bytes. A
        tensor lives from the first step naming it to the last (graph outputs to the end);
        one step's tensors all live at once."""
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for j, step in enumerate(self.steps):
            for a in step.args:
                if self.tensors[a].kind == "storage":
                    first.setdefault(a, j)
                    last[a] = j
        for o in self.outputs:
            if self.tensors[o].kind == "storage":
                first.setdefault(o, len(self.steps))
                last[o] = len(self.steps)
        live: dict[int, tuple[int, int]] = {}
        for t in sorted(first, key=first.__getitem__):
            live = {u: r for u, r in live.items() if last[u] >= first[t]}
            start = self.storage_offsets[self.tensors[t].storage]
            end = start + self.tensors[t].nbytes
            for u, (s, e) in live.items():
                if start < e and s < end:
                    raise PlanError(f"tensors {min(t, u)} and {max(t, u)} are live at once "
                                    f"and share bytes of the arena")
            live[t] = (start, end)


def param_mismatch(entry: TensorEntry, arr: np.ndarray) -> str | None:
    """What is wrong with ``arr`` as the array of parameter tensor ``entry`` (its shape or
    dtype differs), or None."""
    if arr.shape != entry.shape or arr.dtype.name != entry.dtype:
        return (f"parameter {entry.name!r}: expected {entry.dtype}{list(entry.shape)}, "
                f"found {arr.dtype.name}{list(arr.shape)}")
    return None
