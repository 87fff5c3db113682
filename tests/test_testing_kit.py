"""passhost.testing, the kit for plugin authors: the isolated host fixture, temporary
registration, and the contract check on good and broken plugins."""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None

from passhost.errors import PluginError
from passhost.plugins import (
    INT,
    InstrumentSpec,
    OptionSpec,
    PassSpec,
    PipelineSpec,
    PluginHost,
    get_host,
    hookimpl,
    set_host,
)
from passhost.testing import (
    PluginCheckError,
    check_plugin,
    fresh_host,
    imported_modules,
    plugin_name,
    registered,
    use_host,
)
from passhost.transform import get_pass, module_pass, pass_spec

pytest_plugins = ["pytester"]


@module_pass(opt_level=1, name="Tile")
class Tile:
    def __init__(self, factor=2):
        self.factor = factor

    def transform_module(self, mod, ctx):
        return mod


class Good:
    """A plugin providing one of each kind."""

    @hookimpl
    def passhost_register_passes(self):
        return [pass_spec(Tile, "tile loops", options=[OptionSpec("factor", INT, 2)])]

    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("tracer", lambda: object(), "traces passes")]

    @hookimpl
    def passhost_register_config_options(self):
        return [OptionSpec("good.level", int, 1, "a level")]

    @hookimpl
    def passhost_register_pipelines(self):
        return [PipelineSpec("tiled", "Tile{factor=4}, PrintIR")]


# -- the plugin_host and register_plugin fixtures -------------------------------------------

def test_plugin_host_is_fresh_and_installed(plugin_host):
    assert get_host() is plugin_host
    assert list(plugin_host.records) == ["builtin"]
    assert "PrintIR" in plugin_host.registries.passes
    assert "timing" not in plugin_host.registries.instruments  # installed, not loaded


def test_register_plugin_registers_into_the_plugin_host(register_plugin, plugin_host):
    record = register_plugin(Good(), "good")
    assert plugin_host.records["good"] is record
    assert get_pass("Tile", {"factor": 3}).factor == 3


def test_the_fixtures_restore_the_process_host_and_unregister(pytester):
    """Run a small suite in this process: each test's host is its own, the host installed
    before is back after each test (also after a failing one), and what register_plugin
    registered is gone at teardown, even from a host the test named."""
    pytester.makeconftest('pytest_plugins = ["passhost.testing.pytest_plugin"]')
    pytester.makepyfile(test_inner="""
        from passhost.plugins import get_host
        from passhost.testing import fresh_host

        OUTER = get_host()
        SHARED = fresh_host()


        class Plugin:
            pass


        def test_fresh(plugin_host):
            assert get_host() is plugin_host is not OUTER


        def test_fails(plugin_host):
            assert get_host() is plugin_host
            raise RuntimeError("fails")


        def test_restored():
            assert get_host() is OUTER


        def test_register(register_plugin, plugin_host):
            register_plugin(Plugin(), "a")
            register_plugin(Plugin(), "b", host=SHARED)
            assert "a" in plugin_host.records and "b" in SHARED.records


        def test_unregistered():
            assert "b" not in SHARED.records and get_host() is OUTER
    """)
    with use_host() as outer:
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
        assert get_host() is outer
    result.assert_outcomes(passed=4, failed=1)


def test_use_host_restores_the_previous_host_on_error():
    before = set_host(None)
    try:
        mine = fresh_host()
        with pytest.raises(RuntimeError), use_host(mine) as host:
            assert host is mine and get_host() is mine
            raise RuntimeError
        assert set_host(None) is None
    finally:
        set_host(before)


# -- registered ------------------------------------------------------------------------------

def test_registered_adds_and_removes_a_plugin(plugin_host):
    with registered(Good(), "good") as record:
        assert record.provides["passes"] == ["Tile"]
        assert record.hooks == sorted(record.hooks) and len(record.hooks) == 4
        assert "tiled" in plugin_host.registries.pipelines
    assert "good" not in plugin_host.records
    assert "Tile" not in plugin_host.registries.passes
    assert plugin_host.pm.get_plugin("good") is None


