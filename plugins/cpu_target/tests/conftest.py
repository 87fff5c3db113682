"""Fixtures of the cpu target's tests: the kernel path code generation may take."""

from __future__ import annotations

import pytest

from passhost_cpu_target.native import ENV_VAR


@pytest.fixture
def numpy_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code generated in the test uses the NumPy kernels only (``PASSHOST_CPU_NATIVE=0``)."""
    monkeypatch.setenv(ENV_VAR, "0")
