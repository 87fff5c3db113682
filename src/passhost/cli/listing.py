"""What ``passhost plugins list`` and the registry listings print: tables and JSON documents.

Every function takes the plugin host to describe and returns text or a JSON-ready object,
so the command line stays thin and the rendering is tested without a process.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

from passhost._version import __version__
from passhost.plugins.loading import ENTRY_POINT_GROUP
from passhost.plugins.manager import PluginHost, PluginRecord
from passhost.plugins.options import OptionSpec

#: Version of the JSON documents written here.
SCHEMA_VERSION = 1

#: The registry kinds, in the order summaries and documents list them.
KINDS = ("targets", "passes", "instruments", "config_options", "pipelines", "pattern_tables",
         "operators")

#: Singular and plural nouns of each kind.
NOUNS = {
    "targets": ("target", "targets"),
    "passes": ("pass", "passes"),
    "instruments": ("instrument", "instruments"),
    "config_options": ("config option", "config options"),
    "pipelines": ("pipeline", "pipelines"),
    "pattern_tables": ("pattern table", "pattern tables"),
    "operators": ("operator", "operators"),
}

#: Statuses that fail ``plugins list --check`` (``disabled`` is the user's choice).
FAILED_STATUSES = ("incompatible", "error", "invalid")

_INDENT = "    "


# -- tables ---------------------------------------------------------------------------------

def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]],
                 details: Sequence[Sequence[str]] | None = None) -> str:
    """Columns left-aligned, two spaces apart, no trailing spaces; ``details[i]`` are lines
    printed (already indented) below row ``i``."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(cells, widths)).rstrip()

    out = [line(headers)]
    for i, row in enumerate(rows):
        out.append(line(row))
        if details is not None:
            out.extend(details[i])
    return "\n".join(out) + "\n"


