"""The ``passhost`` command: plugin and registry listings, global plugin options, ``opt``."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import passhost.relay as relay
from passhost.cli import CommandError, main, make_instruments
from passhost.errors import (
    ConflictError,
    OptionError,
    ParseError,
    PasshostError,
    UnknownNameError,
)
from passhost.ir import IRModule, structural_equal
from passhost.plugins import (
    InstrumentSpec,
    OptionSpec,
    PassSpec,
    PipelineSpec,
    PluginFailure,
    PluginHost,
    PluginRecord,
    hookimpl,
    set_host,
)
from passhost.testing import imported_modules
from passhost.text import parse_module
from passhost.transform import module_pass, pass_spec

#: The standard graph passes the built-in plugin registers, in registration order.
GRAPH_PASSES = ["InferType", "FoldConstant", "SimplifyInference", "FoldScaleAxis",
                "CanonicalizeOps", "ConvertLayout", "EliminateCommonSubexpr",
                "DeadCodeElimination", "FuseOps", "MergeComposite", "AnnotateTarget",
                "PartitionGraph"]
#: The other passes it registers: the default lowering of the build flow, and PrintIR.
BUILD_PASSES = [
    "LowerTE", "tir.Simplify", "tir.ReuseBuffers", "tir.CollapseLoops",
    "tir.VectorizeReductions", "tir.AnnotateLoops", "PrintIR"]
BUILTIN_PROVIDES = "19 passes, 9 instruments, 5 config options, 1 pipeline"
HEADER = ["NAME", "VERSION", "STATUS", "PROVIDES", "HOOKS"]
PLUGIN_KEYS = {"name", "entry_point", "distribution", "version", "module", "status", "builtin",
               "requires_passhost", "hooks", "provides", "error"}
PROVIDES_KEYS = ["targets", "passes", "instruments", "config_options", "pipelines"]
ENV_VARS = ("PASSHOST_LOAD_PLUGINS", "PASSHOST_DISABLE_PLUGINS", "PASSHOST_STRICT_PLUGINS",
            "PASSHOST_TRACE_PLUGINS")

MODULE_TEXT = """\
#[version = "passhost.text/1"]

def @main(%x: Tensor[(1, 4), float32]) {
  nn.relu(%x)
}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``passhost ARGV`` in this process: exit status, stdout, stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def table_rows(text: str) -> list[list[str]]:
    """The cells of a table's unindented lines (the header and the rows)."""
    return [re.split(r"\s{2,}", line) for line in text.splitlines()
            if line and not line.startswith(" ") and not line.startswith("(")]


# -- plugin objects ---------------------------------------------------------------------------

@module_pass(opt_level=3, name="Tag")
class Tag:
    """Marks the module with the attribute ``tagged``."""

    def __init__(self, value: int = 1) -> None:
        self.value = value

    def transform_module(self, mod, ctx):
        return mod.with_attr("tagged", self.value)


@module_pass(opt_level=0, name="Fail")
class Fail:
    """Raises a passhost error."""

    def transform_module(self, mod, ctx):
        raise PasshostError("the pass gave up")


class _Counter:
    """An instrument taking the option ``n``."""

    def __init__(self, n: int = 0) -> None:
        self.n = n


class Tools:
    """A plugin providing one of each kind (but targets)."""

    @hookimpl
    def passhost_register_passes(self):
        return [pass_spec(Tag, "tag the module", options=[OptionSpec("value", int, 1, "")]),
                pass_spec(Fail, "always fails")]

    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("dup", object, "a duplicate"),
                InstrumentSpec("counter", _Counter, "counts", options=[OptionSpec("n", int)])]

    @hookimpl
    def passhost_register_config_options(self):
        return [OptionSpec("tools.level", int, 3, "how hard to try")]

    @hookimpl
    def passhost_register_pipelines(self):
        return [PipelineSpec("tagging", "Tag{value=2}", "tag twice as hard"),
                PipelineSpec("broken", "Tag,Nope", "refers to an unknown pass")]


class Other:
    """A plugin whose instrument name clashes with Tools's."""

    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("dup", object, "another duplicate")]


def failure(kind: type[BaseException], message: str) -> PluginFailure:
    """A failure with a real traceback."""
    try:
        raise kind(message)
    except kind as err:
        return PluginFailure.from_exception(err)


