"""CanonicalizeOps rewrites a power by a constant 2 as ``x * x`` and, for float16 and
float32, by a constant 3 as a float64 cube cast back; other powers stay. The products give
the reference's numbers: the square bit for bit, the cube within one ulp (closer to the
exact cube than NumPy's own float32 ``pow``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Constant, Function, var
from passhost.relay.interpreter import evaluate
from passhost.relay.op import tensor as tn
from passhost.relay.transform import CanonicalizeOps, InferType
from passhost.relay.visitor import post_order
from passhost.transform.context import PassContext


def _power(dtype: str, exponent: np.ndarray, shape=(4, 5)) -> IRModule:
    x = var("x", shape=shape, dtype=dtype)
    return InferType()(IRModule.from_expr(Function([x], tn.power(x, Constant(exponent)))))


def _canonical(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3):
        return CanonicalizeOps()(mod)


def _ops(mod: IRModule) -> list[str]:
    return [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_square_becomes_one_product(dtype):
    assert _ops(_canonical(_power(dtype, np.array(2, dtype)))) == ["multiply"]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_cube_becomes_a_float64_product_cast_back(dtype):
    after = _canonical(_power(dtype, np.array([[3]], dtype)))
    assert _ops(after) == ["cast", "multiply", "multiply", "cast"]


@pytest.mark.parametrize("exponent", [
    np.array(3, "float64"),                      # a float64 cube has no wider product
    np.array(2.5, "float32"),                    # not 2 or 3
    np.array([2, 3], "float32"),                 # not one value everywhere
    np.full((1, 1, 1), 2, "float32"),            # broadcasts the result to rank 3
], ids=["float64-cube", "2.5", "mixed", "rank-raising"])
def test_other_powers_stay(exponent):
    mod = _power(exponent.dtype.name, exponent, shape=(2,) if exponent.ndim == 1 else (4, 5))
    assert _ops(_canonical(mod)) == ["power"]


def test_a_power_of_a_variable_exponent_stays():
    x, y = var("x", shape=(3,), dtype="float32"), var("y", shape=(3,), dtype="float32")
    mod = InferType()(IRModule.from_expr(Function([x, y], tn.power(x, y))))
    assert _ops(_canonical(mod)) == ["power"]


FLOATS32 = hnp.arrays("float32", st.integers(1, 64),
                      elements=st.floats(width=32, allow_nan=True, allow_infinity=True))


@settings(max_examples=200, deadline=None)
@given(x=FLOATS32, cube=st.booleans())
def test_products_give_the_powers_numbers(x, cube):
    exponent = np.array(3 if cube else 2, "float32")
    before = _power("float32", exponent, shape=x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        got = evaluate(_canonical(before), x=x)
        want = evaluate(before, x=x)
    if not cube:
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want) & np.isfinite(got)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    ulps = np.abs(got[finite].view(np.int32).astype(np.int64)
                  - want[finite].view(np.int32).astype(np.int64))
    assert ulps.max(initial=0) <= 1
