"""PassContext, gating and dependencies (rules 23-32 of docs/spec/pass-instruments.md),
and the pass kinds: module, function and PrimFunc passes and their class decorators.

Event sequences use the notation of tests/passlog.py.
"""

from __future__ import annotations

import threading

import pytest

import passhost.relay as relay
from passhost import tir
from passhost.errors import (
    ContextOrderError,
    ModuleMutatedError,
    OptionError,
    UnknownNameError,
)
from passhost.ir.module import IRModule
from passhost.plugins import OptionSpec, hookimpl
from passhost.relay.transform import FunctionPass, function_pass
from passhost.tir.transform import PrimFuncPass, prim_func_pass
from passhost.transform import (
    ModulePass,
    PassContext,
    PassInfo,
    Sequential,
    module_pass,
    pass_spec,
)
from passlog import Boom, instrument, logged_pass

pytestmark = pytest.mark.usefixtures("clean_contexts")


# -- D. contexts ---------------------------------------------------------------------------

def test_rule23_default_context_is_one_object_per_thread():
    default = PassContext.current()
    assert PassContext.current() is default
    assert (default.opt_level, default.instruments) == (2, ())
    seen = {}
    entered = threading.Event()
    release = threading.Event()

    def worker():
        own = PassContext.current()
        seen["own"] = own
        seen["stable"] = PassContext.current() is own
        with PassContext(opt_level=3) as ctx:
            seen["inner"] = PassContext.current() is ctx
            entered.set()
            release.wait(5)
        seen["after"] = PassContext.current() is own

    with PassContext(opt_level=1) as mine:
        thread = threading.Thread(target=worker)
        thread.start()
        assert entered.wait(5)
        # the other thread has a context entered: this thread does not see it
        assert PassContext.current() is mine
        release.set()
        thread.join(5)
    assert PassContext.current() is default
    assert seen["own"] is not default and seen["own"] is not mine
    assert (seen["own"].opt_level, seen["own"].instruments) == (2, ())
    assert seen["stable"] and seen["inner"] and seen["after"]


def test_rule23_instruments_of_one_thread_do_not_fire_in_another(mod):
    log = []
    ctx = PassContext.current()
    ctx.override_instruments([instrument("i1", log)])
    try:
        thread = threading.Thread(target=lambda: logged_pass("T", log)(mod))
        thread.start()
        thread.join(5)
        logged_pass("M", log)(mod)
    finally:
        ctx.override_instruments([])
    assert log == ["i1.enter", "T:body",
                   "i1.should_run(M)", "i1.before(M)", "M:body", "i1.after(M)", "i1.exit"]


def test_rule24_defaults():
    ctx = PassContext()
    assert (ctx.opt_level, ctx.required_pass, ctx.disabled_pass, ctx.instruments,
            dict(ctx.config)) == (2, (), (), (), {})
    assert repr(ctx) == ("PassContext(opt_level=2, required_pass=[], disabled_pass=[], "
                         "instruments=[], config={})")


@pytest.mark.parametrize("field", ["opt_level", "required_pass", "disabled_pass",
                                   "instruments", "config"])
def test_rule24_fields_are_read_only(field):
    ctx = PassContext(opt_level=1, required_pass=["A"])
    before = getattr(ctx, field)
    with pytest.raises(AttributeError):
        setattr(ctx, field, before)
    assert getattr(ctx, field) is before


def test_rule24_config_and_lists_cannot_be_changed_in_place():
    ctx = PassContext(required_pass=["A"], config={"testing.immutable_module": True})
    with pytest.raises(TypeError):
        ctx.config["testing.immutable_module"] = False
    with pytest.raises(AttributeError):
        ctx.required_pass.append("B")
    assert ctx.config["testing.immutable_module"] is True


@pytest.mark.parametrize("level", [-1, True, 2.0, "2", None])
def test_rule24_opt_level_must_be_an_int(level):
    with pytest.raises(TypeError, match="opt_level is an int >= 0"):
        PassContext(opt_level=level)


