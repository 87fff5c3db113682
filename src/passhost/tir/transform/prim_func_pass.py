"""PrimFunc passes: a pass applied to each PrimFunc of the module."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from passhost.tir.function import PrimFunc
from passhost.transform.passes import PerFunctionPass, pass_decorator

__all__ = ["PrimFuncPass", "prim_func_pass"]


class PrimFuncPass(PerFunctionPass):
    """A pass applied to each PrimFunc of the module."""

    __slots__ = ()
    kind = PrimFunc


def prim_func_pass(pass_func: Any = None, opt_level: int = 0, name: str | None = None,
                   required: Iterable[str] | str | None = None, traceable: bool = False,
                   *, always_run: bool = False) -> Any:
    """Make a pass applied to each PrimFunc from ``func(f, mod, ctx)``, or from a class with
    ``transform_function(self, f, mod, ctx)``."""
    return pass_decorator(PrimFuncPass, "transform_function", pass_func, opt_level, name,
                          required, traceable, always_run)
