"""Logging instruments and passes for the pass-manager tests.

Every instrument callback and every pass body appends one string to a shared list, so a test
states the whole event sequence and compares it at once:

- ``"i1.enter"``, ``"i1.exit"``;
- ``"i1.should_run(A)"``, ``"i1.before(A)"``, ``"i1.after(A)"``, ``"i1.failed(A:Boom)"``;
- ``"A:body"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import passhost.relay as relay
from passhost.instrument import PassInstrument
from passhost.ir.module import IRModule
from passhost.transform import module_pass
from passhost.transform.context import _STATE
from passhost.transform.passes import Pass

#: TVM-style callback name -> the word used in the log.
SHORT = {
    "enter_pass_ctx": "enter",
    "exit_pass_ctx": "exit",
    "should_run": "should_run",
    "run_before_pass": "before",
    "run_after_pass": "after",
    "run_after_pass_failed": "failed",
}
#: The five callbacks TVM knows (no run_after_pass_failed).
TVM_CALLBACKS = ("enter_pass_ctx", "exit_pass_ctx", "should_run", "run_before_pass",
                 "run_after_pass")


class Boom(Exception):
    """What logging instruments and passes raise when asked to fail."""


def make_module() -> IRModule:
    """A small module: ``main(x) = relu(x)``."""
    x = relay.var("x", shape=(1, 4), dtype="float32")
    return IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))


def instrument(name: str, log: list[str], *, callbacks: Iterable[str] = TVM_CALLBACKS,
               raises: Iterable[str] = (), raise_on: str | None = None,
               answer: Any = True) -> PassInstrument:
    """A TVM-style instrument: an instance of a PassInstrument subclass named ``name``
    defining exactly ``callbacks``, each logging itself.

    ``raises`` lists short callback names ("enter", "before"...) that raise ``Boom`` after
    logging (only for the pass ``raise_on`` when given); ``answer`` is what ``should_run``
    returns, or a function of the PassInfo returning it.
    """
    raises = frozenset(raises)
    namespace = {cb: _method(name, log, cb, raises, raise_on, answer) for cb in callbacks}
    return type(name, (PassInstrument,), namespace)()


def _method(name: str, log: list[str], callback: str, raises: frozenset[str],
            raise_on: str | None, answer: Any) -> Callable[..., Any]:
    short = SHORT[callback]

    def record(event: str, info: Any = None) -> None:
        log.append(event)
        if short in raises and (raise_on is None or info is None or info.name == raise_on):
            raise Boom(f"{name} bad {short}")

    if callback in ("enter_pass_ctx", "exit_pass_ctx"):
        def method(self: Any) -> None:
            record(f"{name}.{short}")
    elif callback == "should_run":
        def method(self: Any, mod: IRModule, info: Any) -> Any:
            record(f"{name}.should_run({info.name})", info)
            return answer(info) if callable(answer) else answer
    elif callback == "run_after_pass_failed":
        def method(self: Any, mod: IRModule, info: Any, error: BaseException) -> None:
            record(f"{name}.failed({info.name}:{type(error).__name__})", info)
    else:
        def method(self: Any, mod: IRModule, info: Any) -> None:
            record(f"{name}.{short}({info.name})", info)
    return method


def logged_pass(name: str, log: list[str], *, opt_level: int = 0,
                required: Iterable[str] = (), calls: Iterable[Pass] = (),
                raises: BaseException | None = None) -> Pass:
    """A module pass named ``name`` whose body logs ``"<name>:body"``, then runs the passes
    ``calls`` on the module in order, then raises ``raises`` if given; it returns a new
    module object (a copy), so tests can tell its output from its input."""
    calls = tuple(calls)

    def body(mod: IRModule, ctx: Any) -> IRModule:
        log.append(f"{name}:body")
        for inner in calls:
            mod = inner(mod)
        if raises is not None:
            raise raises
        return mod.copy()

    return module_pass(body, opt_level=opt_level, name=name, required=required)


def check_and_reset_contexts() -> None:
    """Fail if a test left an entered context or instruments on the default context;
    restore a clean state first so one failure does not cascade."""
    from passhost.instrument.dispatch import EMPTY

    state = _STATE
    leaked_stack = list(state.stack)
    leaked_instruments = state.default.instruments
    state.stack.clear()
    state.current = state.default
    state.default._set_dispatch(EMPTY)
    assert leaked_stack == [], "a test left a PassContext entered"
    assert leaked_instruments == (), "a test left instruments on the default PassContext"


def three(log, bad=None, *, raises=(), raise_on=None, callbacks=None):
    """Instruments i1, i2, i3; ``bad`` (a name) gets ``raises``."""
    extra = {} if callbacks is None else {"callbacks": callbacks}
    return [instrument(n, log, raises=raises if n == bad else (), raise_on=raise_on, **extra)
            for n in ("i1", "i2", "i3")]
