"""Crash reproducers: a pass that raises under ``--reproducer DIR`` (config
``debug.reproducer_dir``) leaves a file that replays, in a fresh process, to the same error;
``--local`` replays the failing pass alone; missing plugins are named.

The failing passes come from the installed ``passhost-broken-passes`` distribution.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from passhost_broken_passes import BrokenPassError

from passhost.cli import main
from passhost.debug import ReproducerError, read_reproducer, replay
from passhost.debug.replay import missing_plugins
from passhost.relay import Function
from passhost.target import Target
from passhost.text import parse_module
from passhost.transform import PassContext, build_pipeline

MODEL = """#[version = "passhost.text/1"]

def @main(%x: Tensor[(2, 4), float32]) {
  %0 = add(%x, const([0.5, -1.0, 2.0, 0.25], float32));
  %1 = nn.relu(%0);
  nn.softmax(%1)
}
"""
COUNT_ERROR = "AttributeError: 'Function' object has no attribute 'name'"


def fresh(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``passhost ARGV`` in a new Python process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASSHOST_")}
    return subprocess.run([sys.executable, "-m", "passhost", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, check=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.txt").write_text(MODEL)
    return tmp_path


def crash(pipeline: str, **context) -> tuple[BaseException, Path]:
    """Run ``pipeline`` on the model under a reproducer; the error and the file written."""
    config = {"debug.reproducer_dir": "repro", **context.pop("config", {})}
    with pytest.raises(Exception) as caught, PassContext(config=config, **context):
        build_pipeline(pipeline)(parse_module(MODEL))
    (path,) = Path("repro").iterdir()
    return caught.value, path


def test_the_reproducer_holds_what_the_brief_lists(workdir):
    error, path = crash("InferType,sequential{FuseOps,CountOperators},InferType",
                        opt_level=3, disabled_pass="FoldConstant",
                        config={"relay.FuseOps.max_depth": 8})
    assert path.name == "CountOperators.repro"
    assert error.__notes__[-1] == ("reproducer written to repro/CountOperators.repro; replay "
                                   "it with: passhost opt --reproduce repro/CountOperators."
                                   "repro")
    repro = read_reproducer(path)
    header = repro.header
    assert (header["format"], header["version"]) == ("passhost-reproducer", 1)
    assert header["failing_pass"] == "CountOperators"
    assert header["enclosing_passes"] == ["sequential", "sequential"]
    assert (header["pass"], header["pipeline"]) == ("CountOperators",
                                                    "CountOperators,InferType")
    assert header["error"] == {"type": "AttributeError", "module": "builtins",
                               "message": "'Function' object has no attribute 'name'"}
    assert header["context"] == {"opt_level": 3, "required_pass": [],
                                 "disabled_pass": ["FoldConstant"],
                                 "config": {"relay.FuseOps.max_depth": "8"}}
    assert header["target"] is None and header["passhost_version"] == "0.1.0"
    assert header["plugins"] == {"broken": {"distribution": "passhost-broken-passes",
                                            "version": "0.1.0"}}
    fused = parse_module(repro.module_text)  # the module before the failing pass: fused
    assert any(isinstance(f, Function) and f.attrs.get("Primitive")
               for f in _functions(fused["main"]))
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def _functions(main):
    from passhost.relay import post_order

    return [n for n in post_order(main.body) if isinstance(n, Function)]


def test_it_replays_in_a_fresh_process_to_the_same_error(workdir):
    _, path = crash("InferType,FuseOps,CountOperators")
    done = fresh("opt", "--reproduce", str(path), cwd=workdir)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"passhost: replaying {path}: pipeline CountOperators on the module before "
        f"CountOperators",
        f"passhost: error: {COUNT_ERROR}",
        "  while running pass CountOperators inside sequential",
        "passhost: reproduced the recorded error"]


def test_local_replays_the_failing_pass_alone_though_it_needs_an_earlier_pass(workdir):
    _, path = crash("InferType,FuseOps,CountOperators,DeadCodeElimination")
    # on the model as given the pass works: it is the module FuseOps made that breaks it
    build_pipeline("CountOperators")(parse_module(MODEL))
    done = fresh("opt", "--reproduce", str(path), "--local", cwd=workdir)
    assert done.returncode == 1
    assert f"passhost: error: {COUNT_ERROR}" in done.stderr
    assert "  while running pass CountOperators\n" in done.stderr  # alone: no Sequential
    assert done.stderr.endswith("passhost: reproduced the recorded error\n")


def test_a_plugin_error_class_replays_in_process_and_via_the_command(workdir, capsys):
    error, path = crash("InferType,ExpandSoftmax,FoldConstant")
    assert isinstance(error, BrokenPassError)
    with pytest.raises(BrokenPassError) as again:
        replay(path)
    assert str(again.value) == str(error)
    with pytest.raises(BrokenPassError):
        replay(path, local=True)
    assert main(["opt", "--reproduce", str(path)]) == 1
    err = capsys.readouterr().err
    assert ("passhost: error: BrokenPassError: ExpandSoftmax: cannot expand nn.softmax over "
            "axis -1 in @main") in err
    assert "pipeline ExpandSoftmax,FoldConstant on the module" in err


def test_the_command_line_flag_and_the_target(workdir, capsys):
    assert main(["compile", "model.txt", "--target", "cpu", "--passes", "ExpandSoftmax",
                 "--reproducer", "out", "-o", "a.tar"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "  reproducer written to out/ExpandSoftmax.repro; replay it with: passhost opt "
        "--reproduce out/ExpandSoftmax.repro")
    header = read_reproducer("out/ExpandSoftmax.repro").header
    assert header["context"]["opt_level"] == 3 and header["target"] is None
    with Target("cpu -num-threads=2"), pytest.raises(BrokenPassError), \
            PassContext(config={"debug.reproducer_dir": "t"}):
        build_pipeline("ExpandSoftmax")(parse_module(MODEL))
    repro = read_reproducer("t/ExpandSoftmax.repro")
    assert repro.header["target"] == "cpu -num-threads=2"
    assert "cpu" in repro.header["plugins"]  # the target kind's plugin is needed too
    with pytest.raises(BrokenPassError):
        replay(repro)


def test_missing_plugins_are_named(workdir):
    _, path = crash("RoundConstants,ExpandSoftmax")
    done = fresh("-p", "no:broken", "opt", "--reproduce", str(path), cwd=workdir)
    assert done.returncode == 1
    assert done.stderr.endswith(
        f"passhost: error: {path} needs plugins that are not available: 'broken' "
        f"(passhost-broken-passes 0.1.0): status disabled\n")
    text = path.read_text().replace('"broken": {', '"ghost": {"x": 1}, "broken": {', 1)
    path.write_text(text)
    repro = read_reproducer(path)
    assert missing_plugins(repro) == ["'ghost' (None None): not installed"]
    with pytest.raises(ReproducerError, match=r"'ghost' .*: not installed"):
        replay(repro)


def test_a_pass_without_text_form_is_recorded_but_not_replayable(workdir):
    from passhost.transform import module_pass

    @module_pass(name="Inline.Made")
    def made(mod, ctx):
        raise ValueError("made in Python")

    with pytest.raises(ValueError), PassContext(config={"debug.reproducer_dir": "r"}):
        made(parse_module(MODEL))
    repro = read_reproducer("r/Inline.Made.repro")
    assert (repro.header["pass"], repro.header["pipeline"]) == (None, None)
    with pytest.raises(ReproducerError, match="has no text form, so it cannot be replayed"):
        replay(repro)


def test_the_pipeline_stops_before_a_pass_without_text_form(workdir):
    from passhost.transform import Sequential, module_pass

    @module_pass(name="Later")
    def later(mod, ctx):
        return mod

    with pytest.raises(BrokenPassError), PassContext(config={"debug.reproducer_dir": "r"}):
        Sequential([build_pipeline("InferType,ExpandSoftmax"), later])(parse_module(MODEL))
    header = read_reproducer("r/ExpandSoftmax.repro").header
    assert (header["pipeline"], header["pipeline_stops_before"]) == ("ExpandSoftmax",
                                                                     "Later")


def test_no_reproducer_when_the_error_is_caught_inside(workdir):
    from passhost.transform import module_pass

    @module_pass(name="Tolerant")
    def tolerant(mod, ctx):
        with contextlib.suppress(BrokenPassError):
            build_pipeline("ExpandSoftmax")(mod)
        return mod

    with PassContext(config={"debug.reproducer_dir": "r"}):
        tolerant(parse_module(MODEL))
    assert not Path("r").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("{}\n", "not a passhost reproducer"),
    ("hello", "not a passhost reproducer"),
    (json.dumps({"format": "passhost-reproducer", "version": 2, "passhost_version": "9.0"}),
     "reproducer version 2 is not one this passhost (0.1.0) reads (version 1); it was "
     "written by passhost 9.0"),
    (json.dumps({"format": "passhost-reproducer", "version": 1}), "lacks failing_pass"),
])
def test_bad_files(workdir, capsys, text, message):
    Path("bad.repro").write_text(text)
    assert main(["opt", "--reproduce", "bad.repro"]) == 1
    assert message in capsys.readouterr().err


def test_opt_argument_errors(workdir, capsys):
    assert main(["opt", "model.txt", "--reproduce", "x.repro"]) == 1
    assert "give no INPUT and no --passes" in capsys.readouterr().err
    assert main(["opt", "model.txt"]) == 1
    assert "opt needs INPUT and --passes PIPELINE" in capsys.readouterr().err
