"""Python source text for attribute values: numbers, strings, None and tuples of them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from passhost_cpu_target.errors import CodegenError

__all__ = ["literal"]


def _float(value: float) -> str:
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "-float('inf')"
    return repr(value)


def literal(value: Any) -> str:
    """The Python expression evaluating to ``value`` (tuples and lists become tuples)."""
    if value is None or isinstance(value, (bool, str)):
        return repr(value)
    if isinstance(value, np.bool_):
        return repr(bool(value))
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    if isinstance(value, (float, np.floating)):
        return _float(float(value))
    if isinstance(value, (tuple, list)):
        items = [literal(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    raise CodegenError(f"cannot write {type(value).__name__} {value!r} as a Python literal; "
                       f"expected a number, a string, None or a tuple of them")
