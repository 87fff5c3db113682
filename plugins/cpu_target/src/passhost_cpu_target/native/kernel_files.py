"""What the native kernel library is made of, and where an installed copy lives: standalone
(no import of passhost or NumPy), so that the plugin's build step (``setup.py``) can compile
the library when the plugin is installed as well as the plugin can at run time."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ABI_SYMBOL", "ABI_VERSION", "INSTALLED", "SOURCES", "STEM", "kernel_files"]

#: The C function returning the library's ABI version, and the version the plugin expects.
ABI_SYMBOL = "ph_abi_version"
ABI_VERSION = 13
#: The folder of the kernels' C files (package data).
SOURCES = Path(__file__).with_name("kernels")
#: The folder the plugin's build step compiles the library into at install time.
INSTALLED = Path(__file__).with_name("prebuilt")
#: The name of the compiled library.
STEM = "kernels"
#: The unit the vector math goes before (it defines the activations).
_MATH_UNIT = "common.c"


def kernel_files(vector_math: str) -> dict[str, str]:
    """The files compiled into the library by name: the units and their header, with
    ``vector_math`` (the host's :data:`passhost.backend.vector_math.VECTOR_MATH_SOURCE`)
    before ``common.c`` (the compiler's messages still give the lines of the files)."""
    files = {path.name: path.read_text(encoding="utf-8")
             for path in sorted(SOURCES.iterdir()) if path.suffix in (".c", ".h")}
    files[_MATH_UNIT] = f"{vector_math}\n#line 1 \"{_MATH_UNIT}\"\n{files[_MATH_UNIT]}"
    return files
