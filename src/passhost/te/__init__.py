"""Tensor expressions: describe an operator's result element by element, lower to TIR loops.

::

    a = te.placeholder((n, m), "float32", "a")
    k = te.reduce_axis(m, "k")
    s = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="s")
    y = te.compute((n, m), lambda i, j: te.exp(a[i, j] - s[i]), name="y")
    func = te.lower([y], [a], "softmax_like")      # a PrimFunc of loop nests

See docs/te.md.
"""

from passhost.te.indexing import (
    broadcast,
    broadcast_indices,
    elementwise,
    flat_index,
    unflatten_index,
)
from passhost.te.lower import INLINE_LIMIT, lower, stages
from passhost.te.math import (
    INTRINSIC_NAMES,
    cast,
    fill,
    if_then_else,
    intrinsic,
    max_value,
    min_value,
    prod,
    propagating_max,
    propagating_min,
    sum,
)
from passhost.te.math import te_max as max
from passhost.te.math import te_min as min
from passhost.te.tensor import (
    INDEX_DTYPE,
    IterVar,
    Reduce,
    Reducer,
    Tensor,
    compute,
    placeholder,
    reduce_axis,
)


def __getattr__(name: str):
    """``te.exp``, ``te.erf``, ...: builders of the math intrinsic calls."""
    if name in INTRINSIC_NAMES:
        return lambda *args: intrinsic(name, *args)
    raise AttributeError(f"module 'passhost.te' has no attribute {name!r}")


__all__ = [
    "INDEX_DTYPE", "INLINE_LIMIT", "INTRINSIC_NAMES", "IterVar", "Reduce", "Reducer", "Tensor",
    "broadcast", "broadcast_indices", "cast", "compute", "elementwise", "fill", "flat_index",
    "if_then_else", "intrinsic", "lower", "max", "max_value", "min", "min_value",
    "placeholder", "prod", "propagating_max", "propagating_min", "reduce_axis", "stages", "sum",
    "unflatten_index",
]