@pytest.fixture
def tools_host(plugin_host: PluginHost) -> PluginHost:
    """The built-in plugin, ``tools`` (active), and records of every other status."""
    plugin_host.register(Tools(), "tools", distribution="passhost-tools")
    records = [
        PluginRecord("broken", distribution="passhost-broken", version="1.0",
                     entry_point="passhost_broken.plugin", module="passhost_broken.plugin",
                     status="error",
                     error=failure(ModuleNotFoundError, "No module named 'x'")),
        PluginRecord("off", distribution="passhost-off", version="2.0",
                     entry_point="passhost_off.plugin", module="passhost_off.plugin",
                     status="disabled"),
        PluginRecord("old", distribution="passhost-old", version="0.0.1",
                     entry_point="passhost_old.plugin", module="passhost_old.plugin",
                     status="incompatible", requires_passhost=">=9",
                     error=PluginFailure("PluginError", "requires passhost>=9, this is "
                                                        "passhost 0.1.0")),
        PluginRecord("bad", distribution="passhost-bad", version="0.3",
                     entry_point="passhost_bad.plugin", module="passhost_bad.plugin",
                     status="invalid",
                     error=failure(ValueError, "hook passhost_register_pases is unknown")),
    ]
    for record in records:
        plugin_host.records[record.name] = record
    return plugin_host


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No PASSHOST_*_PLUGINS variables."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def real_host(clean_env) -> None:
    """The process-wide host created anew from the installed plugins, then put back."""
    previous = set_host(None)
    yield
    set_host(previous)


@pytest.fixture
def module_file(tmp_path: Path) -> Path:
    path = tmp_path / "relu.txt"
    path.write_text(MODULE_TEXT)
    return path


# -- passhost --version -----------------------------------------------------------------------

def test_version_loads_no_plugins_and_no_pluggy():
    code = ("from passhost.cli import main\n"
            "try:\n"
            "    main(['--version'])\n"
            "except SystemExit as exit:\n"
            "    assert exit.code in (0, None), exit.code\n")
    output, modules = imported_modules(code, ("pluggy", "passhost.plugins", "passhost_timing",
                                              "passhost_opdiff"))
    assert output == "passhost 0.1.0\n"
    assert modules == []


def test_no_command_prints_help(capsys):
    status, out, _ = run(capsys)
    assert status == 2
    assert "plugins" in out and "opt" in out


# -- plugins list: the table ------------------------------------------------------------------

def test_plugins_list_table_marks_the_builtin_plugin(plugin_host, capsys):
    status, out, err = run(capsys, "plugins", "list")
    assert (status, err) == (0, "")
    header, *rows = out.splitlines()
    assert header.split() == HEADER
    assert table_rows(out)[1:] == [
        ["builtin (built-in)", "0.1.0", "active", BUILTIN_PROVIDES, "6"]]
    # the columns are aligned: each cell starts where its heading does
    starts = [header.index(title) for title in HEADER]
    found, pos = [], 0
    for cell in table_rows(out)[1]:
        pos = rows[0].index(cell, pos)
        found.append(pos)
        pos += len(cell)
    assert found == starts
    assert all(line == line.rstrip() for line in out.splitlines())


def test_plugins_list_rows_in_load_order_with_errors_and_hidden_disabled(tools_host, capsys):
    status, out, _ = run(capsys, "plugins", "list")
    assert status == 0
    assert table_rows(out) == [
        HEADER,
        ["builtin (built-in)", "0.1.0", "active", BUILTIN_PROVIDES, "6"],
        ["tools", "-", "active", "2 passes, 2 instruments, 1 config option, 2 pipelines", "4"],
        ["broken", "1.0", "error", "-", "-"],
        ["old", "0.0.1", "incompatible", "-", "-"],
        ["bad", "0.3", "invalid", "-", "-"],
    ]
    lines = out.splitlines()
    below = lines[lines.index(next(li for li in lines if li.startswith("broken"))) + 1]
    assert below == "    error: ModuleNotFoundError: No module named 'x'"
    assert "    error: PluginError: requires passhost>=9, this is passhost 0.1.0" in lines
    assert "    error: ValueError: hook passhost_register_pases is unknown" in lines
    assert lines[-1] == "(1 disabled plugin not shown; --all lists them)"
    assert "Traceback" not in out


