"""The pass-instrument protocol when something raises: rules 13-22 of
docs/spec/pass-instruments.md. Every test states the whole event sequence (see
tests/passlog.py for the notation)."""

from __future__ import annotations

import pytest

from passhost.instrument import PassInstrument
from passhost.transform import PassContext, Sequential
from passlog import Boom, instrument, logged_pass, three

pytestmark = pytest.mark.usefixtures("clean_contexts")


# -- C. exceptions -------------------------------------------------------------------------

def test_rule13_enter_raises_unwinds_in_reverse_and_clears_for_good(mod):
    log = []
    instruments = [instrument(n, log, raises=["enter"] if n == "i3" else ())
                   for n in ("i1", "i2", "i3", "i4")]
    ctx = PassContext(instruments=instruments)
    with pytest.raises(Boom, match=r"^i3 bad enter") as info, ctx:
        log.append("with-body")
    assert log == ["i1.enter", "i2.enter", "i3.enter", "i2.exit", "i1.exit"]
    assert info.value.__notes__ == ["in i3.enter_pass_ctx"]
    assert ctx.instruments == ()
    assert PassContext.current() is not ctx
    # entered again later: no instruments any more
    log.clear()
    with ctx:
        assert PassContext.current() is ctx
        logged_pass("A", log)(mod)
    ctx.override_instruments([])
    assert log == ["A:body"]


def test_rule14_should_run_raises(mod):
    log = []
    ctx = PassContext(instruments=three(log, "i2", raises=["should_run"]))
    with pytest.raises(Boom, match=r"^i2 bad should_run") as info, ctx:
        logged_pass("A", log)(mod)
    assert log == ["i1.enter", "i2.enter", "i3.enter",
                   "i1.should_run(A)", "i2.should_run(A)",
                   "i1.exit", "i2.exit", "i3.exit"]
    assert info.value.__notes__ == ["in i2.should_run for pass A"]
    assert len(ctx.instruments) == 3  # not cleared


def test_rule15_run_before_pass_raises(mod):
    log = []
    ctx = PassContext(instruments=three(log, "i2", raises=["before"]))
    with pytest.raises(Boom, match=r"^i2 bad before") as info, ctx:
        logged_pass("A", log)(mod)
    assert log == ["i1.enter", "i2.enter", "i3.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i3.should_run(A)",
                   "i1.before(A)", "i2.before(A)",
                   "i1.exit", "i2.exit", "i3.exit"]
    assert info.value.__notes__ == ["in i2.run_before_pass for pass A"]
    # not cleared: entering again enters all three
    log.clear()
    with ctx:
        pass
    assert log == ["i1.enter", "i2.enter", "i3.enter", "i1.exit", "i2.exit", "i3.exit"]


def test_rule16_run_after_pass_raises_result_lost(mod):
    log = []
    result = []
    ctx = PassContext(instruments=three(log, "i2", raises=["after"]))
    with pytest.raises(Boom, match=r"^i2 bad after") as info, ctx:
        result.append(logged_pass("A", log)(mod))
    assert result == []
    assert log == ["i1.enter", "i2.enter", "i3.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i3.should_run(A)",
                   "i1.before(A)", "i2.before(A)", "i3.before(A)",
                   "A:body", "i1.after(A)", "i2.after(A)",
                   "i1.exit", "i2.exit", "i3.exit"]
    assert info.value.__notes__ == ["in i2.run_after_pass for pass A"]
    assert len(ctx.instruments) == 3


def test_rule16_run_after_pass_raises_inside_a_sequential(mod):
    log = []
    seq = Sequential([logged_pass("A", log), logged_pass("B", log)])
    instruments = [instrument("i1", log),
                   instrument("i2", log, raises=["after"], raise_on="A")]
    with pytest.raises(Boom) as info, PassContext(instruments=instruments):
        seq(mod)
    assert log == ["i1.enter", "i2.enter",
                   "i1.should_run(sequential)", "i2.should_run(sequential)",
                   "i1.before(sequential)", "i2.before(sequential)",
                   "i1.should_run(A)", "i2.should_run(A)", "i1.before(A)", "i2.before(A)",
                   "A:body", "i1.after(A)", "i2.after(A)",
                   "i1.exit", "i2.exit"]
    assert info.value.__notes__ == ["in i2.run_after_pass for pass A inside sequential"]


