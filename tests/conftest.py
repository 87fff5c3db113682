"""Shared fixtures: an isolated plugin host per test that needs one."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest

from passhost.plugins.manager import BUILTIN_PLUGIN, PluginHost, set_host


@pytest.fixture
def plugin_host() -> Iterator[PluginHost]:
    """A fresh plugin host holding only the built-in plugin, installed for one test."""
    host = PluginHost()
    name, module = BUILTIN_PLUGIN
    host.register(importlib.import_module(module), name, builtin=True, distribution="passhost")
    previous = set_host(host)
    try:
        yield host
    finally:
        set_host(previous)
