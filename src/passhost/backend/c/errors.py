"""The exception of the C printer."""

from __future__ import annotations

from passhost.errors import PasshostError

__all__ = ["CCodegenError"]


class CCodegenError(PasshostError):
    """A PrimFunc holds something the C printer cannot print (what, and in which function)."""
