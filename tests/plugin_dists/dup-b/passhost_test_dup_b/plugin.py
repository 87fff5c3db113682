"""One of two plugins registering the instrument ``dup``: a conflict naming both."""

from passhost import hookimpl
from passhost.instrument import PassInstrument
from passhost.plugins import InstrumentSpec


class DupInstrumentB(PassInstrument):
    """Does nothing; it is never created while the conflict stands."""


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    return [InstrumentSpec("dup", DupInstrumentB, "the dup-b instrument")]
