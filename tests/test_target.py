"""The target layer: target kinds, target strings, target lists, the scope, the hooks and
``passhost targets list``."""

from __future__ import annotations

import json
import math
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passhost.cli import main
from passhost.errors import (
    ConflictError,
    OptionError,
    ParseError,
    PluginError,
    UnknownNameError,
)
from passhost.ir.module import IRModule
from passhost.plugins import BOOL, FLOAT, INT, STR, STR_LIST, OptionSpec, PluginRecord, hookimpl
from passhost.relay.dataflow_pattern import is_op, wildcard
from passhost.target import (
    PHASES,
    Target,
    TargetError,
    TargetKind,
    TargetKindError,
    parse_targets,
    quote_value,
    relay_to_tir,
    tir_to_runtime,
)
from passhost.testing import check_plugin, imported_modules
from passlog import make_module

# -- the test kinds ---------------------------------------------------------------------------


def _relu_table(target=None):
    return [("cmsis-nn.relu", is_op("nn.relu")(wildcard()))]


def _ext_lower(target, mod):
    return mod.with_attr("lowered_by", f"kind {target.kind.name}")


def _ext_runtime(target, mod):
    return ("runtime of", str(target))


CPU = TargetKind(
    "cpu",
    options=(OptionSpec("num-threads", INT, 1, "worker threads"),
             OptionSpec("opt-level", INT, 2, "how hard to optimise"),
             OptionSpec("fast-math", BOOL, False, "allow reassociation"),
             OptionSpec("verify", BOOL, True, "check the generated code"),
             OptionSpec("libs", STR_LIST, ["blas"], "external libraries"),
             OptionSpec("mcpu", STR, "generic", "the processor"),
             OptionSpec("scale", FLOAT, 1, "a float option")),
    keys=("cpu", "host-cpu"), host=True, summary="a cpu-like host kind")

EXT = TargetKind(
    "cmsis-nn",
    options=(OptionSpec("mcpu", STR, "cortex-m4", "the Cortex-M core"),
             OptionSpec("mattr", STR_LIST, (), "architecture features"),
             OptionSpec("debug", BOOL, False, "emit debug calls")),
    keys=("arm", "ext"), relay_to_tir=_ext_lower, tir_to_runtime=_ext_runtime,
    pattern_table=_relu_table, phase_passes={"tir.phase1": ("PrintIR",)},
    tags={"corstone-300": {"mcpu": "cortex-m55", "mattr": "+mve"}},
    summary="an external kind")

NPU = TargetKind("npu", summary="an external kind without options")
VM = TargetKind("vm", host=True, summary="a second host kind")


class TargetPlugin:
    """Registers the four test kinds."""

    @hookimpl
    def passhost_register_targets(self):
        return [CPU, EXT, NPU, VM]


class ExtHooks:
    """Implements the target hooks for cmsis-nn targets only."""

    @hookimpl
    def passhost_relay_to_tir(self, target, mod):
        if target.kind.name != "cmsis-nn":
            return None
        return mod.with_attr("lowered_by", "plugin")

    @hookimpl
    def passhost_tir_to_runtime(self, target, mod):
        return "plugin runtime" if target.kind.name == "cmsis-nn" else None


@pytest.fixture
def kinds(register_plugin, plugin_host):
    """A fresh host with the test kinds registered."""
    register_plugin(TargetPlugin(), "test-targets")
    return plugin_host


def message(excinfo) -> str:
    return str(excinfo.value)


# -- parsing and defaults ---------------------------------------------------------------------

DEFAULTS = {"num-threads": 1, "opt-level": 2, "fast-math": False, "verify": True,
            "libs": ("blas",), "mcpu": "generic", "scale": 1.0}


def test_a_kind_alone_takes_every_default(kinds):
    target = Target("cpu")
    assert target.kind is CPU
    assert dict(target.options) == DEFAULTS
    assert list(target.options) == list(DEFAULTS)  # declaration order
    assert target.tag is None
    assert target.keys == ("cpu", "host-cpu")
    assert isinstance(target.options["scale"], float)