def test_rule25_override_on_the_default_context_and_shadowing(mod):
    log = []
    a = logged_pass("A", log)
    ctx = PassContext.current()
    try:
        ctx.override_instruments([instrument("g", log)])
        assert log == ["g.enter"]  # entered at once
        a(mod)
        with PassContext(instruments=[instrument("h", log)]):
            a(mod)
        a(mod)  # the global instrument resumes
    finally:
        ctx.override_instruments([])
    assert log == ["g.enter",
                   "g.should_run(A)", "g.before(A)", "A:body", "g.after(A)",
                   "h.enter", "h.should_run(A)", "h.before(A)", "A:body", "h.after(A)",
                   "h.exit",
                   "g.should_run(A)", "g.before(A)", "A:body", "g.after(A)",
                   "g.exit"]


def test_rule26_override_inside_a_with(mod):
    log = []
    a = logged_pass("A", log)
    with PassContext(instruments=[instrument("i1", log), instrument("i2", log)]) as ctx:
        a(mod)
        ctx.override_instruments([instrument("n1", log), instrument("n2", log)])
        a(mod)
    assert log == ["i1.enter", "i2.enter",
                   "i1.should_run(A)", "i2.should_run(A)", "i1.before(A)", "i2.before(A)",
                   "A:body", "i1.after(A)", "i2.after(A)",
                   "i1.exit", "i2.exit", "n1.enter", "n2.enter",
                   "n1.should_run(A)", "n2.should_run(A)", "n1.before(A)", "n2.before(A)",
                   "A:body", "n1.after(A)", "n2.after(A)",
                   "n1.exit", "n2.exit"]


def test_rule26_override_on_a_context_never_entered(mod):
    log = []
    ctx = PassContext(instruments=[instrument("old", log)])
    ctx.override_instruments([instrument("n1", log)])
    logged_pass("A", log)(mod)  # not current: no effect
    with ctx:
        logged_pass("B", log)(mod)
    ctx.override_instruments([])
    assert log == ["old.exit", "n1.enter",
                   "A:body",
                   "n1.enter", "n1.should_run(B)", "n1.before(B)", "B:body", "n1.after(B)",
                   "n1.exit",
                   "n1.exit"]


def test_rule26_override_with_none_is_a_type_error():
    log = []
    ctx = PassContext(instruments=[instrument("i1", log)])
    with pytest.raises(TypeError, match="override_instruments takes a list of instruments"):
        ctx.override_instruments(None)
    assert log == []
    assert len(ctx.instruments) == 1


# -- E. gating and dependencies ------------------------------------------------------------

def test_rule27_direct_calls_are_never_gated(mod):
    log = []
    ctx = PassContext(opt_level=0, disabled_pass=["A", "S"],
                      instruments=[instrument("i1", log)])
    with ctx:
        logged_pass("A", log, opt_level=3)(mod)
        Sequential([logged_pass("B", log)], opt_level=3, name="S")(mod)
    assert log == ["i1.enter",
                   "i1.should_run(A)", "i1.before(A)", "A:body", "i1.after(A)",
                   "i1.should_run(S)", "i1.before(S)",
                   "i1.should_run(B)", "i1.before(B)", "B:body", "i1.after(B)",
                   "i1.after(S)",
                   "i1.exit"]


_ASKED_AND_RUN = ["i1.should_run(P)", "i1.before(P)", "P:body", "i1.after(P)"]
_RUN_REQUIRED = ["i1.before(P)", "P:body", "i1.after(P)"]


@pytest.mark.parametrize(("opt_level", "required", "disabled", "pass_level", "child_events"), [
    (2, [], [], 2, _ASKED_AND_RUN),          # ctx.opt_level >= child.opt_level
    (2, [], [], 3, []),                      # opt_level too low: invisible
    (3, [], [], 3, _ASKED_AND_RUN),
    (0, [], [], 0, _ASKED_AND_RUN),
    (0, ["P"], [], 4, _RUN_REQUIRED),        # required beats opt_level, skips should_run
    (4, [], ["P"], 0, []),                   # disabled
    (4, ["P"], ["P"], 0, []),                # disabled beats required
    (2, ["Q"], ["R"], 2, _ASKED_AND_RUN),    # other names do not matter
    (2, ["PP"], ["p"], 3, []),               # names are matched exactly
], ids=["equal", "too-high", "equal-3", "zero", "required", "disabled",
        "disabled-beats-required", "other-names", "exact-names"])
