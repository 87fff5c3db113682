"""The runtime ``Module`` protocol: what a target's ``tir_to_runtime`` returns.

A runtime module holds compiled functions by name. The executor looks a function up in
the host module first and then in the modules it imports (one per external target), so a
target plugin only has to answer ``get_function`` for its own PrimFuncs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from typing import Any, Protocol, runtime_checkable

import numpy as np
from attrs import frozen

__all__ = ["FunctionModule", "Module", "NativeRunner", "NativeStep", "find_function",
           "run_scope"]


@runtime_checkable
class Module(Protocol):
    """A runtime module: ``type_key`` names its kind (``"cpu"``, ``"cmsis-nn"``)."""

    type_key: str

    @property
    def imported_modules(self) -> list[Module]:
        """The modules this one imports (the host module imports the external ones)."""

    def import_module(self, module: Module) -> None:
        """Make ``module``'s functions reachable from this one."""

    def get_function(self, name: str) -> Callable[..., Any] | None:
        """The function ``name`` (called with NumPy arrays: inputs, then outputs), or None."""

    def get_source(self, fmt: str = "") -> str:
        """The generated source (``fmt`` picks one when a module has several kinds)."""


class NativeRunner(Protocol):
    """Runs several compiled functions in one native call."""

    def bind(self, steps: Sequence[tuple[NativeStep, Sequence[Any]]],
             seconds: np.ndarray | None = None) -> Callable[[], None]:
        """A callable running ``steps`` (each a function's native step and its packed
        function's arguments: arrays, which stay where they are, or None for NULL) in
        order, raising the failing step's error when one fails; with ``seconds`` (float64,
        one per step) it adds each step's wall time to its entry (a profile of the run)."""


@frozen
class NativeStep:
    """What makes a runtime function part of a native run: the ``runner`` that calls it
    and the ``address`` of its packed function (``int32_t f(void *const *args)``); a
    function carries it as its ``native_step`` attribute. Consecutive steps of one runner
    run as one native call (see the executor).

    ``arguments(*arrays)`` gives the packed function's arguments for the function's arrays
    (by default the arrays themselves), or None when they cannot be fixed once (the step
    is then called as a function); ``failure(status)`` the error for a nonzero status."""

    runner: NativeRunner
    address: int
    name: str
    arguments: Callable[..., Sequence[Any] | None] | None = None
    failure: Callable[[int], Exception] | None = None

    def bound_arguments(self, arrays: Sequence[Any]) -> Sequence[Any] | None:
        """The packed function's arguments for ``arrays``, or None (see the class)."""
        return arrays if self.arguments is None else self.arguments(*arrays)

    def error(self, status: int) -> Exception:
        """The error of this step returning ``status``."""
        if self.failure is not None:
            return self.failure(status)
        return RuntimeError(f"native step {self.name!r} failed with status {status}")


class FunctionModule:
    """A runtime module over a mapping of functions, for target plugins to build on.

    ``files`` are the sources an artifact stores beside the module (name -> text) for
    people and firmware builds; loading an artifact regenerates the module from TIR and
    never runs them. ``scope`` (optional) is a context manager factory entered around each
    executor run, e.g. to set the BLAS thread count.
    """

    def __init__(self, type_key: str, functions: Mapping[str, Callable[..., Any]],
                 source: str = "", files: Mapping[str, str] | None = None,
                 scope: Callable[[], Any] | None = None) -> None:
        self.type_key = type_key
        self.functions = dict(functions)
        self.source = source
        self.files = dict(files or {})
        self.scope = scope
        self._imports: list[Module] = []

    @property
    def imported_modules(self) -> list[Module]:
        """The imported modules, in import order."""
        return list(self._imports)

    def import_module(self, module: Module) -> None:
        """Import ``module`` (its functions become reachable through :func:`find_function`)."""
        self._imports.append(module)

    def get_function(self, name: str) -> Callable[..., Any] | None:
        """This module's own function ``name``, or None."""
        return self.functions.get(name)

    def get_source(self, fmt: str = "") -> str:
        """The generated source; ``fmt`` names one of ``files`` to get that file."""
        if fmt:
            return self.files[fmt]
        return self.source

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.type_key}: {len(self.functions)} functions, "
                f"{len(self._imports)} imported>")


def _all_modules(module: Module) -> Iterator[Module]:
    stack = [module]
    seen: set[int] = set()
    while stack:
        m = stack.pop(0)
        if id(m) in seen:
            continue
        seen.add(id(m))
        yield m
        stack.extend(m.imported_modules)


def find_function(module: Module, name: str) -> Callable[..., Any] | None:
    """``name`` in ``module`` or, breadth first, in the modules it imports."""
    for m in _all_modules(module):
        f = m.get_function(name)
        if f is not None:
            return f
    return None


def scope_factories(module: Module) -> list[Callable[[], AbstractContextManager[Any]]]:
    """The ``scope`` factories of ``module`` and of every module it imports, in order."""
    return [scope for m in _all_modules(module)
            if (scope := getattr(m, "scope", None)) is not None]


def run_scope(module: Module) -> ExitStack:
    """A context entering the ``scope`` of ``module`` and of every module it imports."""
    stack = ExitStack()
    for scope in scope_factories(module):
        stack.enter_context(scope())
    return stack
