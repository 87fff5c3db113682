"""``bind_params_by_name``: turn named function parameters into constants (TVM semantics).

Binding is how trained weights enter the graph: the parameters named in ``params`` are
replaced by Constants and dropped from the parameter list, so constant folding and the
weight-rewriting passes can see the values.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from passhost.errors import IRTypeError, PasshostError, UnknownNameError
from passhost.ir.types import TensorType
from passhost.relay.expr import Constant, Function, Var
from passhost.relay.visitor import ExprMutator

__all__ = ["AmbiguousParamError", "bind_params_by_name"]


class AmbiguousParamError(PasshostError, ValueError):
    """Several parameters of the function share a name that is being bound."""


def bind_params_by_name(func: Function, params: Mapping[str, np.ndarray | Constant],
                        ) -> Function:
    """A copy of ``func`` whose parameters named in ``params`` are replaced by Constants
    (and dropped from its parameter list). ``func`` and the arrays are left unchanged.

    Raises :class:`~passhost.errors.UnknownNameError` for a name that is no parameter,
    :class:`AmbiguousParamError` when a bound name belongs to several parameters and
    :class:`~passhost.errors.IRTypeError` when a value does not fit the parameter's type.
    """
    if not isinstance(func, Function):
        raise TypeError(f"bind_params_by_name binds the parameters of a Function, found "
                        f"{type(func).__name__}")
    if not params:
        return func
    by_name = _params_by_name(func)
    binding: dict[int, Constant] = {}
    for name, value in params.items():
        candidates = by_name.get(name)
        if candidates is None:
            raise UnknownNameError("function parameter", name, by_name)
        if len(candidates) > 1:
            raise AmbiguousParamError(f"cannot bind {name!r}: {len(candidates)} parameters of "
                                      f"the function have that name")
        param = candidates[0]
        binding[id(param)] = _constant_for(param, value)
    return _Binder(binding).visit(func)  # type: ignore[return-value]


def _params_by_name(func: Function) -> dict[str, list[Var]]:
    by_name: dict[str, list[Var]] = {}
    for param in func.params:
        by_name.setdefault(param.name_hint, []).append(param)
    return by_name


def _constant_for(param: Var, value: np.ndarray | Constant) -> Constant:
    """``value`` as a Constant, checked against the parameter's type annotation."""
    const = value if isinstance(value, Constant) else Constant(value)
    want = param.type_annotation
    if want is None:
        return const
    found = const.checked_type
    if not isinstance(want, TensorType) or want != found:
        raise IRTypeError(f"cannot bind parameter %{param.name_hint}: expected {want}, "
                          f"found {found}", argument=param.name_hint, expected=str(want),
                          found=str(found))
    return const


class _Binder(ExprMutator):
    """Replaces the bound parameters (by identity) with their constants."""

    def __init__(self, binding: dict[int, Constant]) -> None:
        super().__init__()
        self.binding = binding

    def visit_var(self, var: Var) -> Var | Constant:
        """The constant bound to ``var``, or ``var`` itself."""
        return self.binding.get(id(var), var)