def test_options_are_parsed_by_type(kinds):
    target = Target('\tcpu  -num-threads=4 -fast-math -verify=off -libs=dnnl;blas '
                    '-mcpu="cortex a72, rev 3" -scale=-0.5 -opt-level=0  ')
    assert dict(target.options) == {
        "num-threads": 4, "opt-level": 0, "fast-math": True, "verify": False,
        "libs": ("dnnl", "blas"), "mcpu": "cortex a72, rev 3", "scale": -0.5}


@pytest.mark.parametrize(("text", "value"), [
    ("cpu -fast-math", True), ("cpu -fast-math=true", True), ("cpu -fast-math=1", True),
    ("cpu -fast-math=false", False), ("cpu -fast-math=no", False), ("cpu", False)])
def test_bool_flags(kinds, text, value):
    assert Target(text).options["fast-math"] is value


@pytest.mark.parametrize(("text", "libs"), [
    ("cpu -libs=a", ("a",)), ("cpu -libs=a;b;c", ("a", "b", "c")),
    ('cpu -libs="a; b ;c"', ("a", "b", "c")), ('cpu -libs=""', ())])
def test_list_option_text(kinds, text, libs):
    assert Target(text).options["libs"] == libs


def test_options_are_read_only(kinds):
    target = Target("cpu")
    with pytest.raises(TypeError):
        target.options["num-threads"] = 8
    assert target.options["num-threads"] == 1


def test_canonical_string_sorts_and_drops_defaults(kinds):
    target = Target("cpu -scale=0.5 -verify=false -num-threads=4 -fast-math -mcpu=generic")
    assert str(target) == "cpu -fast-math -num-threads=4 -scale=0.5 -verify=false"
    assert repr(target) == "Target('cpu -fast-math -num-threads=4 -scale=0.5 -verify=false')"
    assert str(Target("cpu -num-threads=1 -libs=blas")) == "cpu"
    assert str(Target('cpu -mcpu="a b" -libs=x;y')) == 'cpu -libs=x;y -mcpu="a b"'
    assert str(Target('cpu -mcpu=""')) == 'cpu -mcpu=""'


@pytest.mark.parametrize(("text", "quoted"), [
    ("abc", "abc"), ("a=b", "a=b"), ("+mve;+dsp", "+mve;+dsp"), ("", '""'),
    ("a b", '"a b"'), ("a,b", '"a,b"'), ('say "hi"', '"say \\"hi\\""'),
    ("tab\there", '"tab\\there"')])
def test_quote_value(text, quoted):
    assert quote_value(text) == quoted


def test_equality_and_hash_use_kind_name_and_options(kinds):
    assert Target("cpu -num-threads=1") == Target("cpu")
    assert hash(Target("cpu -num-threads=1")) == hash(Target("cpu"))
    assert Target("cpu -num-threads=2") != Target("cpu")
    assert len({Target("cpu"), Target("cpu -opt-level=2"), Target("cpu -fast-math")}) == 2
    assert Target("npu") != Target("vm")  # same (empty) options, different kinds
    assert Target("cpu") != "cpu"


def test_from_kind_checks_python_values(kinds):
    target = Target.from_kind("cpu", {"num-threads": 3, "libs": ["x", "y"], "scale": 2})
    assert target == Target("cpu -num-threads=3 -libs=x;y -scale=2.0")
    assert Target.from_kind(CPU) == Target("cpu")
    with pytest.raises(OptionError) as excinfo:
        Target.from_kind("cpu", {"num-threads": "3"})
    assert message(excinfo) == ("option of target kind 'cpu': 'num-threads' expects int, "
                                "found str '3'")
    with pytest.raises(UnknownNameError, match="unknown option 'threads' of target kind"):
        Target.from_kind("cpu", {"threads": 3})
    with pytest.raises(TypeError, match="takes a kind name or a TargetKind, found int 3"):
        Target.from_kind(3)


# -- the canonical string round trip (property) -------------------------------------------------

_LIST_ITEM = st.text(st.characters(blacklist_characters=";", blacklist_categories=("Cs",)),
                     min_size=1, max_size=6).filter(lambda s: s.strip() == s and s != "")
