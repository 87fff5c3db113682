"""Value ranges of integer index expressions, so that the C printer can write their
arithmetic with C's own operators.

Signed integer overflow is undefined in C, so the printer writes ``a + b`` of int64 as
``ph_add_i64(a, b)`` (arithmetic on unsigned values, which wraps as the dtype does). Those
calls hide the affine form of an index from the compiler: a loop over
``x[ph_add_i64(ph_mul_i64(ko, 32), lane)]`` becomes a vector gather instead of one vector
load. Where every value an expression and its operands can take lies inside their dtype
(from the constant bounds of the loops around it), no operation can overflow, and C's own
operators mean the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from passhost.tir import expr as te
from passhost.tir.visitor import post_order

__all__ = ["int_range"]

_Range = tuple[int, int]


def _combine(node: te.PrimExpr, a: _Range, b: _Range) -> _Range | None:
    """The range of ``a op b`` for the Add, Sub or Mul ``node``."""
    if isinstance(node, te.Add):
        return a[0] + b[0], a[1] + b[1]
    if isinstance(node, te.Sub):
        return a[0] - b[1], a[1] - b[0]
    if isinstance(node, te.Mul):
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    return None


def int_range(node: te.PrimExpr, var_ranges: Mapping[int, _Range],
              memo: dict[int, _Range | None]) -> _Range | None:
    """The smallest and largest value of the integer expression ``node``, or None unless
    it is made of constants, variables of ``var_ranges`` (``id(var)`` -> range) and
    ``+ - *`` with every intermediate value inside its dtype. ``memo`` caches results by
    ``id`` across calls on one function."""
    for n in post_order(node, stop=lambda m: id(m) in memo):
        if id(n) in memo:
            continue
        found: _Range | None = None
        if isinstance(n, te.IntImm):
            found = (n.value, n.value)
        elif isinstance(n, te.Var):
            found = var_ranges.get(id(n))
        elif isinstance(n, (te.Add, te.Sub, te.Mul)) and n.dtype.startswith("int"):
            a, b = memo.get(id(n.a)), memo.get(id(n.b))
            if a is not None and b is not None:
                found = _combine(n, a, b)
        if found is not None and n.dtype.startswith(("int", "uint")):
            info = np.iinfo(n.dtype)
            if not (int(info.min) <= found[0] and found[1] <= int(info.max)):
                found = None
        memo[id(n)] = found
    return memo[id(node)]
