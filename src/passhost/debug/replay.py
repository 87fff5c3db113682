"""Replaying a reproducer: the pipeline it recorded (or its failing pass alone) on the
module it recorded, under the recorded context and target, so the pass raises again."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from passhost._version import __version__
from passhost.debug.reproducer import Reproducer, ReproducerError, read_reproducer
from passhost.ir.module import IRModule


def missing_plugins(repro: Reproducer) -> list[str]:
    """The plugins the reproducer needs that are not active here, each described as
    ``'name' (distribution version): why``."""
    from passhost.plugins.manager import get_host

    records = get_host().records
    missing = []
    for name, wanted in sorted(repro.header["plugins"].items()):
        record = records.get(name)
        if record is not None and record.status == "active":
            continue
        why = "not installed" if record is None else f"status {record.status}"
        missing.append(f"{name!r} ({wanted.get('distribution')} {wanted.get('version')}): "
                       f"{why}")
    return missing


def check_plugins(repro: Reproducer) -> None:
    """Raise :class:`ReproducerError` naming the plugins the reproducer needs that are not
    active here (see :func:`missing_plugins`)."""
    missing = missing_plugins(repro)
    if missing:
        raise ReproducerError(f"{repro.path} needs plugins that are not available: "
                              f"{'; '.join(missing)}")


def version_notes(repro: Reproducer) -> list[str]:
    """Differences between the versions the reproducer was written with and these."""
    from passhost.plugins.manager import get_host

    notes = []
    written = repro.header.get("passhost_version")
    if written != __version__:
        notes.append(f"written by passhost {written}, replayed by passhost {__version__}")
    records = get_host().records
    for name, wanted in sorted(repro.header["plugins"].items()):
        record = records.get(name)
        if record is not None and record.version != wanted.get("version"):
            notes.append(f"plugin {name!r}: written with {wanted.get('version')}, "
                         f"replayed with {record.version}")
    return notes


def replay(source: Reproducer | str | os.PathLike[str], local: bool = False) -> IRModule:
    """Run the reproducer's remaining pipeline (``local``: its failing pass alone, called
    directly) on its module under its context and target. The failing pass raises again;
    if nothing raises, the resulting module is returned. A reproducer that needs plugins
    not active here raises :class:`ReproducerError` naming them."""
    from passhost.target import Target
    from passhost.text import parse_module
    from passhost.transform import build_pipeline

    repro = source if isinstance(source, Reproducer) else read_reproducer(source)
    header = repro.header
    check_plugins(repro)
    if header["pass"] is None:
        raise ReproducerError(f"{repro.path}: the failing pass {header['failing_pass']!r} "
                              f"has no text form, so it cannot be replayed; the module "
                              f"before it is in the file")
    mod = parse_module(repro.module_text, source_name=f"{repro.path} (module)")
    context = _context(header["context"])
    steps = build_pipeline(header["pass"] if local else header["pipeline"])
    run: Any = steps.passes[0] if local else steps
    target = Target(header["target"]) if header["target"] else None
    with context, (target if target is not None else contextlib.nullcontext()):
        return run(mod)


def _context(settings: dict[str, Any]) -> Any:
    from passhost.plugins.manager import get_host
    from passhost.transform import PassContext

    options = get_host().registries.config_options
    config = {key: options.get(key).parse(text, "config option")
              for key, text in settings["config"].items()}
    return PassContext(opt_level=settings["opt_level"], required_pass=settings["required_pass"],
                       disabled_pass=settings["disabled_pass"], config=config)


def same_error(repro: Reproducer, error: BaseException) -> bool:
    """Whether ``error`` is the recorded one: the same class and message."""
    recorded = repro.header["error"]
    return (type(error).__qualname__ == recorded["type"]
            and type(error).__module__ == recorded.get("module", type(error).__module__)
            and str(error) == recorded["message"])


__all__ = ["check_plugins", "missing_plugins", "replay", "same_error", "version_notes"]