_CPU_OPTIONS = st.fixed_dictionaries({}, optional={
    "num-threads": st.integers(-2**40, 2**40),
    "opt-level": st.integers(0, 3),
    "fast-math": st.booleans(),
    "verify": st.booleans(),
    "libs": st.lists(_LIST_ITEM, max_size=3).map(tuple),
    "mcpu": st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
    "scale": st.floats(allow_nan=False),
})


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=_CPU_OPTIONS, mcpu=st.text(max_size=6))
def test_canonical_string_round_trips(kinds, options, mcpu):
    target = Target.from_kind("cpu", options)
    text = str(target)
    again = Target(text)
    assert again == target and hash(again) == hash(target)
    assert str(again) == text
    for name, value in options.items():
        assert again.options[name] == value or (
            isinstance(value, float) and math.isclose(again.options[name], value))
    ext = Target.from_kind("cmsis-nn", {"mcpu": mcpu})
    assert parse_targets(f"{target}, {ext}") == (ext, target)


# -- tags -------------------------------------------------------------------------------------

def test_a_tag_names_a_kind_with_preset_options(kinds):
    target = Target("corstone-300")
    assert (target.kind, target.tag) == (EXT, "corstone-300")
    assert dict(target.options) == {"mcpu": "cortex-m55", "mattr": ("+mve",), "debug": False}
    assert str(target) == "cmsis-nn -mattr=+mve -mcpu=cortex-m55"
    assert Target(str(target)) == target and Target(str(target)).tag is None


def test_options_after_a_tag_override_it(kinds):
    target = Target("corstone-300 -mcpu=cortex-m85 -debug")
    assert dict(target.options) == {"mcpu": "cortex-m85", "mattr": ("+mve",), "debug": True}
    assert target.tag == "corstone-300"
    assert Target.from_kind("corstone-300").options["mcpu"] == "cortex-m55"


def test_a_tag_two_kinds_declare_is_a_conflict(kinds, register_plugin):
    class Clash:
        @hookimpl
        def passhost_register_targets(self):
            return [TargetKind("other", (OptionSpec("mcpu", STR, ""),),
                               tags={"corstone-300": {"mcpu": "x"}})]

    register_plugin(Clash(), "clash")
    with pytest.raises(ConflictError) as excinfo:
        Target("corstone-300")
    assert message(excinfo) == ("target tag 'corstone-300' is registered by several plugins: "
                                "'test-targets' and 'clash'; disable all but one "
                                "(PASSHOST_DISABLE_PLUGINS)")


# -- lists --------------------------------------------------------------------------------------

def test_lists_put_external_targets_first_and_the_host_last(kinds):
    cpu, ext, npu = Target("cpu -num-threads=2"), Target("corstone-300"), Target("npu")
    assert parse_targets("cpu -num-threads=2, corstone-300,npu") == (ext, npu, cpu)
    assert parse_targets("npu, cmsis-nn -mcpu=cortex-m55 -mattr=+mve, cpu -num-threads=2") == (
        npu, ext, cpu)
    assert parse_targets(cpu) == (cpu,)
    assert parse_targets([cpu, "npu, corstone-300"]) == (npu, ext, cpu)
    assert parse_targets(("vm",)) == (Target("vm"),)


@pytest.mark.parametrize(("targets", "expected"), [
    ("cmsis-nn", "the target list 'cmsis-nn' needs a host target such as 'cpu': exactly one "
                 "target must be of a host kind, which runs what the other targets do not "
                 "(host kinds: cpu, vm)"),
    ("npu, corstone-300", "the target list 'npu, cmsis-nn -mattr=+mve -mcpu=cortex-m55' needs "
                          "a host target such as 'cpu': exactly one target must be of a host "
                          "kind, which runs what the other targets do not (host kinds: cpu, "
                          "vm)"),
    ("vm, npu, cpu -fast-math", "the target list 'vm, npu, cpu -fast-math' has 2 host "
                                "targets, 'vm' and 'cpu -fast-math': exactly one target must "
                                "be of a host kind"),
    ("cpu, npu, cpu -num-threads=2", "the target list 'cpu, npu, cpu -num-threads=2' gives "
                                     "the target kind 'cpu' twice: each kind may appear once"),
    ("corstone-300, cmsis-nn, cpu", "the target list 'cmsis-nn -mattr=+mve -mcpu=cortex-m55, "
                                    "cmsis-nn, cpu' gives the target kind 'cmsis-nn' twice: "
                                    "each kind may appear once"),
    ([], "the target list is empty: give at least a host target such as 'cpu'"),
])
def test_list_errors(kinds, targets, expected):
    with pytest.raises(TargetError) as excinfo:
        parse_targets(targets)
    assert message(excinfo) == expected


