"""Compiling the native kernel source with the system C compiler into a shared library in
a cache directory, and loading it with ctypes.

The cached file's name is a hash of everything the machine code depends on: the source,
the compiler's identity (``--version`` output), the flags and the machine. A library is
written to a temporary file in the cache directory and renamed into place, so processes
compiling at the same time never see a partial file. A cached file that does not load (or
reports another ABI version) is deleted and compiled again.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["FLAG_SETS", "NativeBuildError", "cache_dir", "find_compiler", "load_or_build"]

#: Compiler flags to try in order: the fastest first; without OpenMP the kernels run on one
#: thread, without -march=native they use the baseline instruction set.
FLAG_SETS: tuple[tuple[str, ...], ...] = (
    ("-O3", "-march=native", "-fopenmp"),
    ("-O3", "-fopenmp"),
    ("-O3", "-march=native"),
    ("-O3",),
)
_COMMON_FLAGS = ("-std=gnu11", "-shared", "-fPIC")
_SUFFIX = ".dll" if os.name == "nt" else ".so"


class NativeBuildError(RuntimeError):
    """The native kernels could not be compiled or loaded."""


def cache_dir() -> Path:
    """Where compiled libraries are kept: ``$PASSHOST_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/passhost``, else ``~/.cache/passhost``."""
    explicit = os.environ.get("PASSHOST_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "passhost"


def find_compiler() -> str | None:
    """The C compiler to use: ``$CC``, else ``cc``, ``gcc`` or ``clang`` on the PATH."""
    explicit = os.environ.get("CC")
    if explicit:
        return explicit
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _compiler_identity(compiler: str) -> str:
    try:
        result = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                                timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        raise NativeBuildError(f"C compiler {compiler!r} does not run: {err}") from None
    if result.returncode != 0:
        raise NativeBuildError(f"C compiler {compiler!r} --version exited with "
                               f"{result.returncode}: {result.stderr.strip()[:500]}")
    return result.stdout


def _machine() -> str:
    """The machine the code is compiled for (-march=native depends on the CPU model)."""
    parts = [platform.system(), platform.machine(), platform.processor()]
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            parts.extend(line for line in info if line.startswith(("model name", "flags")))
    except OSError:
        pass
    return "\n".join(dict.fromkeys(parts))


def _library_path(directory: Path, stem: str, source: bytes, identity: str,
                  flags: Sequence[str]) -> Path:
    digest = hashlib.sha256()
    for part in (source, identity.encode(), " ".join(flags).encode(), _machine().encode()):
        digest.update(part)
        digest.update(b"\0")
    return directory / f"{stem}-{digest.hexdigest()[:24]}{_SUFFIX}"


def _compile(compiler: str, source: Path, flags: Sequence[str], target: Path) -> str | None:
    """Compile ``source`` into ``target`` atomically; the compiler's complaint on failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=_SUFFIX, dir=target.parent)
    os.close(fd)
    try:
        result = subprocess.run([compiler, *flags, *_COMMON_FLAGS, str(source), "-o", tmp],
                                capture_output=True, text=True, timeout=600, check=False)
        if result.returncode != 0:
            return result.stderr.strip()[-400:] or f"exit status {result.returncode}"
        os.replace(tmp, target)
        return None
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _load(path: Path, abi_symbol: str, abi: int) -> ctypes.CDLL | None:
    """The library at ``path``, or None when it does not load or has another ABI."""
    try:
        lib = ctypes.CDLL(str(path))
        version = getattr(lib, abi_symbol)
    except (OSError, AttributeError):
        return None
    version.restype = ctypes.c_int
    version.argtypes = []
    return lib if version() == abi else None


def load_or_build(source: Path, abi_symbol: str, abi: int, *, directory: Path | None = None,
                  compiler: str | None = None) -> ctypes.CDLL:
    """The compiled ``source`` loaded with ctypes, from the cache or compiled into it with
    the first flag set that works. ``abi_symbol`` names a C function returning ``abi``;
    a cached library that fails to load or returns another number is rebuilt."""
    compiler = compiler or find_compiler()
    if compiler is None:
        raise NativeBuildError("no C compiler found (set $CC, or install cc, gcc or clang)")
    directory = directory or cache_dir()
    identity = _compiler_identity(compiler)
    text = source.read_bytes()
    errors = []
    for flags in FLAG_SETS:
        path = _library_path(directory, source.stem, text, identity, flags)
        if path.exists():
            lib = _load(path, abi_symbol, abi)
            if lib is not None:
                return lib
            path.unlink(missing_ok=True)
        problem = _compile(compiler, source, flags, path)
        if problem is None:
            lib = _load(path, abi_symbol, abi)
            if lib is not None:
                return lib
            problem = f"the compiled library {path} does not load or has another ABI"
        errors.append(f"{compiler} {' '.join(flags)}: {problem}")
    raise NativeBuildError(f"cannot build {source.name} in {directory}:\n" + "\n".join(errors))