def test_rule28_sequential_gates_each_child(mod, opt_level, required, disabled, pass_level,
                                            child_events):
    log = []
    ctx = PassContext(opt_level=opt_level, required_pass=required, disabled_pass=disabled,
                      instruments=[instrument("i1", log, callbacks=[
                          "should_run", "run_before_pass", "run_after_pass"])])
    with ctx:
        Sequential([logged_pass("P", log, opt_level=pass_level)])(mod)
    assert log == ["i1.should_run(sequential)", "i1.before(sequential)", *child_events,
                   "i1.after(sequential)"]


def test_rule28_gated_out_sequential_child_hides_its_children(mod):
    log = []
    inner = Sequential([logged_pass("A", log)], opt_level=3, name="inner")
    with PassContext(instruments=[instrument("i1", log, callbacks=["should_run"])]):
        Sequential([inner, logged_pass("B", log)], name="outer")(mod)
    assert log == ["i1.should_run(outer)", "i1.should_run(B)", "B:body"]


@pytest.fixture
def dependency_log(plugin_host):
    """Registers the passes ``Dep`` (opt_level 4) and ``Dep2`` in a test plugin; their
    bodies log to the returned list. Each lookup creates a new pass object."""
    log = []

    @module_pass(opt_level=4, name="Dep")
    class Dep:
        def transform_module(self, m, ctx):
            log.append("Dep:body")
            return m.copy()

    class Plugin:
        @hookimpl
        def passhost_register_passes(self):
            return [pass_spec(Dep, "a test dependency"),
                    pass_spec(logged_pass("Dep2", log), "another one")]

    plugin_host.register(Plugin(), "dependencies-test")
    return log


def test_rule29_dependencies_run_before_each_enabled_child(mod, dependency_log):
    log = dependency_log
    c = logged_pass("C", log, required=["Dep"])
    d = logged_pass("D", log, required=["Dep2", "Dep"])
    gated = logged_pass("G", log, opt_level=3, required=["Dep"])
    # Dep is disabled and above the opt_level: dependencies are not gated
    ctx = PassContext(disabled_pass=["Dep"], instruments=[instrument("i1", log, callbacks=[
        "should_run", "run_before_pass", "run_after_pass"])])
    with ctx:
        Sequential([c, gated, d, c])(mod)
    assert log == ["i1.should_run(sequential)", "i1.before(sequential)",
                   "i1.should_run(Dep)", "i1.before(Dep)", "Dep:body", "i1.after(Dep)",
                   "i1.should_run(C)", "i1.before(C)", "C:body", "i1.after(C)",
                   "i1.should_run(Dep2)", "i1.before(Dep2)", "Dep2:body", "i1.after(Dep2)",
                   "i1.should_run(Dep)", "i1.before(Dep)", "Dep:body", "i1.after(Dep)",
                   "i1.should_run(D)", "i1.before(D)", "D:body", "i1.after(D)",
                   "i1.should_run(Dep)", "i1.before(Dep)", "Dep:body", "i1.after(Dep)",
                   "i1.should_run(C)", "i1.before(C)", "C:body", "i1.after(C)",
                   "i1.after(sequential)"]


def test_rule29_dependencies_only_inside_a_sequential(mod, dependency_log):
    log = dependency_log
    c = logged_pass("C", log, required=["Dep"])
    seq = Sequential([logged_pass("B", log)], required=["Dep"])
    c(mod)  # called directly: no dependency
    seq(mod)  # a Sequential's own dependencies run only when it is a child
    Sequential([seq])(mod)
    assert log == ["C:body", "B:body", "Dep:body", "B:body"]


def test_rule29_a_skipped_dependency_does_not_skip_the_child(mod, dependency_log):
    log = dependency_log
    c = logged_pass("C", log, required=["Dep"])
    no_dep = instrument("i1", log, callbacks=["should_run"],
                        answer=lambda info: info.name != "Dep")
    with PassContext(instruments=[no_dep]):
        Sequential([c])(mod)
    assert log == ["i1.should_run(sequential)", "i1.should_run(Dep)", "i1.should_run(C)",
                   "C:body"]


