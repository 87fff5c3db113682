"""Compiling C sources with the system C compiler into a shared library in a cache
directory, and loading it with ctypes.

A source is one translation unit, or several files (units and the headers they include),
whose units are compiled at the same time, one compiler per core, and linked. The cached
file's name is a hash of everything the machine code depends on: the files, the compiler's
identity (``--version`` output), the flags and the machine. A library is
written to a temporary file in the cache directory and renamed into place, so processes
compiling at the same time never see a partial file, and an interrupted build leaves no
file behind.

Loading a library runs its code, so the cache is trusted only as far as it is safe:

* the cache directory must belong to the user and be writable by no one else; otherwise
  (or when it cannot be created) a :class:`NativeCacheWarning` names it and a private
  temporary directory of this process is used instead;
* beside each library, ``<name>.sha256`` records the SHA-256 of the file as it was built;
  a library whose content does not match it (truncated, corrupt, replaced) or that has no
  record is deleted and compiled again, never loaded;
* a library that does not load (or reports another ABI version) is compiled again too.

A library compiled when a package was installed (``installed``, a folder of the package) is
used before the cache when it has the name this build would give it and passes the same
content check, and when it and its folder belong to this user or to root and no one else
may write to them.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import stat
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path

__all__ = ["EXTRA_FLAGS_VAR", "FLAG_SETS", "NativeBuildError", "NativeBuildWarning",
           "NativeCacheWarning", "Source", "cache_dir", "extra_flags", "find_compiler",
           "load_or_build", "safe_directory"]

#: What load_or_build compiles: a C file, the text of one translation unit, or files by
#: name (``.c`` units, compiled each on its own and linked, and the headers they include).
Source = Path | str | Mapping[str, str]

#: Compiler flags to try in order: the fastest first; without OpenMP the kernels run on one
#: thread, without -march=native they use the baseline instruction set.
FLAG_SETS: tuple[tuple[str, ...], ...] = (
    ("-O3", "-march=native", "-fopenmp"),
    ("-O3", "-fopenmp"),
    ("-O3", "-march=native"),
    ("-O3",),
)
_COMPILE_FLAGS = ("-std=gnu11", "-fPIC")
_LINK_FLAGS = ("-shared",)
#: The environment variable holding flags added to every compilation (shell syntax), e.g.
#: ``-fsanitize=address,undefined -Wall -Werror`` to build the kernels and the generated
#: loops with sanitizers (load them in a process with the sanitizer runtime preloaded).
EXTRA_FLAGS_VAR = "PASSHOST_CPU_CFLAGS"


def extra_flags() -> tuple[str, ...]:
    """The flags of :data:`EXTRA_FLAGS_VAR`, split as a shell would."""
    return tuple(shlex.split(os.environ.get(EXTRA_FLAGS_VAR, "")))
_SUFFIX = ".dll" if os.name == "nt" else ".so"


class NativeBuildError(RuntimeError):
    """The native kernels could not be compiled or loaded."""


class NativeCacheWarning(UserWarning):
    """The cache directory is unsafe or unusable; a private temporary directory is used."""


class NativeBuildWarning(UserWarning):
    """The first flags of a build failed; its library was built with later, slower ones."""


def cache_dir() -> Path:
    """Where compiled libraries are kept: ``$PASSHOST_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/passhost``, else ``~/.cache/passhost``."""
    explicit = os.environ.get("PASSHOST_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "passhost"


def _unsafe_because(directory: Path) -> str | None:
    """Why ``directory`` cannot be trusted with libraries to load, or None if it can."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except OSError as err:
        return f"it cannot be created or read ({err.strerror or err})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"it belongs to user id {info.st_uid}, not to this user ({os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others may write to it (mode {stat.filemode(info.st_mode)})"
    if not os.access(directory, os.W_OK | os.X_OK):
        return "this user cannot write to it"
    return None


@cache
def _private_directory() -> Path:
    """A temporary directory only this process's user can use, removed by the system."""
    return Path(tempfile.mkdtemp(prefix="passhost-cache-"))


def safe_directory(directory: Path) -> Path:
    """``directory`` when it is safe to keep and load libraries from (created if needed);
    otherwise, after a :class:`NativeCacheWarning` naming it and why, a private temporary
    directory."""
    why = _unsafe_because(directory)
    if why is None:
        return directory
    fallback = _private_directory()
    warnings.warn(NativeCacheWarning(f"passhost: not using the cache directory {directory}: "
                                     f"{why}; compiling into {fallback} instead"),
                  stacklevel=3)
    return fallback


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


def _library_path(directory: Path, stem: str, files: Mapping[str, bytes], identity: str,
                  flags: Sequence[str]) -> Path:
    digest = hashlib.sha256()
    for name in sorted(files):
        for part in (name.encode(), files[name]):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    for part in (identity.encode(), " ".join(flags).encode(), _machine().encode()):
        digest.update(part)
        digest.update(b"\0")
    return directory / f"{stem}-{digest.hexdigest()[:24]}{_SUFFIX}"


def _installed_and_trusted(library: Path) -> bool:
    """Whether ``library`` exists in a folder, both belonging to this user or to root and
    writable by no one else (as a package's installed files are)."""
    owners = {0, os.getuid()} if hasattr(os, "getuid") else None
    for path in (library.parent, library):
        try:
            info = path.stat()
        except OSError:
            return False
        if owners is not None and info.st_uid not in owners:
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True


def _digest_path(library: Path) -> Path:
    return library.with_name(library.name + ".sha256")


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _intact(library: Path) -> bool:
    """Whether ``library`` has the content recorded when it was built."""
    try:
        recorded = _digest_path(library).read_text(encoding="ascii").strip()
        return recorded == _file_digest(library)
    except (OSError, UnicodeDecodeError):
        return False


def _write_atomically(target: Path, write: Callable[[str], str | None]) -> str | None:
    """Have ``write`` fill a temporary file beside ``target`` (it returns a complaint or
    None), then rename it into place; the temporary file never outlives the call."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    os.close(fd)
    try:
        problem = write(tmp)
        if problem is None:
            os.replace(tmp, target)
        return problem
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _run(args: Sequence[str], work: str) -> str | None:
    """Run the compiler ``args`` in ``work``; its complaint, or None when it succeeds."""
    result = subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=600,
                            check=False)
    if result.returncode == 0:
        return None
    return result.stderr.strip()[-400:] or f"exit status {result.returncode}"


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _compile_units(compiler: str, units: Sequence[str], flags: Sequence[str],
                   work: str) -> str | None:
    """Compile each unit in ``work`` into ``<unit>.o``, a compiler per core at a time; the
    first complaint, or None."""
    pending, running, problem = list(units), [], None
    try:
        while pending or running:
            while pending and len(running) < _cores():
                unit = pending.pop(0)
                running.append((unit, subprocess.Popen(
                    [compiler, *flags, *_COMPILE_FLAGS, "-c", unit, "-o", f"{unit}.o"],
                    cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
            unit, process = running.pop(0)
            try:
                _, stderr = process.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                stderr = "timed out after 600 s"
            if process.returncode != 0 and problem is None:
                problem = f"{unit}: {stderr.strip()[-400:] or process.returncode}"
    finally:  # interrupted: no compiler outlives the build
        for _, process in running:
            process.kill()
            process.wait()
    return problem


def _compile(compiler: str, files: Mapping[str, bytes], flags: Sequence[str],
             target: Path) -> str | None:
    """Compile the C ``files`` (their ``.c`` units, linked when there are several) into
    ``target`` atomically and record its content hash; the compiler's complaint on failure.
    The compiler reads the files from a temporary directory beside the target, removed
    afterwards."""

    def build(tmp: str) -> str | None:
        # The sources' names are recorded in the library: keep them the same on every build.
        with tempfile.TemporaryDirectory(prefix=f".{target.stem}-", dir=target.parent) as work:
            for name, text in files.items():
                Path(work, name).write_bytes(text)
            # the longest first, so that the last to start are the quickest to finish
            units = sorted((name for name in files if name.endswith(".c")),
                           key=lambda name: (-len(files[name]), name))
            out = ("-o", os.path.abspath(tmp))
            if len(units) == 1:
                problem = _run([compiler, *flags, *_COMPILE_FLAGS, *_LINK_FLAGS, *units, *out],
                               work)
            else:
                problem = (_compile_units(compiler, units, flags, work) or
                           _run([compiler, *flags, *_LINK_FLAGS,
                                 *(f"{unit}.o" for unit in units), *out], work))
        if problem is not None:
            return problem
        digest = _file_digest(Path(tmp))

        def record(path: str) -> None:
            Path(path).write_text(digest + "\n", encoding="ascii")

        return _write_atomically(_digest_path(target), record)

    try:
        return _write_atomically(target, build)
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)


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


def _files(source: Source, stem: str | None) -> tuple[dict[str, bytes], str]:
    """The files of ``source`` by name, and the library's stem."""
    if isinstance(source, Path):
        return {source.name: source.read_bytes()}, stem or source.stem
    if isinstance(source, str):
        return {f"{stem or 'unit'}.c": source.encode()}, stem or "unit"
    if not any(name.endswith(".c") for name in source):
        raise NativeBuildError("no C unit (a file ending in .c) among the sources")
    return {name: text.encode() for name, text in source.items()}, stem or "unit"


def load_or_build(source: Source, abi_symbol: str, abi: int, *,
                  directory: Path | None = None, compiler: str | None = None,
                  stem: str | None = None, installed: Path | None = None,
                  flag_sets: Sequence[Sequence[str]] = FLAG_SETS) -> ctypes.CDLL:
    """The compiled C ``source`` (a file, the text of one unit, or files by name; ``stem``
    names the library) loaded with ctypes: the copy in ``installed`` when there is a trusted
    one of the same build, else the cache's, else compiled into the cache with the first of
    ``flag_sets`` that works, plus the flags of :data:`EXTRA_FLAGS_VAR`. ``abi_symbol``
    names a C function returning ``abi``; a cached library that fails to load or returns
    another number is rebuilt. A library built or loaded with any but the first flags comes
    with a :class:`NativeBuildWarning` saying why the earlier ones failed."""
    files, stem = _files(source, stem)
    compiler = compiler or find_compiler()
    if compiler is None:
        raise NativeBuildError("no C compiler found (set $CC, or install cc, gcc or clang)")
    identity = _compiler_identity(compiler)
    all_flags = [(*flags, *extra_flags()) for flags in flag_sets]
    if installed is not None:
        for flags in all_flags:
            path = _library_path(installed, stem, files, identity, flags)
            if _installed_and_trusted(path) and _intact(path):
                lib = _load(path, abi_symbol, abi)
                if lib is not None:
                    return lib
    directory = safe_directory(directory or cache_dir())
    errors: list[str] = []
    for flags in all_flags:
        path = _library_path(directory, stem, files, identity, flags)
        if path.exists():
            lib = _load(path, abi_symbol, abi) if _intact(path) else None
            if lib is not None:
                return _fell_back(lib, stem, flags, errors)
            path.unlink(missing_ok=True)
            _digest_path(path).unlink(missing_ok=True)
        problem = _compile(compiler, files, flags, path)
        if problem is None:
            lib = _load(path, abi_symbol, abi)
            if lib is not None:
                return _fell_back(lib, stem, flags, errors)
            problem = f"the compiled library {path} does not load or has another ABI"
        errors.append(f"{compiler} {' '.join(flags)}: {problem}")
    raise NativeBuildError(f"cannot build {stem} in {directory}:\n" + "\n".join(errors))


def _fell_back(lib: ctypes.CDLL, stem: str, flags: Sequence[str],
               errors: Sequence[str]) -> ctypes.CDLL:
    """``lib``, built with ``flags``, after one :class:`NativeBuildWarning` naming the
    earlier flags that failed (``errors``) when there are any."""
    if errors:
        warnings.warn(NativeBuildWarning(
            f"{stem} was built with {' '.join(flags)}, after its preferred flags failed "
            f"(it may run slower):\n" + "\n".join(errors)), stacklevel=3)
    return lib