def test_plugins_list_all_includes_disabled_plugins(tools_host, capsys):
    _, out, _ = run(capsys, "plugins", "list", "--all")
    assert ["off", "2.0", "disabled", "-", "-"] in table_rows(out)
    assert "not shown" not in out


def test_plugins_list_verbose_shows_entry_points_paths_and_tracebacks(tools_host, capsys):
    _, out, _ = run(capsys, "plugins", "list", "-v", "--all")
    lines = out.splitlines()
    builtin_file = importlib.import_module("passhost.builtin_plugin").__file__
    assert "    entry point: passhost.builtin_plugin (built into passhost)" in lines
    assert f"    path: {builtin_file}" in lines
    assert f"    path: {__file__}" in lines  # the Tools class is defined here
    assert ("    entry point: broken = passhost_broken.plugin (distribution passhost-broken "
            "1.0)") in lines
    assert ("    entry point: old = passhost_old.plugin (distribution passhost-old 0.0.1, "
            "requires passhost>=9)") in lines
    assert "    hooks: passhost_register_config_options, passhost_register_instruments, " \
           "passhost_register_passes, passhost_register_pipelines, passhost_relay_to_tir, " \
        "passhost_tir_to_runtime" in lines
    start = lines.index("    error: ModuleNotFoundError: No module named 'x'")
    assert lines[start + 1] == "      Traceback (most recent call last):"
    assert "      ModuleNotFoundError: No module named 'x'" in lines[start + 2:]


def test_plugins_list_conflict_lines_below_each_provider(tools_host, capsys):
    tools_host.register(Other(), "other", distribution="passhost-other")
    _, out, _ = run(capsys, "plugins", "list")
    lines = out.splitlines()
    tools_at = next(i for i, li in enumerate(lines) if li.startswith("tools "))
    other_at = next(i for i, li in enumerate(lines) if li.startswith("other "))
    assert lines[tools_at + 1] == "    conflict: instrument 'dup' also provided by 'other'"
    assert lines[other_at + 1] == "    conflict: instrument 'dup' also provided by 'tools'"


# -- plugins list --check ---------------------------------------------------------------------

def test_check_passes_when_every_plugin_is_active(plugin_host, capsys):
    status, out, err = run(capsys, "plugins", "list", "--check")
    assert (status, err) == (0, "")
    assert out.startswith("NAME")


def test_check_ignores_disabled_plugins(plugin_host, capsys):
    plugin_host.records["off"] = PluginRecord("off", status="disabled")
    assert run(capsys, "plugins", "list", "--check")[0] == 0


@pytest.mark.parametrize("status", ["error", "incompatible", "invalid"])
def test_check_fails_on_a_plugin_that_did_not_load(plugin_host, capsys, status):
    plugin_host.records["x"] = PluginRecord("x", status=status,
                                            error=PluginFailure("E", "went wrong"))
    code, out, err = run(capsys, "plugins", "list", "--check")
    assert code == 1
    assert ["x", "-", status, "-", "-"] in table_rows(out)  # the table is still printed
    assert err == f"passhost: check failed: plugin 'x' has status {status}\n"


def test_check_fails_on_a_conflict(plugin_host, capsys):
    plugin_host.register(Other(), "other")
    plugin_host.register(Other(), "another")
    code, _, err = run(capsys, "plugins", "list", "--check", "--json")
    assert code == 1
    assert err == ("passhost: check failed: instrument 'dup' is provided by 'other' and "
                   "'another'\n")


# -- plugins list --json ----------------------------------------------------------------------

