"""``OpCountDiffer``: how many calls of each operator every pass added or removed."""

from __future__ import annotations

from collections import Counter
from typing import Any

from passhost.instrument import PassInstrument

#: One record: (nesting depth, pass name, {operator name: change in its number of calls}).
OpDiff = tuple[int, str, dict[str, int]]


def count_ops(mod: Any) -> Counter[str]:
    """The number of calls of each operator in the graph functions of ``mod`` (PrimFuncs are
    not counted). A call shared by several users is one call."""
    total: Counter[str] = Counter()
    for _, func in mod.items():
        total.update(_function_counts(func))
    return total


def _function_counts(func: Any) -> Counter[str]:
    from passhost.relay import Call, Function, post_order_visit

    counts: Counter[str] = Counter()
    if not isinstance(func, Function):
        return counts

    def visit(node: Any) -> None:
        if isinstance(node, Call):
            name = getattr(node.op, "name", None)  # calls of functions have no op name
            if isinstance(name, str):
                counts[name] += 1

    post_order_visit(func, visit)
    return counts


def op_delta(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """``after - before`` for every operator whose count changed, sorted by name."""
    return {op: after[op] - before[op] for op in sorted(before.keys() | after.keys())
            if after[op] != before[op]}


class OpCountDiffer(PassInstrument):
    """Records, for each pass that changed the number of calls of some operator,
    ``(depth, pass_name, {op_name: delta})``: depth 0 for a pass called at top level, one
    more for each enclosing pass. Records are in the order the passes finished, so a
    Sequential comes after its children.

    Passes nest, so the counts taken before each pass wait on a stack until the pass ends.
    A pass that raises ends too (``run_after_pass_failed``): its entry is dropped and
    nothing is recorded for it. The records are cleared when a context holding the
    instrument is entered and kept after it exits.

    Operators are counted in every graph function of the module. Counts are kept per
    function object, and functions are immutable, so after a pass only the functions it
    replaced are counted again.
    """

    def __init__(self) -> None:
        #: (start number, depth, pass name, delta), in the order the passes ended
        self._records: list[tuple[int, int, str, dict[str, int]]] = []
        #: (PassInfo, start number, counts before the pass) for each pass still running,
        #: outermost first; passes are numbered in the order they start
        self._running: list[tuple[Any, int, Counter[str]]] = []
        self._started = 0
        #: id(function) -> (function, counts) for the functions of the last module counted
        self._cache: dict[int, tuple[Any, Counter[str]]] = {}

    # -- callbacks -----------------------------------------------------------------------
    def enter_pass_ctx(self) -> None:
        """Start afresh."""
        self._records = []
        self._running = []
        self._started = 0
        self._cache = {}

    def exit_pass_ctx(self) -> None:
        """Keep the records; drop what only mattered while passes ran."""
        self._running = []
        self._cache = {}

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Count the operators of the pass's input."""
        self._running.append((info, self._started, self._count(mod)))
        self._started += 1

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Compare the output's counts with the input's; record a change."""
        entry = self._finish(info)
        if entry is None:
            return
        start, before = entry
        delta = op_delta(before, self._count(mod))
        if delta:
            self._records.append((start, len(self._running), info.name, delta))

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """The pass raised: forget its input counts so that enclosing passes still pair up."""
        self._finish(info)

    # -- results -------------------------------------------------------------------------
    def get_pass_to_op_diff(self) -> list[OpDiff]:
        """``[(depth, pass_name, {op_name: delta}), ...]`` in the order the passes ended."""
        return [(depth, name, dict(delta)) for _, depth, name, delta in self._records]

    def report(self) -> str:
        """The records as text, as a tree: one line per pass in the order the passes
        started (an enclosing pass before the passes inside it), indented two spaces per
        depth, each operator with its signed change."""
        if not self._records:
            return "no pass changed the operator counts\n"
        lines = []
        for _, depth, name, delta in sorted(self._records):
            changes = ", ".join(f"{op} {n:+d}" for op, n in delta.items())
            lines.append(f"{'  ' * depth}{name}: {changes}\n")
        return "".join(lines)

    def render(self) -> str:
        """The :meth:`report`, under the name tools use for an instrument's text
        (``passhost opt --instrument op-diff`` writes it to stderr)."""
        return self.report()

    # -- helpers -------------------------------------------------------------------------
    def _finish(self, info: Any) -> tuple[int, Counter[str]] | None:
        """Pop the entry of the pass ``info`` and return its start number and counts (also
        dropping any entry above it whose pass never ended, which happens when another
        instrument raised before that pass ran)."""
        for depth in range(len(self._running) - 1, -1, -1):
            entry, start, before = self._running[depth]
            if entry is info:
                del self._running[depth:]
                return start, before
        return None

    def _count(self, mod: Any) -> Counter[str]:
        total: Counter[str] = Counter()
        cache: dict[int, tuple[Any, Counter[str]]] = {}
        for _, func in mod.items():
            hit = self._cache.get(id(func))
            counts = hit[1] if hit is not None and hit[0] is func else _function_counts(func)
            cache[id(func)] = (func, counts)
            total.update(counts)
        self._cache = cache
        return total
