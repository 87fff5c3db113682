"""Activation functions of the ``nn`` namespace (``nn.prelu``, ``nn.elu``, ``nn.gelu``, ...)."""

from __future__ import annotations

__all__: list[str] = []
