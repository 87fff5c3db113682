"""Plugins installed for real: wheels of passhost, passhost-timing and the test distributions
of ``tests/plugin_dists`` are built and installed into one fresh virtual environment, and
every check runs that environment's own ``passhost`` console script (or its ``python``).

No entry point is faked: the host finds the plugins through the installed distributions'
metadata, exactly as for a user. One environment serves every scenario; each check picks the
plugins it looks at with ``PASSHOST_LOAD_PLUGINS`` (or the other ``PASSHOST_*_PLUGINS``
settings) in the environment of the process it runs.

Every test distribution's package creates a marker file when imported (see
``tests/plugin_dists/*/passhost_test_*/__init__.py``), so a check can prove that a plugin was
*not* imported.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from fresh_env import clean_env, copy_source

ROOT = Path(__file__).resolve().parents[1]
TIMING_DIR = ROOT / "plugins" / "timing"
DISTS_DIR = Path(__file__).resolve().with_name("plugin_dists")

#: entry-point name -> (distribution, package) of each test distribution in plugin_dists/.
TEST_PLUGINS = {
    "broken-import": ("passhost-test-broken-import", "passhost_test_broken_import"),
    "dup-a": ("passhost-test-dup-a", "passhost_test_dup_a"),
    "dup-b": ("passhost-test-dup-b", "passhost_test_dup_b"),
    "misspelled-hook": ("passhost-test-misspelled-hook", "passhost_test_misspelled_hook"),
    "needs-old-passhost": ("passhost-test-needs-old-passhost",
                           "passhost_test_needs_old_passhost"),
}
#: Installed with --no-deps: its requirement ``passhost<0`` excludes every passhost.
NO_DEPS = ("needs-old-passhost",)
#: Every plugin the host lists in the fresh environment, in load order (sorted by
#: distribution, then entry-point name, after the built-in plugin).
ALL_PLUGINS = ["builtin", "broken-import", "dup-a", "dup-b", "misspelled-hook",
               "needs-old-passhost", "timing"]
#: Used when a pyproject's build requirements cannot be read (Python 3.10 has no tomllib).
DEFAULT_BUILD_REQUIRES = ("setuptools>=68", "wheel")
#: A line of PassTimingInstrument.render() for a pass without nested passes.
TIMING_LINE = re.compile(r"^(\w+): (\d+)us \[(\d+)us\] \((\d+\.\d\d)%; (\d+\.\d\d)%\)$")

SUBPROCESS_TIMEOUT = 300


def _version(pyproject: Path) -> str:
    """The ``[project]`` version of a pyproject.toml."""
    found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
    assert found, f"no version in {pyproject}"
    return found[1]


def _build_requires(pyprojects: Iterable[Path]) -> list[str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return list(DEFAULT_BUILD_REQUIRES)
    requires: list[str] = []
    for path in pyprojects:
        for req in tomllib.loads(path.read_text())["build-system"]["requires"]:
            if req not in requires:
                requires.append(req)
    return requires


def _pip(python: Path, *args: str, cwd: Path) -> None:
    cmd = [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", "-q", *args]
    proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT)
    if proc.returncode:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}",
                    pytrace=False)


@dataclass
class Result:
    """A finished process of the fresh environment, and which test packages it imported."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    imported: set[str]

    def json(self) -> Any:
        assert self.returncode == 0, self.describe()
        return json.loads(self.stdout)

    def describe(self) -> str:
        return (f"{' '.join(self.args)} exited {self.returncode}\n--- stdout\n{self.stdout}"
                f"--- stderr\n{self.stderr}")


