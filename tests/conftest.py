"""Shared fixtures. The isolated plugin host (``plugin_host``, ``register_plugin``) comes from
passhost's testing kit for plugin authors, which the host's own tests use as well."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from passhost.ir.module import IRModule
from passlog import check_and_reset_contexts, make_module

pytest_plugins = ["passhost.testing.pytest_plugin"]


@pytest.fixture
def clean_contexts() -> Iterator[None]:
    """Check that the test left the PassContext stack and the default context clean."""
    yield
    check_and_reset_contexts()


@pytest.fixture
def mod() -> IRModule:
    """A small module: ``main(x) = relu(x)``."""
    return make_module()
