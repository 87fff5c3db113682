"""Debugging tools built on the pass-instrument protocol, so they work for any pass from any
plugin: pass bisection, crash reproducers, numerics validation and one event stream
(docs/debugging.md).

- :func:`bisect` finds the first pass execution that makes a check fail;
- :class:`ReproducerWriter` leaves a reproducer when a pass raises; :func:`replay` runs one;
- :class:`ValidateNumerics` reports the first pass that changed a module's outputs;
- :class:`TraceEvents` writes a JSON Lines event stream; :func:`read_trace` reads it and
  :func:`trace_to_chrome` turns it into a Chrome trace;
- :class:`ExecutionLimit` runs only the first N pass executions.
"""

from passhost.debug.bisect import BisectResult, bisect
from passhost.debug.chrome import trace_to_chrome
from passhost.debug.events import TraceEvents, TraceFormatError, read_trace
from passhost.debug.executions import ExecutionLimit
from passhost.debug.flows import Flow, Outcome
from passhost.debug.replay import replay
from passhost.debug.reproducer import (
    Reproducer,
    ReproducerError,
    ReproducerWriter,
    read_reproducer,
)
from passhost.debug.validate import ValidateNumerics

__all__ = [
    "BisectResult", "ExecutionLimit", "Flow", "Outcome", "Reproducer", "ReproducerError",
    "ReproducerWriter", "TraceEvents", "TraceFormatError", "ValidateNumerics", "bisect",
    "read_reproducer", "read_trace", "replay", "trace_to_chrome",
]
