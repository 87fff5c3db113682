"""The TIR passes of the build's phases: before/after in TIR text, and numbers kept."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from passhost import te, text
from passhost.ir.module import IRModule
from passhost.tir.transform import (
    AnnotateLoops,
    CollapseLoops,
    ReuseBuffers,
    Simplify,
    TileTransposes,
)
from passhost.tir.transform.annotate_loops import MIN_PARALLEL_WORK
from passhost.transform.context import PassContext
from te_harness import run_prim_func

HEADER = '#[version = "passhost.text/1"]\n\n'


def _parse(body: str) -> IRModule:
    return text.parse_module(HEADER + textwrap.dedent(body))


def _run(pass_, mod: IRModule) -> str:
    with PassContext(opt_level=3):
        return text.print_module(pass_()(mod))


def _expect(body: str) -> str:
    return text.print_module(_parse(body))


def test_simplify_folds_indices_selects_and_one_iteration_loops():
    before = _parse("""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle) {
          buffer %a: int32[1, 4] = match(%a_data, data=%a_data);
          buffer %b: int32[1, 4] = match(%b_data, data=%b_data);
          for %i: int64 in serial(int64(0), int64(1)) {
            for %j: int64 in serial(int64(0), int64(4)) {
              %b[%j * int64(1) + int64(0) + %i, floormod(%j, int64(1))] = select(
                  int64(2) < int64(3), %a[floordiv(%i * int64(4), int64(4)), %j], 0);
            }
          }
        }
        """)
    assert _run(Simplify, before) == _expect("""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle) {
          buffer %a: int32[1, 4] = match(%a_data, data=%a_data);
          buffer %b: int32[1, 4] = match(%b_data, data=%b_data);
          for %j: int64 in serial(int64(0), int64(4)) {
            %b[%j, int64(0)] = %a[int64(0), %j];
          }
        }
        """)


RESHAPED = """\
    prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle) {
      buffer %a: float32[4, 96] = match(%a_data, data=%a_data);
      buffer %b: float32[3, 4, 32] = match(%b_data, data=%b_data);
      for %i: int64 in serial(int64(0), int64(3)) {
        for %j: int64 in serial(int64(0), int64(4)) {
          for %k: int64 in serial(int64(0), int64(32)) {
            %b[%i, %j, %k] = %a[floordiv(%i * int64(32) + %k, int64(96)) + %j,
                                floormod(%i * int64(32) + %k, int64(96))];
          }
        }
      }
    }
    """


def test_simplify_drops_divisions_the_loop_ranges_decide():
    divisions = """%a[floordiv(%i * int64(32) + %k, int64(96)) + %j,
                                floormod(%i * int64(32) + %k, int64(96))]"""
    assert divisions in RESHAPED
    simplified = RESHAPED.replace(divisions, "%a[%j, %i * int64(32) + %k]")
    assert _run(Simplify, _parse(RESHAPED)) == text.print_module(_parse(simplified))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 96)).astype("float32")
    want = np.stack([a[:, 32 * i:32 * i + 32] for i in range(3)])
    for mod in (_parse(RESHAPED), Simplify()(_parse(RESHAPED))):
        np.testing.assert_array_equal(run_prim_func(mod["f"], [a])[0], want)


@pytest.mark.parametrize("index", [
    "floormod(%i * int64(40) + %k, int64(96))",    # reaches 119: crosses a multiple of 96
    "floordiv(%i * int64(40) + %k, int64(96))",
    "truncmod(%k - int64(8), int64(96))",          # negative: C truncates, not the floor
], ids=["mod-crossing", "div-crossing", "negative-truncmod"])
def test_simplify_keeps_divisions_the_ranges_do_not_decide(index):
    before = _parse(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle) {{
          buffer %a: float32[200] = match(%a_data, data=%a_data);
          buffer %b: float32[3, 32] = match(%b_data, data=%b_data);
          for %i: int64 in serial(int64(0), int64(3)) {{
            for %k: int64 in serial(int64(0), int64(32)) {{
              %b[%i, %k] = %a[{index} + int64(100)];
            }}
          }}
        }}
        """)
    assert _run(Simplify, before) == text.print_module(before)


