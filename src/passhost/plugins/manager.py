"""The plugin host: a pluggy manager plus the registries its plugins fill.

The host is created lazily, on the first lookup of a registered name; ``import passhost``
creates nothing. The built-in plugin (the host's own passes, instruments and config
options) is registered the same way as any other plugin.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

import pluggy
from attrs import define, field

from passhost.errors import PluginError
from passhost.plugins.hookspecs import ALL_HOOKS, PROJECT, REGISTRATION_HOOKS
from passhost.plugins.options import OptionSpec
from passhost.plugins.registry import Registries
from passhost.plugins.specs import InstrumentSpec, PassSpec, PipelineSpec

#: Name and module of the plugin holding passhost's own registrations.
BUILTIN_PLUGIN = ("builtin", "passhost.builtin_plugin")

_SPEC_CLASSES: dict[str, tuple[type, ...]] = {
    "passes": (PassSpec,),
    "instruments": (InstrumentSpec,),
    "config_options": (OptionSpec,),
    "pipelines": (PipelineSpec,),
    "targets": (object,),
}


@define
class PluginRecord:
    """What the host knows of one plugin: where it came from and what it provides."""

    name: str
    plugin: Any
    builtin: bool = False
    distribution: str | None = None
    provides: dict[str, list[str]] = field(factory=dict)


class PluginHost:
    """A pluggy manager with the passhost hookspecs, and the registries."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        for group in ALL_HOOKS:
            self.pm.add_hookspecs(group)
        self.registries = Registries()
        self.records: dict[str, PluginRecord] = {}

    def register(self, plugin: Any, name: str, *, builtin: bool = False,
                 distribution: str | None = None) -> PluginRecord:
        """Validate ``plugin``, register its hooks and collect what its registration hooks
        return; on any error nothing of it stays registered."""
        if name in self.records:
            raise PluginError(f"a plugin named {name!r} is already registered")
        try:
            self.pm.register(plugin, name)
        except (pluggy.PluginValidationError, ValueError) as err:
            raise PluginError(f"plugin {name!r} is invalid: {err}") from err
        record = PluginRecord(name, plugin, builtin, distribution)
        try:
            self._check_hook_names(plugin, name)
            collected = self._collect(plugin, name)
        except BaseException:
            self.pm.unregister(plugin)
            raise
        for attr, specs in collected.items():
            registry = self.registries.by_attr(attr)
            for spec in specs:
                registry.add(spec, name, distribution)
            record.provides[attr] = [spec.name for spec in specs]
        self.records[name] = record
        return record

    def unregister(self, name: str) -> None:
        """Remove the plugin ``name`` and everything it registered."""
        record = self.records.pop(name)
        self.pm.unregister(record.plugin)
        self.registries.remove_provider(name)

    def hook_names(self, plugin: Any) -> list[str]:
        """The names of the hooks ``plugin`` implements, sorted."""
        return sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or ())

    def _check_hook_names(self, plugin: Any, name: str) -> None:
        for caller in self.pm.get_hookcallers(plugin) or ():
            if not caller.has_spec():
                raise PluginError(f"plugin {name!r} implements {caller.name!r}, "
                                  f"which is not a passhost hook")

    def _collect(self, plugin: Any, name: str) -> dict[str, list[Any]]:
        collected: dict[str, list[Any]] = {}
        for caller in self.pm.get_hookcallers(plugin) or ():
            attr = REGISTRATION_HOOKS.get(caller.name)
            if attr is None:
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    specs = list(impl.function() or ())
                    _check_specs(name, caller.name, attr, specs)
                    collected.setdefault(attr, []).extend(specs)
        return collected


def _check_specs(plugin: str, hook: str, attr: str, specs: list[Any]) -> None:
    classes = _SPEC_CLASSES[attr]
    for spec in specs:
        if not isinstance(spec, classes) or not isinstance(getattr(spec, "name", None), str):
            expected = " or ".join(c.__name__ for c in classes)
            raise PluginError(f"plugin {plugin!r}: {hook} returned {spec!r}, expected {expected}")


_LOCK = threading.Lock()
_HOST: PluginHost | None = None


def get_host() -> PluginHost:
    """The process-wide plugin host, created (with its plugins loaded) on first use."""
    global _HOST
    if _HOST is None:
        with _LOCK:
            if _HOST is None:
                host = PluginHost()
                name, module = BUILTIN_PLUGIN
                host.register(importlib.import_module(module), name, builtin=True,
                              distribution="passhost")
                _HOST = host
    return _HOST


def set_host(host: PluginHost | None) -> PluginHost | None:
    """Install ``host`` as the process-wide host (None: create anew on next use); returns
    the previous one. For tests and tools that need an isolated host."""
    global _HOST
    with _LOCK:
        previous, _HOST = _HOST, host
    return previous
