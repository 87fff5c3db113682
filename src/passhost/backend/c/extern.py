"""How a target prints its ``call_extern`` statements: :class:`ExternPrinter`.

An ``Evaluate`` of a ``call_extern`` prints, by default, as the plain C call
``name(args);`` with every pointer argument writable. A target whose external functions
take more than flat arguments (structs to initialise, a status to check) gives the printer
an :class:`ExternPrinter`: it says which pointer arguments a call only reads (a buffer
parameter passed only there is then ``const``) and writes the C of each statement as
lines and a status expression (:class:`ExternCall`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from attrs import field, frozen

from passhost.tir import expr as te

__all__ = ["ExternArgs", "ExternCall", "ExternPrinter"]


@frozen
class ExternCall:
    """The C of one ``call_extern`` statement.

    ``lines`` (declarations and statements) print in order, in a block of their own;
    ``status``, when not None, is a C integer expression evaluated after them, 0 when the
    call succeeded: otherwise the function records ``"<name>: <message>"`` as its last
    error (when the unit keeps one) and returns that status.
    """

    lines: tuple[str, ...] = field(converter=tuple)
    status: str | None = None
    message: str = ""


class ExternArgs:
    """What an :class:`ExternPrinter` gets with a call: the C text of each argument after
    the function's name (``texts``: buffers and handles as pointers, ``const`` ones left
    ``const``; expressions as values), whether each is a pointer to read-only memory
    (``const``), the C symbol of the function being printed, and ``fresh(hint)``, a new
    local name no other name of that function uses."""

    __slots__ = ("const", "fresh", "function", "texts")

    def __init__(self, texts: tuple[str, ...], const: tuple[bool, ...], function: str,
                 fresh: Callable[[str], str]) -> None:
        self.texts = texts
        self.const = const
        self.function = function
        self.fresh = fresh


class ExternPrinter:
    """A target's printing of ``call_extern`` statements; this base class reads no argument
    as read-only and prints every call plainly. Subclass it and override what differs."""

    def read_only(self, call: te.Call) -> Collection[int]:
        """The positions, among the arguments after the function's name, of the pointers
        ``call`` only reads."""
        return ()

    def statement(self, call: te.Call, args: ExternArgs) -> ExternCall | None:
        """The C of ``Evaluate(call)``, or None for the plain ``name(args);``."""
        return None
