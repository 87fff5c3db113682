"""Compile the CMSIS-NN kernels (plus extra C sources) with the system C compiler.

The kernels come from the plugin's own portable implementation in ``csrc/`` unless a real
CMSIS-NN checkout is named, by the ``kernels`` argument or the ``PASSHOST_CMSIS_NN_ROOT``
environment variable: then its ``Include/`` directory and every ``Source/*/*.c`` file are
used instead. :func:`bundled_kernel_library` names the plugin's own kernels whatever the
environment says.

:func:`build_shared_library` produces a shared library for :func:`load_library` (ctypes);
:func:`build_executable` links a program with its own ``main``. Builds with AddressSanitizer
should be executables: an ASan-instrumented shared library can only be loaded into Python
with ``libasan`` preloaded (``LD_PRELOAD``), which would have to be set before the
interpreter starts, whereas an executable brings its own sanitizer runtime.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KERNEL_ROOT_ENV", "SANITIZER_FLAGS", "STRICT_FLAGS", "CBuildError", "KernelLibrary",
    "build_executable", "build_shared_library", "bundled_kernel_library", "find_compiler",
    "kernel_library", "load_library",
]

KERNEL_ROOT_ENV = "PASSHOST_CMSIS_NN_ROOT"
STRICT_FLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror")
SANITIZER_FLAGS = ("-g", "-fsanitize=undefined,address", "-fno-sanitize-recover=all")

_BUNDLED = Path(__file__).resolve().parent / "csrc"


class CBuildError(RuntimeError):
    """A C build failed or could not start: the message names the command and carries the
    compiler's output."""


@dataclass(frozen=True)
class KernelLibrary:
    """Where the CMSIS-NN API comes from: the directory holding ``arm_nnfunctions.h``, the C
    sources implementing it, and whether it is the plugin's own implementation."""

    include_dir: Path
    sources: tuple[Path, ...]
    bundled: bool


def bundled_kernel_library() -> KernelLibrary:
    """The plugin's own portable kernels (``csrc/``)."""
    return KernelLibrary(_BUNDLED, tuple(sorted(_BUNDLED.glob("*.c"))), True)


def kernel_library(kernel_root: str | Path | None = None) -> KernelLibrary:
    """The kernel sources to build: the CMSIS-NN checkout at ``kernel_root`` (default: the
    ``PASSHOST_CMSIS_NN_ROOT`` environment variable) or, when neither is set, the plugin's
    portable implementation."""
    root = kernel_root if kernel_root is not None else os.environ.get(KERNEL_ROOT_ENV) or None
    if root is None:
        return bundled_kernel_library()
    base = Path(root).expanduser()
    include = base / "Include"
    sources = tuple(sorted((base / "Source").glob("*/*.c")))
    missing = []
    if not (include / "arm_nnfunctions.h").is_file():
        missing.append("Include/arm_nnfunctions.h")
    if not sources:
        missing.append("Source/*/*.c")
    if missing:
        origin = "kernel_root" if kernel_root is not None else f"${KERNEL_ROOT_ENV}"
        raise CBuildError(f"{origin}: expected a CMSIS-NN checkout at {base}, found no "
                          f"{' and no '.join(missing)}")
    return KernelLibrary(include, sources, False)


def find_compiler(compiler: str | None = None) -> str:
    """The C compiler to run: ``compiler``, else ``$CC``, else the first of cc, gcc, clang
    on the PATH."""
    candidates = [compiler] if compiler else [os.environ.get("CC") or "", "cc", "gcc", "clang"]
    for name in candidates:
        if name and shutil.which(name):
            return name
    raise CBuildError(f"no C compiler found: tried {', '.join(c for c in candidates if c)}")


Kernels = KernelLibrary | str | Path | None


def _compile(output: Path, sources: Sequence[str | Path], flags: Sequence[str],
             include_dirs: Sequence[str | Path], shared: bool, compiler: str | None,
             kernels: Kernels) -> Path:
    if not isinstance(kernels, KernelLibrary):
        kernels = kernel_library(kernels)
    cc = find_compiler(compiler)
    output.parent.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{d}" for d in (kernels.include_dir, *include_dirs)]
    cmd = [cc, *flags, *(["-shared", "-fPIC"] if shared else []), *includes, "-o", str(output),
           *(str(s) for s in (*kernels.sources, *sources))]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as err:
        raise CBuildError(f"could not run {cc}: {err}") from err
    if result.returncode != 0:
        raise CBuildError(f"{cc} failed with exit code {result.returncode} building {output.name}"
                          f"\ncommand: {' '.join(cmd)}\ncompiler output:\n"
                          f"{(result.stderr + result.stdout).strip()}")
    return output


def build_shared_library(out_dir: str | Path, *, name: str = "passhost_cmsis_nn",
                         sources: Sequence[str | Path] = (), flags: Sequence[str] = STRICT_FLAGS,
                         include_dirs: Sequence[str | Path] = (), compiler: str | None = None,
                         kernels: Kernels = None) -> Path:
    """Compile the kernels and ``sources`` with ``flags`` into ``out_dir/lib<name>.so``;
    returns its path. ``kernels`` is a :class:`KernelLibrary`, the path of a CMSIS-NN
    checkout, or None for :func:`kernel_library`'s default. Raises :class:`CBuildError`
    with the compiler output on failure."""
    output = Path(out_dir) / f"lib{name}.so"
    return _compile(output, sources, flags, include_dirs, True, compiler, kernels)


def build_executable(out_dir: str | Path, *, name: str, sources: Sequence[str | Path],
                     flags: Sequence[str] = STRICT_FLAGS, include_dirs: Sequence[str | Path] = (),
                     compiler: str | None = None, kernels: Kernels = None) -> Path:
    """Compile the kernels (as for :func:`build_shared_library`) and ``sources`` (one of
    which defines ``main``) with ``flags`` into the program ``out_dir/name``; returns its
    path. Raises :class:`CBuildError` with the compiler output on failure."""
    return _compile(Path(out_dir) / name, sources, flags, include_dirs, False, compiler,
                    kernels)


def load_library(path: str | Path) -> ctypes.CDLL:
    """Load a shared library built by :func:`build_shared_library` with ctypes."""
    return ctypes.CDLL(str(Path(path).resolve()))
