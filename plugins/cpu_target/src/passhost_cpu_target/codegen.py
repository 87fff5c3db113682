"""The cpu target's code generation: the PrimFuncs of loop nests to one C unit
(:mod:`.compiled_loops`), the others (kernel calls) to one Python module over native and
NumPy kernels, compiled in memory; together a runtime
:class:`~passhost.runtime.module.FunctionModule`. Without a C compiler (or with
``PASSHOST_CPU_NATIVE=0``) the loops run as generated Python too, after one warning.

Each PrimFunc becomes ``def <name>(<one argument per parameter>)`` taking C-contiguous NumPy
arrays of its buffers' shapes and dtypes (and Python numbers for scalar parameters). The
module allocates every intermediate and scratch array once, when it is created, and
reuses them on every call: a module's functions are not reentrant.

A function that is one native kernel call also carries a native step (the kernel's packed
form and its arguments bound once), so the executor runs stretches of native kernel calls
and compiled loops as one native call (:mod:`.native.steps`).

The target option ``num-threads`` sets the threads of the native kernels and, around each
run of a module that may call BLAS, the BLAS thread limit (0: all cores, and no limit).
"""

from __future__ import annotations

import functools
from typing import Any

from attrs import frozen

from passhost.ir import IRModule
from passhost.runtime import FunctionModule, NativeStep
from passhost.tir import PrimFunc
from passhost_cpu_target import native
from passhost_cpu_target.compiled_loops import compile_loops, is_loop_function
from passhost_cpu_target.emitter import emit_function
from passhost_cpu_target.module_scope import ModuleScope
from passhost_cpu_target.naming import Namer
from passhost_cpu_target.native.build import find_compiler
from passhost_cpu_target.native.steps import kernel_address, step_runner
from passhost_cpu_target.native_kernels import NativeKernel, kernel_failure
from passhost_cpu_target.planning import PlanConfig
from passhost_cpu_target.threads import run_scope_factory

__all__ = ["SOURCE_NAME", "GeneratedModule", "compiles_loops", "generate_source",
           "lowers_loops", "tir_to_runtime"]

#: The file name compiled code reports in tracebacks.
SOURCE_NAME = "<passhost-cpu>"


def _num_threads(target: Any) -> int:
    """The target's ``num-threads`` (its option type checked it when the target was made)."""
    options = getattr(target, "options", None) or {}
    return int(options.get("num-threads", 0))


def plan_config(num_threads: int) -> PlanConfig:
    """The kernels code generated now may use: native ones unless ``PASSHOST_CPU_NATIVE=0``
    or they cannot be built."""
    return PlanConfig(num_threads, native.enabled() and native.library() is not None)


@frozen
class GeneratedModule:
    """The Python module of a set of PrimFuncs: its ``source``, the ``namespace`` to run it
    in, the Python function name of each name the functions are called by (module key and
    ``global_symbol``), whether the code may call BLAS, and the native kernel each
    function that is one native kernel call calls (by Python function name)."""

    source: str
    namespace: dict[str, Any]
    entries: dict[str, str]
    uses_blas: bool
    native_calls: dict[str, NativeKernel]


def generate_source(mod: IRModule, config: PlanConfig | None = None) -> GeneratedModule:
    """The Python module of ``mod``'s PrimFuncs; ``config`` defaults to
    :func:`plan_config` with all cores."""
    config = config or plan_config(0)
    scope = ModuleScope()
    py_names = Namer()
    functions: list[str] = []
    entries: dict[str, str] = {}
    native_calls: dict[str, NativeKernel] = {}
    for key, func in mod.items():
        if not isinstance(func, PrimFunc):
            continue
        py_name = py_names.fresh(key)
        source, kernel = emit_function(scope, key, py_name, func, config)
        functions.append(source)
        if kernel is not None:
            native_calls[py_name] = kernel
        entries[key] = py_name
        symbol = func.attrs.get("global_symbol")
        if isinstance(symbol, str):
            entries.setdefault(symbol, py_name)
    parts = ["\n".join(scope.header())]
    if scope.lines:
        parts.append("\n".join(scope.lines))
    parts.extend(functions)
    return GeneratedModule("\n\n\n".join(parts) + "\n", scope.namespace, entries,
                           scope.uses_blas, native_calls)


def _attach_native_steps(generated: GeneratedModule) -> None:
    """Give each function that is one native kernel call its native step (the kernel's
    packed form, the arguments its companion binds), so the executor can run it inside a
    native run."""
    runner = step_runner() if generated.native_calls else None
    if runner is None:
        return
    namespace = generated.namespace
    for py_name, kernel in generated.native_calls.items():
        namespace[py_name].native_step = NativeStep(
            runner, kernel_address(kernel.symbol), py_name,
            arguments=namespace[f"{py_name}__bind"],
            failure=functools.partial(kernel_failure, kernel.symbol))


def compiles_loops() -> bool:
    """Whether loop nests can be compiled to C here: native code on, a C compiler found."""
    return native.enabled() and find_compiler() is not None


def lowers_loops(target: Any) -> bool:
    """The cpu kind's answer to "build loop nests from TE computes?" for ``target``."""
    return compiles_loops()


def _symbols(mod: IRModule, names: Any) -> dict[str, str]:
    """Every name the functions ``names`` are called by (module key and global_symbol)."""
    out = {}
    for key in names:
        out[key] = key
        symbol = mod[key].attrs.get("global_symbol")
        if isinstance(symbol, str):
            out.setdefault(symbol, key)
    return out


def _python_functions(loops: IRModule, num_threads: int) -> dict[str, Any]:
    """The PrimFuncs of ``loops`` as generated Python, by key (when their C does not
    compile)."""
    generated = generate_source(loops, plan_config(num_threads))
    exec(compile(generated.source, SOURCE_NAME, "exec"), generated.namespace)
    return {key: generated.namespace[generated.entries[key]] for key, _ in loops.items()}


def tir_to_runtime(target: Any, mod: IRModule) -> FunctionModule:
    """Compile the PrimFuncs of ``mod`` for the cpu ``target`` into a runtime module whose
    functions take NumPy arrays (inputs, then outputs)."""
    num_threads = _num_threads(target)
    loops = {key: f for key, f in mod.items()
             if isinstance(f, PrimFunc) and is_loop_function(f)}
    compiled = compile_loops(loops, num_threads, functools.partial(
        _python_functions, IRModule({mod.get_global_var(k): f for k, f in loops.items()}),
        num_threads)) if loops and compiles_loops() else None
    rest = mod
    functions: dict[str, Any] = {}
    files: dict[str, str] = {}
    set_threads = None
    if compiled is not None:
        by_key, c_source, set_threads = compiled
        functions.update({name: by_key[key] for name, key in _symbols(mod, loops).items()})
        files["loops.c"] = c_source
        rest = IRModule({mod.get_global_var(k): f for k, f in mod.items() if k not in loops})
    generated = generate_source(rest, plan_config(num_threads))
    exec(compile(generated.source, SOURCE_NAME, "exec"), generated.namespace)
    _attach_native_steps(generated)
    for name, py_name in generated.entries.items():
        functions.setdefault(name, generated.namespace[py_name])
    files["module.py"] = generated.source
    return FunctionModule("cpu", functions, generated.source, files,
                          run_scope_factory(num_threads if generated.uses_blas else 0,
                                            set_threads))
