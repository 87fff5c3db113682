"""tir.VectorizeReductions: before/after TIR text, the nests it leaves alone, and the numbers
of sums, maxima and minima in lanes against the operators' NumPy reference kernels
(hypothesis, NaN included)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passhost import relay, text
from passhost.ir.module import IRModule
from passhost.tir.transform import VectorizeReductions, vectorize_reductions
from passhost.tir.transform.vectorize_reductions import LANES
from passhost.transform.context import PassContext
from te_harness import loops_of, reference, run_prim_func

HEADER = '#[version = "passhost.text/1"]\n\n'


def _parse(body: str) -> IRModule:
    return text.parse_module(HEADER + textwrap.dedent(body))


def _after(mod: IRModule) -> str:
    with PassContext(opt_level=3):
        return text.print_module(VectorizeReductions()(mod))


def _reduction(step: str, shape: str = "float32[3, 10, 7]", acc: str = "float32[1]",
               index: str = "int64(0)") -> IRModule:
    """A sum over the last two axes of ``a`` whose step is ``step``."""
    return _parse(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %s_data: handle) {{
          buffer %a: {shape} = match(%a_data, data=%a_data);
          buffer %s: float32[3] = match(%s_data, data=%s_data);
          for %i: int64 in serial(int64(0), int64(3)) {{
            allocate %acc_data: {acc};
            buffer %acc: {acc} = decl(%acc_data);
            %acc[{index}] = 0.0;
            for %j: int64 in serial(int64(0), int64(10)) {{
              for %k: int64 in serial(int64(0), int64(7)) {{
                {step}
              }}
            }}
            %s[%i] = %acc[int64(0)];
          }}
        }}
        """)


SUM_STEP = "%acc[int64(0)] = %acc[int64(0)] + %a[%i, %j, %k] * 2.0;"


def test_a_sum_merges_its_loops_and_accumulates_in_lanes():
    assert _after(_reduction(SUM_STEP)) == text.print_module(_parse("""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %s_data: handle) {
          buffer %a: float32[3, 10, 7] = match(%a_data, data=%a_data);
          buffer %s: float32[3] = match(%s_data, data=%s_data);
          buffer %a_1: float32[3, 70] = view(%a_data);
          for %i: int64 in serial(int64(0), int64(3)) {
            allocate %acc_data: float32[1];
            buffer %acc: float32[1] = decl(%acc_data);
            %acc[int64(0)] = 0.0;
            allocate %acc_lanes_data: float32[32] {
              buffer %acc_lanes: float32[32] = decl(%acc_lanes_data);
              for %j_k_lane: int64 in serial(int64(0), int64(32)) {
                %acc_lanes[%j_k_lane] = -0.0;
              }
              for %j_k_outer: int64 in serial(int64(0), int64(2)) {
                for %j_k_lane_1: int64 in serial(int64(0), int64(32)) {
                  %acc_lanes[%j_k_lane_1] = %acc_lanes[%j_k_lane_1]
                      + %a_1[%i, %j_k_outer * int64(32) + %j_k_lane_1] * 2.0;
                }
              }
              for %j_k_tail: int64 in serial(int64(0), int64(6)) {
                %acc_lanes[%j_k_tail] = %acc_lanes[%j_k_tail]
                    + %a_1[%i, %j_k_tail + int64(64)] * 2.0;
              }
              for %j_k_lane_2: int64 in serial(int64(0), int64(16)) {
                %acc_lanes[%j_k_lane_2] = %acc_lanes[%j_k_lane_2]
                    + %acc_lanes[%j_k_lane_2 + int64(16)];
              }
              for %j_k_lane_3: int64 in serial(int64(0), int64(8)) {
                %acc_lanes[%j_k_lane_3] = %acc_lanes[%j_k_lane_3]
                    + %acc_lanes[%j_k_lane_3 + int64(8)];
              }
              for %j_k_lane_4: int64 in serial(int64(0), int64(4)) {
                %acc_lanes[%j_k_lane_4] = %acc_lanes[%j_k_lane_4]
                    + %acc_lanes[%j_k_lane_4 + int64(4)];
              }
              for %j_k_lane_5: int64 in serial(int64(0), int64(2)) {
                %acc_lanes[%j_k_lane_5] = %acc_lanes[%j_k_lane_5]
                    + %acc_lanes[%j_k_lane_5 + int64(2)];
              }
              %acc_lanes[int64(0)] = %acc_lanes[int64(0)] + %acc_lanes[int64(0) + int64(1)];
              %acc[int64(0)] = %acc[int64(0)] + %acc_lanes[int64(0)];
            }
            %s[%i] = %acc[int64(0)];
          }
        }
        """))


def test_the_sum_in_lanes_computes_the_same_numbers():
    before = _reduction(SUM_STEP)
    with PassContext(opt_level=3):
        after = VectorizeReductions()(before)
    a = np.random.default_rng(5).standard_normal((3, 10, 7)).astype("float32")
    want = (a.astype("float64") * 2).sum(axis=(1, 2))
    for mod in (before, after):
        np.testing.assert_allclose(run_prim_func(mod["f"], [a])[0], want, rtol=1e-5,
                                   atol=1e-5)