def test_list_without_any_host_kind_registered_says_what_to_install(plugin_host,
                                                                     register_plugin):
    class OnlyExt:
        @hookimpl
        def passhost_register_targets(self):
            return [EXT]

    register_plugin(OnlyExt(), "only-ext")
    with pytest.raises(TargetError) as excinfo:
        parse_targets("cmsis-nn")
    assert message(excinfo) == (
        "the target list 'cmsis-nn' needs a host target such as 'cpu': exactly one target "
        "must be of a host kind, which runs what the other targets do not (no host kind is "
        "registered; the cpu target comes with: pip install passhost-cpu-target)")


def test_list_argument_types(kinds):
    with pytest.raises(TypeError) as excinfo:
        parse_targets(3)
    assert message(excinfo) == "expected a target string, a Target or a sequence of them, " \
                               "found int 3"
    with pytest.raises(TypeError) as excinfo:
        parse_targets(["cpu", None])
    assert message(excinfo) == "a target list holds target strings and Targets, found " \
                               "NoneType None"


# -- errors in target strings -------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("cpu num-threads=2", "<target>:1:5: expected an option -name[=value], found "
                          "'num-threads=2'\n    cpu num-threads=2\n        ^"),
    ("", "<target>:1:1: expected a target kind or tag name, found the end of the text\n"
         "    \n    ^"),
    ("  -mcpu=x", "<target>:1:3: expected a target kind or tag name, found '-mcpu=x'\n"
                  "      -mcpu=x\n      ^"),
    ("cpu -mcpu", "<target>:1:5: option -mcpu of target kind 'cpu' needs a value: "
                  "-mcpu=<str>\n    cpu -mcpu\n        ^"),
    ("cpu -num-threads= -fast-math", "<target>:1:18: expected a value after '-num-threads=', "
                                     "found ' ' (write \"\" for an empty string)\n"
                                     "    cpu -num-threads= -fast-math\n                     ^"),
    ("cpu - x", "<target>:1:6: expected an option name after '-', found ' '\n"
                "    cpu - x\n         ^"),
    ("cpu --fast-math", "<target>:1:6: expected an option name after '-', found '-fast-math'"
                        "\n    cpu --fast-math\n         ^"),
    ('cpu -mcpu="abc', "<target>:1:11: the quoted value of option -mcpu has no closing '\"'\n"
                       "    cpu -mcpu=\"abc\n              ^"),
    ('cpu -mcpu="a\\qb"', "<target>:1:13: the quoted value of option -mcpu is invalid: "
                          "Invalid \\escape\n    cpu -mcpu=\"a\\qb\"\n                ^"),
    ('cpu -mcpu=a"b"', "<target>:1:12: expected whitespace, ',' or the end of the text after "
                       "option -mcpu, found '\"b\"'\n    cpu -mcpu=a\"b\"\n               ^"),
    ("cpu -fast-math -fast-math=no", "<target>:1:16: option -fast-math is given twice\n"
                                     "    cpu -fast-math -fast-math=no\n                   ^"),
    ("cpu,npu", "<target>:1:4: a Target is one target; read a comma-separated list with "
                "passhost.target.parse_targets\n    cpu,npu\n       ^"),
    ("cpu\n -mcpu", "<target>:2:2: option -mcpu of target kind 'cpu' needs a value: "
                    "-mcpu=<str>\n     -mcpu\n     ^"),
])
def test_malformed_target_strings(kinds, text, expected):
    with pytest.raises(ParseError) as excinfo:
        Target(text)
    assert message(excinfo) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("cpu, ", "<target>:1:6: expected a target kind or tag name, found the end of the text\n"
              "    cpu, \n         ^"),
    (",cpu", "<target>:1:1: expected a target kind or tag name, found ','\n    ,cpu\n    ^"),
])
def test_malformed_target_lists(kinds, text, expected):
    with pytest.raises(ParseError) as excinfo:
        parse_targets(text)
    assert message(excinfo) == expected


