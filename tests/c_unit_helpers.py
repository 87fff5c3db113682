"""Compiling printed C units in tests: the system C compiler and a unit built into a shared
library (shared by the C printer's test modules)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from passhost.backend.c import CUnit

#: The C compiler the tests use: ``$CC``, else cc, gcc or clang; None when there is none.
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
#: Marks a test that compiles C.
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (set $CC or install cc)")


def compile_unit(unit: CUnit, flags: list[str], directory: Path) -> Path:
    """The unit compiled with ``flags`` into a shared library in ``directory`` (the test
    fails with the compiler's message when it does not compile)."""
    source, library = directory / "unit.c", directory / "unit.so"
    source.write_text(unit.source, encoding="utf-8")
    result = subprocess.run([CC, *flags, *unit.flags, str(source), "-o", str(library), "-lm"],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(flags)} failed on {source}:\n{result.stderr[-6000:]}")
    return library
