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


@pytest.fixture
def tools_host(plugin_host):
    """The built-in plugin, ``tools`` (active), and records of every other status
    (tests/cli_helpers.py)."""
    from cli_helpers import install_tools

    return install_tools(plugin_host)


@pytest.fixture
def module_file(tmp_path):
    """A small module in the IR text format, in a file."""
    from cli_helpers import MODULE_TEXT

    path = tmp_path / "relu.txt"
    path.write_text(MODULE_TEXT)
    return path