class FreshVenv:
    """The fresh environment: runs its ``passhost`` script or its ``python``."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root = root
        self.bin = root / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bin / ("python.exe" if os.name == "nt" else "python")
        self.work = work

    def run(self, cmd: Sequence[str], env: Mapping[str, str] | None = None) -> Result:
        markers = Path(tempfile.mkdtemp(prefix="markers-", dir=self.work))
        extra = {"PASSHOST_TEST_MARKER_DIR": str(markers), **(env or {})}
        proc = subprocess.run(list(cmd), cwd=self.work, env=clean_env(extra, self.bin),
                              capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
        imported = {p.name for p in markers.iterdir()}
        return Result(list(cmd), proc.returncode, proc.stdout, proc.stderr, imported)

    def passhost(self, *args: str, env: Mapping[str, str] | None = None) -> Result:
        script = self.bin / ("passhost.exe" if os.name == "nt" else "passhost")
        return self.run([str(script), *args], env)

    def run_python(self, code: str, env: Mapping[str, str] | None = None) -> Result:
        return self.run([str(self.python), "-c", textwrap.dedent(code)], env)

    def plugins(self, *args: str, env: Mapping[str, str] | None = None,
                ) -> dict[str, dict[str, Any]]:
        """``plugins list --json``'s plugins by name (the document is checked for shape)."""
        doc = self.passhost("plugins", "list", "--json", *args, env=env).json()
        assert doc["schema_version"] == 1
        return {p["name"]: p for p in doc["plugins"]}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> FreshVenv:
    """One fresh virtual environment holding passhost, passhost-timing and every test
    distribution, each installed from a wheel built here; passhost's dependencies come
    from the package index (pip's cache)."""
    base = tmp_path_factory.mktemp("plugin-installs")
    sources = base / "sources"
    projects = [
        copy_source(ROOT, sources / "passhost", only_top_files_and=["src"]),
        copy_source(TIMING_DIR, sources / "passhost-timing"),
    ]
    for ep_name in TEST_PLUGINS:
        projects.append(copy_source(DISTS_DIR / ep_name, sources / ep_name))
    root = base / "venv"
    proc = subprocess.run([sys.executable, "-m", "venv", str(root)], env=clean_env(),
                          capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    fresh = FreshVenv(root, base)
    # Build in the fresh environment, with its own setuptools: no isolated build
    # environment per project, and nothing but the build tools fetched from the index.
    _pip(fresh.python, "install", *_build_requires(p / "pyproject.toml" for p in projects),
         cwd=base)
    wheelhouse = base / "wheelhouse"
    _pip(fresh.python, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheelhouse),
         *(str(p) for p in projects), cwd=base)

    def wheel(dist: str) -> str:
        (found,) = wheelhouse.glob(dist.replace("-", "_") + "-*.whl")
        return str(found)

    regular = ["passhost", "passhost-timing",
               *(dist for ep, (dist, _) in TEST_PLUGINS.items() if ep not in NO_DEPS)]
    _pip(fresh.python, "install", *(wheel(dist) for dist in regular), cwd=base)
    _pip(fresh.python, "install", "--no-deps",
         *(wheel(TEST_PLUGINS[ep][0]) for ep in NO_DEPS), cwd=base)
    return fresh


def _load(*names: str) -> dict[str, str]:
    return {"PASSHOST_LOAD_PLUGINS": ",".join(names)}


def _table_rows(text: str) -> dict[str, list[str]]:
    """The rows of the ``plugins list`` table by plugin name (detail lines left out)."""
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "VERSION", "STATUS", "PROVIDES", "HOOKS"], text
    rows = {}
    for line in lines[1:]:
        if line and not line[0].isspace() and not line.startswith("("):
            cells = line.split()
            rows[cells[0]] = cells
    return rows


