"""A module's numbers on fixed random inputs, and how far two sets of outputs are apart.

The validate-numerics instrument and bisection's ``numerics`` check share these: both run
``main`` in the reference interpreter on inputs drawn from a seed, so a run is repeatable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from passhost.errors import PasshostError
from passhost.ir.module import IRModule
from passhost.relay.expr import Function
from passhost.relay.interpreter import Interpreter
from passhost.workloads.inputs import random_arrays

__all__ = ["NumericsError", "compare_outputs", "fixed_inputs", "flatten_outputs",
           "run_reference"]

#: The default tolerances: relative, absolute.
RTOL = 1e-5
ATOL = 1e-5


class NumericsError(PasshostError):
    """A module's numbers cannot be computed (no graph ``main``, an input missing...)."""


def _main(mod: IRModule) -> Function:
    if "main" not in mod:
        raise NumericsError("the module has no function @main")
    main = mod["main"]
    if not isinstance(main, Function):
        raise NumericsError(f"@main is a {type(main).__name__}, not a graph function")
    return main


def fixed_inputs(mod: IRModule, seed: int = 0,
                 bound: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """Inputs for every parameter of ``main``: the ``bound`` arrays (weights) by name, and
    random arrays drawn from ``seed`` for the others (floats in [-2, 2), small ints), the
    same for the same seed and parameter types."""
    bound = dict(bound or {})
    free = [p for p in _main(mod).params if p.name_hint not in bound]
    arrays = random_arrays([p.checked_type for p in free], seed)
    inputs = {p.name_hint: a for p, a in zip(free, arrays)}
    inputs.update((name, np.asarray(value)) for name, value in bound.items())
    return inputs


def flatten_outputs(value: Any) -> list[np.ndarray]:
    """The arrays of an output value (an array or nested tuples of them), in order."""
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        else:
            out.append(np.asarray(item))
    return out


def run_reference(mod: IRModule, inputs: Mapping[str, Any]) -> list[np.ndarray]:
    """The outputs of ``main`` in the reference interpreter, given the inputs by parameter
    name (inputs ``main`` does not take are ignored; a missing one raises
    :class:`NumericsError`)."""
    names = [p.name_hint for p in _main(mod).params]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise NumericsError(f"@main takes inputs {missing} that the fixed inputs do not have "
                            f"(its parameters changed)")
    return flatten_outputs(Interpreter(mod).run("main", {n: inputs[n] for n in names}))


def compare_outputs(expected: Sequence[np.ndarray], found: Sequence[np.ndarray],
                    rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """None when ``found`` matches ``expected`` within ``|found - expected| <= atol + rtol *
    |expected|`` (NaN matches NaN); otherwise what differs, for the first output that does."""
    if len(found) != len(expected):
        return f"{len(found)} outputs, expected {len(expected)}"
    for index, (want, got) in enumerate(zip(expected, found)):
        if got.shape != want.shape or got.dtype != want.dtype:
            return (f"output {index} is {got.dtype.name}{list(got.shape)}, expected "
                    f"{want.dtype.name}{list(want.shape)}")
        want64, got64 = want.astype(np.float64), got.astype(np.float64)
        close = np.isclose(got64, want64, rtol=rtol, atol=atol, equal_nan=True)
        if close.all():
            continue
        diff = np.where(close, 0.0, np.abs(got64 - want64))
        diff = np.nan_to_num(diff, nan=np.inf)
        where = np.unravel_index(int(np.argmax(diff)), diff.shape)
        return (f"output {index}: {int((~close).sum())} of {close.size} elements differ "
                f"beyond rtol={rtol:g}, atol={atol:g}; the largest difference is "
                f"{float(diff[where]):.6g} at {list(map(int, where))} (expected "
                f"{float(want64[where]):.6g}, found {float(got64[where]):.6g})")
    return None
