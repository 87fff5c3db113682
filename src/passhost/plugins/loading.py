"""Which installed plugins to load: the user's settings and the entry points found.

Settings come from the environment (``PASSHOST_LOAD_PLUGINS``, ``PASSHOST_DISABLE_PLUGINS``,
``PASSHOST_STRICT_PLUGINS``, ``PASSHOST_TRACE_PLUGINS``) or from the command line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import importlib_metadata
from attrs import frozen
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

#: The entry-point group passhost plugins are published under.
ENTRY_POINT_GROUP = "passhost.plugins"


def _name_list(text: str) -> frozenset[str]:
    return frozenset(part.strip() for part in text.split(",") if part.strip())


@frozen
class LoadSettings:
    """What to load: ``only`` (None = every plugin), ``disabled`` names or ``"*"``, whether
    errors are raised (``strict``), whether hook calls are traced to stderr."""

    only: frozenset[str] | None = None
    disabled: frozenset[str] = frozenset()
    strict: bool = False
    trace: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LoadSettings:
        """Settings from the ``PASSHOST_*_PLUGINS`` environment variables."""
        env = os.environ if env is None else env
        load = env.get("PASSHOST_LOAD_PLUGINS")
        return cls(
            only=None if load is None else _name_list(load),
            disabled=_name_list(env.get("PASSHOST_DISABLE_PLUGINS", "")),
            strict=env.get("PASSHOST_STRICT_PLUGINS", "") not in ("", "0"),
            trace=env.get("PASSHOST_TRACE_PLUGINS", "") not in ("", "0"),
        )

    def is_disabled(self, name: str) -> bool:
        """Whether the user turned the plugin ``name`` off."""
        if self.only is not None and name not in self.only:
            return True
        return "*" in self.disabled or name in self.disabled


class DistributionFacts(NamedTuple):
    """What the host reads of a plugin's distribution: its name, version and requirement
    lines (``Requires-Dist``); all None or empty for an entry point without one."""

    name: str | None
    version: str | None
    requires: tuple[str, ...]


@functools.lru_cache(maxsize=256)
def distribution_facts(dist: Any) -> DistributionFacts:
    """The facts of ``dist`` from one parse of its metadata (each of ``dist.name``,
    ``dist.version`` and ``dist.requires`` parses it again)."""
    if dist is None:
        return DistributionFacts(None, None, ())
    meta = dist.metadata
    return DistributionFacts(meta["Name"], meta["Version"],
                             tuple(meta.get_all("Requires-Dist") or ()))


def discover() -> list[Any]:
    """The entry points of :data:`ENTRY_POINT_GROUP`, sorted by distribution, then name."""
    found = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)

    def key(ep: Any) -> tuple[str, str]:
        name = distribution_facts(ep.dist).name
        return (canonicalize_name(name) if name else "", ep.name)

    return sorted(found, key=key)


def passhost_requirement(dist: Any) -> str | None:
    """The distribution's declared requirement on passhost (specifier text), if any."""
    for line in (dist.requires or []) if dist is not None else []:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != "passhost":
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            return str(req.specifier)
    return None


def is_compatible(requirement: str | None, version: str) -> bool:
    """Whether ``version`` of passhost satisfies the specifier text ``requirement``."""
    if not requirement:
        return True
    return Requirement(f"passhost{requirement}").specifier.contains(version, prereleases=True)
