"""The exception classes of passhost.

Every error a user can provoke is one of these: each says what was expected, what was found
and where (operator, argument, line:column).
"""

from __future__ import annotations

from collections.abc import Iterable


class PasshostError(Exception):
    """Base class of every error passhost raises on purpose."""


class AttrError(PasshostError, TypeError):
    """An operator or function attribute has the wrong type or value."""


class IRTypeError(PasshostError, TypeError):
    """An IR value is ill-typed: which operator, which argument, expected and found.

    ``op`` and ``argument`` may be None when the error is not about an operator argument;
    ``span`` is a source location when the IR came from text.
    """

    def __init__(
        self,
        message: str,
        *,
        op: str | None = None,
        argument: str | None = None,
        expected: str | None = None,
        found: str | None = None,
        span: object | None = None,
    ) -> None:
        self.op = op
        self.argument = argument
        self.expected = expected
        self.found = found
        self.span = span
        where = f" (at {span})" if span is not None else ""
        super().__init__(message + where)


class ParseError(PasshostError, SyntaxError):
    """Text could not be parsed: carries the line and column and what was expected."""

    def __init__(self, message: str, line: int, column: int, source_name: str = "<text>") -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source_name = source_name
        super().__init__(f"{source_name}:{line}:{column}: {message}")

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}: {self.message}"


class UnknownNameError(PasshostError, KeyError):
    """A name (operator, pass, target, option...) is not known; lists close matches."""

    def __init__(self, kind: str, name: str, known: Iterable[str], where: str = "",
                 note: str = "") -> None:
        """``where`` follows the name, ``note`` the close matches (both given with their
        leading space or punctuation)."""
        self.kind = kind
        self.name = name
        self.candidates = close_matches(name, known)
        hint = ""
        if self.candidates:
            hint = f"; did you mean {', '.join(repr(c) for c in self.candidates)}?"
        super().__init__(f"unknown {kind} {name!r}{where}{hint}{note}")

    def __str__(self) -> str:
        return str(self.args[0])


def close_matches(name: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """Return up to ``limit`` names from ``known`` that look like ``name``."""
    import difflib  # only on the error path: keeps `passhost --version` light

    known = list(known)
    matches = difflib.get_close_matches(name, known, n=limit, cutoff=0.6)
    if not matches:
        lowered = name.lower()
        matches = [k for k in known if lowered in k.lower()][:limit]
    return matches


class OptionError(PasshostError, TypeError):
    """An option (config key, pass option, target option) got a value of the wrong type."""


class PluginError(PasshostError):
    """A plugin, or something it registered, is broken or clashes with another plugin."""


class ConflictError(PluginError, LookupError):
    """Two plugins registered the same name; using that name is an error naming both."""

    def __init__(self, kind: str, name: str, providers: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.providers = tuple(providers)
        names = " and ".join(repr(p) for p in self.providers)
        super().__init__(f"{kind} {name!r} is registered by several plugins: {names}; "
                         f"disable all but one (PASSHOST_DISABLE_PLUGINS)")


def add_note(error: BaseException, note: str) -> None:
    """Attach ``note`` to ``error`` (PEP 678; on Python 3.10 the list is kept by hand)."""
    if hasattr(error, "add_note"):
        error.add_note(note)
    else:  # pragma: no cover - Python 3.10
        notes = getattr(error, "__notes__", None)
        if notes is None:
            error.__notes__ = notes = []
        notes.append(note)


class InstrumentError(PasshostError, TypeError):
    """An object given as a pass instrument does not implement the protocol correctly."""


class ModuleMutatedError(PasshostError):
    """A pass changed its input module in place (config ``testing.immutable_module``)."""


class ContextOrderError(PasshostError, RuntimeError):
    """A ``PassContext`` exited while it was not the innermost context entered on its
    thread (contexts exit in the reverse order of entering, as ``with`` blocks do)."""
