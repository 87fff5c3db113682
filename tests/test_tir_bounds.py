"""Proving loads and stores in bounds (passhost.tir.bounds), as artifact loading needs."""

from __future__ import annotations

import textwrap

import pytest

from passhost import text
from passhost.tir.bounds import IndexBoundsError, check_index_bounds

HEADER = '#[version = "passhost.text/1"]\n\n'


def _func(body: str, params: str = "%a_data: handle, %i_data: handle"):
    src = HEADER + textwrap.dedent(f"""\
        prim_func @f [global_symbol="f"] ({params}) {{
          buffer %a: float32[4, 3] = match(%a_data, data=%a_data);
          buffer %i: int32[4] = match(%i_data, data=%i_data);
        """) + textwrap.indent(textwrap.dedent(body), "  ") + "}\n"
    return text.parse_module(src)["f"]


SAFE = {
    "loops": """\
        for %x: int64 in serial(int64(0), int64(4)) {
          for %y: int64 in serial(int64(0), int64(3)) {
            %a[%x, %y] = %a[%x, int64(2) - %y];
          }
        }
        """,
    "flattened": """\
        for %f: int64 in serial(int64(0), int64(12)) {
          %a[floordiv(%f, int64(3)), floormod(%f, int64(3))] = 0.0;
        }
        """,
    "clamped_gather": """\
        for %x: int64 in serial(int64(0), int64(4)) {
          %a[%x, max(min(cast(int64, %i[%x]), int64(2)), int64(0))] = 1.0;
        }
        """,
    "selected_gather": """\
        for %x: int64 in serial(int64(0), int64(4)) {
          %a[%x, select(cast(int64, %i[%x]) >= int64(0) && cast(int64, %i[%x]) < int64(3),
                        cast(int64, %i[%x]), int64(0))] = 1.0;
        }
        """,
    "guarded": """\
        for %x: int64 in serial(int64(0), int64(6)) {
          if (%x - int64(1) >= int64(0) && %x - int64(1) < int64(4)) {
            %a[%x - int64(1), int64(0)] = 1.0;
          }
        }
        """,
    "clamped_float_coordinate": """\
        for %x: int64 in serial(int64(0), int64(4)) {
          %a[%x, cast(int64, select(%a[%x, int64(0)] >= 0.0,
                                    select(%a[%x, int64(0)] <= 2.0, %a[%x, int64(0)], 2.0),
                                    0.0))] = 1.0;
        }
        """,
    "empty_loop": """\
        for %x: int64 in serial(int64(0), int64(0)) {
          %a[%x + int64(100), int64(0)] = 1.0;
        }
        """,
}

UNSAFE = {
    "one_past_the_end": ("""\
        for %x: int64 in serial(int64(0), int64(5)) {
          %a[%x, int64(0)] = 1.0;
        }
        """, r"store to %a .* dimension 0 with %x in \[0, 4\], outside \[0, 3\]"),
    "raw_gather": ("""\
        for %x: int64 in serial(int64(0), int64(4)) {
          %a[%x, cast(int64, %i[%x])] = 1.0;
        }
        """, r"dimension 1 with .* in \[-2147483648, 2147483647\]"),
    "load_in_the_other_side_of_a_select": ("""\
        for %x: int64 in serial(int64(0), int64(5)) {
          %a[int64(0), int64(0)] = select(%x < int64(4), %a[%x, int64(0)], 0.0);
        }
        """, r"load of %a .* dimension 0"),
    "overflowing_index": ("""\
        for %x: int64 in serial(int64(0), int64(4)) {
          %a[%x * int64(4611686018427387904) * int64(4) , int64(0)] = 1.0;
        }
        """, "dimension 0"),
    "float_clamped_on_one_side": ("""\
        for %x: int64 in serial(int64(0), int64(4)) {
          %a[%x, cast(int64, select(%a[%x, int64(0)] <= 2.0, %a[%x, int64(0)], 2.0))] = 1.0;
        }
        """, "dimension 1"),
    "condition_on_a_value_the_body_changes": ("""\
        if (%i[int64(0)] >= 0 && %i[int64(0)] < 3) {
          %i[int64(0)] = 7;
          %a[int64(0), cast(int64, %i[int64(0)])] = 1.0;
        }
        """, "dimension 1"),
}


@pytest.mark.parametrize("name", SAFE)
def test_safe_indexing_is_proved(name):
    check_index_bounds(_func(SAFE[name]), name)


@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_indexing_is_refused_with_the_access_named(name):
    body, message = UNSAFE[name]
    with pytest.raises(IndexBoundsError, match=message):
        check_index_bounds(_func(body), name)
