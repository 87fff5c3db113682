"""The plugin host: a pluggy manager plus the registries its plugins fill.

The host is created lazily, on the first lookup of a registered name; ``import passhost``
creates nothing. The built-in plugin (the host's own passes, instruments and config
options) is registered first, the same way as any other plugin; then each installed entry
point is loaded on its own, so a broken plugin is recorded with its status and never takes
the host down.
"""

from __future__ import annotations

import importlib
import sys
import threading
import traceback
from typing import Any

import pluggy
from attrs import define, field, frozen

from passhost._version import __version__
from passhost.errors import PluginError
from passhost.plugins.contract import unknown_hook, unmarked_functions
from passhost.plugins.hookspecs import ALL_HOOKS, PROJECT, REGISTRATION_HOOKS
from passhost.plugins.loading import (
    LoadSettings,
    discover,
    distribution_facts,
    is_compatible,
    passhost_requirement,
)
from passhost.plugins.registry import Registries
from passhost.plugins.spec_checks import spec_problems

#: Name and module of the plugin holding passhost's own registrations.
BUILTIN_PLUGIN = ("builtin", "passhost.builtin_plugin")

#: The statuses a plugin can have (see docs/spec/plugins.md).
STATUSES = ("active", "disabled", "incompatible", "error", "invalid")


@frozen
class PluginFailure:
    """Why a plugin is not active: the exception's type, message and traceback."""

    type: str
    message: str
    traceback: str = ""

    @classmethod
    def from_exception(cls, err: BaseException) -> PluginFailure:
        """The failure described by ``err``."""
        return cls(type(err).__name__, str(err),
                   "".join(traceback.format_exception(type(err), err, err.__traceback__)))


@define
class PluginRecord:
    """What the host knows of one plugin: where it came from, its status, what it provides."""

    name: str
    plugin: Any = None
    builtin: bool = False
    distribution: str | None = None
    version: str | None = None
    entry_point: str | None = None
    module: str | None = None
    status: str = "active"
    requires_passhost: str | None = None
    error: PluginFailure | None = None
    hooks: list[str] = field(factory=list)
    provides: dict[str, list[str]] = field(factory=dict)


