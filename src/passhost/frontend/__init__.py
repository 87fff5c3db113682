"""Model importers: build a graph-level module and its parameters from other formats.

``from_onnx`` needs the optional ``onnx`` package (``pip install passhost[onnx]``); it is
imported on first use, so ``passhost.frontend`` itself loads without it.
"""

from __future__ import annotations

from typing import Any

from passhost.frontend.errors import OnnxImportError

__all__ = ["OnnxImportError", "from_onnx"]


def __getattr__(name: str) -> Any:
    if name == "from_onnx":
        try:
            from passhost.frontend.onnx import from_onnx
        except ModuleNotFoundError as exc:
            if exc.name not in ("onnx", "google"):
                raise
            raise ImportError(f"from_onnx needs the 'onnx' package, found it missing "
                              f"({exc}); install it with: pip install 'passhost[onnx]'"
                              ) from exc
        return from_onnx
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
