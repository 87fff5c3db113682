"""A plugin with a misspelled hook name: the host records it as ``invalid`` and keeps
nothing it registered (not even the pass of its correctly spelled hook)."""

from passhost import hookimpl
from passhost.plugins import InstrumentSpec, PassSpec


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    return [PassSpec("MisspelledHookPass", object)]


@hookimpl
def passhost_register_instrumants() -> list[InstrumentSpec]:
    return [InstrumentSpec("misspelled", object)]
