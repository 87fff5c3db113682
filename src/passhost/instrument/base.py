"""``PassInstrument`` and ``@pass_instrument``: TVM-style instruments as pluggy plugins.

An instrument defines any of the callbacks ``enter_pass_ctx``, ``exit_pass_ctx``,
``should_run``, ``run_before_pass``, ``run_after_pass``, ``run_after_pass_failed`` and
``run_skipped``.
Each one it defines is also exposed as the matching ``passhost_*`` hook implementation, so
the object is a genuine pluggy plugin of the passhost hookspecs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from passhost.plugins.hookspecs import INSTRUMENT_CALLBACKS, hookimpl

#: Marks the ``passhost_*`` methods generated from TVM-style callbacks.
ALIAS_ATTR = "_passhost_alias_of"


def _alias(callback: str, args: tuple[str, ...]) -> Callable[..., Any]:
    """A ``passhost_<callback>`` hook implementation that calls ``self.<callback>``; its
    parameters are named as the hookspec's (pluggy passes hook arguments by name)."""
    hook = _FORWARDERS[args](callback)
    hook.__name__ = hook.__qualname__ = f"passhost_{callback}"
    hook.__doc__ = f"Hook implementation forwarding to ``{callback}``."
    setattr(hook, ALIAS_ATTR, callback)
    return hookimpl(hook)


def _forward0(callback: str) -> Callable[..., Any]:
    def hook(self: Any) -> Any:
        return getattr(self, callback)()
    return hook


def _forward2(callback: str) -> Callable[..., Any]:
    def hook(self: Any, mod: Any, info: Any) -> Any:
        return getattr(self, callback)(mod, info)
    return hook


def _forward_failed(callback: str) -> Callable[..., Any]:
    def hook(self: Any, mod: Any, info: Any, error: BaseException) -> Any:
        return getattr(self, callback)(mod, info, error)
    return hook


def _forward_skipped(callback: str) -> Callable[..., Any]:
    def hook(self: Any, mod: Any, info: Any, vetoed_by: tuple[str, ...]) -> Any:
        return getattr(self, callback)(mod, info, vetoed_by)
    return hook


#: The hookspec's argument names -> a maker of the forwarding function with those names.
_FORWARDERS: dict[tuple[str, ...], Callable[[str], Callable[..., Any]]] = {
    (): _forward0, ("mod", "info"): _forward2, ("mod", "info", "error"): _forward_failed,
    ("mod", "info", "vetoed_by"): _forward_skipped}


class PassInstrument:
    """Base class of pass instruments; define any of the callbacks to use them.

    A callback that is not defined is not called; a missing ``should_run`` counts as true.
    The instrument's name is its class name.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for callback, args in INSTRUMENT_CALLBACKS.items():
            hook_name = f"passhost_{callback}"
            if callable(getattr(cls, callback, None)) and getattr(cls, hook_name, None) is None:
                setattr(cls, hook_name, _alias(callback, args))

    @property
    def name(self) -> str:
        """The instrument's name: its class name."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name} instrument>"


T = TypeVar("T", bound=type)


@overload
def pass_instrument(pi_cls: T) -> T: ...
@overload
def pass_instrument(pi_cls: None = None) -> Callable[[T], T]: ...


def pass_instrument(pi_cls: Any = None) -> Any:
    """Class decorator making a plain class a :class:`PassInstrument` (same name, same
    constructor); usable as ``@pass_instrument`` or ``@pass_instrument()``."""

    def wrap(cls: type) -> type:
        if not isinstance(cls, type):
            raise TypeError(f"@pass_instrument decorates a class, found {cls!r}")
        if issubclass(cls, PassInstrument):
            return cls
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                     "__doc__": cls.__doc__}
        return type(cls.__name__, (cls, PassInstrument), namespace)

    return wrap if pi_cls is None else wrap(pi_cls)
