"""The cpu target's compiled loops: every PrimFunc made of loop nests (no kernel calls) is
printed by the host's C printer into one translation unit per module, compiled with the
system C compiler into the safe cache (:mod:`.native.build`) and called through ctypes.

Each function also gets a packed form (``int32_t <symbol>__packed(void *const *args)``):
the executor binds consecutive native steps (loops of any unit, native kernel calls) into
one call of the kernel library's runner (:mod:`.native.steps`), so a model whose steps are
all native runs with one call per inference.

The unit is compiled with the first flag set of :data:`.native.build.FLAG_SETS` that works
(``-O3 -march=native -fopenmp`` on a usual machine), plus the flags the unit asks for, and
``-ffp-contract=off`` so that multiply-adds round as the NumPy reference does. Its parallel
loops run on the kernel library's thread pool (:func:`.native.steps.pool_address`), the
one the kernels use, with ``num_threads`` threads (0: OpenMP's default, all cores).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from passhost.runtime import NativeStep
from passhost.tir import Call, PrimFunc, post_order
from passhost_cpu_target.errors import CodegenError
from passhost_cpu_target.native.build import FLAG_SETS, NativeBuildError, load_or_build
from passhost_cpu_target.native.library import address
from passhost_cpu_target.native.steps import pool_address, step_runner

__all__ = ["LOOPS_ABI", "CompiledLoopsWarning", "compile_loops", "is_loop_function"]

#: The ABI number every generated unit reports through ``passhost_loops_abi()``.
LOOPS_ABI = 1
_ABI_SYMBOL = "passhost_loops_abi"
_FLAGS = ("-ffp-contract=off",)


class CompiledLoopsWarning(UserWarning):
    """The loops of a module could not be compiled; they run as generated Python."""


def is_loop_function(func: PrimFunc) -> bool:
    """Whether ``func`` is plain loops over buffer parameters (no kernel or extern calls),
    which the C printer prints."""
    return all(p in func.buffer_map for p in func.params) and not any(
        isinstance(n, Call) and n.op in ("call_kernel", "call_extern")
        for n in post_order(func.body))


def _packed_source(unit: Any) -> str:
    """The packed form of every function of ``unit``."""
    parts = []
    for cfunc in unit.functions.values():
        args = ", ".join(f"args[{i}]" for i in range(len(cfunc.params)))
        parts.append(f"int32_t {cfunc.symbol}__packed(void *const *args)\n{{\n"
                     f"    return {cfunc.symbol}({args});\n}}\n")
    return "\n".join(parts)


def _failure(name: str, status: int, error: Callable[[], bytes | None]) -> CodegenError:
    """The error of loop function ``name`` returning ``status``."""
    message = error()
    return CodegenError(f"PrimFunc {name!r} failed (status {status}): "
                        f"{message.decode() if message else 'no message'}")


def _wrapper(function: Any, error: Callable[[], bytes | None], name: str,
             native_step: NativeStep | None) -> Callable[..., None]:
    """A Python callable taking the function's arrays (inputs, then outputs)."""

    def call(*arrays: np.ndarray) -> None:
        status = function(*[address(a) for a in arrays])
        if status:
            raise _failure(name, status, error)

    call.__name__ = call.__qualname__ = name
    if native_step is not None:
        call.native_step = native_step  # type: ignore[attr-defined]
    return call


def compile_loops(funcs: Mapping[str, PrimFunc], num_threads: int,
                  fallback: Callable[[], Mapping[str, Callable[..., None]]],
                  ) -> tuple[dict[str, Callable[..., None]], str, Callable[[], None]]:
    """The functions of ``funcs`` printed into one C unit: a callable per name, the C
    source, and a function setting the unit's thread count (call it before each run: the
    unit may be shared with another module of the same source).

    The unit is compiled on a thread of its own while the caller goes on (saving an
    artifact, which holds TIR, not the library, overlaps it); the first call of a function,
    a look at its ``native_step``, or the thread setter waits for it. When the unit cannot
    be compiled, one :class:`CompiledLoopsWarning` says so and the functions run as the
    generated Python ``fallback()`` gives them (name -> callable)."""
    from passhost.backend.c import CCodegenError, print_unit

    try:
        unit = print_unit(funcs, prefix="passhost_loops")
    except CCodegenError as err:
        raise CodegenError(str(err)) from None
    source = (unit.source + _packed_source(unit)
              + f"\nint {_ABI_SYMBOL}(void)\n{{\n    return {LOOPS_ABI};\n}}\n")
    compiled = _CompiledUnit(unit, source, num_threads, fallback)
    functions: dict[str, Callable[..., None]] = {
        name: _LoopFunction(compiled, name) for name in unit.functions}
    return functions, source, compiled.set_threads


