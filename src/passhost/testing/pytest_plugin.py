"""pytest fixtures for testing passhost plugins.

Enable them in a ``conftest.py`` at the top of the test tree (or in a test module)::

    pytest_plugins = ["passhost.testing.pytest_plugin"]

- ``plugin_host``: a fresh :class:`~passhost.plugins.PluginHost` holding only passhost's
  built-in plugin (no installed entry point is loaded), installed as the process-wide host
  for the test; the previous host is restored afterwards.
- ``register_plugin``: ``register_plugin(plugin, name=None, host=None)`` registers a plugin
  object into ``host`` (default: the ``plugin_host``) for the rest of the test and returns
  its record; everything registered is unregistered at teardown, last first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from passhost.plugins.manager import PluginHost, PluginRecord
from passhost.testing import registered, use_host


@pytest.fixture
def plugin_host() -> Iterator[PluginHost]:
    """A fresh plugin host with only the built-in plugin, installed for one test."""
    with use_host() as host:
        yield host


@pytest.fixture
def register_plugin(plugin_host: PluginHost) -> Iterator[Callable[..., PluginRecord]]:
    """A function registering a plugin object for the rest of the test."""
    with ExitStack() as stack:

        def register(plugin: Any, name: str | None = None,
                     host: PluginHost | None = None) -> PluginRecord:
            target = plugin_host if host is None else host
            return stack.enter_context(registered(plugin, name, target))

        yield register
