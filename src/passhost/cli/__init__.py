"""The ``passhost`` command (docs/cli.md): :func:`main` runs it in-process.

The package is one module per group of commands (``listing_commands``, ``opt_command``,
``compile_run``, ``debug_commands``, ``zoo_commands``), the flag groups they share
(:mod:`.flags`), the helpers they share (:mod:`.common`), the tables and JSON documents
of the listings (:mod:`.listing`) and the parser and error handling (:mod:`.entry`).
Modules import only downwards in that order (entry, commands, flags, common), and nothing
heavier than the standard library at start-up.
"""

from passhost.cli.common import (
    CommandError,
    make_instruments,
    parse_config,
    read_model,
    read_module,
    render_instruments,
    write_output,
)
from passhost.cli.entry import build_parser, main

__all__ = ["CommandError", "build_parser", "main", "make_instruments", "parse_config",
           "read_model", "read_module", "render_instruments", "write_output"]
