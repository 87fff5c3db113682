"""The plugin's build step: compile the native kernel library for this machine when the
plugin is installed (``pip install``, editable or not), so that no model's compilation pays
for it. Everything else about the distribution is in ``pyproject.toml``.

The library needs the host's vector math (``passhost.backend.vector_math``): from an
installed ``passhost`` when the build can import it, else from the host's sources beside
this plugin in the repository. When neither is there, or the library does not compile, the
install goes on without it and the plugin compiles the library into its cache on first use.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from setuptools import Command, setup
from setuptools.command.build import build
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
NATIVE = Path("src", "passhost_cpu_target", "native")
#: The host's vector math module in the repository's layout.
HOST_VECTOR_MATH = HERE.parents[1] / "src" / "passhost" / "backend" / "vector_math.py"


def _module(path: Path) -> ModuleType:
    """The module at ``path``, imported on its own (its package's ``__init__`` not run)."""
    spec = importlib.util.spec_from_file_location(f"_passhost_build_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and the like look modules up by name
    spec.loader.exec_module(module)
    return module


def _vector_math() -> str | None:
    """The host's vector math C source, or None when neither passhost nor its sources are
    reachable."""
    try:
        from passhost.backend.vector_math import VECTOR_MATH_SOURCE
    except ImportError:
        if not HOST_VECTOR_MATH.is_file():
            return None
        return str(_module(HOST_VECTOR_MATH).VECTOR_MATH_SOURCE)
    return VECTOR_MATH_SOURCE


class BuildKernels(Command):
    """Compile the native kernel library into the package's ``prebuilt`` folder."""

    description = "compile the native kernel library for this machine"
    user_options: list[tuple[str, str | None, str]] = []

    def initialize_options(self) -> None:
        """No options; where to build is decided in :meth:`finalize_options`."""
        self.editable_mode = False
        self.build_lib: str | None = None

    def finalize_options(self) -> None:
        """Build where ``build_py`` puts the package (the sources, when editable)."""
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _target(self) -> Path:
        if self.editable_mode:
            return HERE / NATIVE / "prebuilt"
        assert self.build_lib is not None
        return Path(self.build_lib, *NATIVE.parts[1:], "prebuilt")

    def run(self) -> None:
        """Compile the library; on any failure say why and leave it to the first use."""
        vector_math = _vector_math()
        if vector_math is None:
            print("passhost-cpu-target: passhost's vector math is not reachable from this "
                  "build; the kernels compile on first use instead", file=sys.stderr)
            return
        native_build = _module(HERE / NATIVE / "build.py")
        files = _module(HERE / NATIVE / "kernel_files.py")
        target = self._target()
        target.mkdir(mode=0o755, parents=True, exist_ok=True)
        target.chmod(0o755)
        try:
            lib = native_build.load_or_build(files.kernel_files(vector_math), files.ABI_SYMBOL,
                                             files.ABI_VERSION, directory=target,
                                             stem=files.STEM)
        except native_build.NativeBuildError as err:
            print(f"passhost-cpu-target: the kernels compile on first use instead: {err}",
                  file=sys.stderr)
            return
        built = Path(lib._name)
        record = built.with_name(built.name + ".sha256")
        built.chmod(0o755)  # writable by no one else, whatever the umask: else not trusted
        record.chmod(0o644)
        for old in target.glob(f"{files.STEM}-*"):  # earlier builds of an editable install
            if old not in (built, record):
                old.unlink()

    def get_outputs(self) -> list[str]:
        """The library and its content record."""
        target = self._target()
        return [str(path) for path in sorted(target.glob("*"))] if target.is_dir() else []

    def get_source_files(self) -> list[str]:
        """The kernels' C files (package data, already in the source distribution)."""
        return [str(path.relative_to(HERE))
                for path in sorted((HERE / NATIVE / "kernels").iterdir())]

    def get_output_mapping(self) -> dict[str, str]:
        """No output is a copy of a source file."""
        return {}


class BuildWithKernels(build):
    """``build`` with :class:`BuildKernels` after the Python files."""

    sub_commands = [*build.sub_commands, ("build_kernels", None)]


class MachineSpecificDistribution(Distribution):
    """A wheel holding a library compiled for one machine is not pure Python."""

    def has_ext_modules(self) -> bool:
        """Tag wheels for the platform they were built on."""
        return True


setup(cmdclass={"build": BuildWithKernels, "build_kernels": BuildKernels},
      distclass=MachineSpecificDistribution)
