"""Cache-line-aligned arrays: the executor's storage blocks and inputs start on a cache line,
so native kernels' whole-vector rows never straddle two lines (a split access costs twice,
and a line shared by two threads' outputs bounces between their cores)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from passhost.backend import build
from passhost.runtime.aligned import CACHE_LINE, aligned_full
from passhost.transform import PassContext
from passhost.workloads.zoo import get_model

DTYPES = ["float32", "float64", "int8", "uint8", "int32", "int64", "bool"]


@given(shape=st.lists(st.integers(0, 7), max_size=4), dtype=st.sampled_from(DTYPES),
       fill=st.sampled_from([0, 1, None]))
def test_aligned_full_has_the_shape_dtype_fill_and_alignment(shape, dtype, fill):
    array = aligned_full(shape, fill, dtype)
    assert array.shape == tuple(shape) and array.dtype == np.dtype(dtype)
    assert array.flags.c_contiguous and array.flags.writeable
    assert array.ctypes.data % CACHE_LINE == 0
    if fill is not None:
        np.testing.assert_array_equal(array, np.full(shape, fill, dtype))


def test_aligned_full_takes_an_int_shape():
    array = aligned_full(5, 2.5, "float32")
    np.testing.assert_array_equal(array, np.full(5, 2.5, np.float32))


@pytest.mark.parametrize("target", ["cpu", "cpu -num-threads=1"])
def test_executor_storage_and_inputs_start_on_a_cache_line(target):
    mod, params = get_model("mobilenet-v2")
    with PassContext(opt_level=3):
        compiled = build(mod, target, params)
    executor = compiled.executor()
    kinds = {t.kind for t in compiled.plan.tensors}
    assert "storage" in kinds and "input" in kinds
    for tensor, array in zip(compiled.plan.tensors, executor._arrays):
        if tensor.kind in ("storage", "input"):
            assert array.ctypes.data % CACHE_LINE == 0, tensor
