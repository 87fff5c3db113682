"""The kernel library compiled when the plugin is installed: the build step (``setup.py``)
writes it into the package's ``prebuilt`` folder, and a process with an empty cache loads
that copy instead of compiling; a copy others may write to, a tampered one or one of other
sources is passed over for the cache."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

from passhost_cpu_target import native
from passhost_cpu_target.native import build
from passhost_cpu_target.native.kernel_files import ABI_SYMBOL, ABI_VERSION, STEM

PLUGIN = Path(__file__).resolve().parents[1]
SOURCE = "int ph_abi_version(void) { return 7; }\nint twice(int x) { return 2 * x; }\n"


def _twice(lib: ctypes.CDLL, value: int) -> int:
    lib.twice.argtypes = [ctypes.c_int]
    lib.twice.restype = ctypes.c_int
    return lib.twice(value)


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A folder holding the tiny source's library, as the build step leaves it."""
    folder = tmp_path / "prebuilt"
    folder.mkdir(mode=0o755)
    build.load_or_build(SOURCE, "ph_abi_version", 7, directory=folder, stem="tiny")
    return folder


def _load(installed: Path, cache: Path, source: str = SOURCE) -> ctypes.CDLL:
    return build.load_or_build(source, "ph_abi_version", 7, directory=cache, stem="tiny",
                               installed=installed)


def test_the_installed_library_is_loaded_and_nothing_is_compiled(installed, tmp_path):
    lib = _load(installed, tmp_path / "cache")
    assert Path(lib._name).parent == installed
    assert _twice(lib, 21) == 42
    assert not (tmp_path / "cache").exists()


def test_an_installed_library_others_may_write_to_is_passed_over(installed, tmp_path):
    installed.chmod(0o777)
    lib = _load(installed, tmp_path / "cache")
    assert Path(lib._name).parent == tmp_path / "cache"


def test_a_tampered_installed_library_is_passed_over_and_left_alone(installed, tmp_path):
    (library,) = (p for p in installed.iterdir() if p.suffix == ".so")
    # a new file in its place: this process has the built one mapped (the fixture loaded
    # it), and truncating a mapped library in place ends the process with SIGBUS
    tampered = library.with_name("tampered")
    tampered.write_bytes(library.read_bytes()[:100])
    tampered.replace(library)
    lib = _load(installed, tmp_path / "cache")
    assert Path(lib._name).parent == tmp_path / "cache"
    assert library.stat().st_size == 100  # not the user's to repair or delete


def test_an_installed_library_of_other_sources_is_passed_over(installed, tmp_path):
    edited = SOURCE + "int thrice(int x) { return 3 * x; }\n"
    lib = _load(installed, tmp_path / "cache", edited)
    assert Path(lib._name).parent == tmp_path / "cache"


def test_the_build_step_compiles_the_kernels_the_plugin_then_loads(tmp_path):
    built = tmp_path / "lib"
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib",
                           str(built), "build_kernels"], cwd=PLUGIN, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    prebuilt = built / "passhost_cpu_target" / "native" / "prebuilt"
    names = sorted(p.name for p in prebuilt.iterdir())
    assert len(names) == 2 and names[1] == names[0] + ".sha256", names
    cache = tmp_path / "cache"
    lib = build.load_or_build(native.sources(), ABI_SYMBOL, ABI_VERSION, stem=STEM,
                              directory=cache, installed=prebuilt)
    assert Path(lib._name) == prebuilt / names[0]
    assert not cache.exists()
