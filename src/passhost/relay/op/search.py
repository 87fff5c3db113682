"""Index-valued reductions and selection: ``argmax``, ``argmin``, ``topk``."""

from __future__ import annotations

__all__: list[str] = []
