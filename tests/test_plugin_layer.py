"""The plugin layer's building blocks: typed options, specs, registries, the host."""

from __future__ import annotations

import pytest

from passhost.errors import ConflictError, OptionError, PluginError, UnknownNameError
from passhost.plugins import (
    BOOL,
    FLOAT,
    INT,
    STR,
    STR_LIST,
    STR_LIST_MAP,
    InstrumentSpec,
    OptionSpec,
    PassSpec,
    PipelineSpec,
    PluginHost,
    PluginRecord,
    hookimpl,
    option_type,
)
from passhost.testing import imported_modules


@pytest.mark.parametrize(("kind", "text", "value"), [
    (INT, "3", 3), (FLOAT, "0.5", 0.5), (BOOL, "true", True), (BOOL, "off", False),
    (STR, "a b", "a b"), (STR_LIST, "A;B", ("A", "B")),
    (STR_LIST_MAP, "nn.conv2d:NHWC:HWIO;nn.max_pool2d:NHWC",
     {"nn.conv2d": ("NHWC", "HWIO"), "nn.max_pool2d": ("NHWC",)}),
])
def test_option_text_round_trip(kind, text, value):
    spec = OptionSpec("opt", kind)
    assert spec.parse(text) == value
    assert spec.parse(spec.format(value)) == value


@pytest.mark.parametrize(("kind", "good", "bad"), [
    (int, 3, True), (int, 3, 2.5), (float, 2, "2.0"), (bool, 1, 2), (bool, False, "no"),
    (str, "x", 1), (STR_LIST, ["a"], [1]), (STR_LIST_MAP, {"op": ["L"]}, ["op"]),
])
def test_option_check_names_expected_type(kind, good, bad):
    spec = OptionSpec("level", kind)
    spec.check(good)
    with pytest.raises(OptionError, match=f"option 'level' expects {spec.type.name}"):
        spec.check(bad)


def test_option_parse_errors_say_what_was_found():
    with pytest.raises(OptionError, match="expects int, found 'three'"):
        OptionSpec("n", int).parse("three")
    with pytest.raises(OptionError, match="expected true or false"):
        OptionSpec("flag", bool).parse("maybe")


def test_option_type_rejects_unknown_python_types():
    with pytest.raises(OptionError, match="one of int, float, bool, str"):
        option_type(list)


def test_spec_create_checks_options():
    spec = PassSpec("P", lambda depth=1: ("made", depth), options=[OptionSpec("depth", int)])
    assert spec.create() == ("made", 1)
    assert spec.create({"depth": 4}) == ("made", 4)
    assert spec.create({"depth": "5"}, from_text=True) == ("made", 5)
    with pytest.raises(UnknownNameError, match="did you mean 'depth'"):
        spec.create({"dept": 2})
    with pytest.raises(OptionError, match="option of pass 'P': 'depth' expects int"):
        spec.create({"depth": "2"})


class _Provider:
    """A plugin providing one of each registrable thing."""

    def __init__(self, pass_name: str = "MyPass") -> None:
        self.pass_name = pass_name

    @hookimpl
    def passhost_register_passes(self):
        return [PassSpec(self.pass_name, object)]

    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("mine", object)]

    @hookimpl
    def passhost_register_config_options(self):
        return [OptionSpec("my.option", int, 3, "an option")]

    @hookimpl
    def passhost_register_pipelines(self):
        return [PipelineSpec("my-pipeline", "MyPass")]


def test_host_attributes_registrations_to_the_plugin():
    host = PluginHost()
    record = host.register(_Provider(), "provider", distribution="provider-dist")
    assert record.provides == {"passes": ["MyPass"], "instruments": ["mine"],
                               "config_options": ["my.option"], "pipelines": ["my-pipeline"]}
    entry = host.registries.passes.entry("MyPass")
    assert (entry.provider, entry.distribution) == ("provider", "provider-dist")
    assert host.registries.config_options.get("my.option").default == 3
    host.unregister("provider")
    assert "MyPass" not in host.registries.passes
    assert host.hook_names(record.plugin) == []


def test_conflicts_name_both_providers_and_clear_on_unregister():
    host = PluginHost()
    host.register(_Provider(), "first")
    host.register(_Provider(), "second")
    assert ("pass", "MyPass", ("first", "second")) in host.registries.conflicts()
    with pytest.raises(ConflictError, match="'first' and 'second'"):
        host.registries.passes.get("MyPass")
    host.unregister("second")
    assert host.registries.passes.entry("MyPass").provider == "first"


def test_unknown_names_list_close_matches():
    host = PluginHost()
    host.register(_Provider(), "provider")
    with pytest.raises(UnknownNameError, match="unknown pass 'MyPas'; did you mean 'MyPass'"):
        host.registries.passes.get("MyPas")


class _BadSpec:
    @hookimpl
    def passhost_register_passes(self):
        return ["not a spec"]


class _UnknownHook:
    @hookimpl
    def passhost_register_pases(self):
        return []


