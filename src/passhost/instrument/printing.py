"""Instruments that print the module around passes (rules 33 and 34).

Each prints with :func:`print` to ``file``; ``None`` means ``sys.stdout`` as it is when the
line is printed (so redirections made after the instrument was built are honoured).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Annotated, Any

from passhost.instrument.base import PassInstrument
from passhost.plugins.options import names


def _names(value: Iterable[str] | str | None) -> frozenset[str]:
    """A set of pass names; a single string is one name, None is none."""
    return frozenset(names(value, "pass name"))


class _ShowsSkipped(PassInstrument):
    """With ``show_skipped``, print ``Skipped Pass: <PassInfo> (vetoed by <names>)`` when an
    instrument's should_run skips a pass (off by default: TVM prints nothing for it)."""

    def __init__(self, file: IO[str] | None = None,
                 show_skipped: Annotated[bool, "also print the passes should_run skipped, "
                                               "and who vetoed them"] = False) -> None:
        self.file = file
        self.show_skipped = show_skipped

    def run_skipped(self, mod: Any, info: Any, vetoed_by: tuple[str, ...]) -> None:
        """Print the skipped pass and the instruments that vetoed it, if asked to."""
        if self.show_skipped:
            print(f"Skipped Pass: {info} (vetoed by {', '.join(vetoed_by)})", file=self.file)


class PrintBeforeAll(_ShowsSkipped):
    """Print ``Before Running Pass: <PassInfo>`` and the input module before every pass."""

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Print the header and the module the pass is about to run on."""
        print(f"Before Running Pass: {info}", file=self.file)
        print(mod, file=self.file)


class PrintAfterAll(_ShowsSkipped):
    """Print ``After Running Pass: <PassInfo>`` and the output module after every pass."""

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Print the header and the module the pass returned."""
        print(f"After Running Pass: {info}", file=self.file)
        print(mod, file=self.file)


class PassPrintingInstrument(PassInstrument):
    """Print the module before the passes named in ``print_before_pass_names`` and after
    those named in ``print_after_pass_names``, each followed by two blank lines.

    Names are matched exactly; a single string is one name (TVM tests substrings).
    """

    def __init__(self, print_before_pass_names: Iterable[str] | str | None = None,
                 print_after_pass_names: Iterable[str] | str | None = None,
                 file: IO[str] | None = None) -> None:
        self.print_before_pass_names = _names(print_before_pass_names)
        self.print_after_pass_names = _names(print_after_pass_names)
        self.file = file

    def run_before_pass(self, mod: Any, info: Any) -> None:
        """Print the input module if the pass is one of the "before" names."""
        if info.name in self.print_before_pass_names:
            print(f"Print IR before: {info.name}\n{mod}\n\n", file=self.file)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Print the output module if the pass is one of the "after" names."""
        if info.name in self.print_after_pass_names:
            print(f"Print IR after: {info.name}\n{mod}\n\n", file=self.file)


def print_passes(before: Annotated[tuple[str, ...], "print the input of these passes"] = (),
                 after: Annotated[tuple[str, ...], "print the output of these passes"] = ()
                 ) -> PassPrintingInstrument:
    """The instrument ``print-passes``: a :class:`PassPrintingInstrument` whose options are
    named as in ``print-passes{before=A;B,after=C}``."""
    return PassPrintingInstrument(before, after)
