"""The cpu target's native kernels: ``kernels.c``, compiled on first use with the system C
compiler (see :mod:`.build`) and called through ctypes (see :mod:`.library`).

``PASSHOST_CPU_NATIVE=0`` turns them off: code generated afterwards uses the NumPy kernels
only. When they are on but cannot be built, one :class:`NativeKernelWarning` says why and
the NumPy kernels are used.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

from passhost_cpu_target.native.build import NativeBuildError, load_or_build
from passhost_cpu_target.native.library import ABI_SYMBOL, ABI_VERSION, NativeLibrary

__all__ = ["ENV_VAR", "SOURCE", "NativeKernelWarning", "enabled", "library"]

#: The environment variable that turns the native kernels off when set to ``0``.
ENV_VAR = "PASSHOST_CPU_NATIVE"
#: The C source of the kernels (package data).
SOURCE = Path(__file__).with_name("kernels.c")


class NativeKernelWarning(UserWarning):
    """The native kernels could not be built; the NumPy kernels are used instead."""


def enabled() -> bool:
    """Whether code generated now may use the native kernels (``PASSHOST_CPU_NATIVE``)."""
    return os.environ.get(ENV_VAR, "1").strip() not in ("0", "false", "no", "off")


@functools.cache
def library() -> NativeLibrary | None:
    """The process's native kernel library, built or loaded on the first call; None (after
    one warning) when it cannot be built."""
    try:
        return NativeLibrary(load_or_build(SOURCE, ABI_SYMBOL, ABI_VERSION))
    except NativeBuildError as err:
        warnings.warn(NativeKernelWarning(f"passhost cpu target: native kernels unavailable, "
                                          f"using the NumPy kernels ({err})"), stacklevel=2)
        return None
