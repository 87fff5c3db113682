"""Bad command-line input is one ``passhost: error:`` line and a non-zero exit, never a
traceback: out-of-range numbers, paths that cannot be written, input files that are
empty, too big, lying about their size or of the other byte order (taken)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from passhost.cli import main
from toy_targets import RefHostPlugin


@pytest.fixture
def artifact(register_plugin, tmp_path, capsys):
    register_plugin(RefHostPlugin(), "ref-host")
    path = tmp_path / "mlp.tar"
    assert main(["compile", "mlp", "--target", "ref-host", "-o", str(path)]) == 0
    capsys.readouterr()
    return path


def _error(capsys, *argv: str) -> str:
    """The one line of standard error of a command that must fail with status 1."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 1, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("passhost: error: "), err
    return lines[0]


def _usage_error(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    assert exit_info.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--repeat", "-5", "argument --repeat: expected an integer >= 1, found '-5'"),
    ("--repeat", "0", "argument --repeat: expected an integer >= 1, found '0'"),
    ("--seed", "-1", "argument --seed: expected an integer from 0 to 4294967295"),
    ("--seed", "4294967296", "argument --seed: expected an integer from 0 to 4294967295"),
])
def test_run_refuses_numbers_out_of_range(artifact, capsys, flag, value, expected):
    assert expected in _usage_error(capsys, "run", str(artifact), flag, value)


def test_an_opt_level_below_zero_is_a_usage_error(capsys):
    assert "expected an integer >= 0, found '-1'" in _usage_error(
        capsys, "compile", "mlp", "--target", "ref-host", "-O", "-1", "-o", "x.tar")


def test_a_target_option_out_of_range_names_it(capsys, tmp_path):
    line = _error(capsys, "compile", "mlp", "--target", "cpu -num-threads=99999999999999999999",
                  "-o", str(tmp_path / "m.tar"))
    assert "'num-threads' expects int from 0 to 1024, found '99999999999999999999'" in line


def test_an_existing_file_is_no_ir_dump_directory(register_plugin, capsys, tmp_path):
    register_plugin(RefHostPlugin(), "ref-host")
    blocker = tmp_path / "afile"
    blocker.write_text("")
    line = _error(capsys, "compile", "mlp", "--target", "ref-host", "--dump-ir", str(blocker),
                  "-o", str(tmp_path / "m.tar"))
    assert line.endswith(f"cannot use {blocker} as the IR dump directory: it is a file")
    assert not (tmp_path / "m.tar").exists()


@pytest.mark.parametrize("flag", ["--trace-events", "-o"])
def test_compile_names_a_file_in_a_missing_directory(register_plugin, capsys, tmp_path, flag):
    register_plugin(RefHostPlugin(), "ref-host")
    missing = tmp_path / "missing" / "file"
    argv = ["compile", "mlp", "--target", "ref-host", flag, str(missing)]
    if flag != "-o":
        argv += ["-o", str(tmp_path / "m.tar")]
    assert f"no directory {missing.parent}" in _error(capsys, *argv)
    assert not (tmp_path / "m.tar").exists()


def test_run_names_an_output_in_a_missing_directory(artifact, capsys, tmp_path):
    missing = tmp_path / "missing" / "out.npz"
    line = _error(capsys, "run", str(artifact), "-o", str(missing))
    assert line == f"passhost: error: cannot write the output {missing}: no directory " \
                   f"{missing.parent}"


def test_opt_names_an_output_that_is_a_directory(capsys, tmp_path):
    module = tmp_path / "m.txt"
    module.write_text('#[version = "passhost.text/1"]\ndef @main(%x: Tensor[(2), float32]) {\n'
                      '  nn.relu(%x)\n}\n')
    line = _error(capsys, "opt", str(module), "--passes", "", "-o", str(tmp_path))
    assert line.endswith(f"cannot write the output {tmp_path}: it is a directory")


def _lying_npy(path, shape) -> None:
    """A .npy whose header declares ``shape`` (float32) over 64 bytes of data."""
    import io

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    path.write_bytes(header.getvalue() + bytes(64))


@pytest.mark.parametrize(("content", "expected"), [
    ("empty", "the file is empty"),
    ("text", "bad .npy header"),
    ("huge", "its header declares float32[100000, 100000, 100] (4000000000000 bytes) but "
             "it holds 64 bytes of data"),
])
def test_a_bad_input_file_is_refused_before_anything_is_allocated(artifact, capsys, tmp_path,
                                                                  content, expected):
    path = tmp_path / "x.npy"
    if content == "empty":
        path.write_bytes(b"")
    elif content == "text":
        path.write_text("not an array")
    else:
        _lying_npy(path, (100000, 100000, 100))
    line = _error(capsys, "run", str(artifact), "--input", f"data={path}")
    assert f"cannot read input 'data' from {path}: " in line and expected in line


def test_an_input_over_the_size_limit_is_refused_unread(artifact, capsys, tmp_path,
                                                        monkeypatch):
    from passhost.cli import compile_run

    monkeypatch.setattr(compile_run, "MAX_INPUT_BYTES", 1000)
    path = tmp_path / "x.npy"
    np.save(path, np.zeros((1, 1, 28, 28), "float32"))
    line = _error(capsys, "run", str(artifact), "--input", str(path))
    assert "the file holds 3264 bytes, more than the 1000 an input may" in line


def test_an_input_of_the_other_byte_order_is_taken(artifact, capsys, tmp_path):
    x = np.random.default_rng(3).standard_normal((1, 1, 28, 28)).astype(">f4")
    np.save(tmp_path / "big.npy", x)
    np.save(tmp_path / "little.npy", x.astype("<f4"))
    outputs = []
    for name in ("big", "little"):
        out = tmp_path / f"{name}.npz"
        assert main(["run", str(artifact), "--input", str(tmp_path / f"{name}.npy"),
                     "-o", str(out)]) == 0
        outputs.append(np.load(out)["output0"])
    capsys.readouterr()
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_the_installed_command_prints_no_traceback(tmp_path):
    done = subprocess.run([sys.executable, "-m", "passhost", "run", str(tmp_path / "x.tar"),
                           "--repeat", "-5"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].endswith("expected an integer >= 1, found '-5'")