@pytest.mark.parametrize("step", [
    "%acc[int64(0)] = %acc[int64(0)] - %a[%i, %j, %k];",               # not a reduction
    "%acc[int64(0)] = %acc[int64(0)] + %acc[int64(0)] * %a[%i, %j, %k];",  # reads acc
    "%acc[%k] = %acc[%k] + %a[%i, %j, %k];",                           # one element per k
    "if (%a[%i, %j, %k] > 0.0) { %acc[int64(0)] = %acc[int64(0)] + %a[%i, %j, %k]; }",
], ids=["subtract", "reads-acc", "per-k", "conditioned"])
def test_steps_that_are_not_one_sum_stay_as_they_are(step):
    before = _reduction(step, acc="float32[7]")
    assert _after(before) == text.print_module(before)


def test_short_and_narrow_reductions_stay_as_they_are():
    short = _reduction(SUM_STEP, shape="float32[3, 10, 6]")  # 60 < 2 * LANES terms
    assert 2 * LANES > 60
    text_short = text.print_module(short).replace("int64(7)", "int64(6)")
    short = text.parse_module(text_short)
    assert _after(short) == text_short
    half = _parse("""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %s_data: handle) {
          buffer %a: float16[200] = match(%a_data, data=%a_data);
          buffer %s: float16[1] = match(%s_data, data=%s_data);
          for %k: int64 in serial(int64(0), int64(200)) {
            %s[int64(0)] = %s[int64(0)] + %a[%k];
          }
        }
        """)
    assert _after(half) == text.print_module(half)


def test_a_reduction_directly_into_an_output_is_vectorised():
    mod = _parse("""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %s_data: handle) {
          buffer %a: int32[100] = match(%a_data, data=%a_data);
          buffer %s: int32[1] = match(%s_data, data=%s_data);
          %s[int64(0)] = 0;
          for %k: int64 in serial(int64(0), int64(100)) {
            %s[int64(0)] = %s[int64(0)] + %a[%k];
          }
        }
        """)
    with PassContext(opt_level=3):
        after = VectorizeReductions()(mod)
    assert "%s_lanes" in text.print_module(after)
    big = np.full(100, 2**30 + 7, dtype="int32")  # the sum wraps, in any order the same
    assert run_prim_func(after["f"], [big])[0][0] == big.sum(dtype="int32")


@pytest.mark.parametrize("step", [
    "%acc[int64(0)] = select(tir.isnan<bool>(%a[%i, %j, %k]) "
    "|| %a[%i, %j, %k] > %acc[int64(0)], %a[%i, %j, %k], %acc[int64(0)]);",
    "%acc[int64(0)] = max(%acc[int64(0)], %a[%i, %j, %k]);",
], ids=["select", "max"])
def test_a_nan_propagating_maximum_runs_in_lanes(step):
    before = _reduction(step)
    after_text = _after(before)
    assert "%acc_lanes[%j_k_lane] = -inf" in after_text.replace("float32(-inf)", "-inf")
    with PassContext(opt_level=3):
        after = VectorizeReductions()(before)
    a = np.random.default_rng(1).standard_normal((3, 10, 7)).astype("float32")
    a[1, 9, 6] = np.nan  # in the tail
    a[2, 0, 3] = np.nan  # in a lane
    got = run_prim_func(after["f"], [a])[0]
    np.testing.assert_array_equal(got, [a[0].max(), np.nan, np.nan])


# -- the operators' reductions, in lanes, against their reference kernels -----------------------
@st.composite
def _reductions(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 90), min_size=ndim, max_size=ndim)))
    axes = sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1)))
    dtype = draw(st.sampled_from(["float32", "float64", "int32", "int64"]))
    ops = [relay.sum, relay.max, relay.min]
    op = draw(st.sampled_from([*ops, relay.mean] if "float" in dtype else ops))
    nans = draw(st.integers(0, 3)) if "float" in dtype else 0
    return shape, tuple(axes), dtype, op, nans


@settings(max_examples=25, deadline=None)
@given(_reductions(), st.integers(0, 2**32 - 1))
def test_reductions_in_lanes_match_the_reference_kernels(case, seed):
    shape, axes, dtype, op, nans = case
    x = relay.var("x", shape=shape, dtype=dtype)
    func = relay.Function([x], op(x, axis=axes))
    mod = IRModule.from_expr(func)
    with PassContext(opt_level=3):
        func = relay.transform.InferType()(mod)["main"]
    prim = vectorize_reductions(loops_of(func))
    rng = np.random.default_rng(seed)
    if "float" in dtype:
        data = rng.standard_normal(shape).astype(dtype)
        data.flat[rng.integers(0, data.size, nans)] = np.nan
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    got = run_prim_func(prim, [data])[0]
    want = reference(func, [data])[0]
    if "float" in dtype:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(got, want)
