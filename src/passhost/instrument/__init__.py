"""Pass instruments: the ``PassInstrument`` protocol and the built-in instruments."""

from passhost.instrument.base import PassInstrument, pass_instrument
from passhost.instrument.diff import PrintAfterChange
from passhost.instrument.dump import DumpIR
from passhost.instrument.printing import PassPrintingInstrument, PrintAfterAll, PrintBeforeAll
from passhost.instrument.registry import get_instrument

__all__ = [
    "DumpIR", "PassInstrument", "PassPrintingInstrument", "PrintAfterAll", "PrintAfterChange",
    "PrintBeforeAll", "get_instrument", "pass_instrument",
]
