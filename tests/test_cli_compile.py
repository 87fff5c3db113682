"""``passhost compile`` and ``passhost run``, in process, on the test host target
``ref-host`` (tests/toy_targets.py); the cpu target's end-to-end tests are in its plugin."""

from __future__ import annotations

import io

import numpy as np
import pytest

from passhost.cli import main
from passhost.relay.interpreter import evaluate
from passhost.workloads.zoo import get_model
from passhost_timing import plugin as timing_plugin
from toy_targets import RefHostPlugin, ToyPlugin


@pytest.fixture
def targets(register_plugin) -> None:
    register_plugin(timing_plugin, "timing")
    register_plugin(RefHostPlugin(), "ref-host")
    register_plugin(ToyPlugin(), "toy")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def mlp_artifact(targets, tmp_path, capsys):
    path = tmp_path / "mlp.tar"
    status, out, err = run(capsys, "compile", "mlp", "--target", "toy, ref-host",
                           "--instrument", "timing", "-o", str(path))
    assert status == 0, err
    return path, out, err


def test_compile_prints_the_timing_tree_of_the_whole_flow(mlp_artifact):
    path, out, err = mlp_artifact
    assert path.exists()
    assert "compiled mlp for toy, ref-host" in out and f"wrote {path}" in out
    for step in ("build", "BindParams", "Optimize", "FoldConstant", "Partition.toy",
                 "FuseOps", "RelayToTIR.toy", "LowerTE", "TIRToRuntime.ref-host", "Package"):
        assert step in err, step


def test_run_with_given_inputs_matches_the_interpreter(mlp_artifact, tmp_path, capsys):
    path, _, _ = mlp_artifact
    x = np.random.default_rng(5).standard_normal((1, 1, 28, 28)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    status, out, err = run(capsys, "run", str(path), "--input", f"data={tmp_path / 'x.npy'}",
                           "--repeat", "3", "-o", str(tmp_path / "out.npz"))
    assert status == 0, err
    assert "output 0: float32[1, 10]" in out
    assert "latency over 3 runs: median" in out
    mod, params = get_model("mlp")
    want = evaluate(mod, data=x, **params)
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output0"], want, rtol=1e-5)


def test_run_with_random_inputs(mlp_artifact, capsys):
    status, out, _ = run(capsys, "run", str(mlp_artifact[0]))
    assert status == 0 and "output 0: float32[1, 10]  min" in out and "latency" not in out


def test_compile_a_text_module_and_show_the_lowered_ir(targets, tmp_path, capsys,
                                                       monkeypatch):
    src = tmp_path / "m.txt"
    src.write_text('#[version = "passhost.text/1"]\n'
                   'def @main(%x: Tensor[(2, 3), float32]) {\n'
                   '  nn.relu(add(%x, %x))\n}\n')
    out_path = tmp_path / "m.tar"
    status, out, err = run(capsys, "compile", str(src), "--target", "ref-host",
                           "--print-ir-after", "LowerTE", "--dump-ir", str(tmp_path / "dump"),
                           "-o", str(out_path))
    assert status == 0, err
    assert "prim_func @fused_add_nn_relu" in out
    assert any(p.name.endswith("LowerTE.txt") for p in (tmp_path / "dump").iterdir())
    monkeypatch.setattr("sys.stdin", io.StringIO(src.read_text()))
    status, out, err = run(capsys, "compile", "-", "--target", "ref-host",
                           "-o", str(tmp_path / "stdin.tar"))
    assert status == 0 and "compiled - for ref-host" in out, err
    x = np.arange(6, dtype="float32").reshape(2, 3) - 3
    np.save(tmp_path / "x.npy", x)
    status, out, _ = run(capsys, "run", str(out_path), "--input", str(tmp_path / "x.npy"))
    assert status == 0 and "max 4" in out


@pytest.mark.parametrize("argv, message", [
    (["compile", "mlp", "--target", "ref-hots", "-o", "x.tar"], "did you mean 'ref-host'"),
    (["compile", "resnet7", "--target", "ref-host", "-o", "x.tar"], "unknown zoo model"),
    (["compile", "mlp", "--target", "toy", "-o", "x.tar"], "host"),
    (["compile", "mlp", "--target", "ref-host", "-O", "3", "--pass-config", "nope=1",
      "-o", "x.tar"], "unknown config option"),
])
def test_compile_errors(targets, capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, *argv)
    assert status == 1 and message in err
    assert not (tmp_path / "x.tar").exists()


def test_run_errors(mlp_artifact, tmp_path, capsys):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"garbage" * 100)
    status, _, err = run(capsys, "run", str(bad))
    assert status == 1 and "not a passhost artifact" in err
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 28, 28), "float32"))
    status, _, err = run(capsys, "run", str(mlp_artifact[0]), "--input",
                         f"image={tmp_path / 'x.npy'}")
    assert status == 1 and "unknown inputs ['image']" in err
    np.save(tmp_path / "y.npy", np.zeros((1, 28, 28), "float32"))
    status, _, err = run(capsys, "run", str(mlp_artifact[0]), "--input",
                         f"data={tmp_path / 'y.npy'}")
    assert status == 1 and "expected float32[1, 1, 28, 28]" in err