def test_plugins_json_has_the_spec_schema(tools_host, capsys):
    status, out, _ = run(capsys, "plugins", "list", "--json")
    assert status == 0
    doc = json.loads(out)
    assert list(doc) == ["schema_version", "passhost_version", "entry_point_group", "plugins",
                         "conflicts"]
    assert (doc["schema_version"], doc["passhost_version"], doc["entry_point_group"]) == (
        1, "0.1.0", "passhost.plugins")
    assert [p["name"] for p in doc["plugins"]] == ["builtin", "tools", "broken", "off", "old",
                                                   "bad"]
    for plugin in doc["plugins"]:
        assert set(plugin) == PLUGIN_KEYS
        assert list(plugin["provides"]) == PROVIDES_KEYS
    builtin, tools, broken, off, old, _bad = doc["plugins"]
    assert builtin == {
        "name": "builtin", "entry_point": "passhost.builtin_plugin", "distribution": "passhost",
        "version": "0.1.0", "module": "passhost.builtin_plugin", "status": "active",
        "builtin": True, "requires_passhost": None,
        "hooks": ["passhost_register_config_options", "passhost_register_instruments",
                  "passhost_register_passes", "passhost_register_pipelines",
                  "passhost_relay_to_tir", "passhost_tir_to_runtime"],
        "provides": {"targets": [], "passes": [*GRAPH_PASSES, *BUILD_PASSES],
                     "instruments": ["print-before-all", "print-after-all", "print-passes",
                                     "dump-ir", "print-after-change", "validate-numerics",
                                     "trace-events", "reproducer", "execution-limit"],
                     "config_options": ["testing.immutable_module", "relay.FuseOps.max_depth",
                                        "debug.max_pass_executions", "debug.reproducer_dir",
                                        "debug.trace_events"],
                     "pipelines": ["optimize"]},
        "error": None,
    }
    assert tools["provides"]["pipelines"] == ["tagging", "broken"]
    assert (tools["builtin"], tools["distribution"]) == (False, "passhost-tools")
    assert broken["error"] == {"type": "ModuleNotFoundError", "message": "No module named 'x'"}
    assert (off["status"], off["error"], off["hooks"]) == ("disabled", None, [])
    assert old["requires_passhost"] == ">=9"
    assert doc["conflicts"] == []


def test_plugins_json_verbose_adds_tracebacks(tools_host, capsys):
    doc = json.loads(run(capsys, "plugins", "list", "--json", "-v")[1])
    error = doc["plugins"][2]["error"]
    assert list(error) == ["type", "message", "traceback"]
    assert error["traceback"].startswith("Traceback (most recent call last):")


def test_plugins_json_lists_conflicts(tools_host, capsys):
    tools_host.register(Other(), "other")
    doc = json.loads(run(capsys, "plugins", "list", "--json")[1])
    assert doc["conflicts"] == [
        {"kind": "instruments", "name": "dup", "providers": ["tools", "other"]}]


# -- registry listings ------------------------------------------------------------------------

def test_passes_list(tools_host, capsys):
    status, out, _ = run(capsys, "passes", "list")
    assert status == 0
    rows = table_rows(out)
    assert rows[0] == ["NAME", "OPT_LEVEL", "REQUIRED", "OPTIONS", "PROVIDER", "SUMMARY"]
    assert [row[0] for row in rows[1:]] == sorted([*GRAPH_PASSES, *BUILD_PASSES, "Fail", "Tag"])
    assert ["Fail", "0", "-", "-", "tools", "always fails"] in rows
    assert ["PrintIR", "0", "-", "header: str, show_meta_data: bool", "builtin",
            "write the module's text to stderr"] in rows
    assert ["Tag", "3", "-", "value: int", "tools", "tag the module"] in rows
    assert ["ConvertLayout", "3", "InferType, CanonicalizeOps",
            "desired_layouts: map of str to list of str", "builtin",
            "convert layout-sensitive operators to the desired layouts"] in rows


def test_passes_list_json(tools_host, capsys):
    doc = json.loads(run(capsys, "passes", "list", "--json")[1])
    assert doc["schema_version"] == 1
    (tag,) = [p for p in doc["passes"] if p["name"] == "Tag"]
    assert tag == {
        "name": "Tag", "opt_level": 3, "required": [],
        "options": [{"name": "value", "type": "int", "default": 1, "summary": ""}],
        "summary": "tag the module", "provider": "tools", "distribution": "passhost-tools",
        "conflict": False}


