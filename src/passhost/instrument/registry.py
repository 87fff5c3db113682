"""Instruments by name: :func:`get_instrument`, beside :func:`passhost.transform.get_pass`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from passhost.plugins.manager import get_host

__all__ = ["get_instrument"]


def get_instrument(name: str, options: Mapping[str, Any] | None = None, *,
                   from_text: bool = False) -> Any:
    """A new instance of the registered instrument ``name`` made with ``options`` (Python
    values, or text when ``from_text``); an unknown name raises an error listing close
    matches, an unknown or ill-typed option one naming it."""
    return get_host().registries.instruments.get(name).create(options, from_text=from_text)