def test_rule17_body_raises_no_after_for_it_or_any_enclosing_pass(mod):
    log = []
    seq = Sequential([logged_pass("A", log, raises=Boom("A failed")), logged_pass("B", log)])
    outer = logged_pass("Outer", log, calls=[seq])
    with pytest.raises(Boom, match=r"^A failed") as info, \
            PassContext(instruments=[instrument("i1", log)]):
        outer(mod)
    assert log == ["i1.enter",
                   "i1.should_run(Outer)", "i1.before(Outer)", "Outer:body",
                   "i1.should_run(sequential)", "i1.before(sequential)",
                   "i1.should_run(A)", "i1.before(A)", "A:body",
                   "i1.exit"]
    assert info.value.__notes__ == ["while running pass A inside sequential inside Outer"]


def test_rule18_exit_raises_after_pop_later_exits_skipped_list_cleared(mod):
    log = []
    holder = {}

    class Probe(PassInstrument):
        def exit_pass_ctx(self):
            log.append(f"probe.exit current={PassContext.current() is holder['ctx']}")

    ctx = PassContext(instruments=[Probe(), *three(log, "i2", raises=["exit"])])
    holder["ctx"] = ctx
    with pytest.raises(Boom, match=r"^i2 bad exit") as info, ctx:
        logged_pass("A", log)(mod)
    assert log == ["i1.enter", "i2.enter", "i3.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i3.should_run(A)",
                   "i1.before(A)", "i2.before(A)", "i3.before(A)",
                   "A:body", "i1.after(A)", "i2.after(A)", "i3.after(A)",
                   "probe.exit current=False", "i1.exit", "i2.exit"]
    assert info.value.__notes__ == ["in i2.exit_pass_ctx"]
    assert ctx.instruments == ()
    assert PassContext.current() is not ctx


_ENTERED = ["i1.enter", "i2.enter", "i3.enter"]
_ASKED = ["i1.should_run(A)", "i2.should_run(A)", "i3.should_run(A)"]
_BEFORE = ["i1.before(A)", "i2.before(A)", "i3.before(A)"]


@pytest.mark.parametrize(("where", "expected"), [
    ("should_run", [*_ENTERED, "i1.should_run(A)", "i2.should_run(A)"]),
    ("before", [*_ENTERED, *_ASKED, "i1.before(A)", "i2.before(A)"]),
    ("after", [*_ENTERED, *_ASKED, *_BEFORE, "A:body", "i1.after(A)", "i2.after(A)"]),
    ("body", [*_ENTERED, *_ASKED, *_BEFORE, "A:body"]),
])
def test_rule19_without_with_failures_exit_nothing_clear_nothing(mod, where, expected):
    log = []
    instruments = three(log, "i2", raises=[] if where == "body" else [where])
    a = logged_pass("A", log, raises=Boom("A failed") if where == "body" else None)
    ctx = PassContext.current()
    ctx.override_instruments(instruments)
    try:
        with pytest.raises(Boom):
            a(mod)
        assert log == expected
        assert ctx.instruments == tuple(instruments)
        assert PassContext.current() is ctx
    finally:
        log.clear()
        ctx.override_instruments([])
    assert log == ["i1.exit", "i2.exit", "i3.exit"]


def test_rule20_override_old_exit_raises_new_never_entered():
    log = []
    ctx = PassContext(instruments=three(log, "i2", raises=["exit"]))
    new = [instrument("n1", log)]
    with pytest.raises(Boom, match=r"^i2 bad exit") as info:
        ctx.override_instruments(new)
    assert log == ["i1.exit", "i2.exit"]
    assert info.value.__notes__ == ["in i2.exit_pass_ctx"]
    assert ctx.instruments == ()


def test_rule20_override_new_enter_raises_entered_ones_exit_in_reverse():
    log = []
    ctx = PassContext(instruments=[instrument("old", log)])
    new = [instrument("n1", log), instrument("n2", log),
           instrument("n3", log, raises=["enter"]), instrument("n4", log)]
    with pytest.raises(Boom, match=r"^n3 bad enter") as info:
        ctx.override_instruments(new)
    assert log == ["old.exit", "n1.enter", "n2.enter", "n3.enter", "n2.exit", "n1.exit"]
    assert info.value.__notes__ == ["in n3.enter_pass_ctx"]
    assert ctx.instruments == ()


def test_rule20_override_on_default_context_enter_raises(mod):
    log = []
    ctx = PassContext.current()
    with pytest.raises(Boom):
        ctx.override_instruments([instrument("n1", log), instrument("n2", log,
                                                                     raises=["enter"])])
    assert ctx.instruments == ()
    logged_pass("A", log)(mod)
    assert log == ["n1.enter", "n2.enter", "n1.exit", "A:body"]


class CustomError(Exception):
    """An exception with its own fields: they must reach the caller untouched."""

    def __init__(self, code):
        super().__init__(f"code {code}")
        self.code = code


