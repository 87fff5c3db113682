"""The ``passhost`` command: the parser, assembled from the command modules, and
:func:`main`, which runs a command and turns every error about its input into one line.

Only argument parsing happens at start-up, so ``passhost --version`` imports no plugin
machinery; each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from passhost._version import __version__
from passhost.cli import compile_run, debug_commands, listing_commands, opt_command, zoo_commands
from passhost.errors import PasshostError

__all__ = ["build_parser", "main"]

#: The modules adding commands, in the order ``passhost --help`` lists them.
_COMMAND_MODULES = (listing_commands, opt_command, compile_run, debug_commands, zoo_commands)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``passhost`` command."""
    parser = argparse.ArgumentParser(
        prog="passhost", description="passhost: pass infrastructure for tensor-program "
                                     "compilers. See docs/cli.md.",
        epilog="The environment variables PASSHOST_LOAD_PLUGINS, PASSHOST_DISABLE_PLUGINS, "
               "PASSHOST_STRICT_PLUGINS and PASSHOST_TRACE_PLUGINS also choose the plugins; "
               "--no-plugins and -p narrow what they select.")
    parser.add_argument("--version", action="version", version=f"passhost {__version__}")
    parser.add_argument("--no-plugins", action="store_true",
                        help="load no installed plugins (like PASSHOST_LOAD_PLUGINS=\"\")")
    parser.add_argument("-p", dest="plugin_flags", action="append", default=[],
                        metavar="no:NAME", help="disable the installed plugin NAME (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMAND_MODULES:
        module.add_commands(sub)
    return parser


def _disabled_names(parser: argparse.ArgumentParser, flags: Sequence[str]) -> list[str]:
    """The NAMEs of ``-p no:NAME`` flags; any other ``-p`` value is a usage error."""
    names = []
    for flag in flags:
        name = flag[len("no:"):].strip() if flag.startswith("no:") else ""
        if not name:
            parser.error(f"argument -p: expected no:NAME (disable plugin NAME), found {flag!r}")
        names.append(name)
    return names


def _install_host(no_plugins: bool, disabled: Sequence[str]) -> Any:
    """Create the plugin host the environment and the global options select and install it;
    returns the previous host."""
    import attrs

    from passhost.plugins.loading import LoadSettings
    from passhost.plugins.manager import create_host, set_host

    settings = LoadSettings.from_env()
    if no_plugins:
        settings = attrs.evolve(settings, only=frozenset())
    if disabled:
        settings = attrs.evolve(settings, disabled=settings.disabled | frozenset(disabled))
    return set_host(create_host(settings))


def _print_error(err: BaseException) -> None:
    if isinstance(err, OSError) and err.strerror:
        where = f"{err.filename}: " if err.filename is not None else ""
        print(f"passhost: error: {where}{err.strerror}", file=sys.stderr)
        return
    print(f"passhost: error: {err}", file=sys.stderr)
    for note in getattr(err, "__notes__", ()):
        print(f"  {note}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``passhost`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    disabled = _disabled_names(parser, args.plugin_flags)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    installed, previous = False, None
    try:
        if args.no_plugins or disabled:
            previous, installed = _install_host(args.no_plugins, disabled), True
        return args.func(args)
    except (PasshostError, OSError) as err:  # bad input, or a file system refusing
        _print_error(err)
        return 1
    except KeyboardInterrupt:
        print("passhost: interrupted", file=sys.stderr)
        return 130
    finally:
        if installed:  # in-process callers (tests) get their host back
            from passhost.plugins.manager import set_host

            set_host(previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
