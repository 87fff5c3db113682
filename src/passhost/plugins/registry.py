"""Registries: name -> spec, each entry remembering the plugin that provided it.

Two plugins providing the same name is a conflict: neither wins, both are listed, and
looking the name up raises :class:`~passhost.errors.ConflictError` naming both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from attrs import frozen

from passhost.errors import ConflictError, UnknownNameError


@frozen
class Entry:
    """One registered spec and the plugin (and distribution) that provided it."""

    name: str
    spec: Any
    provider: str
    distribution: str | None = None


class Registry:
    """The specs of one kind (passes, instruments, ...) by name."""

    def __init__(self, kind: str, unknown_hint: Callable[[], str] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, list[Entry]] = {}
        self._unknown_hint = unknown_hint

    def add(self, spec: Any, provider: str, distribution: str | None = None) -> None:
        """Record ``spec`` (which has a ``name``) as provided by ``provider``."""
        self._entries.setdefault(spec.name, []).append(
            Entry(spec.name, spec, provider, distribution))

    def remove_provider(self, provider: str) -> None:
        """Forget everything ``provider`` registered."""
        for name in list(self._entries):
            kept = [e for e in self._entries[name] if e.provider != provider]
            if kept:
                self._entries[name] = kept
            else:
                del self._entries[name]

    def entry(self, name: str) -> Entry:
        """The entry for ``name``; unknown names and conflicts raise."""
        entries = self._entries.get(name)
        if not entries:
            note = self._unknown_hint() if self._unknown_hint is not None else ""
            raise UnknownNameError(self.kind, name, self._entries, note=note)
        if len(entries) > 1:
            raise ConflictError(self.kind, name, (e.provider for e in entries))
        return entries[0]

    def get(self, name: str) -> Any:
        """The spec registered as ``name``."""
        return self.entry(name).spec

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    def entries(self) -> Iterator[Entry]:
        """Every entry, sorted by name (a conflicting name yields one entry per provider)."""
        for name in self.names():
            yield from self._entries[name]

    def conflicts(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(name, providers)`` for each name registered more than once."""
        return [(name, tuple(e.provider for e in self._entries[name]))
                for name in self.names() if len(self._entries[name]) > 1]


class Registries:
    """The registries the registration hooks fill."""

    KINDS = {"passes": "pass", "instruments": "instrument", "targets": "target",
             "config_options": "config option", "pipelines": "pipeline",
             "pattern_tables": "pattern table", "operators": "operator"}

    def __init__(self, unknown_hint: Callable[[], str] | None = None) -> None:
        """``unknown_hint`` gives the text ending every unknown-name error (where the name
        might come from)."""
        self.passes = Registry("pass", unknown_hint)
        self.instruments = Registry("instrument", unknown_hint)
        self.targets = Registry("target", unknown_hint)
        self.config_options = Registry("config option", unknown_hint)
        self.pipelines = Registry("pipeline", unknown_hint)
        self.pattern_tables = Registry("pattern table", unknown_hint)
        self.operators = Registry("operator", unknown_hint)

    def by_attr(self, attr: str) -> Registry:
        """The registry stored under ``attr`` (one of :attr:`KINDS`)."""
        return getattr(self, attr)

    def remove_provider(self, provider: str) -> None:
        """Forget everything ``provider`` registered, in every registry."""
        for attr in self.KINDS:
            self.by_attr(attr).remove_provider(provider)

    def conflicts(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """``(kind, name, providers)`` for every conflict."""
        return [(self.by_attr(attr).kind, name, providers)
                for attr in self.KINDS for name, providers in self.by_attr(attr).conflicts()]
