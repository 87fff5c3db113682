"""Passes: module passes, the per-function base of the graph and PrimFunc passes (which
live with their IR), ``Sequential``, and the pass decorators.

Calling a pass runs it under the current :class:`PassContext`: with no instruments the body
is called directly; otherwise the context's instrument protocol wraps it. The outermost pass
call pauses Python's cyclic garbage collector until it returns.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from gc import disable as _gc_disable
from gc import enable as _gc_enable
from gc import isenabled as _gc_isenabled
from typing import Any

from attrs import evolve

from passhost.ir.expr import BaseFunc
from passhost.ir.module import IRModule
from passhost.transform.context import _STATE, PassContext
from passhost.transform.info import PassInfo
from passhost.transform.notes import note_pass, note_position


class Pass:
    """A transformation of IRModules; ``pass(mod)`` returns a new module (or ``mod``).

    ``_origin`` is set on passes made from the pass registry: the registered name and the
    options as text, so that the pass can be written back as a pipeline element.
    """

    __slots__ = ("_origin", "info")
    info: PassInfo
    _origin: tuple[str, tuple[tuple[str, str], ...]]

    def __call__(self, mod: IRModule) -> IRModule:
        if type(mod) is not IRModule and not isinstance(mod, IRModule):
            raise TypeError(f"pass {self.info.name} takes an IRModule, found "
                            f"{type(mod).__name__}; wrap an expression with "
                            f"IRModule.from_expr")
        if _gc_isenabled():
            # IR nodes are immutable and acyclic, so passes make no cyclic garbage; pausing
            # the cyclic collector keeps big graphs from being rescanned while they are
            # rewritten (it made 100k-node passes up to 1.7x slower, superlinear in size).
            _gc_disable()
            try:
                return self._run(mod)
            finally:
                _gc_enable()
        return self._run(mod)

    def _run(self, mod: IRModule) -> IRModule:
        ctx = _STATE.current
        if not ctx._plain:
            return ctx._run_pass(self, mod)
        try:
            return self._body(mod, ctx)
        except Exception as err:
            note_pass(err, self.info.name)
            raise

    def _body(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """The transformation itself, without instruments."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.info.name}>"


def _check_module(out: Any, info: PassInfo) -> IRModule:
    if type(out) is not IRModule and not isinstance(out, IRModule):
        raise TypeError(f"pass {info.name} returned {type(out).__name__}, expected an IRModule")
    return out


