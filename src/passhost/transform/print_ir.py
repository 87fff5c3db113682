"""``PrintIR``: an ordinary pass that writes the module to the log stream (stderr)."""

from __future__ import annotations

import sys
from typing import Annotated

from passhost.ir.module import IRModule
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass


@module_pass(opt_level=0, name="PrintIR")
class PrintIR:
    """Write ``PrintIR(<header>):`` and the module's text to stderr; return it unchanged."""

    def __init__(self, header: Annotated[str, "a header printed before the module"] = "",
                 show_meta_data: Annotated[bool, "print large constants in full"] = False
                 ) -> None:
        self.header = header
        self.show_meta_data = show_meta_data

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Print and pass the module through."""
        text = mod.astext(show_meta_data=self.show_meta_data)
        print(f"PrintIR({self.header}):\n{text}", file=sys.stderr)
        return mod