def test_simplify_leaves_float_identities_and_wraps_integers():
    before = _parse("""\
        prim_func @f [global_symbol="f"] (%a_data: handle) {
          buffer %a: float32[2] = match(%a_data, data=%a_data);
          %a[int64(0)] = %a[int64(0)] + 0.0;
          %a[cast(int64, int8(127) + int8(1)) + int64(128)] = 1.0;
        }
        """)
    assert _run(Simplify, before) == _expect("""\
        prim_func @f [global_symbol="f"] (%a_data: handle) {
          buffer %a: float32[2] = match(%a_data, data=%a_data);
          %a[int64(0)] = %a[int64(0)] + 0.0;
          %a[int64(0)] = 1.0;
        }
        """)


def test_annotate_loops_marks_a_large_elementwise_nest_and_not_a_reduction():
    n = MIN_PARALLEL_WORK // 64
    before = _parse(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle, %s_data: handle) {{
          buffer %a: float32[{n}, 64] = match(%a_data, data=%a_data);
          buffer %b: float32[{n}, 64] = match(%b_data, data=%b_data);
          buffer %s: float32[1] = match(%s_data, data=%s_data);
          for %i: int64 in serial(int64(0), int64({n})) {{
            for %j: int64 in serial(int64(0), int64(64)) {{
              %b[%i, %j] = tir.exp<float32>(%a[%i, %j]);
            }}
          }}
          for %k: int64 in serial(int64(0), int64({n})) {{
            %s[int64(0)] = %s[int64(0)] + %a[%k, int64(0)];
          }}
        }}
        """)
    assert _run(AnnotateLoops, before) == _expect(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle, %s_data: handle) {{
          buffer %a: float32[{n}, 64] = match(%a_data, data=%a_data);
          buffer %b: float32[{n}, 64] = match(%b_data, data=%b_data);
          buffer %s: float32[1] = match(%s_data, data=%s_data);
          for %i: int64 in parallel(int64(0), int64({n})) {{
            for %j: int64 in vectorized(int64(0), int64(64)) {{
              %b[%i, %j] = tir.exp<float32>(%a[%i, %j]);
            }}
          }}
          for %k: int64 in serial(int64(0), int64({n})) {{
            %s[int64(0)] = %s[int64(0)] + %a[%k, int64(0)];
          }}
        }}
        """)


def test_annotate_loops_keeps_small_nests_and_dependent_loops_serial():
    before = _parse("""\
        prim_func @f [global_symbol="f"] (%a_data: handle) {
          buffer %a: float32[8] = match(%a_data, data=%a_data);
          for %i: int64 in serial(int64(1), int64(7)) {
            %a[%i] = %a[%i - int64(1)] + 1.0;
          }
        }
        """)
    assert _run(AnnotateLoops, before) == text.print_module(before)


def test_reuse_buffers_shares_memory_between_stages_that_do_not_overlap():
    x = te.placeholder((2, 8), "float32", "x")
    y = x
    for n in range(4):  # each reads the row the other way up: no loops shared, four nests
        y = te.compute((2, 8), lambda i, j, y=y: te.tanh(y[1 - i, j]) * te.tanh(y[1 - i, j]),
                       name=f"s{n}")
    func = te.lower([y], [x], "f")
    after = ReuseBuffers()
    with PassContext(opt_level=3):
        mod = after(IRModule({"f": func}))
    printed = text.print_module(mod)
    assert printed.count("allocate ") == 2  # s0 and s2 share, s1 has its own
    assert "buffer %s2: float32[2, 8] = decl(%s0_data);" in printed
    v = np.random.default_rng(0).uniform(-1, 1, (2, 8)).astype("float32")
    np.testing.assert_array_equal(run_prim_func(mod["f"], [v])[0], run_prim_func(func, [v])[0])
    assert text.print_module(text.parse_module(printed)) == printed


COLLAPSIBLE = """\
    prim_func @f [global_symbol="f"] (%a_data: handle, %c_data: handle, %b_data: handle) {
      buffer %a: float32[96, 7, 7] = match(%a_data, data=%a_data);
      buffer %c: float32[96, 1, 1] = match(%c_data, data=%c_data);
      buffer %b: float32[96, 7, 7] = match(%b_data, data=%b_data);
      for %i: int64 in serial(int64(0), int64(96)) {
        for %j: int64 in serial(int64(0), int64(7)) {
          for %k: int64 in serial(int64(0), int64(7)) {
            %b[%i, %j, %k] = %a[%i, %j, %k] * %c[%i, int64(0), int64(0)];
          }
        }
      }
    }
    """