def test_bad_option_values(kinds):
    with pytest.raises(OptionError) as excinfo:
        Target("cpu -num-threads=two")
    assert message(excinfo) == ("option of target kind 'cpu': 'num-threads' expects int, "
                                "found 'two' (invalid literal for int() with base 10: 'two')")
    with pytest.raises(OptionError) as excinfo:
        Target("cpu -fast-math=maybe")
    assert message(excinfo) == ("option of target kind 'cpu': 'fast-math' expects bool, "
                                "found 'maybe' (expected true or false, found 'maybe')")


def test_unknown_options_list_close_matches_and_the_kinds_options(kinds):
    with pytest.raises(UnknownNameError) as excinfo:
        Target("cpu -num-thread=2")
    assert message(excinfo) == (
        "unknown option 'num-thread' of target kind 'cpu', which has the options "
        "-num-threads, -opt-level, -fast-math, -verify, -libs, -mcpu, -scale; "
        "did you mean 'num-threads'?")
    with pytest.raises(UnknownNameError) as excinfo:
        Target("npu -mcpu=x")
    assert message(excinfo) == ("unknown option 'mcpu' of target kind 'npu', which has no "
                                "options")


def test_unknown_kinds_list_close_kinds_and_tags(kinds):
    with pytest.raises(UnknownNameError) as excinfo:
        Target("cpux -num-threads=2")
    assert message(excinfo) == "unknown target kind 'cpux'; did you mean 'cpu'?"
    with pytest.raises(UnknownNameError) as excinfo:
        Target("corstone-30")
    assert message(excinfo) == "unknown target kind 'corstone-30'; did you mean 'corstone-300'?"
    assert excinfo.value.candidates == ["corstone-300"]


@pytest.mark.parametrize(("name", "distribution"), [
    ("cmsis-nn", "passhost-cmsis-nn"), ("cpu", "passhost-cpu-target")])
def test_unknown_kind_of_a_known_distribution_says_how_to_install_it(plugin_host, name,
                                                                     distribution):
    with pytest.raises(UnknownNameError) as excinfo:
        Target(f"{name} -mcpu=cortex-m55")
    assert message(excinfo) == (f"unknown target kind {name!r} (it is provided by the plugin "
                                f"distribution {distribution}; install it with: pip install "
                                f"{distribution})")


def test_unknown_kind_of_an_installed_but_disabled_plugin(plugin_host):
    plugin_host.records["cmsis-nn"] = PluginRecord(
        "cmsis-nn", distribution="passhost_cmsis_nn", status="disabled")
    with pytest.raises(UnknownNameError) as excinfo:
        parse_targets("cmsis-nn, cpu")
    assert message(excinfo) == (
        "unknown target kind 'cmsis-nn' (it is provided by the plugin distribution "
        "passhost-cmsis-nn, which is installed but its plugin 'cmsis-nn' is disabled; see: "
        "passhost plugins list)")


def test_unknown_kind_when_no_kind_is_registered(plugin_host):
    with pytest.raises(UnknownNameError) as excinfo:
        Target("llvm")
    assert message(excinfo) == ("unknown target kind 'llvm' (no target kind is registered; "
                                "the cpu target comes with: pip install passhost-cpu-target)")


def test_target_takes_a_string(kinds):
    with pytest.raises(TypeError) as excinfo:
        Target(CPU)
    assert message(excinfo).startswith("Target takes a target string such as "
                                       "'cpu -num-threads=2', found TargetKind")


