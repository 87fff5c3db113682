"""Graph function passes: a pass applied to each graph function the standard passes rewrite."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from passhost.ir.expr import BaseFunc
from passhost.relay.expr import Function
from passhost.relay.transform.common import optimisable
from passhost.transform.passes import PerFunctionPass, pass_decorator

__all__ = ["FunctionPass", "function_pass"]


class FunctionPass(PerFunctionPass):
    """A pass applied to each graph function of the module that the graph passes rewrite
    (:func:`~passhost.relay.transform.common.optimisable`: not marked ``Compiler``, owned by
    an external target, nor ``SkipOptimization``, nor already ``Primitive``)."""

    __slots__ = ()
    kind = Function

    def selects(self, func: BaseFunc) -> bool:
        """Whether the graph passes rewrite ``func``."""
        return optimisable(func)


def function_pass(pass_func: Any = None, opt_level: int = 0, name: str | None = None,
                  required: Iterable[str] | str | None = None, traceable: bool = False,
                  *, always_run: bool = False) -> Any:
    """Make a pass applied to each graph function from ``func(f, mod, ctx)``, or from a
    class with ``transform_function(self, f, mod, ctx)``."""
    return pass_decorator(FunctionPass, "transform_function", pass_func, opt_level, name,
                          required, traceable, always_run)