def test_rule29_unknown_dependency_lists_close_matches(mod, plugin_host):
    @module_pass(name="TestOnlyDependency")
    class Dependency:
        def transform_module(self, m, ctx):
            return m

    class Plugin:
        @hookimpl
        def passhost_register_passes(self):
            return [pass_spec(Dependency)]

    plugin_host.register(Plugin(), "typo-test")
    log = []
    child = logged_pass("C", log, required=["TestOnlyDependancy"])
    with pytest.raises(UnknownNameError) as info:
        Sequential([child], name="S")(mod)
    assert str(info.value) == ("unknown pass 'TestOnlyDependancy'; did you mean "
                               "'TestOnlyDependency'?")
    assert info.value.candidates == ["TestOnlyDependency"]
    assert log == []


def test_rule30_a_single_string_is_one_name(mod):
    log = []
    ctx = PassContext(required_pass="AB", disabled_pass="BC")
    assert (ctx.required_pass, ctx.disabled_pass) == (("AB",), ("BC",))
    assert PassInfo(0, "X", required="AB").required == ("AB",)
    passes = [logged_pass(n, log, opt_level=3) for n in ("A", "B", "C", "AB", "BC")]
    with ctx:
        Sequential(passes)(mod)
    assert log == ["AB:body"]


@pytest.mark.parametrize("names", [[1], ["A", None], [b"A"]])
def test_rule30_pass_names_must_be_strings(names):
    with pytest.raises(TypeError, match="a pass name is a str"):
        PassContext(disabled_pass=names)


def test_rule31_unknown_config_key_lists_candidates():
    with pytest.raises(UnknownNameError) as info:
        PassContext(config={"testing.immutable_modul": True})
    assert str(info.value) == ("unknown config option 'testing.immutable_modul'; did you "
                               "mean 'testing.immutable_module'?")


def test_rule31_wrong_config_type_names_the_expected_type():
    with pytest.raises(OptionError) as info:
        PassContext(config={"testing.immutable_module": "yes"})
    assert str(info.value) == ("config option 'testing.immutable_module' expects bool, "
                               "found str 'yes'")


def test_rule31_list_configs_and_plugin_options(plugin_host):
    class Plugin:
        @hookimpl
        def passhost_register_config_options(self):
            return [OptionSpec("test.unroll", int, 4, "how far to unroll")]

    plugin_host.register(Plugin(), "config-test")
    configs = PassContext.list_configs()
    spec = configs["testing.immutable_module"]
    assert (spec.type.name, spec.default, spec.summary) == (
        "bool", False, "check that every pass leaves its input module unchanged")
    spec = configs["test.unroll"]
    assert (spec.name, spec.type.name, spec.default, spec.summary) == (
        "test.unroll", "int", 4, "how far to unroll")
    ctx = PassContext(config={"test.unroll": 8})
    assert ctx.get_config("test.unroll") == 8
    assert PassContext().get_config("test.unroll") == 4
    assert PassContext().get_config("test.nothing", "fallback") == "fallback"
    with pytest.raises(OptionError, match=r"'test\.unroll' expects int, found float 2\.5"):
        PassContext(config={"test.unroll": 2.5})


def _replace_main(m, ctx):
    f = m["main"]
    m["main"] = relay.Function(f.params, relay.nn.relu(f.body))  # in place: forbidden
    return m


def test_rule32_immutable_module_catches_in_place_changes(mod):
    mutate = module_pass(_replace_main, name="MutateInPlace")
    good = module_pass(lambda m, ctx: m.with_function("main", _replace_main(m.copy(), ctx)
                                                      ["main"]), name="Good")
    with PassContext(config={"testing.immutable_module": True}):
        out = Sequential([good, good])(mod)
        assert str(out["main"].body).count("relu") == 3
        with pytest.raises(ModuleMutatedError) as info:
            Sequential([good, mutate])(mod)
    assert str(info.value) == ("pass MutateInPlace changed its input module in place "
                               "(config testing.immutable_module); build a new module "
                               "instead")


def test_rule32_off_by_default(mod):
    mutate = module_pass(_replace_main, name="MutateInPlace")
    assert mutate(mod) is mod


# -- pass kinds ----------------------------------------------------------------------------

def _module_with_functions():
    x = relay.var("x", shape=(1, 4), dtype="float32")
    f = relay.Function([x], relay.nn.relu(x))
    y = relay.var("y", shape=(2,), dtype="float32")
    g = relay.Function([y], relay.negative(y))
    prim = tir.PrimFunc([], {}, tir.Evaluate(0))
    return IRModule({"main": f, "helper": g,
                     "external": f.with_attr("Compiler", "ccompiler"),
                     "skipped": g.with_attr("SkipOptimization", True),
                     "fused": g.with_attr("Primitive", 1),
                     "kernel": prim, "kernel2": prim.with_attr("global_symbol", "k2")})


