"""Valid, unique Python identifiers for the names of generated code.

Local names (parameters, loop and let variables, buffers declared in a function) never
start with an underscore; module-level names (kernels, allocations, constants, scratch
arrays) always do, so a local can never hide a module-level name.
"""

from __future__ import annotations

import builtins
import keyword
import re

__all__ = ["RESERVED", "Namer"]

#: Names generated code must not rebind: keywords, builtins and the NumPy module ``np``.
RESERVED = frozenset({*keyword.kwlist, *keyword.softkwlist, *dir(builtins), "np"})

_INVALID = re.compile(r"\W")


def _sanitise(hint: str) -> str:
    """``hint`` with every character that cannot be in an identifier replaced by ``_``."""
    text = _INVALID.sub("_", hint.encode("ascii", "replace").decode("ascii"))
    text = text.lstrip("_") or "v"
    return f"v{text}" if text[0].isdigit() else text


class Namer:
    """Hands out distinct identifiers made from name hints; ``module_level`` names start
    with an underscore, local ones never do."""

    def __init__(self, module_level: bool = False) -> None:
        self.module_level = module_level
        self.taken: set[str] = set()

    def fresh(self, hint: str) -> str:
        """A new identifier close to ``hint``, distinct from every one handed out before."""
        base = _sanitise(hint)
        if self.module_level:
            base = f"_{base}"
        name = base
        n = 0
        while name in self.taken or name in RESERVED:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name
