"""passhost's own registrations, loaded by the plugin host like any other plugin."""

from __future__ import annotations

from typing import Any

from passhost.errors import OptionError
from passhost.plugins.hookspecs import hookimpl
from passhost.plugins.options import BOOL, STR, STR_LIST, OptionSpec
from passhost.plugins.specs import InstrumentSpec, PassSpec


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The host's passes."""
    from passhost.transform import PrintIR, pass_spec

    return [
        pass_spec(PrintIR, "write the module's text to stderr", options=[
            OptionSpec("header", str, "", "a header printed before the module"),
            OptionSpec("show_meta_data", bool, False, "print large constants in full"),
        ]),
    ]


@hookimpl
def passhost_register_config_options() -> list[OptionSpec]:
    """The host's PassContext config options."""
    from passhost.transform.context import IMMUTABLE_MODULE

    return [
        OptionSpec(IMMUTABLE_MODULE, bool, False,
                   "check that every pass leaves its input module unchanged"),
    ]


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    """The host's instruments: printing, dumping and diffing the module around passes."""
    from passhost.instrument import (
        DumpIR,
        PassPrintingInstrument,
        PrintAfterAll,
        PrintAfterChange,
        PrintBeforeAll,
    )

    def print_passes(before: tuple[str, ...] = (), after: tuple[str, ...] = ()) -> Any:
        return PassPrintingInstrument(before, after)

    def dump_ir(dump_dir: str | None = None, refresh: bool = False) -> Any:
        if dump_dir is None:
            raise OptionError("instrument 'dump-ir' needs the option 'dump_dir'")
        return DumpIR(dump_dir, refresh)

    return [
        InstrumentSpec("print-before-all", PrintBeforeAll,
                       "print each pass's PassInfo and input module to stdout"),
        InstrumentSpec("print-after-all", PrintAfterAll,
                       "print each pass's PassInfo and output module to stdout"),
        InstrumentSpec("print-passes", print_passes,
                       "print the module before and after the passes named", options=[
                           OptionSpec("before", STR_LIST, (), "print the input of these passes"),
                           OptionSpec("after", STR_LIST, (), "print the output of these passes"),
                       ]),
        InstrumentSpec("dump-ir", dump_ir,
                       "write the module after each pass to dump_dir/NNN_<pass>.txt", options=[
                           OptionSpec("dump_dir", STR, None, "the directory (required)"),
                           OptionSpec("refresh", BOOL, False,
                                      "first empty dump_dir if it holds only dump files"),
                       ]),
        InstrumentSpec("print-after-change", PrintAfterChange,
                       "print the initial module, then a diff after each pass that changed it",
                       options=[
                           OptionSpec("dump_dir", STR, None,
                                      "write 000_initial.txt and NNN_<pass>.diff files here "
                                      "instead of printing"),
                       ]),
    ]
