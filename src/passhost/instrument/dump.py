"""``DumpIR``: write the module to a numbered file after every pass (rule 35)."""

from __future__ import annotations

import os
import re
import warnings
from typing import Annotated, Any

from passhost.instrument.base import PassInstrument
from passhost.plugins.declare import required_path
from passhost.plugins.options import STR

_UNSAFE = re.compile(r'[<>:"/\\|?*]')
#: The names DumpIR writes: a counter of at least three digits, ``_``, the pass name.
DUMP_FILE = re.compile(r"^\d{3,}_.*\.txt$")


def safe_file_name(name: str) -> str:
    """``name`` with the characters ``<>:"/\\|?*`` (unsafe in file names) replaced by ``_``."""
    return _UNSAFE.sub("_", name)


class DumpIR(PassInstrument):
    """After each pass that ran, write ``{counter:03d}_{name}.txt`` holding the module's full
    text (``mod.astext()``, metadata included) into ``dump_dir``.

    The counter belongs to the instance and is never reset, so files come in the order the
    passes finished: children before their Sequential. ``refresh=True`` first empties
    ``dump_dir``, but only if it holds nothing but dump files; otherwise it warns and
    deletes nothing. The directory is created when the first file is written.
    ``dump_dir`` is required (an :class:`~passhost.errors.OptionError` without it).
    """

    def __init__(self,
                 dump_dir: Annotated[str | os.PathLike[str] | None, STR,
                                     "the directory (required)"] = None,
                 refresh: Annotated[bool, "first empty dump_dir if it holds only dump "
                                          "files"] = False) -> None:
        self.dump_dir = required_path(dump_dir, "dump-ir", "dump_dir")
        self.counter = 0
        if refresh:
            self._refresh()

    def _refresh(self) -> None:
        """Delete the dump files in ``dump_dir`` if that is all it holds."""
        if not self.dump_dir.exists():
            return
        if not self.dump_dir.is_dir():
            raise NotADirectoryError(f"DumpIR: dump_dir {str(self.dump_dir)!r} is not a "
                                     f"directory")
        with os.scandir(self.dump_dir) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if not (entry.is_file(follow_symlinks=False) and DUMP_FILE.match(entry.name)):
                warnings.warn(f"DumpIR: not refreshing {str(self.dump_dir)!r}: it holds "
                              f"{entry.name!r}, which is not a dump file; nothing was deleted",
                              UserWarning, stacklevel=3)
                return
        for entry in entries:
            os.unlink(entry.path)

    def run_after_pass(self, mod: Any, info: Any) -> None:
        """Write the module the pass returned to the next numbered file."""
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        path = self.dump_dir / f"{self.counter:03d}_{safe_file_name(info.name)}.txt"
        self.counter += 1
        path.write_text(mod.astext(), encoding="utf-8")
