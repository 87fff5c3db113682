"""The exception classes of the model importers."""

from __future__ import annotations

from passhost.errors import PasshostError


class OnnxImportError(PasshostError, ValueError):
    """An ONNX model could not be imported: unreadable, malformed or unsupported."""


class TfliteImportError(PasshostError, ValueError):
    """A TFLite flatbuffer could not be imported: unreadable, malformed or unsupported."""
