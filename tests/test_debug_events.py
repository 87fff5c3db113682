"""The event stream: ``--trace-events FILE`` (config ``debug.trace_events``) writes a
versioned JSON Lines file of context, pass, skip and failure events; ``passhost trace FILE
--chrome`` converts it to Chrome's Trace Event format; bad files give clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from passhost.cli import main
from passhost.debug import TraceFormatError, read_trace, trace_to_chrome
from passhost.instrument import PassInstrument
from passhost.text import parse_module
from passhost.transform import PassContext, build_pipeline

MODEL = """#[version = "passhost.text/1"]

def @main(%x: Tensor[(2, 4), float32]) {
  %0 = add(%x, const([0.5, -1.0, 2.0, 0.25], float32));
  %1 = nn.relu(%0);
  nn.softmax(%1)
}
"""
#: Counted by hand: the function, %x, the constant, add, relu, softmax.
NODES = 6


class NoFold(PassInstrument):
    def should_run(self, mod, info):
        return info.name != "FoldConstant"


def trace(tmp_path, pipeline, instruments=()):
    path = tmp_path / "t.jsonl"
    with PassContext(config={"debug.trace_events": str(path)}, instruments=instruments):
        build_pipeline(pipeline)(parse_module(MODEL))
    return path


def shape(events):
    return [(e["event"], e.get("n"), e.get("name"), e.get("depth")) for e in events]


def test_the_header_and_the_events_of_a_run(tmp_path):
    path = trace(tmp_path, "InferType,FoldConstant,sequential{RoundConstants}", [NoFold()])
    header, events = read_trace(path)
    assert {k: header[k] for k in ("format", "version", "passhost_version", "time_unit")} == {
        "format": "passhost-trace", "version": 1, "passhost_version": "0.1.0",
        "time_unit": "us"}
    assert "nodes" in header["size"] and "functions" in header["size"]
    assert shape(events) == [
        ("context_enter", None, None, None),
        ("pass_start", 1, "sequential", 0),
        ("pass_start", 2, "InferType", 1), ("pass_end", 2, "InferType", 1),
        ("skip", 3, "FoldConstant", 1),
        ("pass_start", 4, "sequential", 1),
        ("pass_start", 5, "RoundConstants", 2), ("pass_end", 5, "RoundConstants", 2),
        ("pass_end", 4, "sequential", 1),
        ("pass_end", 1, "sequential", 0),
        ("context_exit", None, None, None)]
    assert events[4]["vetoed_by"] == ["NoFold"]
    assert {(e["functions"], e["nodes"]) for e in events if "nodes" in e} == {(1, NODES)}
    times = [e["ts"] for e in events]
    assert times == sorted(times) and all(isinstance(t, int) for t in times)


def test_failures_at_each_level_and_the_cli_flag(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("m.txt").write_text(MODEL)
    assert main(["opt", "m.txt", "--passes", "InferType,sequential{ExpandSoftmax}",
                 "--trace-events", "t.jsonl"]) == 1
    assert "ExpandSoftmax: cannot expand nn.softmax" in capsys.readouterr().err
    _, events = read_trace("t.jsonl")
    failures = [(e["n"], e["name"], e["depth"], e["error"]["type"]) for e in events
                if e["event"] == "failure"]
    assert failures == [(4, "ExpandSoftmax", 2, "BrokenPassError"),
                        (3, "sequential", 1, "BrokenPassError"),
                        (1, "sequential", 0, "BrokenPassError")]
    assert events[-1]["event"] == "context_exit"
    assert main(["compile", "m.txt", "--target", "cpu", "--trace-events", "c.jsonl",
                 "-o", "a.tar"]) == 0
    _, events = read_trace("c.jsonl")
    lowered = [e for e in events if e["event"] == "pass_end" and e["name"] == "LowerTE"]
    assert lowered[0]["functions"] > 1  # LowerTE added PrimFuncs: more functions


def test_a_trace_converts_to_a_valid_chrome_trace(tmp_path, capsys):
    path = trace(tmp_path, "InferType,FoldConstant,FuseOps", [NoFold()])
    assert main(["trace", str(path), "--chrome", "-o", str(tmp_path / "c.json")]) == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    assert set(doc) == {"traceEvents", "displayTimeUnit", "otherData"}
    open_spans, last = [], -1
    for event in doc["traceEvents"]:
        assert {"name", "cat", "ph", "ts", "pid", "tid"} <= set(event)
        assert event["ph"] in ("B", "E", "i") and event["ts"] >= last
        last = event["ts"]
        if event["ph"] == "B":
            open_spans.append(event["name"])
        elif event["ph"] == "E":
            assert open_spans.pop() == event["name"]
        else:
            assert event["s"] == "t"
    assert open_spans == []
    names = [e["name"] for e in doc["traceEvents"]]
    assert names.count("PassContext") == 2 and "skipped: FoldConstant" in names
    assert trace_to_chrome(*read_trace(path)) == doc


def test_the_text_listing(tmp_path, capsys):
    path = trace(tmp_path, "InferType,FoldConstant", [NoFold()])
    assert main(["trace", str(path)]) == 0
    lines = [line.split("us ", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert lines == ["enter PassContext",
                     f"start #1 sequential (1 functions, {NODES} nodes)",
                     f"  start #2 InferType (1 functions, {NODES} nodes)",
                     f"  end   #2 InferType (1 functions, {NODES} nodes)",
                     "  skip  #3 FoldConstant (vetoed by NoFold)",
                     f"end   #1 sequential (1 functions, {NODES} nodes)",
                     "exit PassContext"]


def test_a_context_entered_twice_appends_to_one_file(tmp_path):
    path = tmp_path / "t.jsonl"
    ctx = PassContext(config={"debug.trace_events": str(path)})
    for _ in range(2):
        with ctx:
            build_pipeline("InferType")(parse_module(MODEL))
    _, events = read_trace(path)
    assert [e["event"] for e in events].count("context_enter") == 2
    assert [e["n"] for e in events if e["event"] == "pass_start"] == [1, 2, 1, 2]
    assert path.read_text().count('"format"') == 1


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty file, not a passhost trace"),
    ('{"traceEvents": []}\n', "t.jsonl:1: not a passhost trace"),
    ("not json\n", "t.jsonl:1: the header is not JSON"),
    ('{"format": "passhost-trace", "version": 2, "passhost_version": "9.0"}\n',
     "trace version 2 was written by a newer passhost (9.0); this passhost (0.1.0) reads "
     "version 1"),
    ('{"format": "passhost-trace", "version": "1"}\n', "bad trace version '1'"),
    ('{"format": "passhost-trace", "version": 1}\n{"event": "pass_start", "ts": 1}\n',
     "t.jsonl:2: pass_start event without n, name, depth, functions, nodes"),
    ('{"format": "passhost-trace", "version": 1}\n[1]\n', "t.jsonl:2: the event is not a "
                                                          "JSON object"),
])
def test_bad_trace_files(tmp_path, capsys, text, message):
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with pytest.raises(TraceFormatError) as caught:
        read_trace(path)
    assert message in str(caught.value)
    assert main(["trace", str(path), "--chrome"]) == 1
    assert message in capsys.readouterr().err


def test_unknown_event_kinds_are_ignored(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"format": "passhost-trace", "version": 1}\n'
                    '{"event": "gc_pause", "ts": 3}\n{"event": "context_exit", "ts": 4}\n')
    assert read_trace(path)[1] == [{"event": "context_exit", "ts": 4}]
