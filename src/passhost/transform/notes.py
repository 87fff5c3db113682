"""Notes on exceptions raised while passes run: which pass, inside which passes.

The exception itself is never replaced (its type and value reach the caller); one PEP 678
note is added where it is raised and extended at each enclosing pass, e.g.
``while running pass InferType inside FoldConstant inside FoldScaleAxis``.
"""

from __future__ import annotations

import contextlib

from passhost.errors import add_note

_STATE_ATTR = "_passhost_note_index"


def _add_extensible(error: BaseException, note: str) -> None:
    """Add ``note`` and remember where it is, so enclosing passes can extend it."""
    add_note(error, note)
    with contextlib.suppress(AttributeError):  # exception types without attribute storage
        setattr(error, _STATE_ATTR, len(getattr(error, "__notes__", ())) - 1)


def _extend(error: BaseException, first: str, suffix: str) -> None:
    index = getattr(error, _STATE_ATTR, None)
    notes = getattr(error, "__notes__", None)
    if index is None or notes is None or index >= len(notes):
        _add_extensible(error, first)
    else:
        notes[index] += suffix


def note_pass(error: BaseException, pass_name: str) -> None:
    """Record that ``error`` propagated out of the pass ``pass_name``."""
    _extend(error, f"while running pass {pass_name}", f" inside {pass_name}")


def note_callback(error: BaseException, instrument: str, callback: str,
                  pass_name: str | None = None) -> None:
    """Record that ``error`` was raised by an instrument callback."""
    where = f"in {instrument}.{callback}"
    if pass_name is not None:
        where += f" for pass {pass_name}"
    _add_extensible(error, where)


_POSITIONS_ATTR = "_passhost_positions"


def note_position(error: BaseException, sequential: object, index: int) -> None:
    """Record that ``error`` left the ``index``-th child of ``sequential`` (a Sequential),
    or a dependency run before it; enclosing Sequentials add their positions after."""
    with contextlib.suppress(AttributeError):  # exception types without attribute storage
        positions = getattr(error, _POSITIONS_ATTR, None)
        if positions is None:
            positions = []
            setattr(error, _POSITIONS_ATTR, positions)
        positions.append((sequential, index))


def failure_positions(error: BaseException) -> list[tuple[object, int]]:
    """The ``(sequential, index)`` positions ``error`` left, innermost first."""
    return list(getattr(error, _POSITIONS_ATTR, ()))