class ModulePass(Pass):
    """A pass over a whole module: ``func(mod, ctx) -> IRModule``."""

    __slots__ = ("_func",)

    def __init__(self, func: Callable[[IRModule, PassContext], IRModule], info: PassInfo) -> None:
        self._func = func
        self.info = info

    def _body(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return _check_module(self._func(mod, ctx), self.info)


class PerFunctionPass(Pass):
    """A pass applied to each function of one kind: ``func(f, mod, ctx) -> f'``. Subclasses
    (``passhost.relay.transform.FunctionPass``, ``passhost.tir.transform.PrimFuncPass``) set
    ``kind`` and may narrow :meth:`selects`."""

    __slots__ = ("_func",)
    kind: type = BaseFunc

    def __init__(self, func: Callable[[Any, IRModule, PassContext], Any], info: PassInfo) -> None:
        self._func = func
        self.info = info

    def selects(self, func: BaseFunc) -> bool:
        """Whether the pass rewrites ``func``."""
        return isinstance(func, self.kind)

    def _body(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed: dict[Any, Any] = {}
        for gvar, func in mod.functions.items():
            if not self.selects(func):
                continue
            new = self._func(func, mod, ctx)
            if new is not func:
                if not isinstance(new, self.kind):
                    raise TypeError(f"pass {self.info.name} returned {type(new).__name__} for "
                                    f"@{gvar.name_hint}, expected {self.kind.__name__}")
                changed[gvar] = new
        return mod.with_functions(changed) if changed else mod


class Sequential(Pass):
    """A pass running passes in order, gating each by the context (rule 28) and running the
    dependencies each declares first (rule 29)."""

    __slots__ = ("passes",)

    def __init__(self, passes: Iterable[Pass] | None = None, opt_level: int = 0,
                 name: str = "sequential", required: Iterable[str] | str | None = None,
                 *, always_run: bool = False) -> None:
        self.passes = tuple(passes or ())
        for p in self.passes:
            if not isinstance(p, Pass):
                raise TypeError(f"Sequential {name!r} holds passes, found {type(p).__name__} "
                                f"{p!r}")
        self.info = PassInfo(opt_level, name, required, always_run=always_run, sequential=True)

    def _body(self, mod: IRModule, ctx: PassContext) -> IRModule:
        disabled = ctx._disabled_set
        required = ctx._required_set
        opt_level = ctx._opt_level
        for index, p in enumerate(self.passes):
            info = p.info
            name = info.name
            if name in disabled or (name not in required and opt_level < info.opt_level):
                continue
            try:
                for dependency in info.required:
                    mod = _dependency(dependency, info.always_run)(mod)
                mod = p(mod)
            except Exception as err:
                note_position(err, self, index)
                raise
        return mod


def _dependency(name: str, always: bool) -> Pass:
    """The registered pass ``name``, run before a child that requires it; the dependencies
    of a pass that always runs always run too."""
    from passhost.transform.registry import get_pass

    dependency = get_pass(name)
    return mark_always_run(dependency) if always else dependency


def mark_always_run(pass_: Pass) -> Pass:
    """A copy of ``pass_`` whose PassInfo has ``always_run`` set: debugging tools that skip
    passes never skip it. ``pass_`` itself is left as it is."""
    if not isinstance(pass_, Pass):
        raise TypeError(f"mark_always_run takes a Pass, found {type(pass_).__name__} {pass_!r}")
    if pass_.info.always_run:
        return pass_
    marked = copy.copy(pass_)
    marked.info = evolve(pass_.info, always_run=True)
    return marked


# -- decorators -------------------------------------------------------------------------

def _pass_class(kind: type, cls: type, method: str, info: PassInfo) -> type:
    """A Pass class whose instances wrap an instance of ``cls`` and call its ``method``."""
    if not callable(getattr(cls, method, None)):
        raise TypeError(f"a class used as a {kind.__name__} defines {method}()")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        inner = cls(*args, **kwargs)
        object.__setattr__(self, "_inner", inner)
        kind.__init__(self, getattr(inner, method), info)  # type: ignore[misc]

    def __getattr__(self: Any, attr: str) -> Any:
        if attr == "_inner":
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    namespace = {"__init__": __init__, "__getattr__": __getattr__, "pass_info": info,
                 "__wrapped__": cls,
                 "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__}
    return type(cls.__name__, (kind,), namespace)


def pass_decorator(kind: type, method: str, pass_arg: Any, opt_level: int, name: str | None,
                   required: Iterable[str] | str | None, traceable: bool,
                   always: bool) -> Any:
    """What ``module_pass`` & co. return: a ``kind`` pass made from a function, or a pass
    class made from a class whose ``method`` is the body; ``pass_arg`` None makes it a
    decorator."""

    def create(target: Any) -> Any:
        info = PassInfo(opt_level, name or str(getattr(target, "__name__", "")), required,
                        traceable, always_run=always)
        if isinstance(target, type):
            return _pass_class(kind, target, method, info)
        if callable(target):
            return kind(target, info)
        raise TypeError(f"{kind.__name__} decorates a function or a class, found {target!r}")

    return create if pass_arg is None else create(pass_arg)


def module_pass(pass_func: Any = None, opt_level: int = 0, name: str | None = None,
                required: Iterable[str] | str | None = None, traceable: bool = False,
                *, always_run: bool = False) -> Any:
    """Make a module pass from ``func(mod, ctx)``, or a pass class from a class with
    ``transform_module(self, mod, ctx)``; usable directly or as a decorator."""
    return pass_decorator(ModulePass, "transform_module", pass_func, opt_level, name, required,
                      traceable, always_run)
