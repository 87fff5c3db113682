"""The three broken passes. Each is broken in one way a real pass can be."""

from __future__ import annotations

import numpy as np
from passhost.errors import PasshostError
from passhost.ir import IRModule
from passhost.relay import Call, Constant, ExprMutator, Function, post_order
from passhost.transform import PassContext, module_pass


class BrokenPassError(PasshostError):
    """What ``ExpandSoftmax`` raises (a PasshostError: ``passhost`` prints it as an error
    message with its notes, not a traceback)."""


@module_pass(opt_level=0, name="ExpandSoftmax")
class ExpandSoftmax:
    """Meant to rewrite ``nn.softmax`` as ``exp``, ``sum`` and ``divide``; broken: it raises
    :class:`BrokenPassError` on the first softmax it meets (a module without one is
    returned as is)."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Raise on the first ``nn.softmax`` call of a graph function."""
        for name, func in mod.items():
            if not isinstance(func, Function):
                continue
            for node in post_order(func.body):
                if isinstance(node, Call) and getattr(node.op, "name", None) == "nn.softmax":
                    raise BrokenPassError(f"ExpandSoftmax: cannot expand nn.softmax over axis "
                                          f"{node.attrs.axis} in @{name}")
        return mod


class _Rounder(ExprMutator):
    def __init__(self, decimals: int) -> None:
        super().__init__()
        self.decimals = decimals

    def visit_constant(self, const: Constant) -> Constant:
        data = const.data
        if not np.issubdtype(data.dtype, np.floating):
            return const
        rounded = np.round(data, self.decimals).astype(data.dtype)
        return const if np.array_equal(rounded, data) else Constant(rounded)


@module_pass(opt_level=0, name="RoundConstants")
class RoundConstants:
    """Meant to make constants compress better; broken: it rounds every floating-point
    constant to ``decimals`` decimal places, which silently changes the model's numbers."""

    def __init__(self, decimals: int = 2) -> None:
        self.decimals = decimals

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Round the constants of every graph function (a new module if any changed)."""
        changed = {}
        for gvar, func in mod.functions.items():
            if isinstance(func, Function):
                new = _Rounder(self.decimals).visit(func)
                if new is not func:
                    changed[gvar] = new
        return mod.with_functions(changed) if changed else mod


@module_pass(opt_level=0, name="CountOperators")
class CountOperators:
    """Counts the operator calls of ``main`` into :attr:`counts` and returns the module as
    is. Broken: it takes every callee for an operator, so once ``FuseOps`` has turned
    groups of calls into calls of functions it raises ``AttributeError``."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Count ``main``'s calls by operator name."""
        counts: dict[str, int] = {}
        for node in post_order(mod["main"].body):
            if isinstance(node, Call):
                counts[node.op.name] = counts.get(node.op.name, 0) + 1
        self.counts = counts
        return mod