def test_a_registered_object_that_is_not_a_kind(plugin_host, register_plugin):
    class Odd:
        name = "odd"

    class OddPlugin:
        @hookimpl
        def passhost_register_targets(self):
            return [Odd()]

    with pytest.raises(PluginError, match=r"plugin 'odd-plugin': passhost_register_targets: "
                                          r"returned Odd .*, expected TargetKind"):
        register_plugin(OddPlugin(), "odd-plugin")
    with pytest.raises(UnknownNameError):
        Target("odd")


# -- Target.current() ---------------------------------------------------------------------------

def test_current_is_the_innermost_entered_target(kinds):
    cpu, npu = Target("cpu"), Target("npu")
    assert Target.current() is None
    with cpu as entered:
        assert entered is cpu and Target.current() is cpu
        with npu:
            assert Target.current() is npu
            with cpu:
                assert Target.current(allow_none=False) is cpu
            assert Target.current() is npu
        assert Target.current() is cpu
    assert Target.current() is None


def test_current_is_restored_when_the_block_raises(kinds):
    with pytest.raises(RuntimeError), Target("cpu"):
        raise RuntimeError
    assert Target.current() is None


def test_current_without_a_target(kinds):
    with pytest.raises(TargetError) as excinfo:
        Target.current(allow_none=False)
    assert message(excinfo) == ("no target is in scope: enter one with 'with Target(\"cpu\"):' "
                                "or pass the target explicitly")


def test_current_is_per_thread(kinds):
    seen = {}
    ready, done = threading.Event(), threading.Event()

    def worker():
        seen["before"] = Target.current()
        with Target("npu"):
            ready.set()
            done.wait(5)
            seen["inside"] = Target.current()

    with Target("cpu") as cpu:
        thread = threading.Thread(target=worker)
        thread.start()
        ready.wait(5)
        assert Target.current() is cpu  # the worker's target is not ours
        done.set()
        thread.join(5)
    assert seen == {"before": None, "inside": Target("npu")}


# -- hooks ----------------------------------------------------------------------------------------

def test_the_kinds_hooks_are_the_fallback(kinds):
    mod = make_module()
    out = relay_to_tir(Target("corstone-300"), mod)
    assert isinstance(out, IRModule) and out.attrs["lowered_by"] == "kind cmsis-nn"
    assert "lowered_by" not in mod.attrs
    assert tir_to_runtime("cmsis-nn -debug", mod) == ("runtime of", "cmsis-nn -debug")


def test_a_plugin_implementing_the_hooks_wins_over_the_kind(kinds, register_plugin):
    register_plugin(ExtHooks(), "ext-hooks")
    mod = make_module()
    assert relay_to_tir("cmsis-nn", mod).attrs["lowered_by"] == "plugin"
    assert tir_to_runtime("cmsis-nn", mod) == "plugin runtime"
    # the plugin answers None for other kinds: the kind's hooks (none here) are asked next
    assert relay_to_tir("cpu", mod) is None
    assert tir_to_runtime(Target("npu"), mod) is None


def test_no_hook_and_no_kind_function_gives_none(kinds):
    mod = make_module()
    assert relay_to_tir(Target("cpu"), mod) is None
    assert tir_to_runtime(Target("cpu"), mod) is None


def test_hook_results_and_arguments_are_checked(kinds, register_plugin):
    class Wrong:
        @hookimpl
        def passhost_relay_to_tir(self, target, mod):
            return "not a module"

    register_plugin(Wrong(), "wrong")
    with pytest.raises(TypeError) as excinfo:
        relay_to_tir("npu", make_module())
    assert message(excinfo) == ("relay_to_tir for target 'npu' returned str 'not a module', "
                                "expected an IRModule or None")
    with pytest.raises(TypeError, match="expected a Target or a target string, found int 3"):
        tir_to_runtime(3, make_module())


def test_the_builtin_plugin_implements_the_fallback_hooks(plugin_host):
    hooks = plugin_host.records["builtin"].hooks
    assert {"passhost_relay_to_tir", "passhost_tir_to_runtime"} <= set(hooks)


# -- TargetKind -----------------------------------------------------------------------------------

