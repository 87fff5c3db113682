"""PassTimingInstrument: spec rules 37-39, checked against the profile's own raw times."""

from __future__ import annotations

import json
import re
import time
import warnings

import importlib_metadata
import pytest

import passhost.relay as relay
from passhost.ir.module import IRModule
from passhost.plugins import get_host
from passhost.transform import PassContext, Sequential, module_pass
from passhost_timing import NOTHING_PROFILED, PassTimingInstrument

LINE = re.compile(r"^(\t*)(.+): (\d+)us \[(-?\d+)us\] \((\d+\.\d{2})%; (\d+\.\d{2})%\)$")


def _module() -> IRModule:
    x = relay.var("x", shape=(1, 4), dtype="float32")
    return IRModule.from_expr(relay.Function([x], relay.nn.relu(x)))


def _sleeping(name: str, seconds: float, *inner):
    @module_pass(name=name)
    def run(mod, ctx):
        time.sleep(seconds)
        for p in inner:
            mod = p(mod)
        return mod

    return run


INFER = _sleeping("InferType", 0.002)
FOLD = _sleeping("FoldConstant", 0.001, INFER)
SCALE = _sleeping("FoldScaleAxis", 0.0, FOLD)


def _run_tutorial_passes(timing: PassTimingInstrument) -> str:
    with PassContext(instruments=[timing]):
        INFER(_module())
        SCALE(_module())
        return timing.render()


def test_render_matches_the_format_and_the_recorded_durations():
    timing = PassTimingInstrument()
    text = _run_tutorial_passes(timing)
    assert text.endswith("\n")
    rows = [LINE.match(line) for line in text.splitlines()]
    assert all(rows), text
    assert [(len(m[1]), m[2]) for m in rows] == [
        (0, "InferType"), (0, "FoldScaleAxis"), (1, "FoldConstant"), (2, "InferType")]
    d = [int(m[3]) for m in rows]
    s = [int(m[4]) for m in rows]
    # self time is the duration minus the direct children's durations
    assert s == [d[0], d[1] - d[2], d[2] - d[3], d[3]]
    total = d[0] + d[1]
    expected_total = [f"{100 * x / total:.2f}" for x in d]
    expected_parent = [expected_total[0], expected_total[1], f"{100 * d[2] / d[1]:.2f}",
                       f"{100 * d[3] / d[2]:.2f}"]
    assert [m[5] for m in rows] == expected_total
    assert [m[6] for m in rows] == expected_parent
    assert d[3] >= 2000 and d[2] >= d[3] + 1000  # the sleeps are inside the durations


def test_render_agrees_with_the_profile_data():
    timing = PassTimingInstrument()
    text = _run_tutorial_passes(timing)
    with PassContext(instruments=[timing]):
        SCALE(_module())
        profile = timing.profile()
    (scale,) = profile
    (fold,) = scale.children
    (infer,) = fold.children
    assert [p.name for p in (scale, fold, infer)] == ["FoldScaleAxis", "FoldConstant",
                                                      "InferType"]
    assert fold.self_us == pytest.approx(fold.duration_us - infer.duration_us)
    assert scale.start_us <= fold.start_us <= infer.start_us
    assert infer.start_us + infer.duration_us <= fold.start_us + fold.duration_us
    assert text.count("\n") == 4


def test_nothing_profiled_returns_empty_and_warns():
    timing = PassTimingInstrument()
    with pytest.warns(UserWarning, match=re.escape(NOTHING_PROFILED)):
        assert timing.render() == ""


def test_render_does_not_clear_but_exit_does():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        INFER(_module())
        first = timing.render()
        assert timing.render().count("InferType") == first.count("InferType") == 1
    with pytest.warns(UserWarning):
        assert timing.render() == ""


def test_override_instruments_on_the_default_context_as_in_the_tutorial():
    timing = PassTimingInstrument()
    ctx = PassContext.current()
    ctx.override_instruments([timing])
    try:
        INFER(_module())
        SCALE(_module())
        rendered = timing.render()
    finally:
        ctx.override_instruments([])
    assert [line.strip().split(":")[0] for line in rendered.splitlines()] == [
        "InferType", "FoldScaleAxis", "FoldConstant", "InferType"]
    with pytest.warns(UserWarning):
        assert timing.render() == ""