def _statuses(plugins: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {name: p["status"] for name, p in plugins.items()}


# -- a good plugin: passhost-timing -----------------------------------------------------------

def test_timing_is_listed_active_with_its_distribution(venv):
    result = venv.passhost("plugins", "list", "--json", env=_load("timing"))
    doc = result.json()
    assert doc["schema_version"] == 1
    assert doc["passhost_version"] == _version(ROOT / "pyproject.toml")
    assert doc["entry_point_group"] == "passhost.plugins"
    assert doc["conflicts"] == []
    plugins = {p["name"]: p for p in doc["plugins"]}
    assert list(plugins) == ALL_PLUGINS
    timing = plugins["timing"]
    assert timing["status"] == "active"
    assert timing["builtin"] is False
    assert timing["distribution"] == "passhost-timing"
    assert timing["version"] == _version(TIMING_DIR / "pyproject.toml")
    assert timing["entry_point"] == "passhost_timing.plugin"
    assert timing["module"] == "passhost_timing.plugin"
    assert SpecifierSet(timing["requires_passhost"]) == SpecifierSet(">=0.1,<0.2")
    assert timing["hooks"] == ["passhost_register_instruments"]
    assert timing["provides"]["instruments"] == ["timing"]
    assert timing["error"] is None
    builtin = plugins["builtin"]
    assert (builtin["status"], builtin["builtin"]) == ("active", True)
    assert "PrintIR" in builtin["provides"]["passes"]
    assert result.imported == set()

    rows = _table_rows(venv.passhost("plugins", "list", env=_load("timing")).stdout)
    assert rows["timing"][1:3] == [timing["version"], "active"]


def test_timing_instrument_times_passes_in_the_fresh_environment(venv):
    result = venv.run_python("""
        import time

        import passhost
        import passhost.relay as relay
        import passhost_timing
        from passhost.ir.module import IRModule
        from passhost.plugins import get_host
        from passhost.transform import PassContext, module_pass

        @module_pass(name="SleepTwoMs")
        def sleep_two_ms(mod, ctx):
            time.sleep(0.002)
            return mod

        @module_pass(name="Quick")
        def quick(mod, ctx):
            return mod

        x = relay.var("x", shape=(1, 4), dtype="float32")
        mod = IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))
        timing = get_host().registries.instruments.get("timing").create()
        with PassContext(instruments=[timing]):
            quick(sleep_two_ms(mod))
            print(timing.render(), end="")
        print("passhost from", passhost.__file__)
        print("passhost_timing from", passhost_timing.__file__)
        """, env=_load("timing"))
    assert result.returncode == 0, result.describe()
    *lines, passhost_from, timing_from = result.stdout.splitlines()
    site = str(venv.root)
    assert passhost_from.startswith("passhost from " + site), passhost_from
    assert timing_from.startswith("passhost_timing from " + site), timing_from
    rows = [TIMING_LINE.match(line) for line in lines]
    assert all(rows) and len(rows) == 2, result.stdout
    assert [m[1] for m in rows] == ["SleepTwoMs", "Quick"]
    duration, self_time = int(rows[0][2]), int(rows[0][3])
    assert duration >= 2000 and self_time == duration  # no nested pass


# -- bad plugins ------------------------------------------------------------------------------

def test_broken_import_is_an_error_and_the_host_keeps_working(venv):
    env = _load("broken-import", "timing")
    result = venv.passhost("plugins", "list", "--json", env=env)
    plugins = {p["name"]: p for p in result.json()["plugins"]}
    broken = plugins["broken-import"]
    assert broken["status"] == "error"
    assert broken["distribution"] == "passhost-test-broken-import"
    assert broken["error"]["type"] == "RuntimeError"
    assert "broken on purpose" in broken["error"]["message"]
    assert not broken["error"].get("traceback")  # only with -v
    assert broken["provides"]["instruments"] == []
    assert plugins["timing"]["status"] == "active"
    assert result.imported == {"passhost_test_broken_import"}  # it was tried

    verbose = venv.passhost("plugins", "list", "--json", "-v", env=env).json()
    error = next(p for p in verbose["plugins"] if p["name"] == "broken-import")["error"]
    assert "Traceback (most recent call last)" in error["traceback"]
    assert "_check_environment" in error["traceback"]

    table = venv.passhost("plugins", "list", env=env)
    assert table.returncode == 0, table.describe()
    assert _table_rows(table.stdout)["broken-import"][2] == "error"
    assert "RuntimeError: passhost-test-broken-import is broken on purpose" in table.stdout
    assert "Traceback" not in table.stdout
    table_v = venv.passhost("plugins", "list", "-v", env=env)
    assert table_v.returncode == 0, table_v.describe()
    assert "Traceback (most recent call last)" in table_v.stdout
    assert 'passhost_test_broken_import/plugin.py", line' in table_v.stdout.replace("\\", "/")
    assert "in _check_environment" in table_v.stdout

    passes = venv.passhost("passes", "list", env=env)
    assert passes.returncode == 0, passes.describe()
    assert "PrintIR" in passes.stdout
    instruments = venv.passhost("instruments", "list", env=env)
    assert instruments.returncode == 0, instruments.describe()
    assert "timing" in instruments.stdout


def test_needs_old_passhost_is_incompatible_and_not_imported(venv):
    result = venv.passhost("plugins", "list", "--json", env=_load("needs-old-passhost"))
    old = {p["name"]: p for p in result.json()["plugins"]}["needs-old-passhost"]
    assert old["status"] == "incompatible"
    assert old["distribution"] == "passhost-test-needs-old-passhost"
    assert old["version"] == _version(DISTS_DIR / "needs-old-passhost" / "pyproject.toml")
    assert old["requires_passhost"] == "<0"
    assert old["hooks"] == [] and old["provides"]["instruments"] == []
    assert "<0" in old["error"]["message"]
    assert result.imported == set()

    table = venv.passhost("plugins", "list", env=_load("needs-old-passhost"))
    assert _table_rows(table.stdout)["needs-old-passhost"][2] == "incompatible"
    assert table.imported == set()


def test_misspelled_hook_is_invalid_and_leaves_nothing_registered(venv):
    env = _load("misspelled-hook")
    result = venv.passhost("plugins", "list", "--json", env=env)
    bad = {p["name"]: p for p in result.json()["plugins"]}["misspelled-hook"]
    assert bad["status"] == "invalid"
    assert "passhost_register_instrumants" in bad["error"]["message"]
    assert bad["provides"]["passes"] == []
    passes = venv.passhost("passes", "list", "--json", env=env).json()["passes"]
    names = [p["name"] for p in passes]
    assert "PrintIR" in names and "MisspelledHookPass" not in names
    table = venv.passhost("plugins", "list", env=env)
    assert _table_rows(table.stdout)["misspelled-hook"][2] == "invalid"


def test_two_plugins_registering_one_instrument_conflict(venv):
    env = _load("dup-a", "dup-b")
    doc = venv.passhost("plugins", "list", "--json", env=env).json()
    plugins = {p["name"]: p for p in doc["plugins"]}
    for name in ("dup-a", "dup-b"):
        assert plugins[name]["status"] == "active"
        assert plugins[name]["provides"]["instruments"] == ["dup"]
    (conflict,) = doc["conflicts"]
    assert conflict["kind"] in ("instrument", "instruments")
    assert conflict["name"] == "dup"
    assert sorted(conflict["providers"]) == ["dup-a", "dup-b"]

    table = venv.passhost("plugins", "list", env=env).stdout
    rows = _table_rows(table)
    assert rows["dup-a"][2] == rows["dup-b"][2] == "active"
    conflict_lines = [line.strip() for line in table.splitlines() if "conflict" in line]
    assert any("'dup'" in line and "dup-b" in line for line in conflict_lines), table
    assert any("'dup'" in line and "dup-a" in line for line in conflict_lines), table

    used = venv.passhost("opt", "zoo:mlp", "--passes", "PrintIR", "--instrument", "dup",
                         env=env)
    assert used.returncode != 0, used.describe()
    assert "Traceback" not in used.stderr
    assert "'dup'" in used.stderr and "dup-a" in used.stderr and "dup-b" in used.stderr

    python = venv.run_python("""
        from passhost.errors import ConflictError
        from passhost.plugins import get_host
        try:
            get_host().registries.instruments.get("dup")
        except ConflictError as err:
            print("ConflictError:", err)
        """, env=env)
    assert python.returncode == 0, python.describe()
    assert python.stdout.startswith("ConflictError:")
    assert "dup-a" in python.stdout and "dup-b" in python.stdout


def test_every_plugin_at_once(venv):
    """Nothing selected: every installed plugin is tried (the incompatible one is still not
    imported), each has its own status, and the host works."""
    result = venv.passhost("plugins", "list", "--json")
    doc = result.json()
    assert [p["name"] for p in doc["plugins"]] == ALL_PLUGINS
    assert _statuses({p["name"]: p for p in doc["plugins"]}) == {
        "builtin": "active", "broken-import": "error", "dup-a": "active", "dup-b": "active",
        "misspelled-hook": "invalid", "needs-old-passhost": "incompatible",
        "timing": "active"}
    assert [(c["name"], sorted(c["providers"])) for c in doc["conflicts"]] == [
        ("dup", ["dup-a", "dup-b"])]
    assert result.imported == {"passhost_test_broken_import", "passhost_test_dup_a",
                               "passhost_test_dup_b", "passhost_test_misspelled_hook"}
    opt = venv.passhost("opt", "zoo:mlp", "--passes", "PrintIR", "--instrument", "timing")
    assert opt.returncode == 0, opt.describe()
    profile = [line.strip() for line in opt.stderr.splitlines() if "us [" in line]
    assert any(TIMING_LINE.match(line) and line.startswith("PrintIR:") for line in profile), (
        opt.describe())


# -- user controls ----------------------------------------------------------------------------

def test_load_none_lists_only_the_builtin_plugin(venv):
    env = {"PASSHOST_LOAD_PLUGINS": ""}
    plugins = venv.plugins(env=env)
    assert list(plugins) == ALL_PLUGINS  # the JSON lists disabled plugins too
    assert _statuses(plugins) == {name: "active" if name == "builtin" else "disabled"
                                  for name in ALL_PLUGINS}
    table = venv.passhost("plugins", "list", env=env)
    assert table.returncode == 0, table.describe()
    assert list(_table_rows(table.stdout)) == ["builtin"]
    assert table.imported == set()


def test_load_only_timing(venv):
    env = _load("timing")
    plugins = venv.plugins(env=env)
    assert _statuses(plugins) == {
        name: "active" if name in ("builtin", "timing") else "disabled"
        for name in ALL_PLUGINS}
    for name in TEST_PLUGINS:
        assert plugins[name]["error"] is None and plugins[name]["hooks"] == []
        assert plugins[name]["distribution"] == TEST_PLUGINS[name][0]
    table = venv.passhost("plugins", "list", env=env)
    assert list(_table_rows(table.stdout)) == ["builtin", "timing"]
    table_all = venv.passhost("plugins", "list", "--all", env=env)
    rows = _table_rows(table_all.stdout)
    assert list(rows) == ALL_PLUGINS
    assert all(rows[name][2] == "disabled" for name in TEST_PLUGINS)
    assert table.imported == table_all.imported == set()


def test_disable_timing(venv):
    plugins = venv.plugins(env={"PASSHOST_DISABLE_PLUGINS": "timing"})
    statuses = _statuses(plugins)
    assert statuses["timing"] == "disabled"
    assert statuses["builtin"] == statuses["dup-a"] == "active"
    assert statuses["broken-import"] == "error"
    table = venv.passhost("plugins", "list", env={"PASSHOST_DISABLE_PLUGINS": "timing"})
    assert "timing" not in _table_rows(table.stdout)


def test_disable_everything(venv):
    result = venv.passhost("plugins", "list", "--json",
                           env={"PASSHOST_DISABLE_PLUGINS": "*"})
    plugins = {p["name"]: p for p in result.json()["plugins"]}
    assert _statuses(plugins) == {name: "active" if name == "builtin" else "disabled"
                                  for name in ALL_PLUGINS}
    assert result.imported == set()
    check = venv.passhost("plugins", "list", "--check", env={"PASSHOST_DISABLE_PLUGINS": "*"})
    assert check.returncode == 0, check.describe()


def test_command_line_equivalents(venv):
    none = venv.passhost("--no-plugins", "plugins", "list", "--json").json()
    assert [p["name"] for p in none["plugins"] if p["status"] != "disabled"] == ["builtin"]
    some = venv.passhost("-p", "no:timing", "-p", "no:broken-import", "plugins", "list",
                         "--json", env=_load("timing", "broken-import", "dup-a")).json()
    assert {p["name"]: p["status"] for p in some["plugins"]}["dup-a"] == "active"
    assert {p["name"] for p in some["plugins"] if p["status"] == "active"} == {
        "builtin", "dup-a"}


@pytest.mark.parametrize(("plugin", "status"), [
    ("broken-import", "error"), ("misspelled-hook", "invalid"),
    ("needs-old-passhost", "incompatible"),
])
def test_strict_mode_raises_the_plugin_failure(venv, plugin, status):
    env = {**_load(plugin, "timing"), "PASSHOST_STRICT_PLUGINS": "1"}
    result = venv.passhost("plugins", "list", env=env)
    assert result.returncode != 0, result.describe()
    assert f"'{plugin}'" in result.stderr and status in result.stderr
    assert TEST_PLUGINS[plugin][0] in result.stderr  # the distribution
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_strict_mode_passes_good_plugins(venv):
    env = {**_load("timing", "dup-a"), "PASSHOST_STRICT_PLUGINS": "1"}
    result = venv.passhost("plugins", "list", env=env)
    assert result.returncode == 0, result.describe()
    assert _table_rows(result.stdout)["timing"][2] == "active"


def test_trace_writes_hook_calls_to_stderr(venv):
    env = {**_load("timing"), "PASSHOST_TRACE_PLUGINS": "1"}
    result = venv.passhost("plugins", "list", env=env)
    assert result.returncode == 0, result.describe()
    assert "passhost_register_instruments" in result.stderr, result.describe()
    quiet = venv.passhost("plugins", "list", env=_load("timing"))
    assert quiet.stderr == ""


@pytest.mark.parametrize(("load", "code"), [
    (("broken-import",), 1), (("needs-old-passhost",), 1), (("misspelled-hook",), 1),
    (("dup-a", "dup-b"), 1), (("timing",), 0), (("timing", "dup-a"), 0),
])
def test_check_exit_status(venv, load, code):
    for extra in ((), ("--json",)):
        result = venv.passhost("plugins", "list", "--check", *extra, env=_load(*load))
        assert result.returncode == code, result.describe()
        if code:
            assert "check failed" in result.stderr and load[0] in result.stderr


def test_version_loads_no_plugin(venv):
    """``passhost --version`` with every plugin installed and none deselected: no plugin
    module is imported, and neither is the plugin host."""
    result = venv.passhost("--version", env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.returncode == 0, result.describe()
    assert result.stdout.strip() == f"passhost {_version(ROOT / 'pyproject.toml')}"
    assert result.imported == set()
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "passhost.cli" in imported  # the import log is real
    assert not {m for m in imported
                if m.startswith(("passhost_timing", "passhost_test_", "passhost.plugins"))}
