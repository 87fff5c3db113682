"""passhost's own registrations, loaded by the plugin host like any other plugin.

Registering must stay cheap (``passhost plugins list`` loads every plugin): pass factories
import their pass only when a pass is created.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from passhost.errors import OptionError
from passhost.plugins.hookspecs import hookimpl
from passhost.plugins.options import BOOL, STR, STR_LIST, OptionSpec
from passhost.plugins.specs import InstrumentSpec, PassSpec


def lazy_factory(module: str, name: str) -> Callable[..., Any]:
    """A factory calling ``module.name(**options)``, importing the module on first call."""

    def create(**options: Any) -> Any:
        return getattr(importlib.import_module(module), name)(**options)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"Create {module}.{name}."
    return create


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The host's passes."""
    return [
        PassSpec("PrintIR", lazy_factory("passhost.transform.print_ir", "PrintIR"), 0,
                 summary="write the module's text to stderr", options=[
                     OptionSpec("header", str, "", "a header printed before the module"),
                     OptionSpec("show_meta_data", bool, False, "print large constants in full"),
                 ]),
    ]


@hookimpl
def passhost_register_config_options() -> list[OptionSpec]:
    """The host's PassContext config options (their names are constants of the modules
    that read them; the tests check the two agree)."""
    return [
        OptionSpec("testing.immutable_module", bool, False,
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