class _BadArgs:
    @hookimpl
    def passhost_should_run(self, module):
        return True


class _UnusableOption:
    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("counter", object, options=[OptionSpec("n", INT, 0)])]


class _Unmarked:
    @hookimpl
    def passhost_register_instruments(self):
        return []

    def passhost_register_passes(self):  # no @hookimpl: pluggy would ignore it
        return []

    @staticmethod
    def passhost_register_pipeline():  # unmarked and misspelled
        return []


@pytest.mark.parametrize(("plugin", "message"), [
    (_BadSpec(), "plugin 'bad': passhost_register_passes: returned str 'not a spec', "
                 "expected PassSpec"),
    (_UnknownHook(), "plugin 'bad' is invalid: passhost_register_pases is not a passhost "
                     "hook; did you mean 'passhost_register_passes'"),
    (_BadArgs(), "plugin 'bad' is invalid"),
    (_UnusableOption(), r"plugin 'bad': passhost_register_instruments: instrument 'counter': "
                        r"option 'n' is declared but the factory object\(\) has no such "
                        r"keyword argument"),
    (_Unmarked(), "plugin 'bad' is invalid: passhost_register_passes is not marked with "
                  "@passhost.hookimpl, so the host ignores it; passhost_register_pipeline is "
                  "not marked with @passhost.hookimpl, so the host ignores it; did you mean "
                  "'passhost_register_pipelines'"),
])
def test_broken_plugins_are_rejected_and_leave_nothing_behind(plugin, message):
    host = PluginHost()
    with pytest.raises(PluginError, match=message):
        host.register(plugin, "bad")
    assert "bad" not in host.records
    assert host.pm.get_plugin("bad") is None
    assert len(host.registries.passes) == 0


def test_a_plugin_name_is_registered_once():
    host = PluginHost()
    host.register(_Provider(), "provider")
    with pytest.raises(PluginError, match="already registered"):
        host.register(_Provider("Other"), "provider")


def test_import_passhost_loads_no_plugin_machinery():
    _, modules = imported_modules("import passhost", ("pluggy", "passhost"))
    assert modules == ["passhost", "passhost._version"]


def test_passhost_hookimpl_is_the_plugin_marker():
    import passhost
    from passhost.plugins.hookspecs import PROJECT

    @passhost.hookimpl
    def passhost_register_passes():
        return []

    assert hasattr(passhost_register_passes, f"{PROJECT}_impl")


def test_builtin_registrations_agree_with_what_they_create(plugin_host):
    from passhost.transform import Pass

    needs_options = {"AnnotateTarget": {"kinds": "cmsis-nn"}}
    for entry in plugin_host.registries.passes.entries():
        created = entry.spec.create(needs_options.get(entry.name), from_text=True)
        assert isinstance(created, Pass)
        assert (created.info.name, created.info.opt_level, created.info.required) == (
            entry.name, entry.spec.opt_level, entry.spec.required)


def test_registering_the_builtin_plugin_imports_no_pass_code():
    code = ("from passhost.plugins import create_host, LoadSettings; "
            "create_host(LoadSettings(only=frozenset()))")
    assert imported_modules(code, ("numpy", "passhost.transform")) == ("", [])


@pytest.mark.parametrize(("requires", "expected"), [
    (None, None), (["numpy>=1"], None), (["passhost>=0.1,<0.2"], "<0.2,>=0.1"),
    (['passhost>=9; python_version >= "3"'], ">=9"),
    (['passhost>=9; python_version < "3"'], None),
    (['passhost>=9; extra == "dev"'], None),
])
def test_passhost_requirement_evaluates_markers(requires, expected):
    from types import SimpleNamespace

    from passhost.plugins.loading import is_compatible, passhost_requirement

    found = passhost_requirement(SimpleNamespace(requires=requires))
    assert found == expected
    assert is_compatible(found, "0.1.0") == (expected in (None, "<0.2,>=0.1"))


def test_unknown_names_point_at_installed_plugins_that_are_not_loaded():
    host = PluginHost()
    assert host.not_loaded_hint() == ""
    host.records["off"] = PluginRecord("off", distribution="passhost-off", status="disabled")
    host.records["bad"] = PluginRecord("bad", status="error")
    for registry in (host.registries.passes, host.registries.instruments):
        with pytest.raises(UnknownNameError) as info:
            registry.get("Mystery")
        assert str(info.value).endswith(
            ". Installed plugins that are not loaded may provide it: 'off' is disabled, "
            "'bad' is error (see: passhost plugins list)")
    assert host.provided_by("passhost-off") == (
        " (it is provided by the plugin distribution passhost-off, which is installed but "
        "its plugin 'off' is disabled; see: passhost plugins list)")
    assert host.provided_by("Passhost_Elsewhere") == (
        " (it is provided by the plugin distribution Passhost_Elsewhere; install it with: "
        "pip install Passhost_Elsewhere)")