def _quote_list(names: Iterable[str]) -> str:
    quoted = [repr(n) for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def count(n: int, attr: str) -> str:
    """``1 pass``, ``5 instruments``..."""
    singular, plural = NOUNS[attr]
    return f"{n} {singular if n == 1 else plural}"


# -- plugins --------------------------------------------------------------------------------

def provides_summary(record: PluginRecord) -> str:
    """``1 pass, 5 instruments, 1 config option``, or ``-`` when the plugin provides nothing."""
    parts = [count(len(record.provides[attr]), attr) for attr in KINDS
             if record.provides.get(attr)]
    return ", ".join(parts) or "-"


def conflicts(host: PluginHost) -> list[tuple[str, str, tuple[str, ...]]]:
    """``(kind, name, providers)`` for every conflict; the kind is a registry attribute
    (``passes``, ``config_options``...), as in a plugin's ``provides``."""
    registries = host.registries
    return [(attr, name, providers) for attr in KINDS
            for name, providers in registries.by_attr(attr).conflicts()]


def _conflict_lines(host: PluginHost) -> dict[str, list[str]]:
    """Per plugin name: one ``conflict: ...`` line per conflict it takes part in."""
    lines: dict[str, list[str]] = {}
    for attr, name, providers in conflicts(host):
        for provider in providers:
            others = [p for p in providers if p != provider]
            lines.setdefault(provider, []).append(
                f"conflict: {NOUNS[attr][0]} {name!r} also provided by {_quote_list(others)}")
    return lines


def _display_name(record: PluginRecord) -> str:
    return f"{record.name} (built-in)" if record.builtin else record.name


def _hooks_cell(record: PluginRecord) -> str:
    if record.status != "active" and not record.hooks:
        return "-"
    return str(len(record.hooks))


def _source_file(plugin: Any) -> str | None:
    """The file defining the plugin object (a module, a class or an instance)."""
    if plugin is None:
        return None
    target = plugin if inspect.ismodule(plugin) or inspect.isclass(plugin) else type(plugin)
    try:
        return inspect.getsourcefile(target) or inspect.getfile(target)
    except (TypeError, OSError):
        return None


def _where_lines(record: PluginRecord) -> list[str]:
    """Verbose lines: the entry point (and distribution), the module's file, the hooks."""
    if record.builtin:
        where = f"entry point: {record.entry_point or record.module} (built into passhost)"
    else:
        value = record.entry_point or record.module or "-"
        where = f"entry point: {record.name} = {value}"
        dist = record.distribution
        if dist:
            where += f" (distribution {dist}"
            if record.version:
                where += f" {record.version}"
            if record.requires_passhost:
                where += f", requires passhost{record.requires_passhost}"
            where += ")"
    lines = [where]
    path = _source_file(record.plugin)
    if path:
        lines.append(f"path: {path}")
    if record.hooks:
        lines.append(f"hooks: {', '.join(record.hooks)}")
    return lines


def plugins_table(host: PluginHost, *, show_all: bool = False, verbose: bool = False) -> str:
    """The ``plugins list`` table: one row per plugin in load order, with indented lines for
    its error and conflicts (and, when ``verbose``, its paths and traceback)."""
    conflict_lines = _conflict_lines(host)
    rows: list[list[str]] = []
    details: list[list[str]] = []
    hidden = 0
    for record in host.records.values():
        if record.status == "disabled" and not show_all:
            hidden += 1
            continue
        rows.append([_display_name(record), record.version or "-", record.status,
                     provides_summary(record), _hooks_cell(record)])
        lines = _where_lines(record) if verbose else []
        if record.error is not None:
            lines.append(f"error: {record.error.type}: {record.error.message}")
            if verbose and record.error.traceback:
                lines.extend("  " + tb for tb in record.error.traceback.rstrip("\n").split("\n"))
        lines.extend(conflict_lines.get(record.name, ()))
        details.append([_INDENT + line for line in lines])
    text = format_table(["NAME", "VERSION", "STATUS", "PROVIDES", "HOOKS"], rows, details)
    if hidden:
        what = "plugin" if hidden == 1 else "plugins"
        text += f"({hidden} disabled {what} not shown; --all lists them)\n"
    return text


def check_problems(host: PluginHost) -> list[str]:
    """Why ``plugins list --check`` fails: each plugin that is incompatible, in error or
    invalid, each conflict, and each lazy factory that does not import. Disabled plugins are
    the user's choice and are fine."""
    problems = [f"plugin {r.name!r} has status {r.status}" for r in host.records.values()
                if r.status in FAILED_STATUSES]
    problems += [f"{NOUNS[attr][0]} {name!r} is provided by {_quote_list(providers)}"
                 for attr, name, providers in conflicts(host)]
    return problems + _factory_problems(host)


def _factory_problems(host: PluginHost) -> list[str]:
    """Each lazy factory (``passhost.plugins.lazy_factory``) whose module does not import or
    lacks the named object: found now rather than at first use."""
    problems = []
    for attr in KINDS:
        for entry in host.registries.by_attr(attr).entries():
            resolve = getattr(getattr(entry.spec, "factory", None), "resolve", None)
            if resolve is None:
                continue
            try:
                resolve()
            except (Exception, SystemExit) as err:
                problems.append(f"{NOUNS[attr][0]} {entry.name!r} of plugin "
                                f"{entry.provider!r}: its factory fails to import: "
                                f"{type(err).__name__}: {err}")
    return problems


def _error_document(record: PluginRecord, verbose: bool) -> dict[str, str] | None:
    if record.error is None:
        return None
    doc = {"type": record.error.type, "message": record.error.message}
    if verbose:
        doc["traceback"] = record.error.traceback
    return doc


def plugin_document(record: PluginRecord, *, verbose: bool = False) -> dict[str, Any]:
    """One plugin as the JSON object of docs/spec/plugins.md."""
    return {
        "name": record.name,
        "entry_point": record.entry_point,
        "distribution": record.distribution,
        "version": record.version,
        "module": record.module,
        "status": record.status,
        "builtin": record.builtin,
        "requires_passhost": record.requires_passhost,
        "hooks": list(record.hooks),
        "provides": {attr: list(record.provides.get(attr, ())) for attr in KINDS},
        "error": _error_document(record, verbose),
    }


def plugins_document(host: PluginHost, *, verbose: bool = False) -> dict[str, Any]:
    """The ``plugins list --json`` document: every plugin (disabled ones too) and every
    conflict."""
    return {
        "schema_version": SCHEMA_VERSION,
        "passhost_version": __version__,
        "entry_point_group": ENTRY_POINT_GROUP,
        "plugins": [plugin_document(r, verbose=verbose) for r in host.records.values()],
        "conflicts": [{"kind": attr, "name": name, "providers": list(providers)}
                      for attr, name, providers in conflicts(host)],
    }


# -- registries -----------------------------------------------------------------------------

def _jsonable(value: Any) -> Any:
    """``value`` as JSON data: containers converted, anything unknown as its ``str``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, frozenset, set)):
        return [_jsonable(v) for v in value]
    return str(value)


def _options(spec: Any) -> list[OptionSpec]:
    return [opt for opt in getattr(spec, "options", ()) or () if isinstance(opt, OptionSpec)]


def _option_document(opt: OptionSpec) -> dict[str, Any]:
    return {"name": opt.name, "type": opt.type.name, "default": _jsonable(opt.default),
            "summary": opt.summary}


def _default_text(opt: OptionSpec) -> str:
    if opt.default is None:
        return "-"
    try:
        text = opt.format(opt.default)
    except Exception:  # a default the type cannot write: show it as Python does
        text = repr(opt.default)
    return text if text else '""'


def _options_cell(spec: Any) -> str:
    return ", ".join(f"{opt.name}: {opt.type.name}" for opt in _options(spec)) or "-"


def _summary(spec: Any) -> str:
    return str(getattr(spec, "summary", "") or "")


#: Per kind: the columns after NAME and before PROVIDER, and how to fill them.
_COLUMNS: dict[str, tuple[tuple[str, Any], ...]] = {
    "passes": (("OPT_LEVEL", lambda s: str(s.opt_level)),
               ("REQUIRED", lambda s: ", ".join(s.required) or "-"),
               ("OPTIONS", _options_cell)),
    "instruments": (("OPTIONS", _options_cell),),
    "config_options": (("TYPE", lambda s: s.type.name), ("DEFAULT", _default_text)),
    "targets": (("KEYS", lambda s: ", ".join(getattr(s, "keys", ())) or "-"),
                ("HOST", lambda s: "yes" if getattr(s, "host", False) else "-"),
                ("OPTIONS", _options_cell),
                ("TAGS", lambda s: ", ".join(getattr(s, "tags", {})) or "-")),
    "pipelines": (("PASSES", lambda s: s.text),),
    "pattern_tables": (),
    "operators": (),
}


def registry_table(host: PluginHost, attr: str) -> str:
    """The table of one registry: ``NAME``, the kind's own columns, ``PROVIDER``,
    ``SUMMARY``. A conflicting name has one row per provider, marked ``(conflict)``."""
    registry = host.registries.by_attr(attr)
    if not len(registry):
        return f"no {NOUNS[attr][1]} registered\n"
    columns = _COLUMNS[attr]
    clashing = {name: providers for name, providers in registry.conflicts()}
    rows = []
    for entry in registry.entries():
        name = entry.name + (" (conflict)" if entry.name in clashing else "")
        rows.append([name, *(fill(entry.spec) for _, fill in columns), entry.provider,
                     _summary(entry.spec)])
    text = format_table(["NAME", *(title for title, _ in columns), "PROVIDER", "SUMMARY"], rows)
    for name, providers in clashing.items():
        text += (f"conflict: {NOUNS[attr][0]} {name!r} is provided by "
                 f"{_quote_list(providers)}; using it is an error until all but one are "
                 f"disabled\n")
    return text


def _entry_document(attr: str, spec: Any) -> dict[str, Any]:
    if attr == "passes":
        return {"opt_level": spec.opt_level, "required": list(spec.required),
                "options": [_option_document(o) for o in _options(spec)]}
    if attr == "instruments":
        return {"options": [_option_document(o) for o in _options(spec)]}
    if attr == "config_options":
        return {"type": spec.type.name, "default": _jsonable(spec.default)}
    if attr == "pipelines":
        return {"text": spec.text}
    if attr in ("pattern_tables", "operators"):
        return {}
    return _target_document(spec)


def _target_document(kind: Any) -> dict[str, Any]:
    """A target kind's fields: keys, whether it is a host kind, options, tags (option
    values as text) and the passes it inserts per TIR phase."""
    return {"keys": list(getattr(kind, "keys", ())), "host": bool(getattr(kind, "host", False)),
            "options": [_option_document(o) for o in _options(kind)],
            "tags": _jsonable({tag: dict(values)
                               for tag, values in getattr(kind, "tags", {}).items()}),
            "phase_passes": _jsonable(dict(getattr(kind, "phase_passes", {})))}


def registry_document(host: PluginHost, attr: str) -> dict[str, Any]:
    """The ``--json`` document of one registry: ``{"schema_version": 1, attr: [...]}``, one
    object per entry (a conflicting name once per provider, with ``"conflict": true``)."""
    registry = host.registries.by_attr(attr)
    clashing = {name for name, _ in registry.conflicts()}
    items = []
    for entry in registry.entries():
        items.append({"name": entry.name, **_entry_document(attr, entry.spec),
                      "summary": _summary(entry.spec), "provider": entry.provider,
                      "distribution": entry.distribution, "conflict": entry.name in clashing})
    return {"schema_version": SCHEMA_VERSION, attr: items}
