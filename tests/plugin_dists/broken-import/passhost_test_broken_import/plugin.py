"""A plugin whose module raises when imported: the host records it as ``error``."""

from passhost import hookimpl
from passhost.plugins import InstrumentSpec


def _check_environment() -> None:
    raise RuntimeError("passhost-test-broken-import is broken on purpose")


_check_environment()


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:  # pragma: no cover - never reached
    return [InstrumentSpec("broken", object)]