def test_kind_fields_are_normalised(kinds):
    assert EXT.keys == ("cmsis-nn", "arm", "ext")
    assert TargetKind("k", keys="k").keys == ("k",)
    assert CPU.option("libs").default == ("blas",)
    assert CPU.option("scale").default == 1.0
    assert EXT.passes_at("tir.phase1") == ("PrintIR",)
    assert EXT.passes_at("tir.phase3") == ()
    assert PHASES == ("tir.phase0", "tir.phase1", "tir.phase2", "tir.phase3")
    with pytest.raises(TypeError):
        EXT.tags["corstone-300"]["mcpu"] = "x"
    with pytest.raises(TypeError):
        EXT.phase_passes["tir.phase0"] = ("X",)
    with pytest.raises(UnknownNameError, match="unknown phase 'phase1'; the phases are"):
        EXT.passes_at("phase1")
    assert repr(NPU) == "TargetKind('npu', options=[], keys=['npu'], host=False)"


def test_kind_pattern_tables():
    (name, pattern, check), = EXT.pattern_entries()
    assert (name, str(pattern), check) == ("cmsis-nn.relu", "is_op('nn.relu')(wildcard())", None)
    assert TargetKind("k", pattern_table=_relu_table()).pattern_entries()[0][0] == "cmsis-nn.relu"
    assert NPU.pattern_entries() == ()
    with pytest.raises(OptionError, match="pattern table of target kind 'k': entry 0 must be"):
        TargetKind("k", pattern_table=[("x",)]).pattern_entries()



def _ok(*_args):
    return None


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"name": "bad name"}, "a target kind name matches [A-Za-z_][A-Za-z0-9_.-]*, found "
                           "'bad name'"),
    ({"name": ""}, "a target kind name matches [A-Za-z_][A-Za-z0-9_.-]*, found ''"),
    ({"options": (OptionSpec("a", INT), OptionSpec("a", STR))},
     "target kind 'k': option 'a' is declared twice"),
    ({"options": ("a",)}, "target kind 'k': options hold OptionSpec objects, found 'a'"),
    ({"options": "a"}, "target kind 'k': options is a sequence of OptionSpec, found 'a'"),
    ({"options": (OptionSpec("a=b", INT),)},
     "target kind 'k': an option name matches [A-Za-z_][A-Za-z0-9_.-]*, found 'a=b'"),
    ({"options": (OptionSpec("n", INT, "one"),)},
     "target kind 'k': the default 'one' of option 'n' is not a int"),
    ({"keys": ("ok", "not ok")},
     "target kind 'k': keys hold names matching [A-Za-z_][A-Za-z0-9_.-]*, found 'not ok'"),
    ({"phase_passes": {"tir.phase4": ("X",)}},
     "target kind 'k': unknown phase 'tir.phase4' in phase_passes (did you mean "
     "'tir.phase3'?); the phases are tir.phase0, tir.phase1, tir.phase2, tir.phase3"),
    ({"phase_passes": {"tir.phase0": ("X", 3)}},
     "target kind 'k': the passes of phase 'tir.phase0' hold names matching "
     "[A-Za-z_][A-Za-z0-9_.-]*, found 3"),
    ({"phase_passes": [("tir.phase0", "X")]},
     "target kind 'k': phase_passes is a mapping, found [('tir.phase0', 'X')]"),
    ({"options": (OptionSpec("mcpu", STR),), "tags": {"t1": {"mcp": "x"}}},
     "target kind 'k': tag 't1' sets option 'mcp', which the kind does not declare (did you "
     "mean 'mcpu'?)"),
    ({"options": (OptionSpec("n", INT),), "tags": {"t1": {"n": "x"}}},
     "target kind 'k': tag 't1': option 'n' expects int, found 'x' (invalid literal for "
     "int() with base 10: 'x')"),
    ({"options": (OptionSpec("n", INT),), "tags": {"t1": {"n": 3}}},
     "target kind 'k': tag 't1' gives option 'n' the value 3; tag values are text, as "
     "written in a target string"),
    ({"tags": {"k": {}}}, "target kind 'k': a tag name matches [A-Za-z_][A-Za-z0-9_.-]* and "
                          "differs from the kind's name, found 'k'"),
    ({"relay_to_tir": "lower"}, "target kind 'k': relay_to_tir is a function or None, found "
                                "'lower'"),
    ({"tir_to_runtime": 1}, "target kind 'k': tir_to_runtime is a function or None, found 1"),
    ({"pattern_table": 3},
     "target kind 'k': pattern_table is the name of a registered pattern table, a function "
     "of the target returning (name, pattern[, check]) entries, or the entries, found 3"),
    ({"host": 1}, "target kind 'k': host is a bool, found 1"),
    ({"summary": None}, "target kind 'k': summary is a str, found None"),
])
def test_kind_validation(kwargs, expected):
    with pytest.raises(TargetKindError) as excinfo:
        TargetKind(**{"name": "k", **kwargs})
    assert message(excinfo) == expected
    assert isinstance(excinfo.value, PluginError) and isinstance(excinfo.value, ValueError)


