"""The ``timing`` plugin: registers PassTimingInstrument as instrument ``timing``."""

from __future__ import annotations

from passhost import hookimpl
from passhost.plugins import BOOL, InstrumentSpec, OptionSpec


@hookimpl
def passhost_register_instruments() -> list[InstrumentSpec]:
    """The timing instrument."""
    from passhost_timing.instrument import PassTimingInstrument

    return [InstrumentSpec("timing", PassTimingInstrument,
                           "wall-clock time of every pass, nested; render(), JSON, Chrome trace",
                           options=[OptionSpec("show_skipped", BOOL, False,
                                               "also show the passes should_run skipped")])]
