"""``IRModule``: global functions of both IR kinds, side by side, plus module attributes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from passhost.errors import PasshostError, UnknownNameError
from passhost.ir.expr import BaseExpr, BaseFunc, GlobalVar
from passhost.ir.node import FrozenDict, frozen_dict


class IRModule:
    """A mapping from global names to functions (graph functions or PrimFuncs).

    The functions are immutable; the module is a small container that passes never mutate:
    a pass builds a new module (:meth:`with_function`, :meth:`with_attr`). Item assignment
    (``mod["main"] = f``) exists for interactive use, as in TVM.
    """

    __slots__ = ("__weakref__", "_attrs", "_funcs")

    def __init__(self, functions: Mapping[str | GlobalVar, BaseFunc] | None = None,
                 attrs: Mapping[str, Any] | None = None) -> None:
        self._funcs: dict[str, tuple[GlobalVar, BaseFunc]] = {}
        self._attrs = frozen_dict(attrs)
        for key, func in (functions or {}).items():
            self._set(key, func)

    # -- construction -------------------------------------------------------------------
    @staticmethod
    def from_expr(expr: BaseExpr, functions: Mapping[str | GlobalVar, BaseFunc] | None = None,
                  ) -> IRModule:
        """A module whose ``main`` is ``expr`` (a graph expression is wrapped in a function
        of its free variables)."""
        if not isinstance(expr, BaseFunc):
            expr = expr.as_function()
        mod = IRModule(functions)
        mod._set("main", expr)
        return mod

    def _set(self, key: str | GlobalVar, func: BaseFunc) -> None:
        if not isinstance(func, BaseFunc):
            raise PasshostError(f"a module holds functions, found {type(func).__name__}")
        if isinstance(key, GlobalVar):
            name, gv = key.name_hint, key
        elif isinstance(key, str):
            name = key
            old = self._funcs.get(name)
            gv = old[0] if old is not None else GlobalVar(name)
        else:
            raise PasshostError(f"a module key is a name or a GlobalVar, found {key!r}")
        self._funcs[name] = (gv, func)

    def copy(self) -> IRModule:
        """A shallow copy (the functions are shared; they are immutable)."""
        new = IRModule.__new__(IRModule)
        new._funcs = dict(self._funcs)
        new._attrs = self._attrs
        return new

    def with_function(self, key: str | GlobalVar, func: BaseFunc) -> IRModule:
        """A new module with ``func`` added under ``key`` (replacing any old one)."""
        new = self.copy()
        new._set(key, func)
        return new

    def with_functions(self, funcs: Mapping[str | GlobalVar, BaseFunc]) -> IRModule:
        """A new module with several functions added or replaced."""
        new = self.copy()
        for key, func in funcs.items():
            new._set(key, func)
        return new

    def without(self, key: str | GlobalVar) -> IRModule:
        """A new module without the function ``key``."""
        name = self._name(key)
        new = self.copy()
        del new._funcs[name]
        return new

    def with_attr(self, key: str, value: Any) -> IRModule:
        """A new module with module attribute ``key`` set to ``value``."""
        new = self.copy()
        new._attrs = self._attrs.set(key, value)
        return new

    # -- access -----------------------------------------------------------------------
    def _name(self, key: str | GlobalVar) -> str:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        if name not in self._funcs:
            raise UnknownNameError("global function", str(name), self._funcs)
        return name

    def __getitem__(self, key: str | GlobalVar) -> BaseFunc:
        return self._funcs[self._name(key)][1]

    def __setitem__(self, key: str | GlobalVar, func: BaseFunc) -> None:
        self._set(key, func)

    def __contains__(self, key: object) -> bool:
        name = key.name_hint if isinstance(key, GlobalVar) else key
        return name in self._funcs

    def __len__(self) -> int:
        return len(self._funcs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._funcs)

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar naming function ``name``."""
        return self._funcs[self._name(name)][0]

    def get_global_vars(self) -> list[GlobalVar]:
        """All GlobalVars, in insertion order."""
        return [gv for gv, _ in self._funcs.values()]

    @property
    def functions(self) -> FrozenDict:
        """GlobalVar -> function, in insertion order (a snapshot)."""
        return FrozenDict({gv: f for gv, f in self._funcs.values()})

    def items(self) -> list[tuple[str, BaseFunc]]:
        """(name, function) pairs in insertion order."""
        return [(name, f) for name, (_, f) in self._funcs.items()]

    @property
    def attrs(self) -> FrozenDict:
        """The module attributes."""
        return self._attrs

    # -- text ---------------------------------------------------------------------------
    def astext(self, show_meta_data: bool = True) -> str:
        """The module in passhost's text format (see docs/ir-text-format.md)."""
        from passhost.text import print_module

        return print_module(self, show_meta_data=show_meta_data)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        return f"<IRModule {', '.join('@' + n for n in self._funcs)}>"