def test_a_valid_kind_with_every_field():
    kind = TargetKind("k", (OptionSpec("n", INT, 0),), ("x",), _ok, _ok, _relu_table,
                      {"tir.phase0": "A", "tir.phase3": ["B", "C"]}, {"t1": {"n": "3"}},
                      True, "s")
    assert (kind.keys, dict(kind.phase_passes)) == (
        ("k", "x"), {"tir.phase0": ("A",), "tir.phase3": ("B", "C")})


def test_check_plugin_accepts_a_target_plugin():
    record = check_plugin(TargetPlugin(), "test-targets")
    assert record.provides == {"targets": ["cpu", "cmsis-nn", "npu", "vm"]}


def test_importing_the_target_layer_and_its_kinds_stays_light():
    code = ("import passhost.target as t\n"
            "t.TargetKind('k', pattern_table=lambda target: [])\n")
    _, modules = imported_modules(code, ("passhost.relay", "passhost.ir", "passhost.text"))
    assert modules == []


# -- passhost targets list ----------------------------------------------------------------------

def run(capsys, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().out


def test_targets_list_table(kinds, capsys):
    status, out = run(capsys, "targets", "list")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "KEYS", "HOST", "OPTIONS", "TAGS", "PROVIDER", "SUMMARY"]
    rows = [[cell for cell in line.split("  ") if cell] for line in lines[1:]]
    assert [row[0] for row in rows] == ["cmsis-nn", "cpu", "npu", "vm"]
    assert [cell.strip() for cell in rows[0]] == [
        "cmsis-nn", "cmsis-nn, arm, ext", "-", "mcpu: str, mattr: list of str, debug: bool",
        "corstone-300", "test-targets", "an external kind"]
    assert [cell.strip() for cell in rows[1]][:3] == ["cpu", "cpu, host-cpu", "yes"]
    assert [cell.strip() for cell in rows[2]] == [
        "npu", "npu", "-", "-", "-", "test-targets", "an external kind without options"]


def test_targets_list_json(kinds, capsys):
    status, out = run(capsys, "targets", "list", "--json")
    assert status == 0
    doc = json.loads(out)
    assert [t["name"] for t in doc["targets"]] == ["cmsis-nn", "cpu", "npu", "vm"]
    assert doc["targets"][0] == {
        "name": "cmsis-nn", "keys": ["cmsis-nn", "arm", "ext"], "host": False,
        "options": [
            {"name": "mcpu", "type": "str", "default": "cortex-m4",
             "summary": "the Cortex-M core"},
            {"name": "mattr", "type": "list of str", "default": [],
             "summary": "architecture features"},
            {"name": "debug", "type": "bool", "default": False, "summary": "emit debug calls"}],
        "tags": {"corstone-300": {"mcpu": "cortex-m55", "mattr": "+mve"}},
        "phase_passes": {"tir.phase1": ["PrintIR"]},
        "summary": "an external kind", "provider": "test-targets", "distribution": None,
        "conflict": False}
    assert doc["targets"][1]["host"] is True
    assert doc["targets"][1]["options"][4]["default"] == ["blas"]
