"""Building C test programs under AddressSanitizer and UndefinedBehaviorSanitizer, for
passhost's and plugins' tests of native code. Imports pytest (tests only)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["SANITIZER_FLAGS", "build_sanitized"]

#: Both sanitizers, stopping at the first report.
SANITIZER_FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all")

_MISSING_RUNTIME = re.compile(r"cannot find -l(asan|ubsan)|unrecognized .*-fsanitize|"
                              r"unsupported option .*-fsanitize")


def build_sanitized(compiler: str, arguments: Sequence[str | Path], program: Path,
                    sanitizers: Sequence[str] = SANITIZER_FLAGS) -> Path:
    """``program`` built by ``compiler`` from ``arguments`` (sources and flags) with the
    ``sanitizers``; skips the test when the sanitizer runtimes are not installed, fails it
    with the compiler's message on any other error."""
    build = subprocess.run([compiler, *sanitizers, *map(str, arguments), "-o", str(program),
                            "-lm"], capture_output=True, text=True, check=False)
    if build.returncode != 0 and _MISSING_RUNTIME.search(build.stderr):
        pytest.skip(f"the sanitizer runtimes are not installed: {build.stderr.strip()}")
    if build.returncode != 0:
        pytest.fail(f"the sanitized build failed:\n{build.stderr[-6000:]}")
    return program
