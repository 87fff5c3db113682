"""Helpers for the cpu target's tests: compile hand-made PrimFuncs with the cpu target and
run one operator call through generated code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from passhost.ir.module import IRModule
from passhost.relay.op.registry import get_op
from passhost.runtime.kernel_call import kernel_call
from passhost.runtime.module import FunctionModule
from passhost.target import Target
from passhost.tir.function import Buffer, PrimFunc, decl_buffer
from passhost_cpu_target.codegen import tir_to_runtime
from passhost_cpu_target.plugin import passhost_register_targets

CPU_KIND = passhost_register_targets()[0]


def cpu_target(num_threads: int = 0) -> Target:
    """A cpu target (made from the kind itself, whatever the process-wide host holds)."""
    return Target.from_kind(CPU_KIND, {"num-threads": num_threads})


def compile_funcs(funcs: dict[str, PrimFunc], num_threads: int = 0) -> FunctionModule:
    """The cpu runtime module of ``funcs``."""
    return tir_to_runtime(cpu_target(num_threads), IRModule(funcs))


def prim_func(params: Sequence[Buffer], body: Any, name: str = "f") -> PrimFunc:
    """A PrimFunc over the buffers ``params`` (in order)."""
    return PrimFunc([b.data for b in params], {b.data: b for b in params}, body,
                    attrs={"global_symbol": name})


def _buffer(value: np.ndarray, name: str) -> Buffer:
    return decl_buffer(value.shape, value.dtype.name, name)


def run_op(name: str, attrs: dict[str, Any] | None, inputs: Sequence[Any],
           alias: int | None = None, num_threads: int = 0,
           ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """Run operator ``name`` on ``inputs`` (arrays, or tuples of arrays for tuple inputs)
    with generated code (for ``cpu -num-threads=num_threads``) and with its reference
    kernel: (generated outputs, reference outputs, generated source). ``alias=i`` makes the
    one output the buffer of input ``i`` (in-place work, as the lowering plans it for
    elementwise and broadcast operators)."""
    op = get_op(name)
    attrs_value = op.make_attrs(attrs or {})
    expected = op.evaluate(attrs_value, *inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    arrays: list[np.ndarray] = []
    in_bufs: list[Any] = []
    for i, value in enumerate(inputs):
        if isinstance(value, tuple):
            group = tuple(_buffer(v, f"x{i}_{j}") for j, v in enumerate(value))
            arrays.extend(np.array(v) for v in value)
            in_bufs.append(group)
        else:
            in_bufs.append(_buffer(value, f"x{i}"))
            arrays.append(np.array(value))
    params = [b for item in in_bufs for b in (item if isinstance(item, tuple) else (item,))]
    if alias is not None:
        assert len(expected) == 1
        out_bufs = [in_bufs[alias]]
        outputs = [arrays[alias]]
    else:
        out_bufs = [_buffer(e, f"out{i}") for i, e in enumerate(expected)]
        outputs = [np.full(e.shape, 7, e.dtype) for e in expected]
        params = params + out_bufs
        arrays = arrays + outputs
    body = kernel_call(name, attrs_value, out_bufs, in_bufs)
    module = compile_funcs({"f": prim_func(params, body)}, num_threads)
    module.get_function("f")(*arrays)
    return outputs, expected, module.get_source()


def assert_same(got: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Outputs agree in shape, dtype and value (NaN matches NaN)."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def uses_fast_kernel(source: str) -> bool:
    """Whether generated source calls no reference kernel."""
    return ".evaluate(" not in source


def uses_native_kernel(source: str) -> bool:
    """Whether generated source calls a native kernel."""
    return "passhost_cpu_target.native_kernels." in source