def test_collapse_loops_merges_short_inner_loops_over_merged_views():
    assert _run(CollapseLoops, _parse(COLLAPSIBLE)) == _expect("""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %c_data: handle, %b_data: handle) {
          buffer %a: float32[96, 7, 7] = match(%a_data, data=%a_data);
          buffer %c: float32[96, 1, 1] = match(%c_data, data=%c_data);
          buffer %b: float32[96, 7, 7] = match(%b_data, data=%b_data);
          buffer %b_1: float32[96, 49] = view(%b_data);
          buffer %a_1: float32[96, 49] = view(%a_data);
          for %i: int64 in serial(int64(0), int64(96)) {
            for %j_k: int64 in serial(int64(0), int64(49)) {
              %b_1[%i, %j_k] = %a_1[%i, %j_k] * %c[%i, int64(0), int64(0)];
            }
          }
        }
        """)


def test_collapsed_loops_compute_the_same_numbers():
    rng = np.random.default_rng(3)
    before = _parse(COLLAPSIBLE)
    with PassContext(opt_level=3):
        after = CollapseLoops()(before)
    inputs = [rng.standard_normal((96, 7, 7)).astype("float32"),
              rng.standard_normal((96, 1, 1)).astype("float32")]
    want = inputs[0] * inputs[1]
    for mod in (before, after):
        np.testing.assert_array_equal(run_prim_func(mod["f"], inputs)[0], want)


@pytest.mark.parametrize("access", [
    "%a[%k, %j]",                            # transposed
    "%a[%j, %k] + %c[%k]",                   # broadcast along the inner loop only
    "%a[%j, %k] * cast(float32, %k)",        # a loop variable used as a value
], ids=["transposed", "broadcast-inner", "value"])
def test_collapse_loops_leaves_nests_whose_accesses_do_not_merge(access):
    before = _parse(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %c_data: handle, %b_data: handle) {{
          buffer %a: float32[8, 8] = match(%a_data, data=%a_data);
          buffer %c: float32[8] = match(%c_data, data=%c_data);
          buffer %b: float32[4, 8, 8] = match(%b_data, data=%b_data);
          for %i: int64 in serial(int64(0), int64(4)) {{
            for %j: int64 in serial(int64(0), int64(8)) {{
              for %k: int64 in serial(int64(0), int64(8)) {{
                %b[%i, %j, %k] = {access};
              }}
            }}
          }}
        }}
        """)
    assert _run(CollapseLoops, before) == text.print_module(before)


@pytest.mark.parametrize("inner", [64, 4], ids=["long-inner", "two-loops-only"])
def test_collapse_loops_keeps_long_inner_loops_and_the_outermost_loop(inner):
    # an inner loop of 64 is long enough; of 4, merging would leave no outer loop
    nest = _parse(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle) {{
          buffer %a: float32[4, {inner}] = match(%a_data, data=%a_data);
          for %i: int64 in serial(int64(0), int64(4)) {{
            for %j: int64 in serial(int64(0), int64({inner})) {{
              %a[%i, %j] = 1.0;
            }}
          }}
        }}
        """)
    assert _run(CollapseLoops, nest) == text.print_module(nest)


TRANSPOSING = """\
    prim_func @f [global_symbol="f"] (%a_data: handle, %r_data: handle, %b_data: handle) {
      buffer %a: float32[128, 32] = match(%a_data, data=%a_data);
      buffer %r: float32[32, 128] = match(%r_data, data=%r_data);
      buffer %b: float32[32, 128] = match(%b_data, data=%b_data);
      for %i: int64 in serial(int64(0), int64(32)) {
        for %j: int64 in serial(int64(0), int64(128)) {
          %b[%i, %j] = %a[%j, %i] + %r[%i, %j];
        }
      }
    }
    """


