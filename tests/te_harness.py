"""Running graph functions as loop nests, for the tests of operators' TE computes.

``run_as_loops(func, inputs)`` lowers a typed graph function (all its operators with TE
computes) to one PrimFunc of loops and runs it through the cpu target; the tests compare
the result with the operators' NumPy reference kernels (``relay.evaluate``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost import relay
from passhost.backend.lower_loops import has_te_computes, lower_to_loops
from passhost.backend.lower_primitive import flatten_type
from passhost.ir.module import IRModule
from passhost.ir.types import is_float_dtype
from passhost.relay.expr import Function
from passhost.target import Target
from passhost.tir.bounds import check_index_bounds


def loops_of(func: Function):
    """The PrimFunc of loops computing ``func``, or None when a TE compute does not cover
    one of its calls. The loops must provably index inside their buffers."""
    if not has_te_computes(func):
        return None
    prim = te_lower_unchecked(func)
    if prim is not None:
        check_index_bounds(prim, "f")  # raises: a compute that may read out of bounds
    return prim


def te_lower_unchecked(func: Function):
    """``lower_to_loops`` of ``func`` without its bounds proof (None if not covered)."""
    from unittest import mock

    with mock.patch("passhost.backend.lower_loops.check_index_bounds"):
        return lower_to_loops(func.with_attr("Primitive", 1), "f")


def run_as_loops(func: Function, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``func``'s outputs computed by its loop nests (inputs are not modified)."""
    from passhost_cpu_target.codegen import tir_to_runtime

    prim = loops_of(func)
    assert prim is not None, "a TE compute does not cover this function"
    module = tir_to_runtime(Target("cpu"), IRModule({"f": prim}))
    outputs = [np.zeros(t.shape, t.dtype) for t in flatten_type(func.checked_type.ret_type)]
    module.get_function("f")(*[np.array(a) for a in inputs], *outputs)
    return outputs


def reference(func: Function, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``func``'s outputs from the operators' NumPy reference kernels."""
    out = relay.evaluate(func, *inputs)
    return list(out) if isinstance(out, tuple) else [out]


def assert_matches_reference(func: Function, inputs: Sequence[np.ndarray],
                             rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """The loop nests give the reference's outputs (exactly for non-float dtypes)."""
    got = run_as_loops(func, inputs)
    want = reference(func, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if is_float_dtype(g.dtype.name):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


def run_prim_func(prim, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run the PrimFunc ``prim`` (input buffers, then output buffers) on ``inputs``; the
    outputs are made from the remaining buffers' shapes and dtypes."""
    from passhost_cpu_target.codegen import tir_to_runtime

    module = tir_to_runtime(Target("cpu"), IRModule({"f": prim}))
    buffers = [prim.buffer_map[p] for p in prim.params]
    outputs = [np.zeros(b.shape, b.dtype) for b in buffers[len(inputs):]]
    module.get_function("f")(*[np.array(a) for a in inputs], *outputs)
    return outputs