def test_function_pass_visits_the_graph_functions_the_graph_passes_rewrite():
    m = _module_with_functions()
    names = {id(f): name for name, f in m.items()}
    visited = []
    log = []

    @function_pass(opt_level=1, name="Visit")
    def visit(func, module, ctx):
        visited.append(names[id(func)])
        assert module is m
        return func

    assert isinstance(visit, FunctionPass)
    with PassContext(instruments=[instrument("i1", log)]):
        out = visit(m)
    assert out is m  # nothing changed: the same module object
    assert visited == ["main", "helper"]
    assert log == ["i1.enter", "i1.should_run(Visit)", "i1.before(Visit)",
                   "i1.after(Visit)", "i1.exit"]  # once per pass, not per function


def test_function_pass_rewrites_into_a_new_module():
    m = _module_with_functions()

    @function_pass(name="Wrap")
    def wrap(func, module, ctx):
        return relay.Function(func.params, relay.nn.relu(func.body), attrs=func.attrs)

    out = wrap(m)
    assert out is not m
    assert list(out) == list(m)
    assert [name for name in m if out[name] is not m[name]] == ["main", "helper"]
    assert str(out["main"].body).count("relu") == 2


def test_function_pass_must_return_a_function():
    @function_pass(name="Broken")
    def broken(func, module, ctx):
        return None

    with pytest.raises(TypeError) as info:
        broken(_module_with_functions())
    assert str(info.value) == "pass Broken returned NoneType for @main, expected Function"
    assert info.value.__notes__ == ["while running pass Broken"]


def test_prim_func_pass_visits_each_prim_func_once_per_pass():
    m = _module_with_functions()
    visited = []
    log = []

    @prim_func_pass(opt_level=0)
    def tag(func, module, ctx):
        visited.append(func.attrs.get("global_symbol"))
        return func.with_attr("tagged", True) if "global_symbol" in func.attrs else func

    assert isinstance(tag, PrimFuncPass)
    assert tag.info == PassInfo(0, "tag")
    with PassContext(instruments=[instrument("i1", log, callbacks=["run_after_pass"])]):
        out = tag(m)
    assert visited == [None, "k2"]
    assert [name for name in m if out[name] is not m[name]] == ["kernel2"]
    assert out["kernel2"].attrs["tagged"] is True
    assert log == ["i1.after(tag)"]


def test_prim_func_pass_unchanged_module_is_returned_as_is():
    m = _module_with_functions()
    assert prim_func_pass(lambda f, module, ctx: f, name="Same")(m) is m


def test_module_pass_class_decorator_forwards_constructor_and_attributes(mod):
    @module_pass(opt_level=2, required=["InferType"])
    class Scale:
        """Scales nothing, remembers everything."""

        def __init__(self, factor, *, tag="t"):
            self.factor = factor
            self.tag = tag
            self.calls = 0

        def helper(self):
            return f"{self.tag}x{self.factor}"

        def transform_module(self, m, ctx):
            self.calls += 1
            return m.copy()

    assert Scale.pass_info == PassInfo(2, "Scale", required=["InferType"])
    assert Scale.__name__ == "Scale" and Scale.__doc__ == "Scales nothing, remembers everything."
    p = Scale(3, tag="k")
    assert isinstance(p, ModulePass)
    assert p.info is Scale.pass_info
    assert (p.factor, p.tag, p.helper()) == (3, "k", "kx3")
    assert p(mod) is not mod
    assert p.calls == 1
    with pytest.raises(AttributeError):
        p.missing  # noqa: B018
    assert repr(p) == "<Scale Scale>"


def test_function_pass_class_decorator(mod):
    @function_pass(name="Negate")
    class NegateAll:
        def __init__(self, times):
            self.times = times

        def transform_function(self, func, module, ctx):
            body = func.body
            for _ in range(self.times):
                body = relay.negative(body)
            return relay.Function(func.params, body)

    p = NegateAll(2)
    assert isinstance(p, FunctionPass) and p.info.name == "Negate"
    assert str(p(mod)["main"].body).count("negative") == 2


