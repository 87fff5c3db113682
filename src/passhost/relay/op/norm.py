"""Normalisations of the ``nn`` namespace beyond batch and layer norm: instance, group, RMS,
Lp normalisation."""

from __future__ import annotations

__all__: list[str] = []
