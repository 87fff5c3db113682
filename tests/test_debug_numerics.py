"""The ``validate-numerics`` instrument: the first pass that changed the outputs beyond
tolerance, with the diff of the module across it, checked against NumPy; the module is
never mutated; modules the interpreter cannot run are noted once."""

from __future__ import annotations

import numpy as np
import pytest
from passhost_broken_passes import BrokenPassError

from passhost.cli import main
from passhost.debug import ValidateNumerics
from passhost.debug.numerics import compare_outputs, fixed_inputs
from passhost.errors import OptionError
from passhost.ir.structural import structural_hash
from passhost.plugins import get_host
from passhost.text import parse_module
from passhost.transform import PassContext, build_pipeline

C1 = [0.1234, -0.5678, 0.9101, 0.3141]
MODEL = f"""#[version = "passhost.text/1"]

def @main(%x: Tensor[(2, 4), float32], %y: Tensor[(4), int32]) {{
  %0 = add(%x, const({C1}, float32));
  %1 = nn.relu(%0);
  (nn.softmax(%1), add(%y, const([1, 2, 3, 4], int32)))
}}
"""


def numpy_model(x, y, c1):
    """The model, written independently in NumPy."""
    r = np.maximum(x + np.float32(c1), 0)
    e = np.exp(r - r.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True), y + np.array([1, 2, 3, 4], "int32")


def make(text: str = "") -> ValidateNumerics:
    spec = get_host().registries.instruments.get("validate-numerics")
    return spec.create(dict(item.split("=") for item in text.split(",") if item),
                       from_text=True)


def test_the_fixed_inputs_are_seeded_random_draws():
    inputs = fixed_inputs(parse_module(MODEL), seed=3)
    rng = np.random.default_rng(3)
    np.testing.assert_array_equal(inputs["x"], rng.uniform(-2, 2, (2, 4)).astype("float32"))
    np.testing.assert_array_equal(inputs["y"], rng.integers(-5, 6, 4).astype("int32"))
    assert compare_outputs(*[[inputs["x"]]] * 2) is None


def test_it_finds_round_constants_with_the_diff():
    mod = parse_module(MODEL)
    before = structural_hash(mod)
    validate = make()
    with PassContext(instruments=[validate], config={"testing.immutable_module": True}):
        build_pipeline("InferType,FoldConstant,RoundConstants,InferType,RoundConstants"
                       "{decimals=1}")(mod)
    assert structural_hash(mod) == before
    mismatch = validate.mismatch
    assert mismatch.pass_name == "RoundConstants"
    assert mismatch.problem.startswith("output 0: 8 of 8 elements differ beyond "
                                       "rtol=1e-05, atol=1e-05")
    assert mismatch.diff.splitlines()[:2] == ["--- before RoundConstants",
                                              "+++ after RoundConstants"]
    assert f"-  %0 = add(%x, const({C1}, float32));" in mismatch.diff.splitlines()
    assert "+  %0 = add(%x, const([0.12, -0.57, 0.91, 0.31], float32));" in mismatch.diff
    inputs = fixed_inputs(mod)
    want = numpy_model(inputs["x"], inputs["y"], C1)[0]
    found = numpy_model(inputs["x"], inputs["y"], np.round(C1, 2))[0]
    largest = float(mismatch.problem.split("the largest difference is ")[1].split()[0])
    assert largest == pytest.approx(np.abs(found - want).max(), rel=1e-4)
    report = validate.render()
    assert report.startswith("validate-numerics: pass RoundConstants changed the outputs "
                             "(rtol=1e-05, atol=1e-05, seed=0): output 0:")


def test_a_tolerance_that_admits_the_rounding():
    validate = make("rtol=0.1,atol=0.01")
    with PassContext(instruments=[validate]):
        build_pipeline("RoundConstants,FoldConstant")(parse_module(MODEL))
    assert validate.mismatch is None
    assert validate.render() == ("validate-numerics: the outputs stayed within rtol=0.1, "
                                 "atol=0.01, seed=0 in each changed module the interpreter "
                                 "could run (1 checked)\n")


def test_a_raising_pass_is_forgotten_and_later_passes_checked():
    validate = make()
    mod = parse_module(MODEL)
    with PassContext(instruments=[validate]):
        with pytest.raises(BrokenPassError):
            build_pipeline("InferType,ExpandSoftmax")(mod)
        build_pipeline("InferType,RoundConstants")(mod)  # same context: same reference
    assert validate.mismatch.pass_name == "RoundConstants"


def test_an_unrunnable_module_is_noted_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.txt").write_text(MODEL)
    assert main(["compile", "m.txt", "--target", "cpu", "--instrument",
                 "validate-numerics", "-o", "a.tar"]) == 0
    err = capsys.readouterr().err.splitlines()
    notes = [line for line in err if "cannot run" in line]
    assert len(notes) == 1
    assert notes[0].startswith("validate-numerics: the reference interpreter cannot run the "
                               "module after LowerTE (PasshostError: cannot evaluate a call of "
                               "PrimFunc @fused_")
    assert notes[0].endswith("modules it cannot run are not checked")
    assert err[0].startswith("validate-numerics: the outputs stayed within")


def test_a_module_without_a_graph_main_is_said_so():
    validate = make()
    mod = parse_module(MODEL.replace("@main", "@other"))
    with PassContext(instruments=[validate]):
        build_pipeline("RoundConstants")(mod)
    assert validate.render() == ("validate-numerics: the reference interpreter cannot run "
                                 "the module before the first pass (NumericsError: the "
                                 "module has no function @main); nothing is checked\n")


@pytest.mark.parametrize("options", ["rtol=-1", "seed=x"])
def test_bad_options(options):
    with pytest.raises(OptionError):
        make(options)
