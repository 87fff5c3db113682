"""``passhost opt``: run a pipeline of passes on a module and print the result."""

from __future__ import annotations

import argparse
from typing import Any

from passhost.cli.common import CommandError, read_module, render_instruments, write_output
from passhost.cli.debug_commands import reproduce_command
from passhost.cli.flags import (
    add_context_flags,
    add_output_flags,
    context_settings,
    writable_file,
)

__all__ = ["add_commands"]


def _opt(args: argparse.Namespace) -> int:
    from passhost.transform import PassContext, build_pipeline

    if args.reproduce is not None:
        if args.input is not None or args.passes is not None:
            raise CommandError("--reproduce FILE replays the file's module and passes: give "
                               "no INPUT and no --passes")
        return reproduce_command(args)
    if args.local:
        raise CommandError("--local applies to --reproduce FILE only")
    if args.input is None or args.passes is None:
        raise CommandError("opt needs INPUT and --passes PIPELINE (or --reproduce FILE)")
    if args.bind_params and not args.input.startswith("zoo:"):
        raise CommandError("--bind-params applies to zoo models (zoo:MODEL) only")
    if args.output not in (None, "-"):
        writable_file(args.output, "output")
    settings = context_settings(
        args, ("print-after-change",) if args.print_after_change else ())
    passes = build_pipeline(args.passes)
    mod = read_module(args.input, args.bind_params)
    with PassContext(**settings):
        try:
            out = passes(mod)
        finally:
            render_instruments(settings["instruments"])
    write_output(out.astext(show_meta_data=not args.hide_meta_data), args.output)
    return 0


def add_commands(sub: Any) -> None:
    """Add ``opt`` to the ``passhost`` subcommand parsers."""
    opt = sub.add_parser("opt", help="run a pipeline of passes on a module")
    opt.add_argument("input", metavar="INPUT", nargs="?",
                     help="a module in the IR text format, zoo:MODEL, or - for stdin")
    opt.add_argument("--passes", metavar="PIPELINE",
                     help="the passes to run, in the textual pipeline syntax (required "
                          "unless --reproduce)")
    opt.add_argument("-o", "--output", metavar="OUT",
                     help="write the resulting module here (default: stdout)")
    opt.add_argument("--print-after-change", action="store_true",
                     help="print the initial module, then a diff after each changing pass")
    opt.add_argument("--bind-params", action="store_true",
                     help="bind a zoo model's weights as constants (so FoldConstant & co. "
                          "can use them)")
    opt.add_argument("--hide-meta-data", action="store_true",
                     help="elide large constants (the output then no longer parses back)")
    opt.add_argument("--reproduce", metavar="FILE",
                     help="replay a reproducer (written by --reproducer DIR) instead")
    opt.add_argument("--local", action="store_true",
                     help="with --reproduce: replay the failing pass alone")
    add_context_flags(opt, 2, "the PassContext opt level (default 2)")
    add_output_flags(opt)
    opt.set_defaults(func=_opt)