def test_instruments_list_marks_conflicts_once_per_provider(tools_host, capsys):
    tools_host.register(Other(), "other")
    _, out, _ = run(capsys, "instruments", "list")
    rows = table_rows(out)
    assert rows[0] == ["NAME", "OPTIONS", "PROVIDER", "SUMMARY"]
    assert ["counter", "n: int", "tools", "counts"] in rows
    assert ["dup (conflict)", "-", "tools", "a duplicate"] in rows
    assert ["dup (conflict)", "-", "other", "another duplicate"] in rows
    assert out.splitlines()[-1] == ("conflict: instrument 'dup' is provided by 'tools' and "
                                    "'other'; using it is an error until all but one are "
                                    "disabled")
    doc = json.loads(run(capsys, "instruments", "list", "--json")[1])
    dups = [(i["provider"], i["conflict"]) for i in doc["instruments"] if i["name"] == "dup"]
    assert dups == [("tools", True), ("other", True)]
    assert {i["name"]: i["conflict"] for i in doc["instruments"]}["counter"] is False


def test_config_list(tools_host, capsys):
    _, out, _ = run(capsys, "config", "list")
    assert table_rows(out) == [
        ["NAME", "TYPE", "DEFAULT", "PROVIDER", "SUMMARY"],
        ["debug.max_pass_executions", "int", "-", "builtin",
         "run only the first N skippable pass executions (what bisect finds)"],
        ["debug.reproducer_dir", "str", "-", "builtin",
         "when a pass raises, write a reproducer into this directory"],
        ["debug.trace_events", "str", "-", "builtin",
         "write the context's pass events to this JSON Lines file"],
        ["relay.FuseOps.max_depth", "int", "256", "builtin",
         "the most operators FuseOps puts in one Primitive function"],
        ["testing.immutable_module", "bool", "false", "builtin",
         "check that every pass leaves its input module unchanged"],
        ["tools.level", "int", "3", "tools", "how hard to try"],
    ]
    doc = json.loads(run(capsys, "config", "list", "--json")[1])
    assert doc["config_options"][5] == {
        "name": "tools.level", "type": "int", "default": 3, "summary": "how hard to try",
        "provider": "tools", "distribution": "passhost-tools", "conflict": False}


def test_targets_list_says_when_there_are_none(plugin_host, capsys):
    assert run(capsys, "targets", "list") == (0, "no targets registered\n", "")
    doc = json.loads(run(capsys, "targets", "list", "--json")[1])
    assert doc == {"schema_version": 1, "targets": []}


def test_pipelines_list(tools_host, capsys):
    _, out, _ = run(capsys, "pipelines", "list")
    assert ["tagging", "Tag{value=2}", "tools", "tag twice as hard"] in table_rows(out)


# -- global options: --no-plugins, -p no:NAME (the real installed timing plugin) -------------

def _timing_row(out: str) -> list[str] | None:
    return next((row for row in table_rows(out) if row[0] == "timing"), None)


def test_installed_timing_plugin_is_active(real_host, capsys):
    _, out, _ = run(capsys, "plugins", "list")
    assert _timing_row(out) == ["timing", "0.1.0", "active", "1 instrument", "1"]


def test_p_no_name_disables_a_plugin(real_host, capsys):
    _, out, _ = run(capsys, "-p", "no:timing", "plugins", "list")
    assert _timing_row(out) is None
    _, out, _ = run(capsys, "-p", "no:timing", "plugins", "list", "--all")
    assert _timing_row(out) == ["timing", "0.1.0", "disabled", "-", "-"]
    _, out, _ = run(capsys, "-p", "no:timing", "instruments", "list")
    assert "timing" not in out


def test_no_plugins_loads_none(real_host, capsys):
    doc = json.loads(run(capsys, "--no-plugins", "plugins", "list", "--json")[1])
    statuses = {p["name"]: p["status"] for p in doc["plugins"]}
    assert statuses.pop("builtin") == "active"
    assert set(statuses.values()) <= {"disabled"}
    assert statuses.get("timing", "disabled") == "disabled"


def test_global_options_narrow_the_environment(real_host, capsys, monkeypatch):
    monkeypatch.setenv("PASSHOST_LOAD_PLUGINS", "timing")
    _, out, _ = run(capsys, "plugins", "list")
    assert _timing_row(out)[2] == "active"
    set_host(None)
    _, out, _ = run(capsys, "-p", "no:timing", "plugins", "list", "--all")
    assert _timing_row(out)[2] == "disabled"


