"""Valid, distinct C identifiers for the names of a unit: function symbols, constant arrays
and the locals of each function.

TIR names may hold any character and clash with C keywords or with the names the unit's
headers define; a name is sanitised (``[^A-Za-z0-9_]`` -> ``_``, no leading underscore or
digit, ``v_`` before a reserved prefix) and numbered (``x``, ``x_1``, ...) until it is none
of those and was not handed out before. Names starting with ``ph_``/``PH_`` belong to the
printer's own helpers.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from passhost.tir.intrinsics import INTRINSICS

__all__ = ["RESERVED", "Namer", "is_identifier"]

_KEYWORDS = (
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "asm", "typeof", "typeof_unqual", "bool",
    "true", "false", "alignas", "alignof", "constexpr", "nullptr", "static_assert",
    "thread_local",
)
#: Names the unit's headers (stdint, stdbool, stddef, math, stdlib, string, omp) define as
#: macros or use in generated bodies, and the GNU-mode predefined macros.
_LIBRARY = (
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "intptr_t", "uintptr_t", "intmax_t", "uintmax_t", "size_t", "ptrdiff_t", "max_align_t",
    "wchar_t", "NULL", "offsetof", "NAN", "INFINITY", "HUGE_VAL", "HUGE_VALF", "HUGE_VALL",
    "math_errhandling", "MATH_ERRNO", "MATH_ERREXCEPT", "EXIT_SUCCESS", "EXIT_FAILURE",
    "RAND_MAX", "MB_CUR_MAX", "SIZE_MAX", "PTRDIFF_MIN", "PTRDIFF_MAX", "errno", "free",
    "malloc", "aligned_alloc", "memcpy", "isnan", "isinf", "isfinite", "unix", "linux", "i386",
)
#: Every identifier generated code must not rebind.
RESERVED = frozenset({
    *_KEYWORDS, *_LIBRARY,
    *(name for intrinsic in INTRINSICS.values() for name in intrinsic.c_names.values()),
})
_RESERVED_PREFIX = re.compile(r"ph_|PH_|M_|FP_|U?INT\w*_(?:MIN|MAX|C|WIDTH)\Z")
_INVALID = re.compile(r"[^A-Za-z0-9_]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_identifier(name: str) -> bool:
    """Whether ``name`` is a C identifier."""
    return bool(_IDENTIFIER.match(name))


def _sanitise(hint: str) -> str:
    text = _INVALID.sub("_", hint).lstrip("_") or "v"
    if text[0].isdigit() or _RESERVED_PREFIX.match(text):
        return f"v_{text}"
    return text


class Namer:
    """Hands out distinct identifiers made from name hints, avoiding :data:`RESERVED`, the
    ``extra`` names and every name of the ``others`` namers."""

    def __init__(self, extra: Iterable[str] = (), others: Iterable[Namer] = ()) -> None:
        self.taken: set[str] = set()
        self.extra = set(extra)
        self.others = list(others)

    def available(self, name: str) -> bool:
        """Whether ``name`` may still be handed out."""
        return not (name in self.taken or name in RESERVED or name in self.extra
                    or any(name in other.taken for other in self.others))

    def fresh(self, hint: str, avoid: Collection[str] = ()) -> str:
        """A new identifier close to ``hint`` (and none of ``avoid``)."""
        base = _sanitise(hint)
        name, n = base, 0
        while not self.available(name) or name in avoid:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name