@pytest.mark.parametrize("with_instruments", [False, True])
def test_rule21_exception_keeps_type_and_value_with_pass_chain_note(mod, with_instruments):
    error = CustomError(7)
    infer = logged_pass("InferType", [], raises=error)
    fold = logged_pass("FoldConstant", [], calls=[infer])
    scale = logged_pass("FoldScaleAxis", [], calls=[fold])
    instruments = [instrument("i1", [])] if with_instruments else []
    with pytest.raises(CustomError) as info, PassContext(instruments=instruments):
        scale(mod)
    assert info.value is error
    assert info.value.code == 7
    assert str(info.value) == "code 7"
    assert error.__notes__ == [
        "while running pass InferType inside FoldConstant inside FoldScaleAxis"]


@pytest.mark.parametrize("exc", [KeyError("k"), IndexError(3), ZeroDivisionError("z"),
                                 RecursionError("deep")], ids=lambda e: type(e).__name__)
def test_rule21_builtin_exception_types_are_not_turned_into_runtime_error(mod, exc):
    with pytest.raises(type(exc)) as info, PassContext(instruments=[instrument("i1", [])]):
        Sequential([logged_pass("A", [], raises=exc)], name="Outer")(mod)
    assert info.value is exc
    assert exc.__notes__ == ["while running pass A inside Outer"]


@pytest.mark.parametrize(("where", "note"), [
    ("enter", "in i2.enter_pass_ctx"),
    ("should_run", "in i2.should_run for pass InferType inside FoldConstant"),
    ("before", "in i2.run_before_pass for pass InferType inside FoldConstant"),
    ("after", "in i2.run_after_pass for pass InferType inside FoldConstant"),
    ("exit", "in i2.exit_pass_ctx"),
])
def test_rule21_callback_errors_note_the_instrument_and_callback(mod, where, note):
    fold = logged_pass("FoldConstant", [], calls=[logged_pass("InferType", [])])
    instruments = three([], "i2", raises=[where],
                        raise_on=None if where in ("enter", "exit") else "InferType")
    with pytest.raises(Boom, match=rf"^i2 bad {where}") as info, \
            PassContext(instruments=instruments):
        fold(mod)
    assert info.value.__notes__ == [note]


def test_rule22_run_after_pass_failed_at_each_level_only_where_defined(mod):
    log = []
    errors = []

    class Watcher(PassInstrument):
        def run_after_pass_failed(self, m, info, error):
            errors.append((info.name, m is mod, error))

    error = Boom("A failed")
    seq = Sequential([logged_pass("A", log, raises=error), logged_pass("B", log)])
    with_failed = instrument("i1", log, callbacks=[
        "should_run", "run_before_pass", "run_after_pass", "run_after_pass_failed"])
    tvm_only = instrument("i2", log)
    with pytest.raises(Boom) as info, \
            PassContext(instruments=[with_failed, tvm_only, Watcher()]):
        seq(mod)
    assert info.value is error
    assert log == ["i2.enter",
                   "i1.should_run(sequential)", "i2.should_run(sequential)",
                   "i1.before(sequential)", "i2.before(sequential)",
                   "i1.should_run(A)", "i2.should_run(A)", "i1.before(A)", "i2.before(A)",
                   "A:body",
                   "i1.failed(A:Boom)",
                   "i1.failed(sequential:Boom)",
                   "i2.exit"]
    assert errors == [("A", True, error), ("sequential", True, error)]
    assert error.__notes__ == ["while running pass A inside sequential"]


def test_rule22_no_failed_callback_for_a_pass_whose_body_never_ran(mod):
    log = []
    callbacks = ["run_before_pass", "run_after_pass", "run_after_pass_failed"]
    instruments = [instrument("i1", log, callbacks=callbacks),
                   instrument("i2", log, callbacks=callbacks, raises=["before"],
                              raise_on="A")]
    seq = Sequential([logged_pass("A", log)])
    with pytest.raises(Boom), PassContext(instruments=instruments):
        seq(mod)
    # A's body never ran: no failed(A); the Sequential's body raised: failed(sequential)
    assert log == ["i1.before(sequential)", "i2.before(sequential)",
                   "i1.before(A)", "i2.before(A)",
                   "i1.failed(sequential:Boom)", "i2.failed(sequential:Boom)"]


def test_rule22_a_raising_failed_callback_replaces_the_error_and_stops_the_others(mod):
    log = []
    callbacks = ["run_after_pass_failed"]
    instruments = [instrument("i1", log, callbacks=callbacks, raises=["failed"]),
                   instrument("i2", log, callbacks=callbacks)]
    original = Boom("A failed")
    with pytest.raises(Boom) as info, PassContext(instruments=instruments):
        logged_pass("A", log, raises=original)(mod)
    assert info.value is not original
    assert info.value.__context__ is original
    assert log == ["A:body", "i1.failed(A:Boom)"]