def test_two_instruments_and_nested_contexts_keep_their_own_profiles():
    outer, inner = PassTimingInstrument(), PassTimingInstrument()
    with PassContext(instruments=[outer]):
        INFER(_module())
        with PassContext(instruments=[inner]):
            FOLD(_module())
            inner_text = inner.render()
        SCALE(_module())
        outer_text = outer.render()
    assert [line.split(":")[0] for line in inner_text.splitlines()] == [
        "FoldConstant", "\tInferType"]
    assert [line.split(":")[0] for line in outer_text.splitlines()] == [
        "InferType", "FoldScaleAxis", "\tFoldConstant", "\t\tInferType"]


def test_both_orders_of_two_timing_instruments_give_full_profiles():
    a, b = PassTimingInstrument(), PassTimingInstrument()
    with PassContext(instruments=[a, b]):
        SCALE(_module())
        texts = a.render(), b.render()
    for text in texts:
        assert [line.split(":")[0] for line in text.splitlines()] == [
            "FoldScaleAxis", "\tFoldConstant", "\t\tInferType"]


@module_pass(name="Broken")
def _broken(mod, ctx):
    INFER(mod)
    raise ValueError("broken pass")


def test_a_failing_pass_does_not_break_later_renders():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        with pytest.raises(ValueError, match="broken pass"):
            _broken(_module())
        INFER(_module())
        text = timing.render()
        profile = timing.profile()
    assert [line.split(":")[0] for line in text.splitlines()] == [
        "Broken", "\tInferType", "InferType"]
    assert [p.failed for p in profile] == [True, False]
    assert all(LINE.match(line) for line in text.splitlines())


def test_an_entry_left_open_by_another_instrument_is_skipped():
    """When an instrument after the timer raises in run_before_pass, the pass never runs;
    the timer's open entry is dropped and later passes still render at the right depth."""

    class Veto:
        def __init__(self):
            self.armed = True

        def run_before_pass(self, mod, info):
            if self.armed and info.name == "FoldConstant":
                self.armed = False
                raise RuntimeError("veto")

    from passhost.instrument import pass_instrument

    timing = PassTimingInstrument()
    with PassContext(instruments=[timing, pass_instrument(Veto)()]):
        with pytest.raises(RuntimeError):
            SCALE(_module())
        INFER(_module())
        text = timing.render()
    assert [line.split(":")[0] for line in text.splitlines()] == ["FoldScaleAxis",
                                                                   "InferType"]


def test_json_and_chrome_trace():
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        SCALE(_module())
        document = json.loads(timing.to_json())
        trace = timing.chrome_trace()
    assert document["schema_version"] == 1
    (scale,) = document["passes"]
    assert scale["name"] == "FoldScaleAxis"
    assert scale["children"][0]["children"][0]["name"] == "InferType"
    events = trace["traceEvents"]
    assert [e["name"] for e in events] == ["FoldScaleAxis", "FoldConstant", "InferType"]
    assert {e["ph"] for e in events} == {"X"}
    outer, mid = events[0], events[1]
    assert outer["ts"] <= mid["ts"] and mid["ts"] + mid["dur"] <= outer["ts"] + outer["dur"]


def test_save_chrome_trace(tmp_path):
    timing = PassTimingInstrument()
    with PassContext(instruments=[timing]):
        INFER(_module())
        path = timing.save_chrome_trace(tmp_path / "trace.json")
    assert json.loads(path.read_text())["traceEvents"][0]["name"] == "InferType"


def test_skipped_passes_are_not_timed():
    from passhost.instrument import pass_instrument

    @pass_instrument
    class SkipFold:
        def should_run(self, mod, info):
            return info.name != "FoldConstant"

    timing = PassTimingInstrument()
    with PassContext(instruments=[SkipFold(), timing]):
        Sequential([INFER, FOLD])(_module())
        text = timing.render()
    assert [line.split(":")[0] for line in text.splitlines()] == ["sequential", "\tInferType"]


def test_installed_distribution_registers_instrument_timing():
    (ep,) = [ep for ep in importlib_metadata.entry_points(group="passhost.plugins")
             if ep.name == "timing"]
    assert ep.value == "passhost_timing.plugin"
    assert ep.dist.name == "passhost-timing"
    host = get_host()
    assert host.records["timing"].status == "active"
    entry = host.registries.instruments.entry("timing")
    assert entry.provider == "timing" and entry.distribution == "passhost-timing"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(entry.spec.create(), PassTimingInstrument)