def test_registered_cleans_up_when_the_block_raises(plugin_host):
    with pytest.raises(KeyError), registered(Good(), "good"):
        raise KeyError("boom")
    assert "good" not in plugin_host.records


def test_registered_into_a_given_host_with_a_default_name(plugin_host):
    other = PluginHost()
    module = types.ModuleType("my_plugin")
    module.passhost_register_pipelines = hookimpl(lambda: [PipelineSpec("mine", "PrintIR")])
    with registered(module, host=other) as record:
        assert record.name == "my_plugin" and record.module == "my_plugin"
        assert "mine" in other.registries.pipelines
        assert "mine" not in plugin_host.registries.pipelines
    assert other.records == {}


def test_registered_rejects_a_broken_plugin_and_leaves_nothing(plugin_host):
    class BadArgs:
        @hookimpl
        def passhost_run_before_pass(self, module):
            pass

    with pytest.raises(PluginError, match="is invalid"), registered(BadArgs()):
        pass
    assert list(plugin_host.records) == ["builtin"]


def test_default_plugin_names():
    assert plugin_name(types.ModuleType("pkg.plugin")) == "pkg.plugin"
    assert plugin_name(Good) == "Good"
    assert plugin_name(Good()) == "Good"


# -- check_plugin ------------------------------------------------------------------------------

def test_check_plugin_accepts_a_good_plugin_and_returns_its_record():
    before = get_host()
    record = check_plugin(Good(), "good")
    assert record.name == "good"
    assert record.provides == {"passes": ["Tile"], "instruments": ["tracer"],
                               "config_options": ["good.level"], "pipelines": ["tiled"]}
    assert record.hooks == ["passhost_register_config_options", "passhost_register_instruments",
                            "passhost_register_passes", "passhost_register_pipelines"]
    assert get_host() is before and "good" not in before.records


def test_check_plugin_accepts_a_module_and_a_namespace():
    module = types.ModuleType("good_plugin")
    exec("from passhost import hookimpl\n"
         "from passhost.plugins import PipelineSpec\n"
         "@hookimpl\n"
         "def passhost_register_pipelines():\n"
         "    return [PipelineSpec('fast', 'PrintIR')]\n", module.__dict__)
    assert check_plugin(module).provides == {"pipelines": ["fast"]}
    namespace = types.SimpleNamespace(passhost_register_passes=hookimpl(lambda: None))
    assert check_plugin(namespace, "ns").provides == {"passes": []}


def test_check_plugin_accepts_the_timing_plugin():
    plugin = pytest.importorskip("passhost_timing.plugin")
    assert check_plugin(plugin, "timing").provides == {"instruments": ["timing"]}


def _plugin(**hooks):
    """A plugin object whose methods are the given functions, marked as hooks (a name ending
    in ``_unmarked`` is stored unmarked under the name without that suffix)."""
    namespace = {}
    for hook, function in hooks.items():
        if hook.endswith("_unmarked"):
            namespace[hook.removesuffix("_unmarked")] = function
        else:
            namespace[hook] = hookimpl(function)
    return type("Broken", (), namespace)()


def _passes(*specs):
    return {"passhost_register_passes": lambda self: list(specs)}


def _instruments(*specs):
    return {"passhost_register_instruments": lambda self: list(specs)}


