"""The cpu target plugin: found through its entry point, its target kind and options, and
the BLAS thread limit of num-threads (only for modules that may call BLAS)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from cpu_helpers import compile_funcs, cpu_target
from threadpoolctl import threadpool_info

from passhost.errors import OptionError
from passhost.ir.module import IRModule
from passhost.plugins import get_host
from passhost.runtime.kernel_call import kernel_call
from passhost.runtime.module import FunctionModule, run_scope
from passhost.target import Target, tir_to_runtime
from passhost.tir.function import PrimFunc, decl_buffer


def _relu_module() -> IRModule:
    x, out = decl_buffer((3,), "float32", "x"), decl_buffer((3,), "float32", "out")
    func = PrimFunc([x.data, out.data], {x.data: x, out.data: out},
                    kernel_call("nn.relu", None, [out], [x]), attrs={"global_symbol": "f"})
    return IRModule({"f": func})


def _matmul_module(dtype: str = "float64") -> IRModule:
    """A matrix product: BLAS's in float64, the native kernel's in float32."""
    a, b = decl_buffer((2, 3), dtype, "a"), decl_buffer((3, 4), dtype, "b")
    out = decl_buffer((2, 4), dtype, "out")
    func = PrimFunc([a.data, b.data, out.data], {a.data: a, b.data: b, out.data: out},
                    kernel_call("matmul", None, [out], [a, b]), attrs={"global_symbol": "f"})
    return IRModule({"f": func})


def test_the_plugin_host_loads_the_cpu_plugin_and_its_target_kind():
    host = get_host()
    record = host.records["cpu"]
    assert record.status == "active"
    assert record.distribution == "passhost-cpu-target"
    assert record.provides.get("targets") == ["cpu"]
    kind = host.registries.targets.get("cpu")
    assert kind.host and kind.keys == ("cpu",)
    assert kind.option("num-threads").default == 0


def test_a_cpu_target_string_compiles_through_the_host_hooks():
    target = Target("cpu -num-threads=1")
    module = tir_to_runtime(target, _relu_module())
    assert isinstance(module, FunctionModule) and module.type_key == "cpu"
    out = np.empty(3, "float32")
    with run_scope(module):
        module.get_function("f")(np.array([-1, 0, 2], "float32"), out)
    np.testing.assert_array_equal(out, [0, 0, 2])


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_num_threads_limits_blas_during_a_run():
    before = _blas_threads()
    assert before, "numpy links a BLAS library threadpoolctl can see"
    limit = 1 if before[0] != 1 else 2  # a limit that differs from the default
    module = compile_funcs({"f": _matmul_module()["f"]}, num_threads=limit)
    with run_scope(module):
        assert _blas_threads() == [limit] * len(before)
    assert _blas_threads() == before


def test_num_threads_zero_adds_no_scope():
    assert compile_funcs({"f": _matmul_module()["f"]}).scope is None


def test_a_module_that_never_calls_blas_adds_no_scope():
    assert compile_funcs({"f": _relu_module()["f"]}, num_threads=1).scope is None


def test_float32_products_run_on_the_native_pool_not_blas():
    module = compile_funcs({"f": _matmul_module("float32")["f"]}, num_threads=1)
    assert module.scope is None and "native_kernels.matmul" in module.get_source()


@pytest.mark.parametrize("count", [-2, 1025, 2**70])
def test_a_thread_count_out_of_range_is_refused(count):
    with pytest.raises(OptionError, match=f"'num-threads' expects int from 0 to 1024, "
                                          f"found int {count}"):
        cpu_target(count)


def test_registering_the_kind_imports_neither_numpy_nor_the_code_generator():
    code = ("import sys; from passhost_cpu_target.plugin import passhost_register_targets; "
            "passhost_register_targets(); "
            "print(sorted({'numpy', 'passhost_cpu_target.codegen'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"