class PluginHost:
    """A pluggy manager with the passhost hookspecs, the registries and the plugin records."""

    def __init__(self, trace: bool = False) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        for group in ALL_HOOKS:
            self.pm.add_hookspecs(group)
        self.registries = Registries(self.not_loaded_hint)
        self.records: dict[str, PluginRecord] = {}
        self.trace = trace
        if trace:  # hook calls through the manager (the target hooks) are traced by pluggy
            self.pm.trace.root.setwriter(sys.stderr.write)
            self.pm.enable_tracing()

    def not_loaded_hint(self) -> str:
        """Where an unknown name might come from: the installed plugins that are not loaded
        (disabled, incompatible, broken), as text for an error; empty when all are."""
        idle = [record for record in self.records.values() if record.status != "active"]
        if not idle:
            return ""
        listed = ", ".join(f"{record.name!r} is {record.status}" for record in idle)
        return (f". Installed plugins that are not loaded may provide it: {listed} (see: "
                f"passhost plugins list)")

    def provided_by(self, distribution: str) -> str:
        """Text for an error about a name that ``distribution`` provides: how to install it,
        or the status of its plugin when it is installed but not loaded."""
        from packaging.utils import canonicalize_name

        wanted = canonicalize_name(distribution)
        record = next((r for r in self.records.values()
                       if r.distribution and canonicalize_name(r.distribution) == wanted), None)
        if record is None:
            return (f" (it is provided by the plugin distribution {distribution}; install it "
                    f"with: pip install {distribution})")
        return (f" (it is provided by the plugin distribution {distribution}, which is "
                f"installed but its plugin {record.name!r} is {record.status}; see: passhost "
                f"plugins list)")

    def _trace(self, message: str) -> None:
        if self.trace:
            sys.stderr.write(f"passhost: trace: {message}\n")

    # -- registering plugin objects -------------------------------------------------------
    def register(self, plugin: Any, name: str, *, builtin: bool = False,
                 distribution: str | None = None, record: PluginRecord | None = None,
                 ) -> PluginRecord:
        """Validate ``plugin``, register its hooks and collect what its registration hooks
        return. A broken plugin raises (PluginError when invalid) and leaves nothing behind."""
        if name in self.records:
            raise PluginError(f"a plugin named {name!r} is already registered")
        try:
            self.pm.register(plugin, name)
        except (pluggy.PluginValidationError, ValueError) as err:
            raise PluginError(f"plugin {name!r} is invalid: {err}") from err
        try:
            self._check_hook_names(plugin, name)
            collected = self._collect(plugin, name, check=not builtin)
        except BaseException:
            self.pm.unregister(plugin)
            raise
        record = record or PluginRecord(name, builtin=builtin, distribution=distribution)
        record.plugin = plugin
        record.module = getattr(plugin, "__name__", None) or type(plugin).__module__
        record.hooks = self.hook_names(plugin)
        for attr, specs in collected.items():
            registry = self.registries.by_attr(attr)
            for spec in specs:
                registry.add(spec, name, record.distribution)
            record.provides[attr] = [spec.name for spec in specs]
        self.records[name] = record
        return record

    def unregister(self, name: str) -> None:
        """Remove the plugin ``name`` and everything it registered."""
        record = self.records.pop(name)
        if record.status == "active":
            self.pm.unregister(record.plugin)
            self.registries.remove_provider(name)

    def hook_names(self, plugin: Any) -> list[str]:
        """The names of the hooks ``plugin`` implements, sorted."""
        return sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or ())

    def _check_hook_names(self, plugin: Any, name: str) -> None:
        """Refuse a plugin implementing a hook passhost does not have, or defining a
        ``passhost_*`` function without ``@hookimpl`` (:mod:`.contract`)."""
        problems = [unknown_hook(caller.name)
                    for caller in self.pm.get_hookcallers(plugin) or ()
                    if not caller.has_spec()]
        problems += unmarked_functions(plugin)
        if problems:
            raise PluginError(f"plugin {name!r} is invalid: {'; '.join(problems)}")

    def _collect(self, plugin: Any, name: str, check: bool) -> dict[str, list[Any]]:
        """What the registration hooks return, by registry; with ``check``, refused unless
        every spec meets the contract (the built-in plugin's are checked by its tests, so
        that creating a host stays cheap)."""
        collected: dict[str, list[Any]] = {}
        for caller in self.pm.get_hookcallers(plugin) or ():
            attr = REGISTRATION_HOOKS.get(caller.name)
            if attr is None:
                continue
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    returned: Any = impl.function()
                    specs = list(returned or ())
                    self._trace(f"{name}: {caller.name}() -> "
                                f"[{', '.join(repr(getattr(s, 'name', s)) for s in specs)}]")
                    if check:
                        _check_specs(name, caller.name, attr, specs)
                    collected.setdefault(attr, []).extend(specs)
        return collected

    # -- installed plugins ---------------------------------------------------------------
    def load_builtin(self) -> PluginRecord:
        """Register passhost's own plugin."""
        name, module = BUILTIN_PLUGIN
        return self.register(importlib.import_module(module), name, builtin=True,
                             distribution="passhost",
                             record=PluginRecord(name, builtin=True, distribution="passhost",
                                                 version=__version__, entry_point=module))

    def load_entry_points(self, settings: LoadSettings | None = None) -> None:
        """Load every installed plugin of the entry-point group, one at a time, in a stable
        order, recording each one's status."""
        settings = settings or LoadSettings.from_env()
        for ep in discover():
            self._trace(f"entry point {ep.name} = {ep.value}")
            self._load_one(ep, settings)

    def _load_one(self, ep: Any, settings: LoadSettings) -> None:
        facts = distribution_facts(ep.dist)
        record = PluginRecord(
            ep.name, distribution=facts.name, version=facts.version, entry_point=ep.value,
            module=ep.module, requires_passhost=passhost_requirement(facts))
        if ep.name in self.records:
            other = self.records[ep.name]
            record.status = "error"
            record.error = PluginFailure("PluginError", f"the plugin name {ep.name!r} is "
                                         f"already used by {other.distribution or 'passhost'}")
            self._keep(record, settings)
            return
        if settings.is_disabled(ep.name):
            record.status = "disabled"
        elif not is_compatible(record.requires_passhost, __version__):
            record.status = "incompatible"
            record.error = PluginFailure(
                "PluginError", f"requires passhost{record.requires_passhost}, "
                               f"this is passhost {__version__}")
        if record.status != "active":
            self._keep(record, settings, raise_error=record.status == "incompatible")
            return
        try:
            plugin = ep.load()
            self.register(plugin, ep.name, record=record)
        except PluginError as err:
            record.status, record.error = "invalid", PluginFailure.from_exception(err)
            self._keep(record, settings, raise_error=True, cause=err)
        except (Exception, SystemExit, KeyboardInterrupt) as err:  # a plugin ending the
            # process at import, or interrupted in it, is a broken plugin, not the host's end
            record.status, record.error = "error", PluginFailure.from_exception(err)
            self._keep(record, settings, raise_error=True, cause=err)

    def _keep(self, record: PluginRecord, settings: LoadSettings, raise_error: bool = False,
              cause: BaseException | None = None) -> None:
        """Record a plugin that is not active; in strict mode, raise its failure."""
        self.records[record.name] = record
        if raise_error and settings.strict and record.error is not None:
            raise PluginError(f"plugin {record.name!r} ({record.distribution}) failed to load "
                              f"(status {record.status}): {record.error.message}") from cause

    def conflicts(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """``(kind, name, providers)`` for every name registered by several plugins."""
        return self.registries.conflicts()


def _check_specs(plugin: str, hook: str, attr: str, specs: list[Any]) -> None:
    """Refuse what a registration hook returned when a spec breaks the contract
    (:mod:`.spec_checks`, the checks ``check_plugin`` makes too)."""
    problems = [problem for spec in specs
                for problem in spec_problems(attr, spec)]
    if problems:
        raise PluginError(f"plugin {plugin!r}: {hook}: {'; '.join(problems)}")


_LOCK = threading.RLock()
_HOST: PluginHost | None = None


def create_host(settings: LoadSettings | None = None) -> PluginHost:
    """A new host with the built-in plugin and the installed plugins ``settings`` (default:
    the environment) select."""
    settings = settings or LoadSettings.from_env()
    host = PluginHost(trace=settings.trace)
    host.load_builtin()
    host.load_entry_points(settings)
    return host


def get_host() -> PluginHost:
    """The process-wide plugin host, created (with its plugins loaded) on first use."""
    global _HOST
    if _HOST is None:
        with _LOCK:
            if _HOST is None:
                _HOST = create_host()
    return _HOST


def set_host(host: PluginHost | None) -> PluginHost | None:
    """Install ``host`` as the process-wide host (None: create anew on next use); returns
    the previous one. For tests and tools that need an isolated host."""
    global _HOST
    with _LOCK:
        previous, _HOST = _HOST, host
    return previous
