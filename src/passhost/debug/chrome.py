"""A passhost trace (:mod:`passhost.debug.events`) in Chrome's Trace Event format, for
``chrome://tracing`` and Perfetto: each context and each pass a duration (``B``/``E``
pairs), each skip and failure an instant event."""

from __future__ import annotations

from typing import Any

#: Process and thread ids of every event (a trace file holds one thread's passes).
PID = TID = 1


def _common(name: str, category: str, phase: str, ts: float) -> dict[str, Any]:
    return {"name": name, "cat": category, "ph": phase, "ts": ts, "pid": PID, "tid": TID}


def trace_to_chrome(header: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """The Chrome trace of a trace read by :func:`~passhost.debug.events.read_trace`."""
    out: list[dict[str, Any]] = []
    for event in events:
        kind, ts = event["event"], event["ts"]
        if kind in ("context_enter", "context_exit"):
            phase = "B" if kind == "context_enter" else "E"
            out.append(_common("PassContext", "context", phase, ts))
        elif kind == "pass_start":
            out.append({**_common(event["name"], "pass", "B", ts),
                        "args": {key: event[key] for key in ("n", "depth", "functions",
                                                             "nodes")}})
        elif kind == "pass_end":
            out.append({**_common(event["name"], "pass", "E", ts),
                        "args": {key: event[key] for key in ("functions", "nodes")}})
        elif kind == "failure":
            error = event["error"]
            out.append({**_common(event["name"], "pass", "E", ts), "args": {"error": error}})
            out.append({**_common(f"failed: {event['name']}", "failure", "i", ts), "s": "t",
                        "args": {"n": event["n"], "error": error}})
        elif kind == "skip":
            out.append({**_common(f"skipped: {event['name']}", "skip", "i", ts), "s": "t",
                        "args": {"n": event["n"], "vetoed_by": event["vetoed_by"]}})
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"source": header["format"], "version": header["version"],
                          "passhost_version": header.get("passhost_version")}}
