"""The exception classes of the model importers."""

from __future__ import annotations

from passhost.errors import PasshostError


class OnnxImportError(PasshostError, ValueError):
    """An ONNX model could not be imported: unreadable, malformed or unsupported."""


class OnnxUnknownOperandError(OnnxImportError):
    """A value the importer needs while compiling (a shape, axes, pads, a condition that
    decides an output's shape...) is computed from graph inputs. ``input_name`` names it."""

    def __init__(self, message: str, input_name: str) -> None:
        super().__init__(message)
        self.input_name = input_name


class TfliteImportError(PasshostError, ValueError):
    """A TFLite flatbuffer could not be imported: unreadable, malformed or unsupported."""
