"""``passhost plugins list`` and the registry listings (``passes list``, ``targets list``,
...); what they print is made by :mod:`passhost.cli.listing`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from passhost.cli.common import stdout_to_stderr

__all__ = ["add_commands"]

#: Command -> (the host's registry attribute, what it lists).
REGISTRY_COMMANDS = {
    "passes": ("passes", "the registered passes"),
    "instruments": ("instruments", "the registered pass instruments"),
    "targets": ("targets", "the registered target kinds"),
    "config": ("config_options", "the registered PassContext config options"),
    "pipelines": ("pipelines", "the registered named pipelines"),
    "pattern-tables": ("pattern_tables", "the registered pattern tables (MergeComposite, "
                                         "partitioning)"),
    "operators": ("operators", "the registered graph operators"),
}


def _plugins_list(args: argparse.Namespace) -> int:
    import json

    from passhost.cli import listing
    from passhost.plugins.manager import get_host

    if args.json:  # plugins print while they load: never into the JSON document
        with stdout_to_stderr():
            host = get_host()
            text = json.dumps(listing.plugins_document(host, verbose=args.verbose), indent=2)
            problems = listing.check_problems(host) if args.check else []
        print(text)
    else:
        host = get_host()
        print(listing.plugins_table(host, show_all=args.all, verbose=args.verbose), end="")
        problems = listing.check_problems(host) if args.check else []
    if not args.check:
        return 0
    for problem in problems:
        print(f"passhost: check failed: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _registry_list(args: argparse.Namespace) -> int:
    import json

    from passhost.cli import listing
    from passhost.plugins.manager import get_host

    if args.json:
        with stdout_to_stderr():
            text = json.dumps(listing.registry_document(get_host(), args.registry), indent=2)
        print(text)
    else:
        print(listing.registry_table(get_host(), args.registry), end="")
    return 0


def add_commands(sub: Any) -> None:
    """Add ``plugins list`` and a ``list`` command per registry."""
    plugins = sub.add_parser("plugins", help="the installed plugins")
    plugins_sub = plugins.add_subparsers(dest="plugins_command", metavar="PLUGINS_COMMAND",
                                         required=True)
    plist = plugins_sub.add_parser("list", help="list the plugins, their status and what "
                                                "they provide")
    plist.add_argument("--json", action="store_true", help="print a JSON document")
    plist.add_argument("--all", action="store_true", help="include disabled plugins")
    plist.add_argument("--check", action="store_true",
                       help="exit 1 if a plugin is incompatible, in error or invalid, or two "
                            "plugins conflict")
    plist.add_argument("-v", "--verbose", action="store_true",
                       help="show entry points, paths, hooks and tracebacks")
    plist.set_defaults(func=_plugins_list)

    for command, (attr, what) in REGISTRY_COMMANDS.items():
        group = sub.add_parser(command, help=what)
        group_sub = group.add_subparsers(dest=f"{command}_command", metavar="COMMAND",
                                         required=True)
        listing = group_sub.add_parser("list", help=f"list {what} and the plugin providing "
                                                    f"each")
        listing.add_argument("--json", action="store_true", help="print a JSON document")
        listing.set_defaults(func=_registry_list, registry=attr)
