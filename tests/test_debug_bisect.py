"""Pass bisection (passhost.debug.bisect, ``passhost bisect``) and what it rests on: the
``always_run`` flag, the execution numbering and limit, and the reproducing command.

The broken passes come from the installed ``passhost-broken-passes`` distribution, found
through its entry point. Numbers are checked against NumPy computations of the model.
"""

from __future__ import annotations

import math
import shlex

import numpy as np
import pytest

from passhost.backend.build import _BuildState, build_passes
from passhost.cli import main
from passhost.debug import ExecutionLimit, Flow, bisect
from passhost.debug.checks import CheckError
from passhost.plugins import get_host
from passhost.target import parse_targets
from passhost.text import parse_module
from passhost.transform import PassContext, PassInfo, build_pipeline, mark_always_run

C1 = [0.1234, -0.5678, 0.9101, 0.3141]
C2 = [1.2345, 0.5, 2.25, -1.5]
MODEL = f"""#[version = "passhost.text/1"]

def @main(%x: Tensor[(2, 4), float32]) {{
  %0 = add(%x, const({C1}, float32));
  %1 = multiply(%0, const({C2}, float32));
  %2 = nn.relu(%1);
  nn.softmax(%2)
}}
"""


def numpy_model(x, c1, c2):
    """The model, written independently in NumPy."""
    y = np.maximum((x + np.float32(c1)) * np.float32(c2), 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.fixture
def model_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.txt").write_text(MODEL)
    return "model.txt"


def module():
    return parse_module(MODEL)


def test_the_broken_passes_come_from_the_installed_plugin():
    passes = get_host().registries.passes
    assert {passes.entry(n).distribution for n in ("ExpandSoftmax", "RoundConstants",
                                                   "CountOperators")} == {
        "passhost-broken-passes"}


# -- the flag and the numbering ---------------------------------------------------------

def test_always_run_is_shown_in_the_repr_only_when_set():
    assert repr(PassInfo(0, "A")) == ('PassInfo(opt_level=0, name="A", required=[], '
                                      'traceable=False)')
    assert repr(PassInfo(0, "A", always_run=True)) == (
        'PassInfo(opt_level=0, name="A", required=[], traceable=False, always_run=True)')
    with pytest.raises(TypeError, match="always_run is a bool"):
        PassInfo(0, "A", always_run=1)


def test_mark_always_run_copies_and_leaves_the_pass_alone():
    fold = build_pipeline("FoldConstant{fold_qnn=true}").passes[0]
    marked = mark_always_run(fold)
    assert marked is not fold and marked.info.always_run and not fold.info.always_run
    assert marked.fold_qnn is True and marked.info.name == "FoldConstant"


def test_the_structural_steps_of_the_build_always_run():
    state = _BuildState(parse_targets("cpu"))
    flow = build_passes(state.targets, {"w": np.zeros(1, "float32")}, state)
    flags = {p.info.name: p.info.always_run for p in flow.passes}
    assert flow.info.always_run
    assert flags == {"BindParams": True, "Optimize": False, "FuseOps": False,
                     "LowerTE": True, "tir.phase1": False, "tir.phase2": False,
                     "tir.phase3": False, "TIRToRuntime.cpu": True, "Package": True}


def test_partitioning_for_an_external_target_always_runs(register_plugin):
    from toy_targets import RefHostPlugin, ToyPlugin

    register_plugin(RefHostPlugin(), "ref-host")
    register_plugin(ToyPlugin(), "toy")
    state = _BuildState(parse_targets("toy, ref-host"))
    (partition,) = [p for p in build_passes(state.targets, None, state).passes
                    if p.info.name == "Partition.toy"]
    assert partition.info.always_run
    assert [(p.info.name, p.info.always_run) for p in partition.passes] == [
        ("MergeComposite", True), ("AnnotateTarget", True), ("PartitionGraph", True)]


def test_executions_are_numbered_nested_included_and_limited():
    limit = ExecutionLimit(3)
    with PassContext(instruments=[limit]):
        build_pipeline("InferType,FoldConstant,sequential{InferType,RoundConstants}")(module())
    # FoldConstant's body runs InferType (#4): it belongs to FoldConstant, never skipped
    assert limit.executions == [
        (1, "sequential", 0, True), (2, "InferType", 1, True), (3, "FoldConstant", 1, True),
        (4, "InferType", 2, False), (5, "sequential", 1, True)]


def test_a_required_pass_is_numbered_when_it_starts():
    limit = ExecutionLimit(0)
    with PassContext(instruments=[limit], required_pass="InferType"):
        build_pipeline("InferType")(module())
    assert limit.executions == [(1, "sequential", 0, True)]  # sequential skipped: nothing more
    limit = ExecutionLimit(1)
    with PassContext(instruments=[limit], required_pass="InferType"):
        build_pipeline("InferType,FoldConstant")(module())
    assert limit.executions[:3] == [(1, "sequential", 0, True), (2, "InferType", 1, False),
                                    (3, "FoldConstant", 1, True)]


def test_the_config_option_installs_the_limit_after_the_given_instruments():
    ctx = PassContext(instruments=[mine := ExecutionLimit()],
                      config={"debug.max_pass_executions": 1})
    (given, from_config) = ctx.instruments
    assert given is mine and isinstance(from_config, ExecutionLimit) and from_config.max == 1
    other = ExecutionLimit()
    ctx.override_instruments([other])
    assert ctx.instruments == (other, from_config)  # the config's instrument stays
    with ctx:
        out = build_pipeline("RoundConstants,RoundConstants{decimals=1}")(module())
    assert "-0.5678" in str(out)  # #1 (the sequential) ran, both children were skipped
    with pytest.raises(ValueError, match=r"bisect sets debug\.max_pass_executions itself"):
        bisect(module(), passes="InferType", config={"debug.max_pass_executions": 2})


def test_a_build_with_no_skippable_execution_still_compiles():
    mod = module()
    with PassContext(opt_level=3, config={"debug.max_pass_executions": 0}):
        from passhost.backend import build

        compiled = build(mod, "cpu")
    x = np.linspace(-2, 2, 8, dtype="float32").reshape(2, 4)
    np.testing.assert_allclose(compiled.executor()(x)[0], numpy_model(x, C1, C2), rtol=1e-5)


# -- bisection finds each broken pass ---------------------------------------------------

def test_numerics_finds_round_constants_in_a_pipeline(model_file):
    result = bisect(module(), passes="InferType,FoldConstant,RoundConstants,FuseOps",
                    check="numerics", source=model_file)
    assert (result.status, result.culprit, result.number, result.last_good) == (
        "found", "RoundConstants", 5, 3)
    assert result.checks <= math.ceil(math.log2(result.skippable)) + 2
    # the fixed inputs are uniform in [-2, 2) from seed 0; NumPy agrees on the difference
    x = np.random.default_rng(0).uniform(-2, 2, size=(2, 4)).astype("float32")
    diff = np.abs(numpy_model(x, np.round(C1, 2), np.round(C2, 2)) - numpy_model(x, C1, C2))
    largest = float(result.failure.split("the largest difference is ")[1].split()[0])
    assert largest == pytest.approx(diff.max(), rel=1e-3)


def test_raises_finds_expand_softmax_in_a_compile(model_file):
    result = bisect(module(), passes="InferType,ExpandSoftmax", target="cpu",
                    check="raises", source=model_file)
    assert (result.culprit, result.number) == ("ExpandSoftmax", 3)
    assert result.failure == ("raised BrokenPassError: ExpandSoftmax: cannot expand "
                              "nn.softmax over axis -1 in @main")


def test_the_pass_that_breaks_after_another_is_the_culprit_not_the_other():
    result = bisect(module(), passes="InferType,FuseOps,CountOperators,InferType",
                    check="raises")
    assert (result.culprit, result.number) == ("CountOperators", 5)  # FuseOps' InferType is #4
    swapped = bisect(module(), passes="InferType,CountOperators,FuseOps", check="raises")
    assert (swapped.status, swapped.culprit, swapped.checks) == ("never-fails", None, 1)


@pytest.mark.parametrize("position", [1, 6, 13, 20])
def test_the_check_runs_at_most_log2_plus_2_times(position):
    steps = ["InferType"] * 20
    steps[position - 1] = "RoundConstants"
    calls = []

    def changed(outcome):
        calls.append(1)
        return "-0.57," in str(outcome.output)  # -0.5678 rounded

    result = bisect(module(), passes=",".join(steps), check=changed)
    assert (result.culprit, result.number) == ("RoundConstants", position + 1)
    assert result.skippable == 21 and len(calls) == result.checks
    assert result.checks <= math.ceil(math.log2(21)) + 2


def test_disabled_passes_stay_disabled_in_every_probe(model_file):
    seen = []

    def check(outcome):
        seen.append("0.57" in str(outcome.output))
        return seen[-1]

    result = bisect(module(), passes="InferType,RoundConstants", check=check,
                    disabled_pass=["RoundConstants"])
    assert (result.status, seen) == ("never-fails", [False])
    result = bisect(module(), passes="InferType,FoldConstant,RoundConstants",
                    check="numerics", disabled_pass="FoldConstant", source=model_file)
    assert (result.culprit, result.number) == ("RoundConstants", 3)
    assert "--disabled-pass FoldConstant" in result.command


def test_a_failure_without_skippable_passes_is_said():
    result = bisect(module(), passes="InferType", check=lambda outcome: "always")
    assert (result.status, result.checks, result.failure) == ("always-fails", 2, "always")
    assert "the cause is in the input or in a step that always runs" in str(result)


# -- the reproducing command works ------------------------------------------------------

def test_the_command_reproduces_a_raise_and_one_less_does_not(model_file, capsys):
    result = bisect(module(), passes="InferType,FuseOps,CountOperators", check="raises",
                    source=model_file)
    argv = shlex.split(result.command)
    assert argv[:2] == ["passhost", "opt"] and f"debug.max_pass_executions={result.number}" \
        in argv
    with pytest.raises(AttributeError, match="'Function' object has no attribute 'name'"):
        main(argv[1:])
    argv[argv.index(f"debug.max_pass_executions={result.number}")] = (
        f"debug.max_pass_executions={result.last_good}")
    assert main(argv[1:]) == 0


def test_the_command_reproduces_the_numbers_of_a_compile(model_file, capsys):
    result = bisect(module(), passes="RoundConstants", target="cpu", check="numerics",
                    source=model_file)
    assert result.culprit == "RoundConstants"
    argv = shlex.split(result.command)
    assert argv[:3] == ["passhost", "compile", "model.txt"]
    assert main(argv[1:]) == 0
    err = capsys.readouterr().err
    assert "validate-numerics: pass RoundConstants changed the outputs" in err
    from passhost.runtime import load_artifact

    x = np.linspace(-2, 2, 8, dtype="float32").reshape(2, 4)
    out = load_artifact("culprit.tar").executor()(x)[0]
    np.testing.assert_allclose(out, numpy_model(x, np.round(C1, 2), np.round(C2, 2)),
                               rtol=1e-5)
    assert not np.allclose(out, numpy_model(x, C1, C2), rtol=1e-5, atol=1e-5)


def test_a_script_check(model_file, tmp_path):
    script = tmp_path / "check.py"
    script.write_text("import sys\n"
                      "text = open(sys.argv[1]).read()\n"
                      "sys.exit('rounded constants' if '0.57,' in text else 0)\n")
    result = bisect(module(), passes="InferType,RoundConstants,InferType",
                    check=f"script:{script}", source=model_file)
    assert (result.culprit, result.number) == ("RoundConstants", 3)
    assert result.failure == f"{script} exited with status 1: rounded constants"


# -- the command line -------------------------------------------------------------------

def test_passhost_bisect_prints_the_culprit_and_the_command(model_file, capsys):
    status = main(["bisect", "model.txt", "--passes", "InferType,RoundConstants",
                   "--check", "numerics:1e-3"])
    out = capsys.readouterr().out
    assert status == 0
    assert "culprit: RoundConstants (execution #3)" in out
    assert ("reproduce: passhost opt model.txt --passes InferType,RoundConstants -O 2 "
            "--pass-config debug.max_pass_executions=3 --instrument "
            "'validate-numerics{rtol=0.001,atol=1e-05,seed=0}' -o culprit.txt") in out
    assert main(["bisect", "model.txt", "--passes", "InferType,RoundConstants",
                 "--check", "numerics:0.5"]) == 1
    assert "nothing to bisect" in capsys.readouterr().out


def test_passhost_bisect_takes_the_pass_context_flags_of_opt(model_file, capsys):
    status = main(["bisect", "model.txt", "--passes", "InferType,RoundConstants",
                   "--check", "numerics:1e-3", "--required-pass", "InferType",
                   "--instrument", "print-after-change"])
    out, _ = capsys.readouterr()
    assert status == 0
    probes, result = out.split("bisect: ", 1)
    assert "culprit: RoundConstants" in result
    assert "--required-pass InferType" in result.split("reproduce: ", 1)[1]
    assert "+++ after RoundConstants" in probes  # the instrument printed in the probes


@pytest.mark.parametrize(("argv", "message"), [
    (["--passes", "InferType", "--check", "maybe"], "unknown check 'maybe'; a check is "
                                                     "raises, numerics[:RTOL] or script:PATH"),
    (["--passes", "InferType", "--check", "numerics:x"], "numerics:RTOL takes a number"),
    (["--check", "raises"], "bisect needs --passes PIPELINE, --target TARGET, or both"),
])
def test_passhost_bisect_errors(model_file, capsys, argv, message):
    assert main(["bisect", "model.txt", *argv]) == 1
    assert message in capsys.readouterr().err


def test_flow_and_check_errors():
    with pytest.raises(ValueError, match="a flow needs passes, a target, or both"):
        Flow(module())
    with pytest.raises(CheckError, match="a check is"):
        bisect(module(), passes="InferType", check=3)
    assert Flow(module(), passes="InferType").command(1) is None  # no source: no command
