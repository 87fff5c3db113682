"""The cpu target's code generation: the PrimFuncs of loop nests to one C unit
(:mod:`.compiled_loops`), the others (kernel calls) to one Python module over native and
NumPy kernels, compiled in memory; together a runtime
:class:`~passhost.runtime.module.FunctionModule`. Without a C compiler (or with
``PASSHOST_CPU_NATIVE=0``) the loops run as generated Python too, after one warning.

Each PrimFunc becomes ``def <name>(<one argument per parameter>)`` taking C-contiguous NumPy
arrays of its buffers' shapes and dtypes (and Python numbers for scalar parameters). The
module allocates every intermediate and scratch array once, when it is created, and
reuses them on every call: a module's functions are not reentrant.

The target option ``num-threads`` sets the threads of the native kernels and, around each
run of a module that may call BLAS, the BLAS thread limit (0: all cores, and no limit).
"""

from __future__ import annotations

from typing import Any

from passhost.ir.module import IRModule
from passhost.runtime.module import FunctionModule
from passhost.tir.function import PrimFunc
from passhost_cpu_target import native
from passhost_cpu_target.compiled_loops import compile_loops, is_loop_function
from passhost_cpu_target.emitter import emit_function
from passhost_cpu_target.errors import CodegenError
from passhost_cpu_target.module_scope import ModuleScope
from passhost_cpu_target.naming import Namer
from passhost_cpu_target.native.build import find_compiler
from passhost_cpu_target.planning import PlanConfig
from passhost_cpu_target.threads import run_scope_factory

__all__ = ["SOURCE_NAME", "compiles_loops", "generate_source", "lowers_loops",
           "tir_to_runtime"]

#: The file name compiled code reports in tracebacks.
SOURCE_NAME = "<passhost-cpu>"


def _num_threads(target: Any) -> int:
    options = getattr(target, "options", None) or {}
    value = options.get("num-threads", 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CodegenError(f"target {target}: option num-threads expects an int >= 0 "
                           f"(0: all cores), found {value!r}")
    return value


def plan_config(num_threads: int) -> PlanConfig:
    """The kernels code generated now may use: native ones unless ``PASSHOST_CPU_NATIVE=0``
    or they cannot be built."""
    return PlanConfig(num_threads, native.enabled() and native.library() is not None)


def generate_source(mod: IRModule, config: PlanConfig | None = None,
                    ) -> tuple[str, dict[str, Any], dict[str, str], bool]:
    """The Python source of ``mod``'s PrimFuncs, the namespace to run it in, the Python
    function name of each name the functions are called by (module key and
    ``global_symbol``), and whether the code may call BLAS. ``config`` defaults to
    :func:`plan_config` with all cores."""
    config = config or plan_config(0)
    scope = ModuleScope()
    py_names = Namer()
    functions: list[str] = []
    entries: dict[str, str] = {}
    for key, func in mod.items():
        if not isinstance(func, PrimFunc):
            continue
        py_name = py_names.fresh(key)
        functions.append(emit_function(scope, key, py_name, func, config))
        entries[key] = py_name
        symbol = func.attrs.get("global_symbol")
        if isinstance(symbol, str):
            entries.setdefault(symbol, py_name)
    parts = ["\n".join(scope.header())]
    if scope.lines:
        parts.append("\n".join(scope.lines))
    parts.extend(functions)
    return "\n\n\n".join(parts) + "\n", scope.namespace, entries, scope.uses_blas


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


def tir_to_runtime(target: Any, mod: IRModule) -> FunctionModule:
    """Compile the PrimFuncs of ``mod`` for the cpu ``target`` into a runtime module whose
    functions take NumPy arrays (inputs, then outputs)."""
    num_threads = _num_threads(target)
    loops = {key: f for key, f in mod.items()
             if isinstance(f, PrimFunc) and is_loop_function(f)}
    compiled = compile_loops(loops, num_threads) if loops and compiles_loops() else None
    rest = mod
    functions: dict[str, Any] = {}
    files: dict[str, str] = {}
    set_threads = None
    if compiled is not None:
        by_key, c_source, set_threads = compiled
        functions.update({name: by_key[key] for name, key in _symbols(mod, loops).items()})
        files["loops.c"] = c_source
        rest = IRModule({mod.get_global_var(k): f for k, f in mod.items() if k not in loops})
    source, namespace, entries, uses_blas = generate_source(rest, plan_config(num_threads))
    exec(compile(source, SOURCE_NAME, "exec"), namespace)
    for name, py_name in entries.items():
        functions.setdefault(name, namespace[py_name])
    files["module.py"] = source
    return FunctionModule("cpu", functions, source, files,
                          run_scope_factory(num_threads if uses_blas else 0, set_threads))
