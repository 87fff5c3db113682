"""Plugins that misbehave while they load: printing (to ``sys.stdout`` or to file
descriptor 1), ending the process (``SystemExit``), being interrupted
(``KeyboardInterrupt``), or registering a lazy factory whose module does not import. The
host records them as broken and keeps working; ``plugins list --json`` stays valid JSON;
``plugins list --check`` finds the factory at once, not at first use."""

from __future__ import annotations

import json
import os
import types

import pytest

from passhost.cli import main
from passhost.plugins import InstrumentSpec, hookimpl, lazy_factory
from passhost.plugins import manager as plugin_manager


class _EntryPoint:
    """An installed plugin's entry point, as importlib.metadata gives it."""

    def __init__(self, name: str, load: object) -> None:
        self.name, self.value, self.module, self.dist = name, f"{name}:plugin", name, None
        self._load = load

    def load(self) -> object:
        return self._load()


def _raising(err: BaseException):
    def load():
        raise err
    return load


def _printing():
    print("hello from a plugin")
    os.write(1, b"and from its C code\n")
    return types.SimpleNamespace()


class _LazyPlugin:
    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("ghost", lazy_factory("passhost_no_such_module", "Ghost"))]


@pytest.fixture
def installed(monkeypatch):
    """Install the given entry points as the only plugins, with a host made afresh."""

    def install(*eps: _EntryPoint) -> None:
        monkeypatch.setattr(plugin_manager, "discover", lambda: list(eps))
        monkeypatch.delenv("PASSHOST_LOAD_PLUGINS", raising=False)
        monkeypatch.delenv("PASSHOST_DISABLE_PLUGINS", raising=False)
        monkeypatch.delenv("PASSHOST_STRICT_PLUGINS", raising=False)
        monkeypatch.setattr(plugin_manager, "_HOST", None)  # the old host comes back after

    return install


@pytest.mark.parametrize("err", [SystemExit(3), KeyboardInterrupt(), ImportError("gone")])
def test_a_plugin_failing_at_import_is_an_error_and_the_host_keeps_working(installed, capsys,
                                                                            err):
    installed(_EntryPoint("quits", _raising(err)))
    status = main(["plugins", "list", "--json"])
    out, _ = capsys.readouterr()
    assert status == 0
    plugins = {p["name"]: p for p in json.loads(out)["plugins"]}
    assert plugins["quits"]["status"] == "error"
    assert plugins["quits"]["error"]["type"] == type(err).__name__
    assert main(["plugins", "list", "--check"]) == 1
    assert "plugin 'quits' has status error" in capsys.readouterr().err


def test_a_plugin_printing_while_it_loads_cannot_spoil_the_json(installed, capfd):
    installed(_EntryPoint("chatty", _printing))
    assert main(["plugins", "list", "--json"]) == 0
    out, err = capfd.readouterr()
    assert {p["name"] for p in json.loads(out)["plugins"]} >= {"builtin", "chatty"}
    assert "hello from a plugin" in err and "and from its C code" in err
    assert main(["instruments", "list", "--json"]) == 0
    json.loads(capfd.readouterr().out)


def test_check_imports_every_lazy_factory(installed, capsys):
    installed(_EntryPoint("lazy", lambda: _LazyPlugin()))
    assert main(["plugins", "list"]) == 0  # registering imported nothing
    capsys.readouterr()
    assert main(["plugins", "list", "--check"]) == 1
    err = capsys.readouterr().err
    assert ("check failed: instrument 'ghost' of plugin 'lazy': its factory fails to import: "
            "PluginError: passhost_no_such_module.Ghost cannot be imported: "
            "ModuleNotFoundError: No module named 'passhost_no_such_module'") in err
    assert "'builtin'" not in err  # the built-in plugin's own factories all import
    # used anyway: one error line, no traceback
    assert main(["opt", "-", "--passes", "", "--instrument", "ghost"]) == 1
    assert capsys.readouterr().err.startswith(
        "passhost: error: passhost_no_such_module.Ghost cannot be imported")
