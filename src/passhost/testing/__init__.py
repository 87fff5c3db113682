"""A testing kit for plugin authors: an isolated plugin host, temporary registration and a
check of the plugin contract.

- :func:`fresh_host` / :func:`use_host`: a plugin host holding only passhost's built-in plugin
  (no installed entry point is loaded), optionally installed as the process-wide host;
- :func:`registered`: register a plugin object for the duration of a ``with`` block;
- :func:`check_plugin`: validate a plugin the way the host will, listing every problem.

The pytest fixtures ``plugin_host`` and ``register_plugin`` live in
``passhost.testing.pytest_plugin``; a plugin's ``conftest.py`` enables them with
``pytest_plugins = ["passhost.testing.pytest_plugin"]``. Importing this module does not
import pytest.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pluggy

from passhost.errors import ParseError, PluginError
from passhost.plugins.contract import unknown_hook, unmarked_functions
from passhost.plugins.hookspecs import (
    ALL_HOOKS,
    INSTRUMENT_CALLBACKS,
    PROJECT,
    REGISTRATION_HOOKS,
)
from passhost.plugins.manager import BUILTIN_PLUGIN, PluginHost, PluginRecord, get_host, set_host
from passhost.plugins.registry import Registries
from passhost.plugins.spec_checks import expected_spec, spec_problems
from passhost.plugins.specs import PipelineSpec

__all__ = [
    "PluginCheckError", "check_plugin", "fresh_host", "imported_modules", "plugin_name",
    "registered", "use_host",
]


_MODULES_MARKER = "@@passhost.testing.imported_modules@@"


def imported_modules(code: str, prefixes: tuple[str, ...]) -> tuple[str, list[str]]:
    """Run ``code`` in a fresh interpreter; return its standard output and the sorted names
    of the modules it left imported that are one of ``prefixes`` or inside one. For checking
    that loading a plugin (or starting a command) stays light."""
    probe = (f"\nimport sys as _sys\nprint({_MODULES_MARKER!r}, sorted(m for m in _sys.modules"
             f" if m in {prefixes!r} or m.startswith(tuple(p + '.' for p in {prefixes!r}))))")
    done = subprocess.run([sys.executable, "-c", code + probe], capture_output=True, text=True,
                          check=True)
    output, _, listing = done.stdout.rpartition(_MODULES_MARKER)
    return output, ast.literal_eval(listing.strip())


# -- hosts ---------------------------------------------------------------------------------

def fresh_host() -> PluginHost:
    """A new plugin host holding only passhost's built-in plugin: no entry point loaded."""
    host = PluginHost()
    host.load_builtin()
    return host


@contextmanager
def use_host(host: PluginHost | None = None) -> Iterator[PluginHost]:
    """Install ``host`` (default: :func:`fresh_host`) as the process-wide plugin host for the
    block, so that ``get_pass``, pipelines and ``get_host()`` see it; the previous host is
    restored afterwards."""
    host = fresh_host() if host is None else host
    previous = set_host(host)
    try:
        yield host
    finally:
        set_host(previous)


def plugin_name(plugin: Any) -> str:
    """The name a plugin is registered under when none is given: a module's or a class's
    name, or the class name of any other object."""
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__
    if isinstance(plugin, type):
        return plugin.__qualname__
    return type(plugin).__qualname__


@contextmanager
def registered(plugin: Any, name: str | None = None,
               host: PluginHost | None = None) -> Iterator[PluginRecord]:
    """Register ``plugin`` (a module, a class, an instance, a namespace) into ``host``
    (default: the current ``get_host()``) for the duration of the block; yields its
    :class:`~passhost.plugins.PluginRecord` and unregisters it (and everything it
    registered) afterwards. An invalid plugin raises :class:`~passhost.errors.PluginError`
    and leaves the host unchanged."""
    host = get_host() if host is None else host
    record = host.register(plugin, plugin_name(plugin) if name is None else name)
    try:
        yield record
    finally:
        if host.records.get(record.name) is record:
            host.unregister(record.name)


# -- the contract check --------------------------------------------------------------------

class PluginCheckError(PluginError):
    """:func:`check_plugin` found problems; ``problems`` lists them, one string each."""

    def __init__(self, name: str, problems: Iterable[str]) -> None:
        self.plugin_name = name
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = "".join("\n  - " + problem.replace("\n", "\n    ")
                        for problem in self.problems)
        super().__init__(f"plugin {name!r} does not meet the passhost plugin contract "
                         f"({count} problem{'s' if count != 1 else ''}):{lines}")


_INSTRUMENT_HOOKS = frozenset(f"passhost_{callback}" for callback in INSTRUMENT_CALLBACKS)
_KIND = Registries.KINDS
#: Passes and named pipelines share one namespace: a pipeline element names either.
_SHARED_NAMESPACE = ("passes", "pipelines")
class _OneHookManager(pluggy.PluginManager):
    """A manager with every passhost hookspec that sees only one attribute of a plugin, so
    that each hook implementation is validated on its own and every problem is reported."""

    def __init__(self) -> None:
        super().__init__(PROJECT)
        for group in ALL_HOOKS:
            self.add_hookspecs(group)
        self.only: str | None = None

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if self.only is not None and name != self.only:
            return None
        return super().parse_hookimpl_opts(plugin, name)