def test_global_options_put_the_previous_host_back(plugin_host, clean_env, capsys):
    run(capsys, "--no-plugins", "plugins", "list")
    from passhost.plugins import get_host

    assert get_host() is plugin_host


@pytest.mark.parametrize("value", ["timing", "no:", "yes:timing"])
def test_p_without_no_prefix_is_a_usage_error(plugin_host, capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["-p", value, "plugins", "list"])
    assert exit_info.value.code == 2
    assert "argument -p: expected no:NAME" in capsys.readouterr().err


def test_console_script_lists_timing_as_active(clean_env):
    script = shutil.which("passhost", path=os.path.dirname(sys.executable))
    assert script is not None, "the passhost console script is not installed in this venv"
    done = subprocess.run([script, "plugins", "list", "--json"], capture_output=True,
                          text=True, check=True)
    doc = json.loads(done.stdout)
    timing = next(p for p in doc["plugins"] if p["name"] == "timing")
    assert (timing["status"], timing["distribution"]) == ("active", "passhost-timing")
    assert timing["provides"]["instruments"] == ["timing"]


# -- opt --------------------------------------------------------------------------------------

def test_opt_prints_the_module(tools_host, module_file, capsys):
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR")
    assert status == 0
    assert structural_equal(parse_module(out), parse_module(MODULE_TEXT))
    assert err.startswith("PrintIR():\n")


def test_opt_writes_output_file(tools_host, module_file, tmp_path, capsys):
    target = tmp_path / "out.txt"
    status, out, _ = run(capsys, "opt", str(module_file), "--passes", "Tag{value=7}",
                         "--opt-level", "3", "-o", str(target))
    assert (status, out) == (0, "")
    assert parse_module(target.read_text()).attrs["tagged"] == 7


def test_opt_with_timing_renders_the_profile_to_stderr(plugin_host, module_file, capsys):
    plugin_host.register(importlib.import_module("passhost_timing.plugin"), "timing")
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR",
                           "--instrument", "timing")
    assert status == 0
    assert structural_equal(parse_module(out), parse_module(MODULE_TEXT))
    # the pipeline is one Sequential: the passes are nested (a tab deeper) below it
    assert re.search(r"^sequential: \d+us \[\d+us\]", err, re.M)
    assert re.search(r"^\tPrintIR: \d+us \[\d+us\] \(", err, re.M)


def test_opt_renders_instruments_when_a_pass_fails(tools_host, module_file, capsys):
    tools_host.register(importlib.import_module("passhost_timing.plugin"), "timing")
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR,Fail",
                           "--instrument", "timing")
    assert (status, out) == (1, "")
    assert re.search(r"^\tFail: \d+us", err, re.M)
    assert err.splitlines()[-2:] == ["passhost: error: the pass gave up",
                                     "  while running pass Fail inside sequential"]


def test_opt_level_required_and_disabled_passes(tools_host, module_file, capsys):
    def tagged(*extra: str) -> object:
        status, out, err = run(capsys, "opt", str(module_file), "--passes", "Tag", *extra)
        assert status == 0, err
        return parse_module(out).attrs.get("tagged")

    assert tagged() is None  # opt level 3 > default 2
    assert tagged("--opt-level", "3") == 1
    assert tagged("--required-pass", "Tag") == 1
    assert tagged("--opt-level", "3", "--disabled-pass", "Tag") is None


def test_opt_config_values_are_parsed_by_their_type(tools_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "Tag",
                         "--config", "testing.immutable_module=true", "--config",
                         "tools.level=4")
    assert (status, err) == (0, "")


@pytest.mark.parametrize(("config", "message"), [
    ("tools.level=high", "config option 'tools.level' expects int, found 'high'"),
    ("testing.immutable_module=maybe", "config option 'testing.immutable_module' expects bool"),
    ("tools.levl=1", "unknown config option 'tools.levl'; did you mean 'tools.level'?"),
    ("tools.level", "--pass-config takes KEY=VALUE, found 'tools.level'"),
])
def test_opt_bad_config_names_the_key(tools_host, module_file, capsys, config, message):
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "", "--config", config)
    assert (status, out) == (1, "")
    assert err.startswith(f"passhost: error: {message}")


