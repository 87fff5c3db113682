"""The optional ``run_skipped`` callback: after should_run vetoes a pass, each instrument
defining it hears which instruments vetoed; the printing instruments and the timing plugin
show skipped passes when asked, and instruments without the callback see no change."""

from __future__ import annotations

import io

import pytest

from passhost import hookimpl
from passhost.errors import InstrumentError
from passhost.instrument import PassInstrument, PrintAfterAll, PrintBeforeAll
from passhost.plugins import INSTRUMENT_CALLBACKS, get_host
from passhost.text import parse_module
from passhost.transform import PassContext, Sequential, build_pipeline
from passhost_timing import PassTimingInstrument

MODEL = """#[version = "passhost.text/1"]

def @main(%x: Tensor[(1, 4), float32]) {
  nn.relu(%x)
}
"""


def veto(name: str, *vetoed: str) -> PassInstrument:
    """An instrument named ``name`` whose should_run is false for the passes ``vetoed``."""
    def should_run(self, mod, info):
        return info.name not in vetoed

    return type(name, (PassInstrument,), {"should_run": should_run})()


class Listener(PassInstrument):
    def __init__(self, log):
        self.log = log

    def should_run(self, mod, info):
        self.log.append(f"should_run({info.name})")
        return True

    def run_skipped(self, mod, info, vetoed_by):
        self.log.append(f"skipped({info.name} by {','.join(vetoed_by)})")


def run(pipeline: str, *instruments, **context):
    with PassContext(instruments=list(instruments), **context):
        return build_pipeline(pipeline)(parse_module(MODEL))


def test_the_hookspec_is_an_instrument_callback():
    assert INSTRUMENT_CALLBACKS["run_skipped"] == ("mod", "info", "vetoed_by")


def test_it_names_every_vetoing_instrument_after_all_should_runs():
    log = []
    run("InferType,FoldConstant", veto("A", "FoldConstant"), Listener(log),
        veto("B", "FoldConstant", "Nothing"))
    assert log == ["should_run(sequential)", "should_run(InferType)",
                   "should_run(FoldConstant)", "skipped(FoldConstant by A,B)"]


def test_not_for_gated_passes_nor_the_children_of_a_skipped_sequential():
    log = []
    run("FoldConstant,sequential{InferType}", veto("V", "sequential"), Listener(log),
        disabled_pass="FoldConstant")
    assert log == ["should_run(sequential)", "skipped(sequential by V)"]
    log.clear()
    run("FoldConstant", veto("V", "FoldConstant"), Listener(log), opt_level=1)
    assert log == ["should_run(sequential)"]  # gated out by opt level: never asked


def test_required_passes_are_not_asked_so_not_skipped():
    log = []
    run("InferType", veto("V", "InferType"), Listener(log), required_pass="InferType")
    assert log == ["should_run(sequential)"]


def test_a_pluggy_style_hook_with_a_subset_of_the_arguments():
    seen = []

    class Hooks:
        @hookimpl
        def passhost_should_run(self, info):
            return info.name != "InferType"

        @hookimpl
        def passhost_run_skipped(self, vetoed_by, info):
            seen.append((info.name, vetoed_by))

    run("InferType", Hooks())
    assert seen == [("InferType", ("Hooks",))]


def test_a_skip_callback_that_raises_names_itself():
    class Bad(PassInstrument):
        def should_run(self, mod, info):
            return info.name == "sequential"

        def run_skipped(self, mod, info, vetoed_by):
            raise ValueError("no")

    with pytest.raises(ValueError) as caught:
        run("InferType", Bad())
    assert caught.value.__notes__ == ["in Bad.run_skipped for pass InferType inside sequential"]


def test_a_wrong_signature_is_an_instrument_error():
    class Wrong(PassInstrument):
        def run_skipped(self, mod):
            pass

    with pytest.raises(InstrumentError, match=r"run_skipped\(mod\) cannot take the arguments "
                                              r"\(mod, info, vetoed_by\)"):
        PassContext(instruments=[Wrong()])


def test_printing_instruments_show_skipped_passes_when_asked():
    sink = io.StringIO()
    run("InferType", veto("V", "InferType"), PrintBeforeAll(sink, show_skipped=True),
        PrintAfterAll(io.StringIO()))
    lines = [line for line in sink.getvalue().splitlines() if "Pass:" in line]
    assert lines == [
        'Before Running Pass: PassInfo(opt_level=0, name="sequential", required=[], '
        'traceable=False)',
        'Skipped Pass: PassInfo(opt_level=0, name="InferType", required=[], traceable=False) '
        '(vetoed by V)']
    quiet = io.StringIO()
    run("InferType", veto("V", "InferType"), PrintAfterAll(quiet))
    assert "Skipped" not in quiet.getvalue()
    spec = get_host().registries.instruments.get("print-after-all")
    assert spec.create({"show_skipped": "true"}, from_text=True).show_skipped is True


def test_the_timing_plugin_shows_skipped_passes_when_asked():
    timing = PassTimingInstrument(show_skipped=True)
    with PassContext(instruments=[veto("V", "FoldConstant"), timing]):
        Sequential([build_pipeline("InferType,FoldConstant")])(parse_module(MODEL))
        text = timing.render()
        doc = timing.to_dict()
        chrome = timing.chrome_trace()
    assert [line.split(":")[0] for line in text.splitlines()] == [
        "sequential", "\tsequential", "\t\tInferType", "\t\tFoldConstant"]
    assert text.splitlines()[-1] == "\t\tFoldConstant: skipped (vetoed by V)"
    inner = doc["passes"][0]["children"][0]["children"]
    assert [(p["name"], p.get("skipped_by")) for p in inner] == [("InferType", None),
                                                                ("FoldConstant", ["V"])]
    assert [e["ph"] for e in chrome["traceEvents"]] == ["X", "X", "X", "i"]
    spec = get_host().registries.instruments.get("timing")
    assert spec.create({"show_skipped": "true"}, from_text=True).show_skipped is True
