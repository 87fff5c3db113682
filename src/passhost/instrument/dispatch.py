"""Binding instruments to their callbacks, once per instrument list.

Each instrument is validated by registering it with a pluggy manager that knows only the
instrument hookspecs (so a misspelt or ill-typed hook is an error, as for any plugin). The
result is, per callback, a tuple of plain callables in list order: calling them is a loop,
with no per-call lookup and nothing that depends on the size of the IR.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from passhost.errors import InstrumentError
from passhost.instrument.base import ALIAS_ATTR, PassInstrument
from passhost.plugins.hookspecs import INSTRUMENT_CALLBACKS, PROJECT, InstrumentHooks

_VALIDATOR = pluggy.PluginManager(PROJECT)
_VALIDATOR.add_hookspecs(InstrumentHooks)
_VALIDATOR_LOCK = threading.Lock()
_ORDER_OPTIONS = ("tryfirst", "trylast", "wrapper", "hookwrapper")


def instrument_name(instrument: Any) -> str:
    """The name of an instrument: its class name."""
    return type(instrument).__name__


class Dispatch:
    """The callbacks of an instrument list, grouped by callback, in list order."""

    __slots__ = ("after", "before", "enter", "exit", "failed", "instruments", "owners",
                 "should_run", "skipped")

    def __init__(self, instruments: Iterable[Any]) -> None:
        self.instruments = tuple(instruments)
        #: per callback name, the (instrument, callable) pairs of the instruments defining it
        table: dict[str, list[tuple[int, Any, Callable[..., Any]]]] = {
            cb: [] for cb in INSTRUMENT_CALLBACKS}
        for position, inst in enumerate(self.instruments):
            for callback, fn in _bind(inst).items():
                table[callback].append((position, inst, fn))
        self.owners = {id(fn): inst for rows in table.values() for _, inst, fn in rows}
        #: (list position, instrument, callable): enter and exit need positions to unwind
        self.enter = tuple(table["enter_pass_ctx"])
        self.exit = tuple(table["exit_pass_ctx"])
        self.should_run = tuple(fn for _, _, fn in table["should_run"])
        self.before = tuple(fn for _, _, fn in table["run_before_pass"])
        self.after = tuple(fn for _, _, fn in table["run_after_pass"])
        self.failed = tuple(fn for _, _, fn in table["run_after_pass_failed"])
        self.skipped = tuple(fn for _, _, fn in table["run_skipped"])

    def owner(self, fn: Callable[..., Any]) -> Any:
        """The instrument a bound callback belongs to."""
        return self.owners.get(id(fn))


EMPTY = Dispatch(())


def _bind(inst: Any) -> dict[str, Callable[..., Any]]:
    """Validate ``inst`` as a pluggy plugin of the instrument hooks; return its callbacks."""
    if isinstance(inst, type):
        name = inst.__name__
        raise InstrumentError(f"instrument {name}: pass an instance ({name}()), not the class")
    name = instrument_name(inst)
    with _VALIDATOR_LOCK:
        try:
            _VALIDATOR.register(inst, name=f"{name}@{id(inst):x}")
        except pluggy.PluginValidationError as err:
            raise InstrumentError(f"instrument {name}: {err}") from None
        except ValueError as err:
            raise InstrumentError(f"instrument {name} cannot be registered: {err}") from None
        try:
            impls = [(caller, impl) for caller in _VALIDATOR.get_hookcallers(inst) or ()
                     for impl in caller.get_hookimpls() if impl.plugin is inst]
        finally:
            _VALIDATOR.unregister(inst)
    bound: dict[str, Callable[..., Any]] = {}
    for caller, impl in impls:
        if not caller.has_spec():
            raise InstrumentError(f"instrument {name}: {caller.name} is not an instrument "
                                  f"callback; known: "
                                  f"{', '.join('passhost_' + c for c in INSTRUMENT_CALLBACKS)}")
        callback = caller.name.removeprefix("passhost_")
        used = [opt for opt in _ORDER_OPTIONS if impl.opts.get(opt)]
        if used:
            raise InstrumentError(f"instrument {name}: {caller.name} uses {', '.join(used)}; "
                                  f"instruments are called in the order of the PassContext's "
                                  f"list, so ordering options do not apply")
        bound[callback] = _callable(inst, name, callback, impl)
    if not bound and not isinstance(inst, PassInstrument):
        tvm_style = [cb for cb in INSTRUMENT_CALLBACKS if callable(getattr(inst, cb, None))]
        hint = ("decorate its class with @pass_instrument or subclass PassInstrument"
                if tvm_style else "it defines no instrument callback")
        raise InstrumentError(f"{name} is not a pass instrument: {hint}")
    return bound


def _callable(inst: Any, name: str, callback: str, impl: Any) -> Callable[..., Any]:
    """The plain callable for one callback, taking the spec's arguments positionally."""
    spec_args = INSTRUMENT_CALLBACKS[callback]
    alias_of = getattr(impl.function, ALIAS_ATTR, None)
    if alias_of is not None:
        method = getattr(inst, alias_of)
        try:
            inspect.signature(method).bind(*spec_args)
        except TypeError:
            raise InstrumentError(
                f"instrument {name}: {callback}{inspect.signature(method)} cannot take the "
                f"arguments ({', '.join(spec_args)})") from None
        except ValueError:  # builtins without a signature: trust them
            pass
        return method
    if tuple(impl.argnames) == spec_args:
        return impl.function
    return _adapter(impl.function, tuple(impl.argnames), spec_args)


def _adapter(function: Callable[..., Any], wanted: tuple[str, ...],
             spec_args: tuple[str, ...]) -> Callable[..., Any]:
    """Call a hook implementation that takes a subset of the spec's arguments by name."""
    positions = [(arg, spec_args.index(arg)) for arg in wanted]

    def call(*args: Any) -> Any:
        return function(**{arg: args[i] for arg, i in positions})

    return call
