"""The one grammar of the names plugins register (passes, pipelines, instruments, options):
``[A-Za-z_][A-Za-z0-9_.-]*``, so that every name can be written in a textual pipeline and
on the command line. Stated here, in the plugin layer, for the spec checks and the pipeline
parser alike."""

from __future__ import annotations

import string

__all__ = ["NAME_CHARS", "NAME_START", "SEQUENTIAL", "is_name"]

#: The characters a name may start with, and those it may continue with.
NAME_START = frozenset(string.ascii_letters + "_")
NAME_CHARS = NAME_START | frozenset(string.digits + ".-")
#: The element name a textual pipeline reserves for a nested pipeline (a Sequential).
SEQUENTIAL = "sequential"


def is_name(text: object) -> bool:
    """Whether ``text`` is a name of the grammar."""
    return (isinstance(text, str) and bool(text) and text[0] in NAME_START
            and all(c in NAME_CHARS for c in text))
