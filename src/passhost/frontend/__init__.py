"""Model importers: build a graph-level module and its parameters from other formats.

``from_onnx`` needs the optional ``onnx`` package (``pip install passhost[onnx]``) and
``from_tflite`` the ``tflite`` and ``flatbuffers`` packages (``pip install passhost[tflite]``);
each is imported on first use, so ``passhost.frontend`` itself loads without them.
"""

from __future__ import annotations

import importlib
from typing import Any

from passhost.frontend.errors import OnnxImportError, OnnxUnknownOperandError, TfliteImportError

__all__ = ["OnnxImportError", "OnnxUnknownOperandError", "TfliteImportError", "from_onnx",
           "from_tflite"]

# importer name -> (module, the top-level packages it needs, what to call them, the extra)
_IMPORTERS = {
    "from_onnx": ("passhost.frontend.onnx", ("onnx", "google"), "the 'onnx' package", "onnx"),
    "from_tflite": ("passhost.frontend.tflite", ("tflite", "flatbuffers"),
                    "the 'tflite' and 'flatbuffers' packages", "tflite"),
}


def __getattr__(name: str) -> Any:
    if name not in _IMPORTERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, packages, needs, extra = _IMPORTERS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in packages:
            raise
        raise ImportError(f"{name} needs {needs}, found missing ({exc}); install with: "
                          f"pip install 'passhost[{extra}]'") from exc
    return getattr(module, name)