def test_opt_bad_pipeline_reports_line_and_column(tools_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR{header=x")
    assert status == 1
    assert err.startswith("passhost: error: <pipeline>:1:17: expected ',' or '}'")
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR,\n  Tga")
    assert status == 1
    assert err == ("passhost: error: <pipeline>:2:3: unknown pass or pipeline 'Tga'; did you "
                   "mean 'Tag'?\n")


def test_opt_errors_inside_named_pipelines_print_their_notes(tools_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "broken")
    assert status == 1
    assert err.splitlines() == [
        "passhost: error: <pipeline broken>:1:5: unknown pass or pipeline 'Nope'",
        "  in pipeline 'broken' used at <pipeline>:1:1",
    ]


def test_opt_bad_module_text_reports_line_and_column(tools_host, tmp_path, capsys):
    path = tmp_path / "bad.txt"
    path.write_text(MODULE_TEXT.replace("nn.relu(%x)", "nn.relu(%y)"))
    status, _, err = run(capsys, "opt", str(path), "--passes", "")
    assert status == 1
    assert re.match(rf"passhost: error: {re.escape(str(path))}:4:\d+: ", err)


def test_opt_missing_input_file(tools_host, tmp_path, capsys):
    status, _, err = run(capsys, "opt", str(tmp_path / "none.txt"), "--passes", "")
    assert status == 1
    assert err == f"passhost: error: cannot read {tmp_path / 'none.txt'}: No such file or " \
                  "directory\n"


def test_opt_unknown_instrument_lists_close_matches(plugin_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "",
                         "--instrument", "dump-it")
    assert status == 1
    assert err == "passhost: error: unknown instrument 'dump-it'; did you mean 'dump-ir'?\n"


def test_opt_instrument_with_options(plugin_host, module_file, tmp_path, capsys):
    dump = tmp_path / "dump"
    status, _, _ = run(capsys, "opt", str(module_file), "--passes", "PrintIR",
                       "--instrument", f'dump-ir{{dump_dir="{dump}",refresh=true}}')
    assert status == 0
    assert sorted(p.name for p in dump.iterdir()) == ["000_PrintIR.txt", "001_sequential.txt"]


def test_opt_reads_zoo_models(plugin_host, capsys):
    status, out, _ = run(capsys, "opt", "zoo:mlp", "--passes", "")
    assert status == 0
    assert "nn.dense" in out
    parse_module(out)
    status, _, err = run(capsys, "opt", "zoo:mlq", "--passes", "")
    assert status == 1
    assert err.startswith("passhost: error: unknown zoo model 'mlq'")


def test_opt_output_parses_back_unless_meta_data_is_hidden(plugin_host, tmp_path, capsys):
    x = relay.var("x", shape=(1, 40), dtype="float32")
    const = relay.const(np.arange(40, dtype="float32").reshape(1, 40))
    mod = IRModule.from_expr(relay.Function([x], relay.add(x, const)))
    path = tmp_path / "const.txt"
    path.write_text(mod.astext())
    _, out, _ = run(capsys, "opt", str(path), "--passes", "", "--hide-meta-data")
    assert "metadata omitted" in out
    _, out, _ = run(capsys, "opt", str(path), "--passes", "")
    assert structural_equal(parse_module(out), mod)
    run(capsys, "opt", str(path), "--passes", "", "-o", str(tmp_path / "out.txt"))
    assert structural_equal(parse_module((tmp_path / "out.txt").read_text()), mod)


def test_opt_print_after_change_and_short_options(plugin_host, module_file, capsys):
    status, out, _ = run(capsys, "opt", str(module_file), "--passes", "PrintIR", "-O", "3",
                         "--pass-config", "testing.immutable_module=true",
                         "--print-after-change")
    assert status == 0
    # the initial module is printed; PrintIR changes nothing, so no diff follows
    assert out.startswith("=== initial module ===\n")
    assert "--- before" not in out


def test_opt_level_must_be_a_natural_number(plugin_host, module_file, capsys):
    with pytest.raises(SystemExit):
        main(["opt", str(module_file), "--passes", "", "--opt-level", "-1"])
    assert "expected an integer >= 0, found '-1'" in capsys.readouterr().err


# -- make_instruments -------------------------------------------------------------------------

def test_make_instruments_creates_each_in_order(plugin_host, tmp_path):
    made = make_instruments(["print-after-all", f"dump-ir{{dump_dir={tmp_path}}}"])
    assert [type(i).__name__ for i in made] == ["PrintAfterAll", "DumpIR"]
    assert make_instruments([]) == []


@pytest.mark.parametrize(("spec", "error", "message"), [
    ("timing,dump-ir", CommandError, "an instrument is one NAME or NAME{key=value,...}"),
    ("sequential{dump-ir}", CommandError, "an instrument is one NAME"),
    ("", CommandError, "an instrument is one NAME"),
    ("dump-ir{dump_dir=", ParseError, r"<instrument>:1:18: expected a value for option 'dump_dir'"),
    ("dump-ir{dir=x}", UnknownNameError, "did you mean 'dump_dir'"),
    ("dump-ir{dump_dir=d,refresh=often}", OptionError, "'refresh' expects bool"),
    ("print-after-al", UnknownNameError, "did you mean 'print-after-all'"),
])
def test_make_instruments_errors(plugin_host, spec, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make_instruments([spec])


def test_make_instruments_names_both_providers_of_a_conflict(plugin_host):
    plugin_host.register(Other(), "other")
    plugin_host.register(Other(), "another")
    with pytest.raises(ConflictError, match="'other' and 'another'"):
        make_instruments(["dup"])


def test_registry_listing_of_a_pass_spec_without_options(plugin_host, capsys):
    class Plain:
        @hookimpl
        def passhost_register_passes(self):
            return [PassSpec("Plain", object, 1, ("PrintIR",), "plain")]

    plugin_host.register(Plain(), "plain")
    _, out, _ = run(capsys, "passes", "list")
    assert ["Plain", "1", "PrintIR", "-", "plain", "plain"] in table_rows(out)


# -- opt with the standard graph passes ------------------------------------------------------

def test_opt_runs_standard_passes_on_a_bound_zoo_model(plugin_host, capsys):
    status, out, err = run(capsys, "opt", "zoo:resnet-18", "--bind-params", "-O", "3",
                           "--passes", "SimplifyInference,FoldConstant,FoldScaleAxis")
    assert (status, err) == (0, "")
    main_fn = parse_module(out)["main"]
    assert [p.name_hint for p in main_fn.params] == ["data"]   # the weights are bound
    ops = {getattr(n.op, "name", None) for n in relay.post_order(main_fn)
           if isinstance(n, relay.Call)}
    assert "nn.batch_norm" not in ops and "nn.conv2d" in ops


def test_opt_bind_params_needs_a_zoo_model(plugin_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--bind-params", "--passes", "")
    assert status == 1
    assert "--bind-params applies to zoo models" in err


def test_opt_reports_an_ill_typed_module_with_the_op_and_the_pass(plugin_host, tmp_path,
                                                                   capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text('#[version = "passhost.text/1"]\n\n'
                   "def @main(%x: Tensor[(1, 4), float32], %b: Tensor[(3), float32]) {\n"
                   "  add(%x, %b)\n}\n")
    status, out, err = run(capsys, "opt", str(bad), "--passes", "FoldConstant")
    assert (status, out) == (1, "")
    assert err.splitlines() == [
        "passhost: error: add: argument 'rhs' expected a shape broadcastable with "
        f"Tensor[(1, 4), float32], found Tensor[(3), float32] (at {bad}:4:3)",
        "  while running pass InferType inside FoldConstant inside sequential"]


@pytest.mark.parametrize(("pipeline", "message"), [
    ("ConvertLayout{desired_layouts=nn.conv2dd:NHWC}", "did you mean 'nn.conv2d'"),
    ("ConvertLayout{desired_layouts=nn.conv2d:NCWH}", "ConvertLayout"),
    ("FuseOps{max_depth=deep}", "max_depth"),
    ("AnnotateTarget{kinds=\"\"}", "AnnotateTarget"),
    ("MergeComposite{pattern_table=nope}", "unknown pattern table 'nope'"),
])
def test_opt_reports_bad_pass_options(plugin_host, module_file, capsys, pipeline, message):
    status, out, err = run(capsys, "opt", str(module_file), "--passes", pipeline)
    assert (status, out) == (1, "")
    assert err.startswith("passhost: error:") and message in err, err
