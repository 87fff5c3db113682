"""The C printer writes integer arithmetic with C's own operators where the loops around it
bound every value inside the dtype (:func:`passhost.tir.bounds.exact_range`), and through
the wrapping helpers everywhere else."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from passhost import text
from passhost.backend.c import print_unit
from passhost.tir import expr as te
from passhost.tir.bounds import exact_range
from te_harness import run_prim_func

HEADER = '#[version = "passhost.text/1"]\n\n'


def _func(index: str, extent: str = "int64(100)"):
    scalar = ", %n: int64" if "%n" in index + extent else ""
    mod = text.parse_module(HEADER + textwrap.dedent(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle{scalar}) {{
          buffer %a: float32[400] = match(%a_data, data=%a_data);
          buffer %b: float32[100] = match(%b_data, data=%b_data);
          for %i: int64 in serial(int64(0), {extent}) {{
            %b[%i] = %a[{index}];
          }}
        }}
        """))
    return mod["f"]


def _source(func) -> str:
    return print_unit({"f": func}, prefix="t").source


def test_bounded_index_arithmetic_uses_c_operators():
    source = _source(_func("%i * int64(3) + int64(7)"))
    assert "a[i * INT64_C(3) + INT64_C(7)]" in source
    assert "ph_add_i64" not in source and "ph_mul_i64" not in source


@pytest.mark.parametrize("index", [
    "%i * %n",                                      # a parameter: any value
    "%i * int64(4611686018427387904) + int64(1)",   # i * 2^62 overflows for i >= 2
], ids=["unbounded", "overflowing"])
def test_unbounded_or_overflowing_arithmetic_wraps(index):
    assert "ph_mul_i64" in _source(_func(index))


def test_a_loop_with_a_variable_extent_gives_no_range():
    assert "ph_mul_i64" in _source(_func("%i * int64(3)", extent="%n"))


def test_exact_range_follows_every_operation():
    i, j = te.Var("i", "int64"), te.Var("j", "int64")
    ranges = {id(i): (0, 9), id(j): (-3, 4)}
    assert exact_range(i * 4 - j, ranges) == (-4, 39)
    assert exact_range(i * j, ranges) == (-27, 36)
    assert exact_range(i + te.Var("k", "int64"), ranges) is None
    small = te.Var("s", "int32")
    assert exact_range(small * 2**30, {id(small): (0, 2)}) is None  # 2^31 > int32 max


def test_bounded_arithmetic_computes_the_same_numbers():
    a = np.arange(400, dtype="float32")
    (got,) = run_prim_func(_func("%i * int64(3) + int64(7)"), [a])
    np.testing.assert_array_equal(got, a[np.arange(100) * 3 + 7])
