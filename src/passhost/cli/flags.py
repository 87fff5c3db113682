"""The flag groups the commands share, declared once, and the checked value types.

``opt``, ``compile`` and ``bisect`` take the same PassContext flags
(:func:`add_context_flags`); ``opt`` and ``compile`` also the same flags that observe a
run (:func:`add_output_flags`). :func:`context_settings` turns the parsed flags into
``PassContext`` arguments, after checking that every file and folder they name can be
written, so that a bad path is a one-line error before anything runs.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from passhost.cli.common import CommandError, make_instruments, parse_config

__all__ = ["add_context_flags", "add_output_flags", "context_settings", "count", "opt_level",
           "seed", "writable_file"]

def _integer(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {what}, found {text!r}")
    return value


def opt_level(text: str) -> int:
    """An opt level: an integer of at least 0."""
    return _integer(text, 0, "an integer >= 0")


def count(text: str) -> int:
    """A number of times or items: an integer of at least 1."""
    return _integer(text, 1, "an integer >= 1")


def seed(text: str) -> int:
    """A random seed: an integer from 0 to 2**32 - 1."""
    value = _integer(text, 0, "an integer from 0 to 4294967295")
    if value >= 2**32:
        raise argparse.ArgumentTypeError(f"expected an integer from 0 to 4294967295, "
                                         f"found {text!r}")
    return value


def add_context_flags(parser: argparse.ArgumentParser, default_opt_level: int | None,
                      opt_level_help: str) -> None:
    """Add the PassContext flags: ``-O``, ``--required-pass``, ``--disabled-pass``,
    ``--pass-config`` and ``--instrument``."""
    group = parser.add_argument_group("pass context")
    group.add_argument("-O", "--opt-level", type=opt_level, default=default_opt_level,
                       metavar="N", help=opt_level_help)
    group.add_argument("--required-pass", action="append", default=[], metavar="NAME",
                       help="a pass that always runs (repeatable)")
    group.add_argument("--disabled-pass", action="append", default=[], metavar="NAME",
                       help="a pass that never runs (repeatable)")
    group.add_argument("--pass-config", "--config", dest="config", action="append",
                       default=[], metavar="KEY=VALUE",
                       help="a PassContext config option (repeatable)")
    group.add_argument("--instrument", action="append", default=[], metavar="SPEC",
                       help="a pass instrument: NAME or NAME{key=value,...} (repeatable)")


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    """Add the flags that observe a run: ``--print-ir-after``, ``--dump-ir``,
    ``--reproducer`` and ``--trace-events``."""
    group = parser.add_argument_group("observing the passes")
    group.add_argument("--print-ir-after", action="append", default=[], metavar="NAME",
                       help="print the module after the pass NAME (repeatable)")
    group.add_argument("--dump-ir", metavar="DIR",
                       help="write the module after each pass to DIR/NNN_<pass>.txt")
    group.add_argument("--reproducer", metavar="DIR",
                       help="when a pass raises, write a reproducer into DIR (config "
                            "debug.reproducer_dir)")
    group.add_argument("--trace-events", metavar="FILE",
                       help="write the pass events to FILE as JSON Lines (config "
                            "debug.trace_events)")


def writable_file(path: str, what: str) -> str:
    """``path`` when a file can be created there (its folder exists, and it is not a
    folder); otherwise a :class:`CommandError` naming ``what``."""
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise CommandError(f"cannot write the {what} {path}: it is a directory")
    if not os.path.isdir(folder):
        raise CommandError(f"cannot write the {what} {path}: no directory {folder}")
    return path


def _usable_directory(path: str, what: str) -> str:
    """``path``, created if missing; a :class:`CommandError` when it cannot be a folder."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        reason = "it is a file" if os.path.isfile(path) else (err.strerror or str(err))
        raise CommandError(f"cannot use {path} as the {what}: {reason}") from None
    return path


def context_settings(args: argparse.Namespace, extra_instruments: tuple[str, ...] = ()
                     ) -> dict[str, Any]:
    """The ``PassContext`` keyword arguments the parsed flags ask for: opt level, required
    and disabled passes, config (the output flags' options included) and instruments (the
    ``--instrument`` specs and ``extra_instruments``, then the printing and dumping
    instruments)."""
    from passhost.transform.context import REPRODUCER_DIR, TRACE_EVENTS

    config = parse_config(args.config)
    if getattr(args, "reproducer", None) is not None:
        config[REPRODUCER_DIR.name] = _usable_directory(args.reproducer,
                                                        "reproducer directory")
    if getattr(args, "trace_events", None) is not None:
        config[TRACE_EVENTS.name] = writable_file(args.trace_events, "trace file")
    instruments = make_instruments([*args.instrument, *extra_instruments])
    if getattr(args, "print_ir_after", None):
        from passhost.instrument import PassPrintingInstrument

        instruments.append(PassPrintingInstrument((), tuple(args.print_ir_after)))
    if getattr(args, "dump_ir", None):
        from passhost.instrument import DumpIR

        instruments.append(DumpIR(_usable_directory(args.dump_ir, "IR dump directory")))
    return {"opt_level": args.opt_level, "required_pass": args.required_pass,
            "disabled_pass": args.disabled_pass, "config": config,
            "instruments": instruments}
