"""The pass-instrument protocol, rules 1-12 of docs/spec/pass-instruments.md (rules 13-22,
exceptions, are in test_pass_instrument_exceptions.py).

Every test states the whole event sequence (see tests/passlog.py for the notation) and
compares it at once. The last tests check instrument validation. The exception cells
In[10]-In[18] of TVM's pass-instrument tutorial (the project's seed) run for real in
examples/pass_instrument_tutorial.py, checked by tests/test_tutorial.py.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pluggy
import pytest

from passhost.errors import InstrumentError
from passhost.instrument import PassInstrument, dispatch, pass_instrument
from passhost.plugins import hookimpl
from passhost.plugins.hookspecs import InstrumentHooks
from passhost.transform import (
    PassContext,
    PassInfo,
    Sequential,
    VetoOverruledWarning,
    mark_always_run,
)
from passlog import (
    Boom,
    instrument,
    logged_pass,
    three,
)

pytestmark = pytest.mark.usefixtures("clean_contexts")


# -- A. call order -------------------------------------------------------------------------

def test_rule1_enter_in_list_order_then_current_exit_after_pop_in_list_order():
    log = []
    holder = {}

    class Probe(PassInstrument):
        def enter_pass_ctx(self):
            log.append(f"probe.enter current={PassContext.current() is holder['ctx']}")

        def exit_pass_ctx(self):
            log.append(f"probe.exit current={PassContext.current() is holder['ctx']}")

    ctx = PassContext(instruments=[instrument("i1", log), Probe(), instrument("i2", log)])
    holder["ctx"] = ctx
    with ctx as entered:
        log.append(f"with-body current={PassContext.current() is ctx}")
    assert entered is ctx
    assert log == ["i1.enter", "probe.enter current=False", "i2.enter",
                   "with-body current=True",
                   "i1.exit", "probe.exit current=False", "i2.exit"]


def test_rule2_two_instruments_trace(mod):
    log = []
    a = logged_pass("A", log)
    with PassContext(instruments=[instrument("i1", log), instrument("i2", log)]):
        a(mod)
    assert log == ["i1.enter", "i2.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i1.before(A)", "i2.before(A)",
                   "A:body", "i1.after(A)", "i2.after(A)",
                   "i1.exit", "i2.exit"]


def test_rule2_three_instruments_two_passes(mod):
    log = []
    a, b = logged_pass("A", log), logged_pass("B", log)
    with PassContext(instruments=three(log)):
        b(a(mod))
    assert log == ["i1.enter", "i2.enter", "i3.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i3.should_run(A)",
                   "i1.before(A)", "i2.before(A)", "i3.before(A)", "A:body",
                   "i1.after(A)", "i2.after(A)", "i3.after(A)",
                   "i1.should_run(B)", "i2.should_run(B)", "i3.should_run(B)",
                   "i1.before(B)", "i2.before(B)", "i3.before(B)", "B:body",
                   "i1.after(B)", "i2.after(B)", "i3.after(B)",
                   "i1.exit", "i2.exit", "i3.exit"]


def test_rule2_before_gets_input_after_gets_returned_module(mod):
    seen = []

    @pass_instrument
    class Modules:
        def should_run(self, m, info):
            seen.append(("should_run", m))
            return True

        def run_before_pass(self, m, info):
            seen.append(("before", m))

        def run_after_pass(self, m, info):
            seen.append(("after", m))

    a = logged_pass("A", [])
    with PassContext(instruments=[Modules()]):
        out = a(mod)
    assert out is not mod
    assert [(k, m is mod, m is out) for k, m in seen] == [
        ("should_run", True, False), ("before", True, False), ("after", False, True)]


def test_rule3_sequential_is_a_pass_wrapping_its_children(mod):
    log = []
    seq = Sequential([logged_pass("A", log), logged_pass("B", log)])
    assert seq.info == PassInfo(0, "sequential")
    with PassContext(instruments=[instrument("i1", log), instrument("i2", log)]):
        seq(mod)
    assert log == ["i1.enter", "i2.enter",
                   "i1.should_run(sequential)", "i2.should_run(sequential)",
                   "i1.before(sequential)", "i2.before(sequential)",
                   "i1.should_run(A)", "i2.should_run(A)", "i1.before(A)", "i2.before(A)",
                   "A:body", "i1.after(A)", "i2.after(A)",
                   "i1.should_run(B)", "i2.should_run(B)", "i1.before(B)", "i2.before(B)",
                   "B:body", "i1.after(B)", "i2.after(B)",
                   "i1.after(sequential)", "i2.after(sequential)",
                   "i1.exit", "i2.exit"]


def test_rule3_empty_sequential_still_gets_callbacks(mod):
    log = []
    with PassContext(instruments=[instrument("i1", log)]):
        out = Sequential([])(mod)
    assert out is mod
    assert log == ["i1.enter", "i1.should_run(sequential)", "i1.before(sequential)",
                   "i1.after(sequential)", "i1.exit"]


def test_rule3_nested_sequential_recurses(mod):
    log = []
    inner = Sequential([logged_pass("B", log), logged_pass("C", log)], name="inner")
    outer = Sequential([logged_pass("A", log), inner, logged_pass("D", log)], name="outer")
    with PassContext(instruments=[instrument("i1", log)]):
        outer(mod)
    assert log == ["i1.enter",
                   "i1.should_run(outer)", "i1.before(outer)",
                   "i1.should_run(A)", "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.should_run(inner)", "i1.before(inner)",
                   "i1.should_run(B)", "i1.before(B)", "B:body", "i1.after(B)",
                   "i1.should_run(C)", "i1.before(C)", "C:body", "i1.after(C)",
                   "i1.after(inner)",
                   "i1.should_run(D)", "i1.before(D)", "D:body", "i1.after(D)",
                   "i1.after(outer)",
                   "i1.exit"]


def test_rule4_passes_called_in_a_pass_body_nest_strictly(mod):
    log = []
    infer = logged_pass("InferType", log)
    fold = logged_pass("FoldConstant", log, calls=[infer])
    scale = logged_pass("FoldScaleAxis", log, calls=[fold, infer])
    with PassContext(instruments=[instrument("i1", log), instrument("i2", log)]):
        scale(mod)
    assert log == [
        "i1.enter", "i2.enter",
        "i1.should_run(FoldScaleAxis)", "i2.should_run(FoldScaleAxis)",
        "i1.before(FoldScaleAxis)", "i2.before(FoldScaleAxis)", "FoldScaleAxis:body",
        "i1.should_run(FoldConstant)", "i2.should_run(FoldConstant)",
        "i1.before(FoldConstant)", "i2.before(FoldConstant)", "FoldConstant:body",
        "i1.should_run(InferType)", "i2.should_run(InferType)",
        "i1.before(InferType)", "i2.before(InferType)", "InferType:body",
        "i1.after(InferType)", "i2.after(InferType)",
        "i1.after(FoldConstant)", "i2.after(FoldConstant)",
        "i1.should_run(InferType)", "i2.should_run(InferType)",
        "i1.before(InferType)", "i2.before(InferType)", "InferType:body",
        "i1.after(InferType)", "i2.after(InferType)",
        "i1.after(FoldScaleAxis)", "i2.after(FoldScaleAxis)",
        "i1.exit", "i2.exit"]


def test_rule5_inner_with_inherits_nothing(mod):
    log = []
    a = logged_pass("A", log, opt_level=3)
    y = logged_pass("Y", log)
    outer = PassContext(opt_level=3, required_pass=["X"], disabled_pass=["Y"],
                        instruments=[instrument("o", log)],
                        config={"testing.immutable_module": True})
    with outer:
        a(mod)
        with PassContext(instruments=[instrument("n", log)]) as inner:
            assert (inner.opt_level, inner.required_pass, inner.disabled_pass,
                    dict(inner.config)) == (2, (), (), {})
            assert inner.get_config("testing.immutable_module") is False
            Sequential([a, y])(mod)  # opt_level 2 gates A out; Y is not disabled here
        a(mod)
    assert log == ["o.enter",
                   "o.should_run(A)", "o.before(A)", "A:body", "o.after(A)",
                   "n.enter",
                   "n.should_run(sequential)", "n.before(sequential)",
                   "n.should_run(Y)", "n.before(Y)", "Y:body", "n.after(Y)",
                   "n.after(sequential)",
                   "n.exit",
                   "o.should_run(A)", "o.before(A)", "A:body", "o.after(A)",
                   "o.exit"]


def test_rule5_context_built_but_never_entered_has_no_effect(mod):
    log = []
    a = logged_pass("A", log, opt_level=3)
    built = PassContext(opt_level=3, disabled_pass=["B"],
                        instruments=[instrument("i1", log)])
    Sequential([a, logged_pass("B", log)])(mod)  # default opt_level 2: A gated out
    a(mod)
    assert PassContext.current() is not built
    assert log == ["B:body", "A:body"]


def test_rule6_reentering_a_context_calls_enter_and_exit_again(mod):
    log = []
    a = logged_pass("A", log)
    ctx = PassContext(instruments=[instrument("i1", log)])
    with ctx:
        with ctx:
            a(mod)
        assert PassContext.current() is ctx
        a(mod)
    assert log == ["i1.enter", "i1.enter",
                   "i1.should_run(A)", "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.exit",
                   "i1.should_run(A)", "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.exit"]


def test_rule6_instrument_listed_twice_gets_every_callback_twice(mod):
    log = []
    i1 = instrument("i1", log)
    with PassContext(instruments=[i1, i1]) as ctx:
        logged_pass("A", log)(mod)
    assert ctx.instruments == (i1, i1)
    assert log == ["i1.enter", "i1.enter",
                   "i1.should_run(A)", "i1.should_run(A)", "i1.before(A)", "i1.before(A)",
                   "A:body", "i1.after(A)", "i1.after(A)",
                   "i1.exit", "i1.exit"]


def test_rule7_missing_callbacks_are_not_called_missing_should_run_is_true(mod):
    log = []
    instruments = [instrument("after_only", log, callbacks=["run_after_pass"]),
                   instrument("should_run_only", log, callbacks=["should_run"]),
                   instrument("ctx_only", log, callbacks=["enter_pass_ctx", "exit_pass_ctx"]),
                   instrument("before_only", log, callbacks=["run_before_pass"]),
                   type("nothing", (PassInstrument,), {})()]
    with PassContext(instruments=instruments):
        logged_pass("A", log)(mod)
    assert log == ["ctx_only.enter", "should_run_only.should_run(A)", "before_only.before(A)",
                   "A:body", "after_only.after(A)", "ctx_only.exit"]


def test_rule7_without_should_run_a_pass_always_runs(mod):
    log = []
    with PassContext(instruments=[instrument("i1", log, callbacks=["run_before_pass"])]):
        logged_pass("A", log)(mod)
    assert log == ["i1.before(A)", "A:body"]


def test_rule7_pass_call_takes_only_the_module(mod):
    a = logged_pass("A", [])
    with pytest.raises(TypeError):
        a(mod, PassContext.current())


# -- B. should_run -------------------------------------------------------------------------

def test_rule8_one_false_skips_for_everyone_without_short_circuit(mod):
    log = []
    instruments = [instrument("i1", log),
                   instrument("i2", log, answer=lambda info: info.name != "A"),
                   instrument("i3", log)]
    a, b = logged_pass("A", log), logged_pass("B", log)
    with PassContext(instruments=instruments):
        out_a = a(mod)
        out_b = b(mod)
    assert out_a is mod  # the input module object itself
    assert out_b is not mod
    assert log == ["i1.enter", "i2.enter", "i3.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i3.should_run(A)",
                   "i1.should_run(B)", "i2.should_run(B)", "i3.should_run(B)",
                   "i1.before(B)", "i2.before(B)", "i3.before(B)", "B:body",
                   "i1.after(B)", "i2.after(B)", "i3.after(B)",
                   "i1.exit", "i2.exit", "i3.exit"]


def test_a_pass_that_always_runs_runs_whatever_should_run_says(mod):
    log = []
    instruments = [instrument("i1", log, answer=False), instrument("i2", log, answer=False)]
    step = mark_always_run(logged_pass("Step", log))
    with PassContext(instruments=instruments), pytest.warns(
            VetoOverruledWarning, match=r"instrument 'i1', 'i2' vetoed Step, which always "
                                        r"runs .*; it runs anyway"):
        out = step(mod)
    assert out is not mod
    assert log == ["i1.enter", "i2.enter", "i1.should_run(Step)", "i2.should_run(Step)",
                   "i1.before(Step)", "i2.before(Step)", "Step:body",
                   "i1.after(Step)", "i2.after(Step)", "i1.exit", "i2.exit"]


def test_rule9_skipping_a_sequential_skips_its_children_unasked(mod):
    log = []
    seq = Sequential([logged_pass("A", log), logged_pass("B", log)])
    skipper = instrument("i1", log, answer=lambda info: info.name != "sequential")
    with PassContext(instruments=[skipper, instrument("i2", log)]):
        out = seq(mod)
    assert out is mod
    assert log == ["i1.enter", "i2.enter",
                   "i1.should_run(sequential)", "i2.should_run(sequential)",
                   "i1.exit", "i2.exit"]


def test_rule9_skipping_a_child_skips_only_that_child(mod):
    log = []
    seq = Sequential([logged_pass("A", log), logged_pass("B", log), logged_pass("C", log)])
    with PassContext(instruments=[instrument("i1", log, answer=lambda i: i.name != "B")]):
        seq(mod)
    assert log == ["i1.enter",
                   "i1.should_run(sequential)", "i1.before(sequential)",
                   "i1.should_run(A)", "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.should_run(B)",
                   "i1.should_run(C)", "i1.before(C)", "C:body", "i1.after(C)",
                   "i1.after(sequential)",
                   "i1.exit"]


def test_rule10_required_pass_bypasses_should_run_but_not_before_after(mod):
    log = []
    a, b = logged_pass("A", log), logged_pass("B", log)
    # should_run says no to everything but the Sequential: A runs anyway, B does not
    i1 = instrument("i1", log, answer=lambda info: info.name == "sequential")
    with PassContext(required_pass=["A"], instruments=[i1]):
        a(mod)
        b(mod)
        Sequential([a, b])(mod)
    assert log == ["i1.enter",
                   "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.should_run(B)",
                   "i1.should_run(sequential)", "i1.before(sequential)",
                   "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.should_run(B)",
                   "i1.after(sequential)",
                   "i1.exit"]


@pytest.mark.parametrize("answer", [None, "yes", "", [], [True], 2, 1.0],
                         ids=["None", "str", "empty-str", "empty-list", "list", "2", "float"])
def test_rule11_should_run_must_return_a_bool(mod, answer):
    log = []
    instruments = [instrument("i1", log), instrument("Picky", log, answer=answer),
                   instrument("i3", log)]
    with pytest.raises(TypeError) as info, PassContext(instruments=instruments):
        logged_pass("FoldConstant", log)(mod)
    message = str(info.value)
    assert message.startswith("Picky.should_run must return a bool for pass FoldConstant, "
                              f"returned {type(answer).__name__}")
    assert log == ["i1.enter", "Picky.enter", "i3.enter",
                   "i1.should_run(FoldConstant)", "Picky.should_run(FoldConstant)",
                   "i1.exit", "Picky.exit", "i3.exit"]


@pytest.mark.parametrize(("answer", "runs"), [(True, True), (False, False), (1, True),
                                              (0, False)])
def test_rule11_bools_and_0_1_are_accepted(mod, answer, runs):
    log = []
    with PassContext(instruments=[instrument("i1", log, callbacks=["should_run"],
                                             answer=answer)]):
        out = logged_pass("A", log)(mod)
    assert (out is not mod) is runs
    assert log == ["i1.should_run(A)", "A:body"] if runs else ["i1.should_run(A)"]


def test_rule12_skipped_passes_reach_no_before_after_observer(mod):
    # A timer, printer or dumper only sees run_before_pass/run_after_pass: even listed
    # before the instrument that says no, it never hears of the skipped pass.
    log = []
    timer = instrument("timer", log, callbacks=["run_before_pass", "run_after_pass"])
    skipper = instrument("skip", log, callbacks=["should_run"],
                         answer=lambda info: info.name != "A")
    seq = Sequential([logged_pass("A", log), logged_pass("B", log)])
    with PassContext(instruments=[timer, skipper]):
        seq(mod)
    assert log == ["skip.should_run(sequential)", "timer.before(sequential)",
                   "skip.should_run(A)",
                   "skip.should_run(B)", "timer.before(B)", "B:body", "timer.after(B)",
                   "timer.after(sequential)"]


# -- instrument styles and validation ------------------------------------------------------

def test_pluggy_style_instrument_with_a_subset_of_arguments(mod):
    log = []

    class Recorder:
        @hookimpl
        def passhost_enter_pass_ctx(self):
            log.append("rec.enter")

        @hookimpl
        def passhost_should_run(self, info):
            log.append(f"rec.should_run({info.name})")
            return True

        @hookimpl
        def passhost_run_before_pass(self, mod):
            log.append(f"rec.before(mod={type(mod).__name__})")

        @hookimpl
        def passhost_run_after_pass(self, info):
            log.append(f"rec.after({info.name})")

        @hookimpl
        def passhost_run_after_pass_failed(self, error, info):
            log.append(f"rec.failed({info.name}:{error})")

    with PassContext(instruments=[instrument("i1", log), Recorder()]):
        logged_pass("A", log)(mod)
        with pytest.raises(Boom):
            logged_pass("B", log, raises=Boom("b"))(mod)
    assert log == ["i1.enter", "rec.enter",
                   "i1.should_run(A)", "rec.should_run(A)",
                   "i1.before(A)", "rec.before(mod=IRModule)",
                   "A:body", "i1.after(A)", "rec.after(A)",
                   "i1.should_run(B)", "rec.should_run(B)",
                   "i1.before(B)", "rec.before(mod=IRModule)", "B:body", "rec.failed(B:b)",
                   "i1.exit"]


def test_pluggy_style_module_level_functions_as_an_instrument(mod):
    log = []

    class Namespace:  # the hooks as static functions: no self argument
        @staticmethod
        @hookimpl
        def passhost_run_after_pass(mod, info):
            log.append(f"ns.after({info.name})")

    with PassContext(instruments=[Namespace()]):
        logged_pass("A", log)(mod)
    assert log == ["A:body", "ns.after(A)"]


def test_decorated_instrument_keeps_name_and_constructor(mod):
    log = []

    @pass_instrument
    class Counter:
        """Counts passes."""

        def __init__(self, start, *, step=1):
            self.count = start
            self.step = step

        def run_after_pass(self, m, info):
            self.count += self.step
            log.append(f"count={self.count}")

    counter = Counter(10, step=5)
    assert isinstance(counter, PassInstrument)
    assert type(counter).__name__ == "Counter"
    assert counter.name == "Counter"
    assert Counter.__doc__ == "Counts passes."
    assert pass_instrument(Counter) is Counter
    assert pass_instrument()(Counter) is Counter
    with PassContext(instruments=[counter]):
        logged_pass("A", log)(mod)
    assert log == ["A:body", "count=15"]


def test_tvm_style_arguments_are_positional_with_any_names(mod):
    log = []

    @pass_instrument
    class Renamed:
        def should_run(self, module, pass_info):
            log.append(f"should_run({pass_info.name})")
            return True

        def run_after_pass_failed(self, m, i, e):
            log.append(f"failed({i.name}:{e})")

    with PassContext(instruments=[Renamed()]), pytest.raises(Boom):
        logged_pass("A", log, raises=Boom("x"))(mod)
    assert log == ["should_run(A)", "A:body", "failed(A:x)"]


def test_pass_instrument_is_a_real_pluggy_plugin(mod):
    calls = []

    class Gate(PassInstrument):
        def should_run(self, m, info):
            calls.append((m is mod, info))
            return False

    pm = pluggy.PluginManager("passhost")
    pm.add_hookspecs(InstrumentHooks)
    gate = Gate()
    pm.register(gate)
    assert sorted(c.name for c in pm.get_hookcallers(gate)) == ["passhost_should_run"]
    info = PassInfo(1, "A")
    assert pm.hook.passhost_should_run(mod=mod, info=info) == [False]
    assert calls == [(True, info)]


@pytest.mark.parametrize(("make", "message"), [
    (lambda: PassInstrument, "instrument PassInstrument: pass an instance "
                             "(PassInstrument()), not the class"),
    (lambda: type("Plain", (), {"run_before_pass": lambda self, m, i: None})(),
     "Plain is not a pass instrument: decorate its class with @pass_instrument or "
     "subclass PassInstrument"),
    (lambda: object(), "object is not a pass instrument: it defines no instrument callback"),
])
def test_invalid_instruments_are_explained(make, message):
    with pytest.raises(InstrumentError) as info:
        PassContext(instruments=[make()])
    assert str(info.value) == message


def test_pluggy_style_argument_not_in_the_spec():
    class Typo:
        @hookimpl
        def passhost_run_before_pass(self, module, info):
            pass

    with pytest.raises(InstrumentError, match=r"(?s)^instrument Typo: .*\{'module'\} are "
                                              r"declared in the hookimpl"):
        PassContext(instruments=[Typo()])


def test_passhost_hookimpl_that_is_not_an_instrument_callback():
    class Registrar:
        @hookimpl
        def passhost_register_passes(self):
            return []

    with pytest.raises(InstrumentError, match=r"^instrument Registrar: "
                                              r"passhost_register_passes is not an instrument "
                                              r"callback; known: passhost_enter_pass_ctx, "):
        PassContext(instruments=[Registrar()])


@pytest.mark.parametrize("option", ["tryfirst", "trylast", "wrapper", "hookwrapper"])
def test_ordering_options_are_rejected(option):
    if option in ("wrapper", "hookwrapper"):
        def hook(self, mod, info):
            yield
    else:
        def hook(self, mod, info):
            pass
    cls = type("Ordered", (), {"passhost_run_before_pass": hookimpl(**{option: True})(hook)})
    with pytest.raises(InstrumentError) as info:
        PassContext(instruments=[cls()])
    assert str(info.value) == (
        f"instrument Ordered: passhost_run_before_pass uses {option}; instruments are called "
        f"in the order of the PassContext's list, so ordering options do not apply")


def test_tvm_style_callback_with_wrong_arity():
    @pass_instrument
    class Short:
        def run_after_pass(self, m):
            pass

    with pytest.raises(InstrumentError, match=r"^instrument Short: run_after_pass\(m\) cannot "
                                              r"take the arguments \(mod, info\)$"):
        PassContext(instruments=[Short()])


def test_invalid_instrument_in_override_changes_nothing():
    log = []
    ctx = PassContext(instruments=[instrument("i1", log)])
    with pytest.raises(InstrumentError):
        ctx.override_instruments([instrument("n1", log), object()])
    assert log == []
    assert [type(i).__name__ for i in ctx.instruments] == ["i1"]


# -- performance and documentation ---------------------------------------------------------

def test_callbacks_are_bound_once_per_context_not_per_pass(mod, monkeypatch):
    log = []
    ctx = PassContext(instruments=[instrument("i1", log, callbacks=["run_after_pass"])])

    def no_binding(inst):
        raise AssertionError("instrument bound again while passes run")

    monkeypatch.setattr(dispatch, "_bind", no_binding)
    with ctx:
        Sequential([logged_pass("A", log), logged_pass("B", log)])(mod)
    assert log == ["A:body", "i1.after(A)", "B:body", "i1.after(B)", "i1.after(sequential)"]


DOC = Path(__file__).resolve().parent.parent / "docs" / "instruments.md"
_BLOCK = re.compile(r"```python\n(?P<code>.*?)```(?:\s*```text\n(?P<out>.*?)```)?", re.DOTALL)


def test_instruments_doc_examples():
    """Every Python block of docs/instruments.md runs, in order, in one namespace; its
    output is the ``text`` block after it (no output when there is none)."""
    blocks = list(_BLOCK.finditer(DOC.read_text()))
    assert len(blocks) >= 8
    namespace = {"__name__": "instruments_doc"}
    for number, block in enumerate(blocks, 1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block["code"], f"{DOC.name} block {number}", "exec"), namespace)
        assert out.getvalue() == (block["out"] or ""), f"block {number}"
    assert PassContext.current().instruments == ()
