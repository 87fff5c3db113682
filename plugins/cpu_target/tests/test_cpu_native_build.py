"""Building and loading native kernels: the cache directory, reuse of a cached library, a
corrupt cache entry rebuilt, processes building at once, libraries of several units (each
compiled, then linked; a failing unit named; an interrupted build stops its compilers),
compile failures, the ABI check, how OpenMP threads wait,
the one warning and the NumPy fallback when the library cannot be built, and
``PASSHOST_CPU_NATIVE=0``. Small C sources stand in for the kernels where only the build
machinery is under test."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from cpu_helpers import assert_same, run_op, uses_native_kernel

from passhost_cpu_target import native
from passhost_cpu_target.native import build

SOURCE = "int ph_abi_version(void) { return 7; }\nint twice(int x) { return 2 * x; }\n"


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.c"
    path.write_text(SOURCE)
    return path


def _libraries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("tiny-*") if p.suffix != ".sha256")


def _twice(lib: ctypes.CDLL, value: int) -> int:
    lib.twice.argtypes = [ctypes.c_int]
    lib.twice.restype = ctypes.c_int
    return lib.twice(value)


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PASSHOST_CACHE_DIR", str(tmp_path / "explicit"))
    assert build.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("PASSHOST_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build.cache_dir() == tmp_path / "xdg" / "passhost"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert build.cache_dir() == tmp_path / "home" / ".cache" / "passhost"


def test_a_built_library_is_cached_and_reused(source, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    assert _twice(build.load_or_build(source, "ph_abi_version", 7, directory=cache), 21) == 42
    (built,) = _libraries(cache)
    # The library and its content record; no temporary files left.
    assert sorted(p.name for p in cache.iterdir()) == [built.name, built.name + ".sha256"]

    def no_compiling(*args):
        raise AssertionError("the cached library should have been reused")

    monkeypatch.setattr(build, "_compile", no_compiling)
    assert _twice(build.load_or_build(source, "ph_abi_version", 7, directory=cache), 4) == 8
    assert _libraries(cache) == [built]


def test_an_edited_source_builds_a_new_library(source, tmp_path):
    cache = tmp_path / "cache"
    build.load_or_build(source, "ph_abi_version", 7, directory=cache)
    source.write_text(SOURCE + "int thrice(int x) { return 3 * x; }\n")
    lib = build.load_or_build(source, "ph_abi_version", 7, directory=cache)
    assert len(_libraries(cache)) == 2 and lib.thrice(2) == 6


def _load_in_subprocess(source: Path, cache: Path) -> subprocess.Popen:
    code = ("import sys; from pathlib import Path; "
            "from passhost_cpu_target.native.build import load_or_build; "
            "lib = load_or_build(Path(sys.argv[1]), 'ph_abi_version', 7, "
            "directory=Path(sys.argv[2])); print(lib.twice(5))")
    return subprocess.Popen([sys.executable, "-c", code, str(source), str(cache)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return out.strip()


def test_a_corrupt_cache_entry_is_rebuilt(source, tmp_path):
    cache = tmp_path / "cache"
    assert _finish(_load_in_subprocess(source, cache)) == "10"
    (built,) = _libraries(cache)
    built.write_bytes(b"not a shared library")
    assert _finish(_load_in_subprocess(source, cache)) == "10"
    assert _libraries(cache) == [built] and built.read_bytes()[:4] != b"not "


def test_processes_building_at_once_share_one_library(source, tmp_path):
    cache = tmp_path / "cache"
    processes = [_load_in_subprocess(source, cache) for _ in range(3)]
    assert [_finish(p) for p in processes] == ["10"] * 3
    assert len(_libraries(cache)) == 1 and len(list(cache.iterdir())) == 2  # + its record


def test_a_source_that_does_not_compile_names_the_compiler_error(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int ph_abi_version(void) { return 7 }\n")
    with pytest.raises(build.NativeBuildError, match="error: expected"):
        build.load_or_build(bad, "ph_abi_version", 7, directory=tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_a_build_that_falls_back_to_later_flags_says_why(tmp_path):
    unused = tmp_path / "unused.c"
    unused.write_text(SOURCE + "int unused(void) { int x; return 0; }\n")
    flag_sets = [("-O2", "-Wall", "-Werror"), ("-O2",)]
    with pytest.warns(build.NativeBuildWarning, match=r"(?s)built with -O2, after .*"
                      r"-Wall -Werror: .*unused variable"):
        lib = build.load_or_build(unused, "ph_abi_version", 7, directory=tmp_path / "cache",
                                  flag_sets=flag_sets)
    assert _twice(lib, 5) == 10
    with pytest.warns(build.NativeBuildWarning):  # the cached copy too: the flags still fail
        build.load_or_build(unused, "ph_abi_version", 7, directory=tmp_path / "cache",
                            flag_sets=flag_sets)
    with warnings.catch_warnings():  # the preferred flags working: no warning
        warnings.simplefilter("error")
        build.load_or_build(unused, "ph_abi_version", 7, directory=tmp_path / "cache",
                            flag_sets=flag_sets[1:])


#: A library of two units and the header they share.
UNITS = {"shared.h": "int twice(int x);\n",
         "abi.c": '#include "shared.h"\nint ph_abi_version(void) { return 7; }\n',
         "twice.c": '#include "shared.h"\nint twice(int x) { return 2 * x; }\n'}


def test_units_are_compiled_each_and_linked_into_one_library(tmp_path):
    cache = tmp_path / "cache"
    lib = build.load_or_build(UNITS, "ph_abi_version", 7, directory=cache, stem="tiny")
    assert _twice(lib, 5) == 10
    (built,) = _libraries(cache)
    assert sorted(p.name for p in cache.iterdir()) == [built.name, built.name + ".sha256"]
    # The header is part of the cache key: editing it builds a new library.
    build.load_or_build({**UNITS, "shared.h": UNITS["shared.h"] + "int unused(void);\n"},
                        "ph_abi_version", 7, directory=cache, stem="tiny")
    assert len(_libraries(cache)) == 2


def test_a_unit_that_does_not_compile_is_named(tmp_path):
    units = {**UNITS, "twice.c": "int twice(int x) { return 2 * x }\n"}
    with pytest.raises(build.NativeBuildError, match=r"(?s)twice\.c: .*error: expected"):
        build.load_or_build(units, "ph_abi_version", 7, directory=tmp_path / "cache",
                            stem="tiny")
    assert not any((tmp_path / "cache").iterdir())


def test_sources_without_a_unit_are_refused(tmp_path):
    with pytest.raises(build.NativeBuildError, match="no C unit"):
        build.load_or_build({"shared.h": UNITS["shared.h"]}, "ph_abi_version", 7,
                            directory=tmp_path / "cache")


def test_the_kernel_sources_put_the_vector_math_before_the_activations():
    files = native.sources()
    assert {"kernels.h", "conv.h", "common.c", "conv.c", "implicit.c", "winograd.c", "window.c",
            "max_pool.c", "matmul.c", "steps.c"} <= set(files)
    common = files["common.c"]
    assert common.index("ph_sigmoid_f32(float x)") < common.index('#line 1 "common.c"')
    assert all("ph_sigmoid_f32(float x)" not in text
               for name, text in files.items() if name != "common.c")


def test_a_library_with_another_abi_is_refused(source, tmp_path):
    with pytest.raises(build.NativeBuildError, match="another ABI"):
        build.load_or_build(source, "ph_abi_version", 8, directory=tmp_path / "cache")


def test_a_missing_compiler_is_reported(source, tmp_path):
    with pytest.raises(build.NativeBuildError, match="does not run"):
        build.load_or_build(source, "ph_abi_version", 7, directory=tmp_path / "cache",
                            compiler=str(tmp_path / "no-such-cc"))


@pytest.fixture
def failing_build(monkeypatch):
    """The kernel library cannot be built (for this test; the real one is reloaded after)."""

    def fail(*args, **kwargs):
        raise build.NativeBuildError("no C compiler found")

    monkeypatch.setattr(native, "load_or_build", fail)
    native.library.cache_clear()
    yield
    native.library.cache_clear()


def test_a_failed_build_warns_once_and_the_numpy_kernels_run(failing_build):
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 6, 6)).astype("float32")
    weight = np.random.default_rng(1).uniform(-1, 1, (4, 3, 3, 3)).astype("float32")
    with pytest.warns(native.NativeKernelWarning, match="no C compiler found"):
        got, expected, source = run_op("nn.conv2d", {}, [data, weight])
    assert "_conv2d_gemm(" in source and not uses_native_kernel(source)
    assert_same(got, expected, atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.library() is None


@pytest.mark.parametrize(("setting", "native_used"), [("0", False), ("off", False),
                                                      ("1", True)])
def test_the_environment_variable_turns_native_kernels_off(monkeypatch, setting, native_used):
    monkeypatch.setenv(native.ENV_VAR, setting)
    data = np.random.default_rng(2).uniform(-1, 1, (1, 8, 5, 5)).astype("float32")
    weight = np.random.default_rng(3).uniform(-1, 1, (8, 1, 3, 3)).astype("float32")
    got, expected, source = run_op("nn.conv2d", {"groups": 8, "padding": 1}, [data, weight])
    assert uses_native_kernel(source) == native_used
    assert_same(got, expected, atol=1e-5)


# -- the cache is safe to load from ---------------------------------------------------------------
def test_a_truncated_library_is_rebuilt_never_loaded(source, tmp_path):
    # Each load runs in a process of its own: one that had mapped the library would crash
    # on the truncated file whatever the cache did (that is what a run without the content
    # record did: SIGBUS on every run).
    cache = tmp_path / "cache"
    assert _finish(_load_in_subprocess(source, cache)) == "10"
    (built,) = _libraries(cache)
    good = built.read_bytes()
    built.write_bytes(good[: len(good) // 2])
    assert not build._intact(built)
    assert _finish(_load_in_subprocess(source, cache)) == "10"
    assert built.read_bytes() == good and build._intact(built)


@pytest.mark.parametrize("record", ["missing", "wrong"])
def test_a_library_without_its_recorded_content_is_rebuilt(source, tmp_path, record):
    cache = tmp_path / "cache"
    assert _finish(_load_in_subprocess(source, cache)) == "10"
    (built,) = _libraries(cache)
    digest = built.with_name(built.name + ".sha256")
    if record == "missing":
        digest.unlink()
    else:
        digest.write_text("0" * 64 + "\n")
    assert _finish(_load_in_subprocess(source, cache)) == "10"
    # Only a build writes the record: the library was compiled again.
    assert digest.read_text().strip() == build._file_digest(built)


def test_a_directory_others_may_write_to_is_refused(source, tmp_path):
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    with pytest.warns(build.NativeCacheWarning, match=r"shared: others may write to it"):
        lib = build.load_or_build(source, "ph_abi_version", 7, directory=cache)
    assert _twice(lib, 5) == 10
    assert list(cache.iterdir()) == []


def test_a_directory_of_another_user_is_refused(source, tmp_path):
    if not hasattr(build.os, "getuid") or build.os.getuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    build.os.chown(cache, 65534, 65534)
    with pytest.warns(build.NativeCacheWarning, match=r"theirs: it belongs to user id 65534"):
        build.load_or_build(source, "ph_abi_version", 7, directory=cache)
    assert list(cache.iterdir()) == []


def test_an_unusable_cache_falls_back_to_a_private_directory(source, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.warns(build.NativeCacheWarning, match=r"cannot be created"):
        lib = build.load_or_build(source, "ph_abi_version", 7, directory=blocker / "cache")
    assert _twice(lib, 1) == 2
    private = build._private_directory()
    assert private.stat().st_mode & 0o077 == 0 and _libraries(private)


def test_an_interrupted_build_leaves_no_files(source, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()

    def interrupted(*args, **kwargs):
        Path(args[0][-1]).write_bytes(b"half a library")
        raise KeyboardInterrupt

    monkeypatch.setattr(build.subprocess, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build._compile("cc", {"tiny.c": source.read_bytes()}, ("-O3",), cache / "tiny-x.so")
    assert list(cache.iterdir()) == []


def test_an_interrupted_build_of_units_stops_its_compilers(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    started = []
    real_popen = subprocess.Popen

    def popen(args, **kwargs):
        if started:
            raise KeyboardInterrupt
        started.append(real_popen(["sleep", "60"], **kwargs))
        return started[-1]

    monkeypatch.setattr(build, "_cores", lambda: 2)
    monkeypatch.setattr(build.subprocess, "Popen", popen)
    files = {name: text.encode() for name, text in UNITS.items()}
    with pytest.raises(KeyboardInterrupt):
        build._compile("cc", files, ("-O3",), cache / "tiny-x.so")
    assert started[0].returncode is not None  # killed, not left running
    assert list(cache.iterdir()) == []