BROKEN = {
    "wrong hook arguments": (
        {"passhost_relay_to_tir": lambda self, target, module: None},
        ["passhost_relay_to_tir: ", "Argument(s) {'module'} are declared in the hookimpl "
         "but can not be found in the hookspec"]),
    "unknown passhost_ hook": (
        {"passhost_register_pases": lambda self: []},
        ["passhost_register_pases is not a passhost hook; did you mean "
         "'passhost_register_passes'"]),
    "hook not marked": (
        {"passhost_register_passes_unmarked": lambda self: []},
        ["passhost_register_passes is not marked with @passhost.hookimpl, so the host "
         "ignores it"]),
    "instrument callback on the plugin": (
        {"passhost_run_after_pass": lambda self, mod, info: None},
        ["passhost_run_after_pass is an instrument callback: the host never calls it on a "
         "plugin"]),
    "spec of the wrong type": (
        _passes(InstrumentSpec("tracer", object)),
        ["passhost_register_passes: returned InstrumentSpec InstrumentSpec(name='tracer', "
         "factory=<class 'object'>, summary='', options=()), expected PassSpec (InstrumentSpec "
         "objects are returned by passhost_register_instruments)"]),
    "not a list": (
        {"passhost_register_pipelines": lambda self: PipelineSpec("p", "PrintIR")},
        ["passhost_register_pipelines returned PipelineSpec PipelineSpec(name='p', "
         "text='PrintIR', summary=''), expected a list of PipelineSpec"]),
    "registration hook raising": (
        {"passhost_register_config_options": lambda self: 1 / 0},
        ["passhost_register_config_options raised ZeroDivisionError: division by zero"]),
    "clash with a built-in instrument": (
        _instruments(InstrumentSpec("print-after-all", object)),
        ["instrument 'print-after-all' clashes with the built-in instrument "
         "'print-after-all' (provided by 'builtin'); choose another name"]),
    "clash of a pass with PrintIR": (
        _passes(PassSpec("PrintIR", object)),
        ["pass 'PrintIR' clashes with the built-in pass 'PrintIR'"]),
    "clash of a pipeline with PrintIR": (
        {"passhost_register_pipelines": lambda self: [PipelineSpec("PrintIR", "PrintIR")]},
        ["pipeline 'PrintIR' clashes with the built-in pass 'PrintIR'"]),
    "clash with a built-in config option": (
        {"passhost_register_config_options":
         lambda self: [OptionSpec("testing.immutable_module", bool)]},
        ["config option 'testing.immutable_module' clashes with the built-in config option"]),
    "a name given twice": (
        _passes(PassSpec("Twice", object), PassSpec("Twice", object)),
        ["pass 'Twice' is registered twice by this plugin"]),
    "a name that cannot be written in a pipeline": (
        _passes(PassSpec("My Pass", object)),
        ["pass 'My Pass': a name matches [A-Za-z_][A-Za-z0-9_.-]*"]),
    "a reserved name": (
        _passes(PassSpec("sequential", object)),
        ["pass 'sequential': 'sequential' is reserved for nested pipelines"]),
    "a factory that is not callable": (
        _instruments(InstrumentSpec("tracer", "Tracer")),
        ["instrument 'tracer': factory 'Tracer' is not callable"]),
    "a bad opt_level": (
        _passes(PassSpec("Level", object, opt_level=-1)),
        ["pass 'Level': opt_level is an int >= 0, found -1"]),
    "an option default of the wrong type": (
        {"passhost_register_config_options": lambda self: [OptionSpec("my.level", int, "1")]},
        ["config option 'my.level': the default '1' does not fit the option's type (int)"]),
    "an option the factory does not take": (
        _passes(PassSpec("Tile", lambda factor=2: None, options=[OptionSpec("fator", int)])),
        ["pass 'Tile': option 'fator' is declared but the factory"]),
    "a factory argument no option provides": (
        _instruments(InstrumentSpec("dump", lambda directory: None)),
        ["instrument 'dump': the factory ", "requires directory, which no declared option "
         "provides"]),
    "an option declared twice": (
        _passes(PassSpec("Tile", lambda factor=2: None,
                         options=[OptionSpec("factor", int), OptionSpec("factor", int)])),
        ["pass 'Tile': option 'factor' is declared twice"]),
    "a pipeline text that does not parse": (
        {"passhost_register_pipelines": lambda self: [PipelineSpec("p", "A{")]},
        ["pipeline 'p': <pipeline p>:1:"]),
    "a pass and a pipeline of one name": (
        {**_passes(PassSpec("Same", object)),
         "passhost_register_pipelines": lambda self: [PipelineSpec("Same", "PrintIR")]},
        ["pass and pipeline 'Same': a pipeline cannot share a pass's name"]),
}


