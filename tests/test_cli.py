"""The ``passhost`` command: plugin and registry listings and the global plugin options
(``opt`` is in test_cli_opt.py)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from cli_helpers import (
    BUILD_PASSES,
    BUILTIN_PROVIDES,
    ENV_VARS,
    GRAPH_PASSES,
    HEADER,
    PLUGIN_KEYS,
    PROVIDES_KEYS,
    Other,
    run,
    table_rows,
)
from passhost.cli import main
from passhost.plugins import (
    PluginFailure,
    PluginRecord,
    set_host,
)
from passhost.testing import imported_modules


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
        ["builtin (built-in)", "0.1.0", "active", BUILTIN_PROVIDES, "8"]]
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
        ["builtin (built-in)", "0.1.0", "active", BUILTIN_PROVIDES, "8"],
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
    assert f"    path: {importlib.import_module('cli_helpers').__file__}" in lines  # Tools
    assert ("    entry point: broken = passhost_broken.plugin (distribution passhost-broken "
            "1.0)") in lines
    assert ("    entry point: old = passhost_old.plugin (distribution passhost-old 0.0.1, "
            "requires passhost>=9)") in lines
    assert "    hooks: passhost_register_config_options, passhost_register_instruments, " \
           "passhost_register_operators, passhost_register_passes, " \
           "passhost_register_pattern_tables, passhost_register_pipelines, " \
           "passhost_relay_to_tir, passhost_tir_to_runtime" in lines
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
    operators = builtin["provides"]["operators"]
    assert len(operators) == 133 and operators == sorted(operators)
    assert {"add", "nn.conv2d", "qnn.conv2d", "image.resize"} <= set(operators)
    assert builtin == {
        "name": "builtin", "entry_point": "passhost.builtin_plugin", "distribution": "passhost",
        "version": "0.1.0", "module": "passhost.builtin_plugin", "status": "active",
        "builtin": True, "requires_passhost": None,
        "hooks": ["passhost_register_config_options", "passhost_register_instruments",
                  "passhost_register_operators", "passhost_register_passes",
                  "passhost_register_pattern_tables",
                  "passhost_register_pipelines", "passhost_relay_to_tir",
                  "passhost_tir_to_runtime"],
        "provides": {"targets": [], "passes": [*GRAPH_PASSES, *BUILD_PASSES],
                     "instruments": ["print-before-all", "print-after-all", "print-passes",
                                     "dump-ir", "print-after-change", "validate-numerics",
                                     "trace-events", "reproducer", "execution-limit"],
                     "config_options": ["testing.immutable_module", "relay.FuseOps.max_depth",
                                        "relay.FuseOps.chain_depthwise",
                                        "relay.FuseOps.scale_pointwise",
                                        "debug.max_pass_executions", "debug.reproducer_dir",
                                        "debug.trace_events"],
                     "pipelines": ["optimize"], "pattern_tables": ["example"],
                     "operators": operators},
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
        ["relay.FuseOps.chain_depthwise", "bool", "true", "builtin",
         "FuseOps groups a depthwise convolution with the 1x1 one giving its data"],
        ["relay.FuseOps.max_depth", "int", "256", "builtin",
         "the most operators FuseOps puts in one Primitive function"],
        ["relay.FuseOps.scale_pointwise", "bool", "true", "builtin",
         "FuseOps groups a 1x1 convolution with the per-channel scaling of its data"],
        ["testing.immutable_module", "bool", "false", "builtin",
         "check that every pass leaves its input module unchanged"],
        ["tools.level", "int", "3", "tools", "how hard to try"],
    ]
    doc = json.loads(run(capsys, "config", "list", "--json")[1])
    assert doc["config_options"][7] == {
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


