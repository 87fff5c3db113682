"""A plugin whose distribution requires ``passhost<0``: the host records it as
``incompatible`` without importing it."""

from passhost import hookimpl
from passhost.plugins import InstrumentSpec


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    return [InstrumentSpec("old", object)]
