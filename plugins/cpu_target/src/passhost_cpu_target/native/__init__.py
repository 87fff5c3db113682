"""The cpu target's native kernels: the C files of ``kernels/`` (units by family of kernel
and the header they share; ``common.c`` after the host's vectorisable float32 math,
:data:`passhost.backend.vector_math.VECTOR_MATH_SOURCE`, whose sigmoid the kernels'
epilogues apply), compiled on first use with the system C compiler, a unit per core at a
time (see :mod:`.build`), and called through ctypes (see :mod:`.library`).

``PASSHOST_CPU_NATIVE=0`` turns them off: code generated afterwards uses the NumPy kernels
only. When they are on but cannot be built, one :class:`NativeKernelWarning` says why and
the NumPy kernels are used.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

from passhost.backend.vector_math import VECTOR_MATH_SOURCE
from passhost_cpu_target.native.build import NativeBuildError, load_or_build
from passhost_cpu_target.native.library import ABI_SYMBOL, ABI_VERSION, NativeLibrary

__all__ = ["ENV_VAR", "SOURCES", "NativeKernelWarning", "enabled", "library", "sources"]

#: The environment variable that turns the native kernels off when set to ``0``.
ENV_VAR = "PASSHOST_CPU_NATIVE"
#: The folder of the kernels' C files (package data).
SOURCES = Path(__file__).with_name("kernels")
#: The unit the vector math goes before (it defines the activations).
_MATH_UNIT = "common.c"
#: The name of the compiled library.
_STEM = "kernels"


class NativeKernelWarning(UserWarning):
    """The native kernels could not be built; the NumPy kernels are used instead."""


def enabled() -> bool:
    """Whether code generated now may use the native kernels (``PASSHOST_CPU_NATIVE``)."""
    return os.environ.get(ENV_VAR, "1").strip() not in ("0", "false", "no", "off")


def sources() -> dict[str, str]:
    """The files compiled into the library by name: the units and their header, the vector
    math before ``common.c`` (the compiler's messages give the lines of the files)."""
    files = {path.name: path.read_text(encoding="utf-8")
             for path in sorted(SOURCES.iterdir()) if path.suffix in (".c", ".h")}
    files[_MATH_UNIT] = f"{VECTOR_MATH_SOURCE}\n#line 1 \"{_MATH_UNIT}\"\n{files[_MATH_UNIT]}"
    return files


@functools.cache
def library() -> NativeLibrary | None:
    """The process's native kernel library, built or loaded on the first call; None (after
    one warning) when it cannot be built."""
    try:
        return NativeLibrary(load_or_build(sources(), ABI_SYMBOL, ABI_VERSION, stem=_STEM))
    except NativeBuildError as err:
        warnings.warn(NativeKernelWarning(f"passhost cpu target: native kernels unavailable, "
                                          f"using the NumPy kernels ({err})"), stacklevel=2)
        return None
