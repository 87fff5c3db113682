"""The cpu target's native kernels: the C files of ``kernels/`` (units by family of kernel
and the header they share; ``common.c`` after the host's vectorisable float32 math,
:data:`passhost.backend.vector_math.VECTOR_MATH_SOURCE`, whose sigmoid the kernels'
epilogues apply), compiled with the system C compiler, a unit per core at a time (see
:mod:`.build`), and called through ctypes (see :mod:`.library`).

The plugin's build step compiles the library when the plugin is installed, into the
package's ``prebuilt/`` folder (:data:`.kernel_files.INSTALLED`); a process uses that copy
when it was compiled from the same files, compiler, flags and machine, and otherwise
compiles the library into the cache on first use (an editable install whose kernels were
edited since, a wheel moved to another machine, sanitizer flags).

``PASSHOST_CPU_NATIVE=0`` turns them off: code generated afterwards uses the NumPy kernels
only. When they are on but cannot be built, one :class:`NativeKernelWarning` says why and
the NumPy kernels are used.
"""

from __future__ import annotations

import functools
import os
import warnings

from passhost.backend import VECTOR_MATH_SOURCE
from passhost_cpu_target.native.build import NativeBuildError, load_or_build
from passhost_cpu_target.native.kernel_files import (
    ABI_SYMBOL,
    ABI_VERSION,
    INSTALLED,
    STEM,
    kernel_files,
)
from passhost_cpu_target.native.library import NativeLibrary

__all__ = ["ENV_VAR", "NativeKernelWarning", "enabled", "library", "sources"]

#: The environment variable that turns the native kernels off when set to ``0``.
ENV_VAR = "PASSHOST_CPU_NATIVE"


class NativeKernelWarning(UserWarning):
    """The native kernels could not be built; the NumPy kernels are used instead."""


def enabled() -> bool:
    """Whether code generated now may use the native kernels (``PASSHOST_CPU_NATIVE``)."""
    return os.environ.get(ENV_VAR, "1").strip() not in ("0", "false", "no", "off")


def sources() -> dict[str, str]:
    """The files compiled into the library by name, the host's vector math included."""
    return kernel_files(VECTOR_MATH_SOURCE)


@functools.cache
def library() -> NativeLibrary | None:
    """The process's native kernel library, the installed copy or one built or loaded from
    the cache on the first call; None (after one warning) when it cannot be built."""
    try:
        return NativeLibrary(load_or_build(sources(), ABI_SYMBOL, ABI_VERSION, stem=STEM,
                                           installed=INSTALLED))
    except NativeBuildError as err:
        warnings.warn(NativeKernelWarning(f"passhost cpu target: native kernels unavailable, "
                                          f"using the NumPy kernels ({err})"), stacklevel=2)
        return None