#: The compiles still running; a fork waits for them (a child has none of the parent's
#: threads, so a compile running at the fork would never finish there).
_RUNNING: weakref.WeakSet[Future[Any]] = weakref.WeakSet()


def _finish_running_compiles() -> None:
    """Wait for every compile still running (before the process forks)."""
    for future in list(_RUNNING):
        future.exception()


os.register_at_fork(before=_finish_running_compiles)


class _CompiledUnit:
    """A unit's library, compiled on a thread of its own, and its functions once it is."""

    def __init__(self, unit: Any, source: str, num_threads: int,
                 fallback: Callable[[], Mapping[str, Callable[..., None]]]) -> None:
        self._unit = unit
        self._num_threads = num_threads
        self._fallback = fallback
        self._lock = threading.Lock()
        self._functions: Mapping[str, Callable[..., None]] | None = None
        self._threads: ctypes.c_int32 | None = None
        flag_sets = [(*flags, *_FLAGS, *unit.flags) for flags in FLAG_SETS]
        compiler = ThreadPoolExecutor(1, thread_name_prefix="passhost-cc")
        self._library = compiler.submit(load_or_build, source, _ABI_SYMBOL, LOOPS_ABI,
                                        stem="passhost-loops", flag_sets=flag_sets)
        compiler.shutdown(wait=False)  # its thread ends with the compile (Python waits for it)
        _RUNNING.add(self._library)

    def functions(self) -> Mapping[str, Callable[..., None]]:
        """Name -> callable, once the library is there (or the Python fallback)."""
        if self._functions is None:
            with self._lock:
                if self._functions is None:
                    self._functions = self._load()
        return self._functions

    def set_threads(self) -> None:
        """Set the unit's thread count (nothing for the Python fallback)."""
        self.functions()
        if self._threads is not None:
            self._threads.value = self._num_threads

    def _load(self) -> Mapping[str, Callable[..., None]]:
        try:
            lib = self._library.result()
        except NativeBuildError as err:
            warnings.warn(CompiledLoopsWarning(f"passhost cpu target: the loops of this module "
                                               f"run as Python ({err})"), stacklevel=4)
            return self._fallback()
        unit = self._unit
        self._threads = ctypes.c_int32.in_dll(lib, unit.num_threads_symbol)
        self._threads.value = self._num_threads
        # the parallel loops run on the kernels' pool: one pool for kernels and loops
        ctypes.c_void_p.in_dll(lib, unit.parallel_symbol).value = pool_address() or None
        last_error = getattr(lib, unit.last_error_symbol)
        last_error.restype = ctypes.c_char_p
        last_error.argtypes = []
        runner = step_runner()
        functions: dict[str, Callable[..., None]] = {}
        for name, cfunc in unit.functions.items():
            function = getattr(lib, cfunc.symbol)
            function.argtypes = cfunc.argtypes
            function.restype = ctypes.c_int32
            packed = ctypes.cast(getattr(lib, f"{cfunc.symbol}__packed"), ctypes.c_void_p).value
            step = None if runner is None else NativeStep(
                runner, int(packed or 0), name,
                failure=functools.partial(_failure, name, error=last_error))
            functions[name] = _wrapper(function, last_error, name, step)
        return functions


class _LoopFunction:
    """One function of a unit being compiled: calling it, or asking for its native step,
    waits for the library."""

    __slots__ = ("__name__", "__qualname__", "_unit")

    def __init__(self, unit: _CompiledUnit, name: str) -> None:
        self._unit = unit
        self.__name__ = self.__qualname__ = name

    def __call__(self, *arrays: np.ndarray) -> None:
        """Run the function on its arrays (inputs, then outputs)."""
        self._unit.functions()[self.__name__](*arrays)

    @property
    def native_step(self) -> NativeStep | None:
        """The function's native step (None when it runs as Python)."""
        return getattr(self._unit.functions()[self.__name__], "native_step", None)
