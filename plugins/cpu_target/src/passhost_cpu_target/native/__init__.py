"""The cpu target's native kernels: ``kernels.c`` after the host's vectorisable float32 math
(:data:`passhost.backend.vector_math.VECTOR_MATH_SOURCE`, whose sigmoid the kernels'
epilogues apply), compiled on first use with the system C compiler (see :mod:`.build`) and
called through ctypes (see :mod:`.library`).

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

__all__ = ["ENV_VAR", "SOURCE", "NativeKernelWarning", "enabled", "library", "unit_source"]

#: The environment variable that turns the native kernels off when set to ``0``.
ENV_VAR = "PASSHOST_CPU_NATIVE"
#: The C source of the kernels (package data).
SOURCE = Path(__file__).with_name("kernels.c")
#: The name of the compiled library (and of its translation unit).
_STEM = "kernels"


class NativeKernelWarning(UserWarning):
    """The native kernels could not be built; the NumPy kernels are used instead."""


def enabled() -> bool:
    """Whether code generated now may use the native kernels (``PASSHOST_CPU_NATIVE``)."""
    return os.environ.get(ENV_VAR, "1").strip() not in ("0", "false", "no", "off")


def unit_source() -> str:
    """The translation unit compiled into the library: the vector math, then ``kernels.c``
    (the compiler's messages give the lines of ``kernels.c``)."""
    return (f"{VECTOR_MATH_SOURCE}\n#line 1 \"{SOURCE.name}\"\n"
            f"{SOURCE.read_text(encoding='utf-8')}")


@functools.cache
def library() -> NativeLibrary | None:
    """The process's native kernel library, built or loaded on the first call; None (after
    one warning) when it cannot be built."""
    try:
        return NativeLibrary(load_or_build(unit_source(), ABI_SYMBOL, ABI_VERSION, stem=_STEM))
    except NativeBuildError as err:
        warnings.warn(NativeKernelWarning(f"passhost cpu target: native kernels unavailable, "
                                          f"using the NumPy kernels ({err})"), stacklevel=2)
        return None
