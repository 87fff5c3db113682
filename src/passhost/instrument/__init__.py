"""Pass instruments: the ``PassInstrument`` protocol and the built-in instruments."""

from passhost.instrument.base import PassInstrument, pass_instrument

__all__ = ["PassInstrument", "pass_instrument"]
