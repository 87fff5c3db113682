"""Shared fixtures: an isolated plugin host per test that needs one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from passhost.ir.module import IRModule
from passhost.plugins.manager import PluginHost, set_host
from passlog import check_and_reset_contexts, make_module


@pytest.fixture
def plugin_host() -> Iterator[PluginHost]:
    """A fresh plugin host holding only the built-in plugin, installed for one test."""
    host = PluginHost()
    host.load_builtin()
    previous = set_host(host)
    try:
        yield host
    finally:
        set_host(previous)


@pytest.fixture
def clean_contexts() -> Iterator[None]:
    """Check that the test left the PassContext stack and the default context clean."""
    yield
    check_and_reset_contexts()


@pytest.fixture
def mod() -> IRModule:
    """A small module: ``main(x) = relu(x)``."""
    return make_module()
