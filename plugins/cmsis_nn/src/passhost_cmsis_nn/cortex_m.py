"""Cross-compile C for Cortex-M boards that QEMU emulates, and run it there.

The Cortex-M tier runs the CMSIS-NN kernels (the plugin's own ``csrc/`` or a real checkout,
as :mod:`passhost_cmsis_nn.cbuild` chooses) and generated code on emulated processors:
:data:`CORTEX_M3` (QEMU's ``mps2-an385``, plain C) and :data:`CORTEX_M55` (``mps3-an547``,
with the DSP extension and Helium/MVE). A program is linked with the harness in
``cortex_m_harness/`` (vector table, reset handler, linker scripts) and newlib's semihosting
library, so ``printf`` reaches QEMU's standard output and the value ``main`` returns becomes
QEMU's exit status. It needs the Debian packages ``gcc-arm-none-eabi``,
``libnewlib-arm-none-eabi`` and ``qemu-system-arm``; :func:`unavailable_reason` says which
are missing.

The emulator checks results, not speed: QEMU does not model cycle counts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from passhost_cmsis_nn.cbuild import (
    STRICT_FLAGS,
    KernelLibrary,
    Kernels,
    build_executable,
    kernel_library,
)
from passhost_cmsis_nn.features import Features, target_features
from passhost_cmsis_nn.native import feature_macros

__all__ = [
    "BOARDS", "CORTEX_M3", "CORTEX_M55", "CROSS_COMPILER", "FAULT_EXIT_STATUS", "HARNESS_DIR",
    "QEMU", "CortexM", "CortexMError", "QemuResult", "board", "cross_compile", "run_qemu",
    "toolchain_available", "unavailable_reason",
]

CROSS_COMPILER = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"
#: The harness: ``startup.c`` and the linker scripts.
HARNESS_DIR = Path(__file__).resolve().parent / "cortex_m_harness"
#: The exit status of a program stopped by an unexpected exception (passed to ``startup.c``).
FAULT_EXIT_STATUS = 99

_PACKAGES = {CROSS_COMPILER: "gcc-arm-none-eabi", "rdimon.specs": "libnewlib-arm-none-eabi",
             QEMU: "qemu-system-arm"}


class CortexMError(RuntimeError):
    """The Cortex-M tools are missing, or QEMU could not run a program to its end."""


@dataclass(frozen=True)
class CortexM:
    """A Cortex-M processor on a QEMU board: ``cpu`` (gcc's ``-mcpu`` and QEMU's ``-cpu``),
    ``machine`` (QEMU's ``-M``), the float ABI to build with and the harness's linker
    script for the board's memory map."""

    cpu: str
    machine: str
    float_abi: str
    linker_script: str

    def __post_init__(self) -> None:
        target_features(self.cpu)  # an unknown processor raises OptionError
        if self.float_abi not in ("soft", "softfp", "hard"):
            raise ValueError(f"CortexM {self.cpu}: float_abi must be soft, softfp or hard, "
                             f"found {self.float_abi!r}")

    @property
    def features(self) -> Features:
        """``has_dsp`` / ``has_mve``, as a ``cmsis-nn`` target with ``-mcpu=<cpu>`` has."""
        return target_features(self.cpu)

    @property
    def cpu_flags(self) -> tuple[str, ...]:
        """The compiler flags selecting the processor and its float ABI."""
        return ("-mthumb", f"-mcpu={self.cpu}", f"-mfloat-abi={self.float_abi}")

    @property
    def kernel_defines(self) -> tuple[str, ...]:
        """The ``ARM_MATH_*`` macros that build the plugin's kernels for this processor's
        scratch-buffer rules (the real library derives them from the compiler itself)."""
        return feature_macros(self.features)

    def __str__(self) -> str:
        return f"{self.cpu} on {self.machine}"


CORTEX_M3 = CortexM("cortex-m3", "mps2-an385", "soft", "mps2_an385.ld")
CORTEX_M55 = CortexM("cortex-m55", "mps3-an547", "hard", "mps3_an547.ld")
#: The boards by processor name.
BOARDS: dict[str, CortexM] = {b.cpu: b for b in (CORTEX_M3, CORTEX_M55)}


def board(cpu: str) -> CortexM:
    """The board emulating processor ``cpu`` (``cortex-m3`` or ``cortex-m55``)."""
    try:
        return BOARDS[cpu]
    except KeyError:
        raise CortexMError(f"no QEMU board for processor {cpu!r}; the boards emulate "
                           f"{', '.join(BOARDS)}") from None


def _has_newlib(compiler: str) -> bool:
    """Whether ``compiler`` finds newlib's semihosting spec file."""
    try:
        found = subprocess.run([compiler, "-print-file-name=rdimon.specs"], capture_output=True,
                               text=True, check=False).stdout.strip()
    except OSError:
        return False
    return os.path.isabs(found) and os.path.isfile(found)


def _compiler_problem(compiler: str) -> str | None:
    """What is missing to cross-compile with ``compiler``, or None."""
    if shutil.which(compiler) is None:
        return f"{compiler} not found (package {_PACKAGES[CROSS_COMPILER]})"
    if not _has_newlib(compiler):
        return (f"{compiler} finds no newlib rdimon.specs "
                f"(package {_PACKAGES['rdimon.specs']})")
    return None


def _qemu_problem(qemu: str) -> str | None:
    """What is missing to run programs with ``qemu``, or None."""
    return None if shutil.which(qemu) else f"{qemu} not found (package {_PACKAGES[QEMU]})"


def unavailable_reason(compiler: str = CROSS_COMPILER, qemu: str = QEMU) -> str | None:
    """Why Cortex-M programs cannot be built and run here (naming each missing tool and the
    Debian package that provides it), or None when they can."""
    missing = [p for p in (_compiler_problem(compiler), _qemu_problem(qemu)) if p]
    return f"the Cortex-M tools are missing: {'; '.join(missing)}" if missing else None


def toolchain_available(compiler: str = CROSS_COMPILER, qemu: str = QEMU) -> bool:
    """Whether the cross compiler, newlib and QEMU are all installed."""
    return unavailable_reason(compiler, qemu) is None


def cross_compile(sources: Sequence[str | Path], board: CortexM, out_dir: str | Path, *,
                  name: str = "program.elf", optimize: str = "-O2",
                  flags: Sequence[str] = (), include_dirs: Sequence[str | Path] = (),
                  kernels: Kernels = None, compiler: str = CROSS_COMPILER) -> Path:
    """Compile the kernels (as :func:`cbuild.build_executable` chooses them), ``sources``
    (one defines ``int main(void)``) and the harness for ``board`` into the ELF file
    ``out_dir/name``; returns its path. Builds with ``STRICT_FLAGS``, then ``optimize``,
    the board's processor flags (plus the ``ARM_MATH_*`` macros for the plugin's own
    kernels) and ``flags``. Raises :class:`CortexMError` when the cross compiler or newlib
    is missing and ``CBuildError`` with the compiler's output when the build fails."""
    problem = _compiler_problem(compiler)
    if problem:
        raise CortexMError(f"cannot build {name} for {board}: {problem}")
    library = kernels if isinstance(kernels, KernelLibrary) else kernel_library(kernels)
    defines = board.kernel_defines if library.bundled else ()
    all_flags = (*STRICT_FLAGS, optimize, *board.cpu_flags, *defines,
                 f"-DPHNN_CM_FAULT_STATUS={FAULT_EXIT_STATUS}",
                 "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections",
                 "--specs=rdimon.specs", "-nostartfiles", f"-L{HARNESS_DIR}",
                 f"-T{HARNESS_DIR / board.linker_script}", *flags)
    return build_executable(out_dir, name=name, sources=[*sources, HARNESS_DIR / "startup.c"],
                            flags=all_flags, include_dirs=include_dirs, compiler=compiler,
                            kernels=library)


@dataclass(frozen=True)
class QemuResult:
    """How a program ended under QEMU: its exit status (``main``'s return value,
    :data:`FAULT_EXIT_STATUS` after an unexpected exception), what it printed, and QEMU's
    standard error (QEMU's own errors and the harness's report of an exception)."""

    status: int
    stdout: str
    stderr: str


def _text(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""


def run_qemu(elf: str | Path, board: CortexM, timeout: float = 30, *,
             qemu: str = QEMU) -> QemuResult:
    """Run the program ``elf`` (from :func:`cross_compile` for ``board``) on the board's
    emulator with semihosting, and return its exit status and output. Raises
    :class:`CortexMError` when QEMU is missing, the file does not exist, or the program
    has not ended after ``timeout`` seconds (QEMU is then killed)."""
    path = Path(elf)
    if not path.is_file():
        raise CortexMError(f"run_qemu: no program at {path}")
    problem = _qemu_problem(qemu)
    if problem:
        raise CortexMError(f"cannot run {path.name} on {board}: {problem}")
    cmd = [qemu, "-M", board.machine, "-cpu", board.cpu, "-nographic", "-monitor", "none",
           "-serial", "none", "-semihosting-config", "enable=on,target=native",
           "-kernel", str(path)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired as err:
        raise CortexMError(f"{path.name} on {board} did not end within {timeout} s; QEMU was "
                           f"stopped\ncommand: {' '.join(cmd)}\noutput so far:\n"
                           f"{_text(err.stdout)}{_text(err.stderr)}") from None
    except OSError as err:
        raise CortexMError(f"could not run {qemu}: {err}") from err
    return QemuResult(result.returncode, result.stdout, result.stderr)
