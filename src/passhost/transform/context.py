"""``PassContext``: the scope passes run in, its instruments, and the per-thread stack.

The call order and exception rules are those of ``docs/spec/pass-instruments.md``; the
docstrings below cite the rule numbers.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from passhost.errors import ContextOrderError, ModuleMutatedError
from passhost.instrument.dispatch import EMPTY, Dispatch, instrument_name
from passhost.ir.module import IRModule
from passhost.ir.node import FrozenDict
from passhost.ir.structural import structural_hash
from passhost.plugins.manager import get_host
from passhost.plugins.options import BOOL, INT, STR, OptionSpec
from passhost.plugins.registry import Registry
from passhost.transform.info import pass_names
from passhost.transform.notes import note_callback, note_pass

_LOG = logging.getLogger("passhost.transform")

# The config options a PassContext reads, declared here once (the built-in plugin registers
# them from its manifest, a copy tests/test_builtin_manifest.py keeps fresh).
#: The config option that makes every pass check that it left its input module unchanged.
IMMUTABLE_MODULE = OptionSpec("testing.immutable_module", BOOL, False,
                              "check that every pass leaves its input module unchanged")
#: The config option that installs the instrument ``execution-limit``.
MAX_PASS_EXECUTIONS = OptionSpec(
    "debug.max_pass_executions", INT, None,
    "run only the first N skippable pass executions (what bisect finds)")
#: The config option that installs the instrument ``reproducer``.
REPRODUCER_DIR = OptionSpec("debug.reproducer_dir", STR, None,
                            "when a pass raises, write a reproducer into this directory")
#: The config option that installs the instrument ``trace-events``.
TRACE_EVENTS = OptionSpec("debug.trace_events", STR, None,
                          "write the context's pass events to this JSON Lines file")

#: Config options that install a registered instrument, called after the context's own
#: instruments: config key -> (instrument name, the instrument option the value goes to).
CONFIG_INSTRUMENTS: dict[str, tuple[str, str]] = {
    MAX_PASS_EXECUTIONS.name: ("execution-limit", "max"),
    REPRODUCER_DIR.name: ("reproducer", "dir"),
    TRACE_EVENTS.name: ("trace-events", "path"),
}


class PassContext:
    """The settings passes run under: optimisation level, required and disabled passes,
    instruments and typed config. Use it as a context manager; fields are read-only."""

    __slots__ = ("_check_immutable", "_config", "_disabled", "_disabled_set", "_dispatch",
                 "_from_config", "_opt_level", "_plain", "_required", "_required_set")

    def __init__(self, opt_level: int = 2, required_pass: Iterable[str] | str | None = None,
                 disabled_pass: Iterable[str] | str | None = None,
                 instruments: Iterable[Any] | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        if isinstance(opt_level, bool) or not isinstance(opt_level, int) or opt_level < 0:
            raise TypeError(f"opt_level is an int >= 0, found {opt_level!r}")
        self._opt_level = opt_level
        self._required = pass_names(required_pass)
        self._required_set = frozenset(self._required)
        self._disabled = pass_names(disabled_pass)
        self._disabled_set = frozenset(self._disabled)
        self._config = _check_config(config)
        self._check_immutable = bool(self._config.get(IMMUTABLE_MODULE.name,
                                                      IMMUTABLE_MODULE.default))
        self._from_config = _config_instruments(self._config)
        self._set_dispatch(Dispatch((*(instruments or ()), *self._from_config)))

    # -- read-only fields ---------------------------------------------------------------
    @property
    def opt_level(self) -> int:
        """Sequentials run a child only if its opt_level is at most this."""
        return self._opt_level

    @property
    def required_pass(self) -> tuple[str, ...]:
        """Passes that always run inside a Sequential and skip ``should_run``."""
        return self._required

    @property
    def disabled_pass(self) -> tuple[str, ...]:
        """Passes a Sequential never runs (disabled beats required)."""
        return self._disabled

    @property
    def instruments(self) -> tuple[Any, ...]:
        """The instruments, in the order their callbacks are called: those given, then those
        the config options of :data:`CONFIG_INSTRUMENTS` install."""
        return self._dispatch.instruments

    @property
    def config(self) -> FrozenDict:
        """The config values given (checked against the registered options)."""
        return self._config

    def get_config(self, name: str, default: Any = None) -> Any:
        """The value of config option ``name``: as given, else the registered default."""
        if name in self._config:
            return self._config[name]
        registry = _config_options()
        return registry.get(name).default if name in registry else default

    def __repr__(self) -> str:
        names = ", ".join(instrument_name(i) for i in self.instruments)
        return (f"PassContext(opt_level={self._opt_level}, required_pass={list(self._required)}"
                f", disabled_pass={list(self._disabled)}, instruments=[{names}], "
                f"config={dict(self._config)})")

    # -- the per-thread stack -----------------------------------------------------------
    @staticmethod
    def current() -> PassContext:
        """The innermost entered context of this thread, or its default context (rule 23)."""
        return _STATE.current

    def __enter__(self) -> PassContext:
        self._enter_instruments()  # rule 13: a failing enter keeps the context out
        state = _STATE
        state.stack.append(self)
        state.current = self
        return self

    def __exit__(self, *exc_info: object) -> None:
        state = _STATE
        stack = state.stack
        if not stack or stack[-1] is not self:
            where = ("no context is entered on this thread" if not stack else
                     "it is not the innermost context entered on this thread"
                     if any(ctx is self for ctx in stack)
                     else "it was not entered on this thread, or has exited already")
            raise ContextOrderError(f"PassContext(opt_level={self.opt_level}) exited, but "
                                    f"{where}; contexts exit in the reverse order of "
                                    f"entering (use with blocks)")
        stack.pop()
        state.current = stack[-1] if stack else state.default
        self._exit_instruments()  # rule 1: popped first, then exit in list order

    @staticmethod
    def list_configs() -> dict[str, OptionSpec]:
        """The registered config options by name: type, default and summary of each."""
        return {entry.name: entry.spec for entry in _config_options().entries()}

    # -- instruments --------------------------------------------------------------------
    def override_instruments(self, instruments: Iterable[Any]) -> None:
        """Exit the current instruments, then install and enter ``instruments`` (rules 20,
        25, 26). Works on any context, entered or not. Instruments installed by config
        options stay, after the new ones (the config is fixed for the context's life)."""
        if instruments is None:
            raise TypeError("override_instruments takes a list of instruments, found None")
        new = Dispatch((*instruments, *self._from_config))  # validate before anything changes
        self._exit_instruments()
        self._set_dispatch(new)
        self._enter_instruments()

    def _set_dispatch(self, dispatch: Dispatch) -> None:
        self._dispatch = dispatch
        self._plain = not dispatch.instruments and not self._check_immutable

    def _enter_instruments(self) -> None:
        try:
            for failed_at, inst, fn in self._dispatch.enter:  # noqa: B007 (used below)
                fn()
        except Exception as err:
            note_callback(err, instrument_name(inst), "enter_pass_ctx")
            _LOG.warning("pass instrumentation disabled: %s.enter_pass_ctx failed",
                         instrument_name(inst))
            for position, other, exit_fn in reversed(self._dispatch.exit):
                if position < failed_at:
                    try:
                        exit_fn()
                    except Exception:
                        _LOG.exception("%s.exit_pass_ctx failed while unwinding",
                                       instrument_name(other))
            self._set_dispatch(EMPTY)
            raise

    def _exit_instruments(self) -> None:
        try:
            for _, inst, fn in self._dispatch.exit:  # noqa: B007 (used below)
                fn()
        except Exception as err:
            note_callback(err, instrument_name(inst), "exit_pass_ctx")
            _LOG.warning("pass instrumentation disabled: %s.exit_pass_ctx failed",
                         instrument_name(inst))
            self._set_dispatch(EMPTY)
            raise

    # -- running a pass under instruments -----------------------------------------------
    def _run_pass(self, pass_: Any, mod: IRModule) -> IRModule:
        """The instrument protocol around one pass (rules 2, 8-12, 14-17, 21, 22, 32)."""
        info = pass_.info
        dispatch = self._dispatch
        if dispatch.should_run and info.name not in self._required_set:
            vetoes = []
            try:
                for fn in dispatch.should_run:
                    answer = fn(mod, info)
                    if answer is not True and not _as_bool(answer, dispatch, fn, info):
                        vetoes.append(fn)
            except Exception as err:
                note_callback(err, instrument_name(dispatch.owner(fn)), "should_run",
                              info.name)
                raise
            if vetoes and info.always_run:
                _report_overruled(dispatch, info, vetoes)
            elif vetoes:
                if dispatch.skipped:
                    _notify_skipped(dispatch, mod, info, vetoes)
                return mod
        try:
            for fn in dispatch.before:
                fn(mod, info)
        except Exception as err:
            note_callback(err, instrument_name(dispatch.owner(fn)), "run_before_pass",
                          info.name)
            raise
        before_hash = structural_hash(mod) if self._check_immutable else None
        try:
            out = pass_._body(mod, self)
        except Exception as err:
            note_pass(err, info.name)
            for fn in dispatch.failed:
                fn(mod, info, err)
            raise
        if before_hash is not None and structural_hash(mod) != before_hash:
            raise ModuleMutatedError(f"pass {info.name} changed its input module in place "
                                     f"(config {IMMUTABLE_MODULE.name}); build a new module "
                                     f"instead")
        try:
            for fn in dispatch.after:
                fn(out, info)
        except Exception as err:
            note_callback(err, instrument_name(dispatch.owner(fn)), "run_after_pass",
                          info.name)
            raise
        return out


class VetoOverruledWarning(UserWarning):
    """An instrument's ``should_run`` said no to a pass that always runs (``always_run``: a
    step the build cannot do without); the pass ran anyway."""


def _report_overruled(dispatch: Dispatch, info: Any, vetoes: list[Any]) -> None:
    """Warn that the instruments of ``vetoes`` said no to ``info``'s pass, which runs."""
    names = ", ".join(repr(instrument_name(dispatch.owner(fn))) for fn in vetoes)
    warnings.warn(VetoOverruledWarning(
        f"instrument {names} vetoed {info.name}, which always runs (a step the build cannot "
        f"do without); it runs anyway"), stacklevel=4)


def _notify_skipped(dispatch: Dispatch, mod: IRModule, info: Any, vetoes: list[Any]) -> None:
    """Call ``run_skipped`` in list order, naming the instruments whose should_run said no."""
    vetoed_by = tuple(instrument_name(dispatch.owner(fn)) for fn in vetoes)
    try:
        for fn in dispatch.skipped:
            fn(mod, info, vetoed_by)
    except Exception as err:
        note_callback(err, instrument_name(dispatch.owner(fn)), "run_skipped", info.name)
        raise


def _config_instruments(config: FrozenDict) -> tuple[Any, ...]:
    """The instruments the config options of :data:`CONFIG_INSTRUMENTS` ask for, created
    through the instrument registry (an option left unset, or None, asks for none)."""
    wanted = [(key, config[key]) for key in CONFIG_INSTRUMENTS if config.get(key) is not None]
    if not wanted:
        return ()
    registry = get_host().registries.instruments
    made = []
    for key, value in wanted:
        instrument, option = CONFIG_INSTRUMENTS[key]
        made.append(registry.get(instrument).create({option: value}))
    return tuple(made)


def _as_bool(answer: Any, dispatch: Dispatch, fn: Any, info: Any) -> bool:
    if answer is False or (type(answer) is int and answer in (0, 1)):
        return bool(answer)
    raise TypeError(
        f"{instrument_name(dispatch.owner(fn))}.should_run must return a bool for pass "
        f"{info.name}, returned {type(answer).__name__} {answer!r}")


def _config_options() -> Registry:
    """The registry of config options (the plugin host is created on first use)."""
    return get_host().registries.config_options


def _check_config(config: Mapping[str, Any] | None) -> FrozenDict:
    """``config`` checked against the registered config options (rule 31)."""
    if not config:
        return FrozenDict()
    registry = _config_options()
    checked = {}
    for key, value in config.items():
        spec: OptionSpec = registry.get(key)
        checked[key] = spec.check(value, "config option")
    return FrozenDict(checked)


class _ThreadState(threading.local):
    """The context stack of one thread and its default context (rule 23)."""

    def __init__(self) -> None:
        self.stack: list[PassContext] = []
        self.default = PassContext()
        self.current = self.default


_STATE = _ThreadState()