def check_plugin(plugin: Any, name: str | None = None) -> PluginRecord:
    """Check ``plugin`` (a plugin module or object) against the passhost plugin contract,
    the way the host will when it loads it, and more strictly.

    The plugin is registered into a fresh host that holds the built-in plugin, so pluggy
    checks each hook implementation against the hookspecs. Then: every ``passhost_*``
    function is marked with ``passhost.hookimpl`` and names a known hook; instrument
    callbacks are not implemented at plugin level (they belong on instrument objects);
    every registration hook returns specs of the right type, with valid names, callable
    factories and well-formed options; no name is given twice or clashes with a built-in
    name. Returns the :class:`~passhost.plugins.PluginRecord` (``hooks``, ``provides``);
    raises :class:`PluginCheckError` (a ``PluginError``) listing every problem.
    """
    name = plugin_name(plugin) if name is None else name
    problems: list[str] = []
    host = fresh_host()
    if name in host.records:
        problems.append(f"the plugin name {name!r} is reserved for passhost's own plugin")
    registration = _check_hooks(plugin, name, problems)
    specs = _collect_specs(registration, problems)
    _check_names(specs, host.registries, problems)
    if problems:
        raise PluginCheckError(name, problems)
    try:
        record = host.register(plugin, name)
    except PluginError as err:
        raise PluginCheckError(name, [str(err)]) from err
    mine = {attr: [spec.name for spec in found] for attr, found in specs.items()}
    if record.provides != mine:
        raise PluginCheckError(name, [
            f"the registration hooks returned {mine} when first called and "
            f"{record.provides} the second time; they must return the same specs each "
            f"time the host calls them"])
    return record


def _check_hooks(plugin: Any, name: str,
                 problems: list[str]) -> dict[str, list[Callable[[], Any]]]:
    """Validate each hook implementation on its own; return the registration hooks'
    functions by registry attribute."""
    manager = _OneHookManager()
    registration: dict[str, list[Callable[[], Any]]] = {}
    impls = []
    problems.extend(unmarked_functions(plugin))
    for attr_name in sorted(dir(plugin)):
        if manager.parse_hookimpl_opts(plugin, attr_name) is not None:
            impls.append(attr_name)
    for attr_name in impls:
        manager.only = attr_name
        try:
            manager.register(plugin, name=name)
        except pluggy.PluginValidationError as err:
            problems.append(f"{attr_name}: {err}")
            continue
        except ValueError as err:
            problems.append(f"{attr_name} cannot be registered: {err}")
            continue
        try:
            for caller in manager.get_hookcallers(plugin) or ():
                problem = _hook_problem(attr_name, caller)
                if problem:
                    problems.append(problem)
                    continue
                attr = REGISTRATION_HOOKS.get(caller.name)
                if attr is not None:
                    registration.setdefault(attr, []).extend(
                        impl.function for impl in caller.get_hookimpls()
                        if impl.plugin is plugin)
        finally:
            manager.unregister(plugin)
    return registration


def _hook_problem(attr_name: str, caller: Any) -> str | None:
    where = caller.name if caller.name == attr_name else f"{attr_name} (hook {caller.name})"
    if not caller.has_spec():
        return unknown_hook(caller.name) + ("" if caller.name == attr_name
                                            else f" (implemented by {attr_name})")
    if caller.name in _INSTRUMENT_HOOKS:
        return (f"{where} is an instrument callback: the host never calls it on a plugin; "
                f"implement it on an instrument class and register that class with "
                f"passhost_register_instruments")
    return None


def _collect_specs(registration: Mapping[str, list[Callable[[], Any]]],
                   problems: list[str]) -> dict[str, list[Any]]:
    """Call each registration hook once and check what it returns."""
    specs: dict[str, list[Any]] = {}
    for attr, functions in registration.items():
        hook = next(h for h, a in REGISTRATION_HOOKS.items() if a == attr)
        specs.setdefault(attr, [])
        for function in functions:
            try:
                returned = function()
            except Exception as err:
                problems.append(f"{hook} raised {type(err).__name__}: {err}")
                continue
            if returned is None:
                returned = ()
            if isinstance(returned, (str, bytes, Mapping)) or not isinstance(returned,
                                                                           Iterable):
                problems.append(f"{hook} returned {type(returned).__name__} {returned!r}, "
                                f"expected a list of {expected_spec(attr)}")
                continue
            for spec in returned:
                found = spec_problems(attr, spec)
                if not found and attr == "pipelines":
                    found = _pipeline_problems(spec)
                problems.extend(f"{hook}: {problem}" for problem in found)
                if not found:
                    specs[attr].append(spec)
    return specs


def _pipeline_problems(spec: PipelineSpec) -> list[str]:
    """A pipeline whose text does not parse (the host finds that only at first use)."""
    from passhost.transform.pipeline import parse_pipeline

    try:
        parse_pipeline(spec.text, source_name=f"<pipeline {spec.name}>")
    except ParseError as err:
        return [f"pipeline {spec.name!r}: {err}"]
    return []


def _check_names(specs: Mapping[str, list[Any]], builtin: Registries,
                 problems: list[str]) -> None:
    """No name twice within the plugin, none that a built-in already uses."""
    for attr, found in specs.items():
        kind = _KIND[attr]
        shared = _SHARED_NAMESPACE if attr in _SHARED_NAMESPACE else (attr,)
        seen: set[str] = set()
        for spec in found:
            if spec.name in seen:
                problems.append(f"{kind} {spec.name!r} is registered twice by this plugin")
            seen.add(spec.name)
            for other in shared:
                if spec.name in builtin.by_attr(other):
                    problems.append(
                        f"{kind} {spec.name!r} clashes with the built-in {_KIND[other]} "
                        f"{spec.name!r} (provided by {BUILTIN_PLUGIN[0]!r}); choose "
                        f"another name")
    if all(attr in specs for attr in _SHARED_NAMESPACE):
        both = {s.name for s in specs["passes"]} & {s.name for s in specs["pipelines"]}
        problems.extend(f"pass and pipeline {n!r}: a pipeline cannot share a pass's name"
                        for n in sorted(both))
