"""The ``opdiff`` plugin: registers ``OpCountDiffer`` as the instrument ``op-diff``.

The host imports this module when it loads plugins, so it imports nothing heavy: the
instrument's module is imported by the factory, when the instrument is first created.
"""

from __future__ import annotations

from typing import Any

from passhost import hookimpl
from passhost.plugins import InstrumentSpec


def make_op_diff() -> Any:
    """A new ``OpCountDiffer``."""
    from passhost_opdiff.instrument import OpCountDiffer

    return OpCountDiffer()


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    """The operator-count differ."""
    return [InstrumentSpec("op-diff", make_op_diff,
                           "per pass, the change in the number of calls of each operator")]