def test_tile_transposes_walks_a_transposing_pair_in_tiles_over_split_views():
    tile = "%i_outer, %i_inner, %j_outer, %j_inner"
    store = (f"%b_1[{tile}] = %a_1[%j_outer, %j_inner, %i_outer, %i_inner] + "
             f"%r_1[{tile}];")
    assert _run(TileTransposes, _parse(TRANSPOSING)) == _expect(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %r_data: handle, %b_data: handle) {{
          buffer %a: float32[128, 32] = match(%a_data, data=%a_data);
          buffer %r: float32[32, 128] = match(%r_data, data=%r_data);
          buffer %b: float32[32, 128] = match(%b_data, data=%b_data);
          buffer %b_1: float32[2, 16, 2, 64] = view(%b_data);
          buffer %a_1: float32[2, 64, 2, 16] = view(%a_data);
          buffer %r_1: float32[2, 16, 2, 64] = view(%r_data);
          for %i_outer: int64 in serial(int64(0), int64(2)) {{
            for %j_outer: int64 in serial(int64(0), int64(2)) {{
              for %i_inner: int64 in serial(int64(0), int64(16)) {{
                for %j_inner: int64 in serial(int64(0), int64(64)) {{
                  {store}
                }}
              }}
            }}
          }}
        }}
        """)


KEYS_PER_HEAD = """\
    prim_func @f [global_symbol="f"] (%k_data: handle, %b_data: handle) {
      buffer %k: float32[32, 96] = match(%k_data, data=%k_data);
      buffer %b: float32[3, 32, 32] = match(%b_data, data=%b_data);
      for %h: int64 in serial(int64(0), int64(3)) {
        for %d: int64 in serial(int64(0), int64(32)) {
          for %t: int64 in serial(int64(0), int64(32)) {
            %b[%h, %d, %t] = %k[%t, %h * int64(32) + %d];
          }
        }
      }
    }
    """


def test_tile_transposes_takes_a_transposed_index_with_a_base_of_whole_tiles():
    # GPT-2's keys: [tokens, heads * dim] read as [heads, dim, tokens]
    store = ("%b_1[%h, %d_outer, %d_inner, %t_outer, %t_inner] = "
             "%k_1[%t_outer, %t_inner, %h * int64(2) + %d_outer, %d_inner];")
    assert _run(TileTransposes, _parse(KEYS_PER_HEAD)) == _expect(f"""\
        prim_func @f [global_symbol="f"] (%k_data: handle, %b_data: handle) {{
          buffer %k: float32[32, 96] = match(%k_data, data=%k_data);
          buffer %b: float32[3, 32, 32] = match(%b_data, data=%b_data);
          buffer %b_1: float32[3, 2, 16, 2, 16] = view(%b_data);
          buffer %k_1: float32[2, 16, 6, 16] = view(%k_data);
          for %h: int64 in serial(int64(0), int64(3)) {{
            for %d_outer: int64 in serial(int64(0), int64(2)) {{
              for %t_outer: int64 in serial(int64(0), int64(2)) {{
                for %d_inner: int64 in serial(int64(0), int64(16)) {{
                  for %t_inner: int64 in serial(int64(0), int64(16)) {{
                    {store}
                  }}
                }}
              }}
            }}
          }}
        }}
        """)
    rng = np.random.default_rng(5)
    keys = rng.standard_normal((32, 96)).astype("float32")
    with PassContext(opt_level=3):
        after = TileTransposes()(_parse(KEYS_PER_HEAD))
    np.testing.assert_array_equal(run_prim_func(after["f"], [keys])[0],
                                  keys.reshape(32, 3, 32).transpose(1, 2, 0))


def test_tiled_transposes_compute_the_same_numbers():
    rng = np.random.default_rng(4)
    before = _parse(TRANSPOSING)
    with PassContext(opt_level=3):
        after = TileTransposes()(before)
    inputs = [rng.standard_normal((128, 32)).astype("float32"),
              rng.standard_normal((32, 128)).astype("float32")]
    want = inputs[0].T + inputs[1]
    for mod in (before, after):
        np.testing.assert_array_equal(run_prim_func(mod["f"], inputs)[0], want)


@pytest.mark.parametrize(("shape", "access"), [
    ("[128, 32]", "%a[%j, %i] * cast(float32, %i)"),  # a loop variable used as a value
    ("[32, 128]", "%a[%i, %j]"),                        # no transpose: contiguous reads
    ("[128, 30]", "%a[%j, %i]"),                        # 30 rows: no tile divides them
], ids=["value", "contiguous", "no-divisor"])
def test_tile_transposes_leaves_other_pairs_alone(shape, access):
    rows = 30 if "30" in shape else 32
    before = _parse(f"""\
        prim_func @f [global_symbol="f"] (%a_data: handle, %b_data: handle) {{
          buffer %a: float32{shape} = match(%a_data, data=%a_data);
          buffer %b: float32[{rows}, 128] = match(%b_data, data=%b_data);
          for %i: int64 in serial(int64(0), int64({rows})) {{
            for %j: int64 in serial(int64(0), int64(128)) {{
              %b[%i, %j] = {access};
            }}
          }}
        }}
        """)
    assert _run(TileTransposes, before) == text.print_module(before)
