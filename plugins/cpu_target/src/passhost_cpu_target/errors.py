"""The exceptions of the cpu target: failing code generation and failing TIR assertions."""

from __future__ import annotations

from passhost.errors import PasshostError

__all__ = ["CodegenError", "TIRAssertionError"]


class CodegenError(PasshostError):
    """A PrimFunc holds something the cpu target cannot turn into Python."""


class TIRAssertionError(PasshostError, AssertionError):
    """An ``AssertStmt`` of a generated function failed while it ran."""