def test_class_without_the_transform_method_is_rejected():
    with pytest.raises(TypeError, match="a class used as a ModulePass defines "
                                        "transform_module"):
        @module_pass
        class NoMethod:
            pass


def test_pass_returning_a_non_module_is_a_type_error_naming_the_pass(mod):
    log = []
    bad = module_pass(lambda m, ctx: m["main"], name="ReturnsFunction")
    with pytest.raises(TypeError) as info, PassContext(instruments=[instrument("i1", log)]):
        bad(mod)
    assert str(info.value) == "pass ReturnsFunction returned Function, expected an IRModule"
    assert info.value.__notes__ == ["while running pass ReturnsFunction"]
    assert log == ["i1.enter", "i1.should_run(ReturnsFunction)", "i1.before(ReturnsFunction)",
                   "i1.exit"]


def test_calling_a_pass_on_a_non_module_is_a_type_error(mod):
    log = []
    a = logged_pass("A", log)
    for bad in (mod["main"], None, {"main": mod["main"]}):
        with pytest.raises(TypeError) as info, PassContext(instruments=[instrument("i1", log)]):
            a(bad)
        assert str(info.value) == (f"pass A takes an IRModule, found {type(bad).__name__}; "
                                   f"wrap an expression with IRModule.from_expr")
    assert log == ["i1.enter", "i1.exit"] * 3


def test_pass_info_prints_like_tvm():
    assert str(PassInfo(0, "A")) == 'PassInfo(opt_level=0, name="A", required=[], traceable=False)'
    assert repr(PassInfo(3, "B", required=["A", "C"], traceable=True)) == (
        'PassInfo(opt_level=3, name="B", required=["A", "C"], traceable=True)')
    assert module_pass(lambda m, ctx: m).info.name == "<lambda>"
    named = module_pass(opt_level=1)(_replace_main)
    assert named.info == PassInfo(1, "_replace_main")


def test_sequential_rejects_non_passes():
    with pytest.raises(TypeError, match="Sequential 'S' holds passes, found function"):
        Sequential([_replace_main], name="S")


def test_sequential_threads_the_module_through_its_children(mod):
    seen = []

    def step(name):
        def body(m, ctx):
            seen.append(m)
            return m.with_attr(name, True)
        return module_pass(body, name=name)

    out = Sequential([step("A"), step("B")])(mod)
    assert seen[0] is mod and dict(seen[1].attrs) == {"A": True}
    assert dict(out.attrs) == {"A": True, "B": True}


def test_body_error_without_instruments_still_gets_a_note(mod):
    error = Boom("x")
    with pytest.raises(Boom) as info:
        Sequential([logged_pass("A", [], raises=error)])(mod)
    assert info.value is error and error.__notes__ == ["while running pass A inside sequential"]


def test_the_outermost_pass_pauses_the_cyclic_garbage_collector(mod):
    import gc

    seen = []

    @module_pass(opt_level=0, name="Inner")
    def inner(m, ctx):
        seen.append(("Inner", gc.isenabled()))
        return m

    @module_pass(opt_level=0, name="Outer")
    def outer(m, ctx):
        seen.append(("Outer", gc.isenabled()))
        inner(m)
        raise ValueError("outer fails")

    assert gc.isenabled()
    with pytest.raises(ValueError, match="outer fails"):
        outer(mod)
    assert seen == [("Outer", False), ("Inner", False)]
    assert gc.isenabled()  # restored, also when the pass raised
    gc.disable()
    try:
        inner(mod)
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


def test_contexts_exit_in_reverse_order_or_raise():
    default = PassContext.current()
    outer, inner = PassContext(opt_level=1), PassContext(opt_level=2)
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(ContextOrderError, match=r"PassContext\(opt_level=1\) exited, but it "
                                                r"is not the innermost context"):
        outer.__exit__(None, None, None)
    assert PassContext.current() is inner  # nothing changed
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    with pytest.raises(ContextOrderError, match="no context is entered on this thread"):
        outer.__exit__(None, None, None)
    assert PassContext.current() is default


def test_a_context_never_entered_cannot_exit():
    with PassContext(opt_level=1), pytest.raises(
            ContextOrderError, match="it was not entered on this thread, or has exited"):
        PassContext(opt_level=3).__exit__(None, None, None)
