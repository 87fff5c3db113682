"""Crash reproducers: ``ReproducerWriter`` (instrument ``reproducer``) leaves a file when a
pass raises, and :func:`read_reproducer` reads one back (:mod:`passhost.debug.replay` runs
it).

A reproducer is text: a JSON header (``{"format": "passhost-reproducer", "version": 1,
...}``) followed by the module, in the IR text format, as it was before the failing pass.
The header holds the failing pass and the rest of the pipeline in the textual pipeline
syntax, the error, the PassContext's opt level, required and disabled passes and config,
the current target, and the versions of passhost and of the plugins the replay needs.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import tempfile
from pathlib import Path
from typing import Annotated, Any

from attrs import frozen

from passhost._version import __version__
from passhost.errors import PasshostError, add_note
from passhost.instrument.base import PassInstrument
from passhost.instrument.dump import safe_file_name
from passhost.plugins.declare import required_path
from passhost.plugins.options import STR

#: The value of the header's ``format`` key.
FORMAT = "passhost-reproducer"
#: The version this passhost writes and reads.
VERSION = 1
#: The file name suffix of reproducers.
SUFFIX = ".repro"


class ReproducerError(PasshostError):
    """A reproducer cannot be read or replayed (not one, newer, plugins missing...)."""


@frozen
class Reproducer:
    """A reproducer read from a file: its header (a dict, as written) and the module text."""

    path: str
    header: dict[str, Any]
    module_text: str

    @property
    def error(self) -> str:
        """The recorded error as ``Type: message``."""
        error = self.header["error"]
        return f"{error['type']}: {error['message']}"


class ReproducerWriter(PassInstrument):
    """When a pass raises and the error leaves the outermost running pass, write a
    reproducer into ``dir`` (created if needed; the file is ``<failing pass>.repro``,
    replaced atomically) and add a note naming it to the error.

    ``--reproducer DIR`` and the config option ``debug.reproducer_dir`` install it. ``dir``
    is required (an :class:`~passhost.errors.OptionError` without it).
    """

    def __init__(self, dir: Annotated[str | os.PathLike[str] | None, STR,
                                      "the directory (required)"] = None) -> None:
        self.dir = required_path(dir, "reproducer", "dir")
        self.written: list[Path] = []
        self._running: list[Any] = []
        self._failure: tuple[Any, Any, BaseException, tuple[str, ...]] | None = None

    def enter_pass_ctx(self) -> None:
        """Forget passes of an earlier context."""
        self._running = []
        self._failure = None

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Track the running passes."""
        self._running.append(info)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """The pass ended: forget it (and any failure its body caught)."""
        self._pop(info)
        if not self._running:
            self._failure = None

    def run_after_pass_failed(self, mod: Any, info: Any, error: BaseException) -> None:
        """Keep the innermost failing pass and its input; write the file when the error
        leaves the outermost pass."""
        self._pop(info)
        if self._failure is None or self._failure[2] is not error:
            chain = tuple(i.name for i in reversed(self._running))
            self._failure = (mod, info, error, chain)
        if not self._running:
            mod, info, error, chain = self._failure
            self._failure = None
            path = self._write(mod, info, error, chain)
            add_note(error, f"reproducer written to {path}; replay it with: passhost opt "
                            f"--reproduce {path}")

    def _pop(self, info: Any) -> None:
        running = self._running
        for i in range(len(running) - 1, -1, -1):
            if running[i] is info:
                del running[i:]
                return

    def _write(self, mod: Any, info: Any, error: BaseException, chain: tuple[str, ...]) -> Path:
        from passhost.debug.remaining import remaining_pipeline

        failing, pipeline, stops_before = remaining_pipeline(info, error)
        header = {
            "format": FORMAT, "version": VERSION, "passhost_version": __version__,
            "python": platform.python_version(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "failing_pass": info.name, "enclosing_passes": list(chain),
            "pass": failing, "pipeline": pipeline, "pipeline_stops_before": stops_before,
            "error": {"type": type(error).__qualname__, "module": type(error).__module__,
                      "message": str(error)},
            **_context_and_plugins(pipeline),
        }
        module = mod.astext(show_meta_data=True)
        text = json.dumps(header, indent=1) + "\n" + module.rstrip("\n") + "\n"
        path = self.dir / f"{safe_file_name(info.name)}{SUFFIX}"
        _write_atomically(path, text)
        self.written.append(path)
        return path


def _context_and_plugins(pipeline: str | None) -> dict[str, Any]:
    """The current context's settings, the current target, and the plugins that provide
    the pipeline's passes, the target kind and the config options."""
    from passhost.debug.remaining import pipeline_names
    from passhost.plugins.manager import get_host
    from passhost.target import Target
    from passhost.transform.context import CONFIG_INSTRUMENTS, PassContext

    ctx = PassContext.current()
    target = Target.current()
    registries = get_host().registries
    options = registries.config_options
    config = {key: options.get(key).format(value) for key, value in ctx.config.items()
              if key not in CONFIG_INSTRUMENTS}
    providers = [registries.passes.entry(name).provider
                 for name in pipeline_names(pipeline) if name in registries.passes]
    providers += [options.entry(key).provider for key in config]
    if target is not None:
        providers.append(registries.targets.entry(target.kind.name).provider)
    return {
        "context": {"opt_level": ctx.opt_level, "required_pass": list(ctx.required_pass),
                    "disabled_pass": list(ctx.disabled_pass), "config": config},
        "target": None if target is None else str(target),
        "plugins": _plugin_versions(providers),
    }


def _plugin_versions(providers: list[str]) -> dict[str, dict[str, str | None]]:
    from passhost.plugins.manager import BUILTIN_PLUGIN, get_host

    records = get_host().records
    out = {}
    for name in sorted(set(providers) - {BUILTIN_PLUGIN[0]}):
        record = records[name]
        out[name] = {"distribution": record.distribution, "version": record.version}
    return out


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory, so the
    file is either the old one or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_reproducer(path: str | os.PathLike[str]) -> Reproducer:
    """The reproducer in ``path``; a file that is not one, or one from a newer passhost,
    raises :class:`ReproducerError` saying so."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ReproducerError(f"cannot read {path}: {getattr(err, 'strerror', None) or err}"
                              ) from None
    try:
        header, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        header, end = None, 0
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ReproducerError(f"{path}: not a passhost reproducer (it does not start with a "
                              f"JSON header whose \"format\" is \"{FORMAT}\")")
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version > VERSION:
        raise ReproducerError(f"{path}: reproducer version {version!r} is not one this "
                              f"passhost ({__version__}) reads (version {VERSION}); it was "
                              f"written by passhost {header.get('passhost_version')}")
    missing = [key for key in ("failing_pass", "pass", "pipeline", "error", "context",
                               "target", "plugins") if key not in header]
    if missing:
        raise ReproducerError(f"{path}: the reproducer's header lacks {', '.join(missing)}")
    return Reproducer(str(path), header, text[end:].lstrip("\n"))
