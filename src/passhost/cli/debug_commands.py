"""The debugging commands of ``passhost`` (docs/debugging.md): ``bisect``, ``trace`` and
``opt --reproduce``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from passhost.cli.common import CommandError, read_model, read_module, write_output
from passhost.cli.flags import add_context_flags, context_settings

__all__ = ["add_commands", "reproduce_command"]


# -- passhost opt --reproduce -----------------------------------------------------------

def reproduce_command(args: argparse.Namespace) -> int:
    """Replay a reproducer; exit 1 with the error it raised (the recorded one, or not)."""
    from passhost.debug.replay import check_plugins, replay, same_error, version_notes
    from passhost.debug.reproducer import ReproducerError, read_reproducer

    repro = read_reproducer(args.reproduce)
    check_plugins(repro)
    header = repro.header
    what = f"pass {header['pass']}" if args.local else f"pipeline {header['pipeline']}"
    print(f"passhost: replaying {repro.path}: {what} on the module before "
          f"{header['failing_pass']}", file=sys.stderr)
    for note in version_notes(repro):
        print(f"passhost: note: {note}", file=sys.stderr)
    try:
        replay(repro, local=args.local)
    except ReproducerError:
        raise
    except Exception as err:
        print(f"passhost: error: {type(err).__name__}: {err}", file=sys.stderr)
        for note in getattr(err, "__notes__", ()):
            print(f"  {note}", file=sys.stderr)
        if same_error(repro, err):
            print("passhost: reproduced the recorded error", file=sys.stderr)
        else:
            print(f"passhost: the replay raised another error than the recorded "
                  f"{repro.error}", file=sys.stderr)
        return 1
    raise ReproducerError(f"the replay of {repro.path} ran without an error; the recorded "
                          f"error was {repro.error}")


# -- passhost bisect --------------------------------------------------------------------

def _bisect(args: argparse.Namespace) -> int:
    from passhost.debug import bisect

    if args.target is None and args.passes is None:
        raise CommandError("bisect needs --passes PIPELINE, --target TARGET, or both")
    settings = context_settings(args)
    if args.target is not None:
        mod, params = read_model(args.input)
    else:
        mod, params = read_module(args.input), {}
    result = bisect(mod, check=args.check, passes=args.passes, target=args.target,
                    params=params, source=args.input, **settings)
    print(result, end="")
    return 0 if result.culprit is not None else 1


# -- passhost trace ---------------------------------------------------------------------

def _trace(args: argparse.Namespace) -> int:
    from passhost.debug import read_trace, trace_to_chrome

    header, events = read_trace(args.file)
    if args.chrome:
        text = json.dumps(trace_to_chrome(header, events))
    else:
        text = "".join(_describe(event) + "\n" for event in events)
    if args.output in (None, "-") and text and not text.endswith("\n"):
        text += "\n"
    write_output(text, args.output, announce=True)
    return 0


def _describe(event: dict[str, Any]) -> str:
    """One readable line per event: time, indentation by depth, what happened."""
    kind = event["event"]
    indent = "  " * event.get("depth", 0)
    what = {"context_enter": "enter PassContext", "context_exit": "exit PassContext"}.get(kind)
    if what is None:
        name = f"#{event['n']} {event['name']}"
        if kind == "pass_start":
            what = f"start {name} ({event['functions']} functions, {event['nodes']} nodes)"
        elif kind == "pass_end":
            what = f"end   {name} ({event['functions']} functions, {event['nodes']} nodes)"
        elif kind == "skip":
            what = f"skip  {name} (vetoed by {', '.join(event['vetoed_by'])})"
        else:
            error = event["error"]
            what = f"fail  {name}: {error['type']}: {error['message']}"
    return f"{event['ts']:>10}us {indent}{what}"


def add_commands(sub: Any) -> None:
    """Add ``bisect`` and ``trace`` to the ``passhost`` subcommand parsers."""
    bis = sub.add_parser("bisect", help="find the first pass execution that makes a check "
                                        "fail")
    bis.add_argument("input", metavar="INPUT",
                     help="with --target: a model as for passhost compile; without: a "
                          "module as for passhost opt")
    bis.add_argument("--check", required=True, metavar="CHECK",
                     help="raises, numerics[:RTOL] (outputs vs the reference interpreter) "
                          "or script:PATH (PATH OUTPUT exits non-zero on failure)")
    bis.add_argument("--target", metavar="TARGET",
                     help="compile for TARGET (after --passes, if given), as passhost compile")
    bis.add_argument("--passes", metavar="PIPELINE",
                     help="the passes to run, as passhost opt (before the build with --target)")
    add_context_flags(bis, None, "the PassContext opt level (default 3 with --target, "
                                 "else 2)")
    bis.set_defaults(func=_bisect)

    trace = sub.add_parser("trace", help="read a trace written by --trace-events")
    trace.add_argument("file", metavar="FILE", help="a JSON Lines trace")
    trace.add_argument("--chrome", action="store_true",
                       help="convert to Chrome's trace format (chrome://tracing, Perfetto)")
    trace.add_argument("-o", "--output", metavar="OUT",
                       help="write here instead of stdout")
    trace.set_defaults(func=_trace)
