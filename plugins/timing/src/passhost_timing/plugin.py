"""The ``timing`` plugin: registers PassTimingInstrument as instrument ``timing``."""

from __future__ import annotations

from passhost import hookimpl
from passhost.plugins import InstrumentSpec, instrument_spec


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    """The timing instrument; its options are read from the class (one declaration)."""
    from passhost_timing.instrument import PassTimingInstrument

    return [instrument_spec("timing", PassTimingInstrument,
                            "wall-clock time of every pass, nested; render(), JSON, Chrome "
                            "trace")]