@pytest.mark.parametrize(("hooks", "expected"), BROKEN.values(), ids=BROKEN.keys())
def test_check_plugin_reports_a_broken_plugin(hooks, expected):
    with pytest.raises(PluginCheckError) as caught:
        check_plugin(_plugin(**hooks), "broken")
    err = caught.value
    assert isinstance(err, PluginError)
    assert len(err.problems) == 1, err.problems
    for part in expected:
        assert part in err.problems[0]
    assert str(err).startswith("plugin 'broken' does not meet the passhost plugin contract "
                               "(1 problem):\n  - ")


def test_check_plugin_lists_every_problem():
    plugin = _plugin(
        passhost_should_run=lambda self, module: True,
        passhost_register_pases=lambda self: [],
        passhost_register_passes=lambda self: [PassSpec("PrintIR", object), "Tile"],
        passhost_register_instruments=lambda self: [InstrumentSpec("print-after-all", object)],
    )
    with pytest.raises(PluginCheckError) as caught:
        check_plugin(plugin, "broken")
    problems = caught.value.problems
    assert len(problems) == 5, problems
    message = str(caught.value)
    assert message.startswith("plugin 'broken' does not meet the passhost plugin contract "
                              "(5 problems):\n  - ")
    for fragment in ("passhost_register_pases is not a passhost hook",
                     "passhost_should_run: ", "returned str 'Tile', expected PassSpec",
                     "pass 'PrintIR' clashes", "instrument 'print-after-all' clashes"):
        assert fragment in message
    # pluggy's multi-line message stays inside its bullet
    assert "\n    Argument(s) {'module'}" in message


def test_check_plugin_rejects_the_builtin_plugin_name():
    with pytest.raises(PluginCheckError, match="'builtin' is reserved"):
        check_plugin(Good(), "builtin")


def test_check_plugin_wants_the_same_specs_on_every_call():
    names = iter(["First", "Second"])

    class Fickle:
        @hookimpl
        def passhost_register_passes(self):
            return [PassSpec(next(names), object)]

    with pytest.raises(PluginCheckError, match="must return the same specs each time"):
        check_plugin(Fickle(), "fickle")


def test_import_passhost_testing_does_not_import_pytest():
    assert imported_modules("import passhost.testing", ("pytest",)) == ("", [])


# -- docs/plugins.md -------------------------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
_FENCE = re.compile(r"```(?P<lang>[a-z]*)\n(?P<body>.*?)```", re.DOTALL)
_FILE_HEADER = re.compile(r"# (?P<path>[\w./-]+\.(?:py|toml))\n")


def test_plugins_doc_examples(monkeypatch, tmp_path):
    """docs/plugins.md builds a distribution: each block headed by a file name is written to
    that file; every other Python block runs, in order, in one session with the
    distribution's src/ on sys.path, printing the ``text`` block after it (nothing when
    there is none); then the distribution's own tests run."""
    text = DOC.read_text()
    fences = list(_FENCE.finditer(text))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    session = types.ModuleType("plugins_doc")
    written, ran = [], 0
    try:
        with use_host():
            for index, fence in enumerate(fences):
                lang, body = fence["lang"], fence["body"]
                header = _FILE_HEADER.match(body)
                if lang in ("python", "toml") and header:
                    path = tmp_path / header["path"]
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(body)
                    written.append(header["path"])
                    continue
                if lang != "python":
                    continue
                expected = ""
                after = fences[index + 1] if index + 1 < len(fences) else None
                if (after is not None and after["lang"] == "text"
                        and not text[fence.end():after.start()].strip()):
                    expected = after["body"]
                importlib.invalidate_caches()
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(body, f"{DOC.name} line {text.count(chr(10), 0, fence.start())}",
                                 "exec"), session.__dict__)
                assert out.getvalue() == expected, f"block at offset {fence.start()}"
                ran += 1
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "passhost_relu6"]:
            del sys.modules[name]
    assert ran >= 5
    assert {"pyproject.toml", "src/passhost_relu6/plugin.py", "tests/conftest.py"} <= set(written)
    if tomllib is not None:
        project = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]
        assert project["entry-points"]["passhost.plugins"] == {"relu6": "passhost_relu6.plugin"}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                            cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
