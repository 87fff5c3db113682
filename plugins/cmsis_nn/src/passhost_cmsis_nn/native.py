"""Run the generated C on this machine: compiled with a CMSIS-NN kernel library, called
through ctypes as a runtime module, or built into a self-checking test-bench program.

:func:`build_c_module` emits the C of a module's ``cmsis-nn`` PrimFuncs, compiles it with the
kernels (:mod:`passhost_cmsis_nn.cbuild`: the plugin's portable ones, or a CMSIS-NN checkout)
for the target's processor (the library's ``ARM_MATH_DSP`` / ``ARM_MATH_MVEI`` macros) and
returns a runtime module whose functions call the C entry functions. :func:`c_executor`
runs a compiled model with those functions in place of the host path.

:func:`record_calls` runs a compiled model and records every ``cmsis-nn`` call's inputs and
output; :func:`checker_source` writes a C ``main`` that calls the entry functions on those
inputs and compares the outputs, so the generated C can run where ctypes cannot (under
AddressSanitizer, or on a microcontroller).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from attrs import frozen

from passhost.backend.c import storage_type
from passhost.ir import IRModule
from passhost.runtime import CompiledModule, Executor, FunctionModule
from passhost_cmsis_nn.cbuild import STRICT_FLAGS, build_shared_library, load_library
from passhost_cmsis_nn.emit_c import HEADER_NAME, SOURCE_NAME, emit_c
from passhost_cmsis_nn.features import Features
from passhost_cmsis_nn.host import CmsisNNError
from passhost_cmsis_nn.patterns import KIND

__all__ = [
    "RecordedCall", "build_c_module", "c_executor", "feature_macros", "record_calls",
    "checker_source", "write_sources",
]


def feature_macros(features: Features) -> tuple[str, ...]:
    """The compiler flags that build CMSIS-NN for a processor with ``features``."""
    if features.has_mve:
        return ("-DARM_MATH_DSP", "-DARM_MATH_MVEI")
    return ("-DARM_MATH_DSP",) if features.has_dsp else ()


def write_sources(tir: IRModule, out_dir: str | Path, debug_last_error: bool = False) -> Path:
    """Write the generated source and header of ``tir``'s PrimFuncs into ``out_dir``;
    returns the source's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    c = emit_c(tir, debug_last_error=debug_last_error)
    (out / HEADER_NAME).write_text(c.header)
    source = out / SOURCE_NAME
    source.write_text(c.source)
    return source


def _entry(lib: ctypes.CDLL, name: str, arity: int, debug: bool) -> Callable[..., None]:
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = ctypes.c_int32, [ctypes.c_void_p] * arity
    last_error = getattr(lib, "cmsis_nn_last_error", None) if debug else None
    if last_error is not None:
        last_error.restype, last_error.argtypes = ctypes.c_char_p, []

    def run(*arrays: np.ndarray) -> None:
        for arr in arrays:
            if not arr.flags.c_contiguous:
                raise ValueError(f"{name}: the arrays must be C-contiguous")
        status = fn(*(arr.ctypes.data for arr in arrays))
        if status != 0:
            call = last_error().decode() if last_error is not None else None
            raise CmsisNNError(name, status, call.split(": ", 1)[-1] if call else None)

    return run


def build_c_module(tir: IRModule, features: Features, out_dir: str | Path, *,
                   debug_last_error: bool = False, flags: Sequence[str] = STRICT_FLAGS,
                   kernels: Any = None, name: str = "cmsis_nn_model") -> FunctionModule:
    """Compile the C of ``tir``'s ``cmsis-nn`` PrimFuncs with the kernels for a processor
    with ``features`` into ``out_dir`` and load it: a runtime module whose functions take
    NumPy arrays (inputs, then the output) and raise :class:`CmsisNNError` on a failing
    status (naming the CMSIS-NN call when built with ``debug_last_error``)."""
    source = write_sources(tir, out_dir, debug_last_error)
    path = build_shared_library(out_dir, name=name, sources=[source],
                                flags=(*flags, *feature_macros(features)),
                                include_dirs=[Path(out_dir)], kernels=kernels)
    lib = load_library(path)
    functions = {fname: _entry(lib, fname, len(func.params), debug_last_error)
                 for fname, func in tir.items()}
    return FunctionModule(KIND, functions, source=source.read_text())


