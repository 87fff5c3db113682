"""The kernel library's matrix product compiled with warnings as errors and run under
AddressSanitizer and UndefinedBehaviorSanitizer, with OpenMP and the machine's vector
width, over sizes around its tiles, transposes, batches, broadcast and packed operands
(``sanitized_matmul.c`` checks every result against a float64 reference), with each
epilogue activation."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from passhost.testing.sanitizers import build_sanitized
from passhost_cpu_target import native
from passhost_cpu_target.native.build import find_compiler

DRIVER = Path(__file__).with_name("sanitized_matmul.c")


def test_matmul_runs_clean_under_the_sanitizers(tmp_path):
    compiler = find_compiler()
    if compiler is None:
        pytest.skip("no C compiler")
    units = []
    for name, text in native.sources().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        if name.endswith(".c"):
            units.append(tmp_path / name)
    program = build_sanitized(compiler, [
        "-std=gnu11", "-O1", "-g", "-march=native", "-fopenmp", "-Wall", "-Werror",
        f"-I{tmp_path}", DRIVER, *units], tmp_path / "sanitized_matmul")
    run = subprocess.run([str(program)], capture_output=True, text=True, check=False,
                         timeout=300)
    assert run.returncode == 0 and "runtime error" not in run.stderr, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == "ok"