def c_executor(compiled: CompiledModule, c_module: FunctionModule) -> Executor:
    """An executor of ``compiled`` that calls ``c_module``'s functions (see
    :func:`build_c_module`) in place of the host path's."""
    module = FunctionModule(KIND, c_module.functions)
    module.import_module(compiled.module)
    return Executor(compiled.plan, module, compiled.params)


@frozen
class RecordedCall:
    """One call of a ``cmsis-nn`` function: its name, input arrays and output array."""

    function: str
    inputs: tuple[np.ndarray, ...]
    output: np.ndarray


def record_calls(compiled: CompiledModule, inputs: Sequence[np.ndarray],
                 ) -> list[RecordedCall]:
    """Run ``compiled`` on ``inputs`` and record the inputs and output of every call of a
    ``cmsis-nn`` function (computed by its runtime module, normally the host path)."""
    tir = compiled.tir.get(KIND)
    if tir is None:
        return []
    external = next(m for m in compiled.module.imported_modules if m.type_key == KIND)
    calls: list[RecordedCall] = []

    def recorder(fname: str) -> Callable[..., None]:
        inner = external.get_function(fname)

        def run(*arrays: np.ndarray) -> None:
            inner(*arrays)
            calls.append(RecordedCall(fname, tuple(a.copy() for a in arrays[:-1]),
                                      arrays[-1].copy()))

        return run

    module = FunctionModule(KIND, {fname: recorder(fname) for fname, _ in tir.items()})
    module.import_module(compiled.module)
    Executor(compiled.plan, module, compiled.params)(*inputs)
    return calls


def _c_array(symbol: str, arr: np.ndarray, const: bool) -> str:
    values = ", ".join(str(int(v)) for v in arr.reshape(-1).tolist())
    qualifier = "static const" if const else "static"
    return f"{qualifier} {storage_type(arr.dtype.name)} {symbol}[{arr.size}] = {{{values}}};"


def checker_source(tir: IRModule, calls: Sequence[RecordedCall],
                     header: str = HEADER_NAME) -> str:
    """A C program calling the entry functions of ``tir``'s generated source on each
    recorded call's inputs: it prints every element that differs from the recorded output
    (and every failing status) and exits with status 1 if there was any, else 0."""
    arity = {fname: len(func.params) for fname, func in tir.items()}
    lines = ["#include <stdint.h>", "#include <stdio.h>", f'#include "{header}"', ""]
    body = ["int main(void)", "{", "    int failures = 0;", "    int32_t i, status;"]
    for k, call in enumerate(calls):
        if len(call.inputs) + 1 != arity[call.function]:
            raise ValueError(f"recorded call {k} of {call.function} has "
                             f"{len(call.inputs) + 1} arrays, the function takes "
                             f"{arity[call.function]}")
        names = [f"call{k}_in{j}" for j in range(len(call.inputs))]
        lines += [_c_array(n, a, True) for n, a in zip(names, call.inputs)]
        lines.append(_c_array(f"call{k}_want", call.output, True))
        lines.append(_c_array(f"call{k}_got", np.zeros_like(call.output), False))
        args = ", ".join([*names, f"call{k}_got"])
        body += [f"    status = {call.function}({args});",
                 "    if (status != 0)", "    {",
                 f'        printf("call {k} ({call.function}): status %d\\n", (int)status);',
                 "        failures++;", "    }",
                 f"    for (i = 0; i < {call.output.size}; ++i)", "    {",
                 f"        if (call{k}_got[i] != call{k}_want[i])", "        {",
                 f'            printf("call {k} ({call.function}): element %d is %d, '
                 f'expected %d\\n", (int)i, (int)call{k}_got[i], (int)call{k}_want[i]);',
                 "            failures++;", "        }", "    }"]
    body += ['    printf("%d mismatches\\n", failures);', "    return failures != 0;", "}"]
    return "\n".join([*lines, "", *body, ""])

