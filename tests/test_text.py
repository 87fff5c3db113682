"""The IR text format: round trips of modules and expressions, constants and metadata,
deep chains, and parse errors located by line and column."""

from __future__ import annotations

import contextlib
import re
import sys
import types

import numpy as np
import pytest
from attrs import frozen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passhost import relay
from passhost.errors import IRTypeError, ParseError, PasshostError
from passhost.ir import (
    FuncType,
    IRModule,
    TensorType,
    TupleType,
    structural_equal,
    structural_hash,
)
from passhost.ir.expr import BaseFunc
from passhost.ir.node import VALUE
from passhost.relay.testing.op_examples import all_examples
from passhost.text import parse, parse_expr, parse_module, print_expr, print_module
from passhost.text.lexer import GLOBAL, STRING

T23 = TensorType((2, 3), "float32")
HEADER = '#[version = "passhost.text/1"]\n'


def roundtrip(mod: IRModule) -> IRModule:
    """Print, parse, compare; print again and compare the text."""
    text = print_module(mod)
    back = parse_module(text)
    assert structural_equal(mod, back), text
    assert print_module(back) == text
    assert list(back) == list(mod)  # function order kept
    return back


def roundtrip_expr(expr: relay.Expr) -> relay.Expr:
    """The same for a lone expression (free variables are matched up)."""
    text = print_expr(expr, show_meta_data=True)
    back = parse_expr(text)
    assert structural_equal(expr, back, map_free_vars=True), text
    assert print_expr(back, show_meta_data=True) == text
    return back


# -- every operator example ----------------------------------------------------------------
@pytest.mark.parametrize("name,build", all_examples(), ids=[n for n, _ in all_examples()])
def test_every_op_example_round_trips(name, build):
    func = build()
    back = roundtrip(IRModule({"main": func}))
    assert name in print_module(back)
    roundtrip_expr(func)


# -- module structure ----------------------------------------------------------------------
def test_two_functions_call_each_other_through_global_vars():
    x = relay.var("x", T23)
    helper_ty = FuncType([T23], T23)
    gv_helper = relay.GlobalVar("helper", helper_ty)
    gv_main = relay.GlobalVar("main", helper_ty)
    helper = relay.Function([x], relay.nn.relu(x), T23)
    y = relay.var("x", T23)
    main = relay.Function([y], relay.add(relay.Call(gv_helper, [y]), y), T23)
    n = relay.var("n", T23)
    # A third function calls main (defined above it) and helper (defined below it).
    other = relay.Function([n], relay.Call(gv_main, [relay.Call(gv_helper, [n])]), T23)
    mod = IRModule({gv_main: main, "other": other, gv_helper: helper})
    text = print_module(mod)
    assert "@helper(%x)" in text and "def @other(%n" in text
    back = roundtrip(mod)
    # Typed references from the signatures: callers type-check on their own.
    assert back["other"].checked_type == helper_ty
    assert back.get_global_var("helper").type_annotation == helper_ty


def test_untyped_and_external_global_references_round_trip():
    x = relay.var("x", T23)
    untyped = relay.GlobalVar("f")  # the module's f is fully typed, this reference is not
    external = relay.GlobalVar("ext_kernel", FuncType([T23], T23))
    f = relay.Function([x], relay.nn.relu(x), T23)
    z = relay.var("z", T23)
    main = relay.Function([z], relay.Tuple([relay.Call(untyped, [z]),
                                            relay.Call(external, [z]),
                                            relay.Call(relay.GlobalVar("nowhere"), [z])]))
    mod = IRModule({"main": main, "f": f})
    text = print_module(mod)
    assert "(@f: untyped)(%z)" in text
    assert "(@ext_kernel: fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32])(%z)" in text
    assert "(@nowhere: untyped)(%z)" in text
    roundtrip(mod)


def test_module_attributes_and_function_attributes_round_trip():
    x = relay.var("x", T23)
    f = relay.Function([x], relay.nn.relu(x), attrs={
        "global_symbol": "tvmgen_default_relu", "Compiler": "cmsis-nn", "Inline": 1,
        "flag": True, "scale": 0.25, "odd key": "a \"quoted\"\nline", "none_value": None,
        "pair": (1, 2)})
    mod = IRModule({"main": f}, attrs={"executor": "graph", "opt_level": 3, "ratio": 1.5,
                                       "debug": False, "layouts": ("NCHW", "NHWC")})
    text = print_module(mod)
    assert '#[attrs] {executor="graph", opt_level=3' in text
    assert 'global_symbol="tvmgen_default_relu"' in text
    back = roundtrip(mod)
    assert back.attrs["opt_level"] == 3 and back["main"].attrs["flag"] is True
    assert back["main"].attrs["odd key"] == 'a "quoted"\nline'


def test_zoo_models_round_trip():
    from passhost.workloads.zoo import get_model, list_models

    for name, _ in list_models():
        mod, _params = get_model(name)
        roundtrip(mod)


def test_empty_module_and_version_directive():
    text = print_module(IRModule())
    assert text.startswith(HEADER)
    assert len(parse_module(text)) == 0
    assert len(parse("def @f() { () }")) == 1  # the directive may be left out


# -- graph structure -----------------------------------------------------------------------
def test_nested_primitive_functions_round_trip():
    x = relay.var("x", shape=(1, 8, 8, 8))
    w = relay.var("w", shape=(4, 8, 3, 3))
    p0 = relay.var("p0", shape=(1, 8, 8, 8))
    p1 = relay.var("p1", shape=(4, 8, 3, 3))
    conv = relay.nn.conv2d(p0, p1, padding=(1, 1), channels=4, kernel_size=(3, 3))
    fused = relay.Function([p0, p1], relay.nn.relu(conv), TensorType((1, 4, 8, 8)),
                           attrs={"Primitive": 1, "hash": "abc123"})
    q = relay.var("p0", shape=(1, 4, 8, 8))
    fused2 = relay.Function([q], relay.sigmoid(q), attrs={"Primitive": 1})
    call1 = relay.Call(fused, [x, w])
    main = relay.Function([x, w], relay.Call(fused2, [call1]))
    mod = IRModule({"main": main})
    text = print_module(mod)
    assert "fn [Primitive=1] (%p0: Tensor[(1, 4, 8, 8), float32]) {\n    sigmoid(%p0)" in text
    # Names are unique within a definition.
    assert 'fn [Primitive=1, hash="abc123"] (%p0_1: Tensor[(1, 8, 8, 8), float32]' in text
    roundtrip(mod)
    assert relay.Function([x, w], call1).checked_type is not None


def test_closures_and_functions_returning_functions_round_trip():
    x = relay.var("x", T23)
    outer_value = relay.nn.relu(x)
    p = relay.var("p", T23)
    # The closure uses an outer computed value and an outer parameter.
    closure = relay.Function([p], relay.add(relay.multiply(p, outer_value), x))
    q = relay.var("q", T23)
    # p is bound again (the same Var object) by the inner function of curried.
    curried = relay.Function([q], relay.Function([p], relay.add(p, q)))
    main = relay.Function([x], relay.Tuple([relay.Call(closure, [x]), outer_value,
                                            relay.Call(curried, [x]), curried]))
    back = roundtrip(IRModule({"main": main}))
    text = print_module(back)
    assert "fn (%q: Tensor[(2, 3), float32]) {\n    fn (%p: Tensor[(2, 3), float32]) {" in text
    roundtrip_expr(main)


def test_value_used_only_inside_a_nested_function_is_bound_there():
    x = relay.var("x", T23)
    p = relay.var("p", T23)
    inner_only = relay.nn.relu(x)  # depends on x only, used only in the closure
    closure = relay.Function([p], relay.add(inner_only, relay.add(inner_only, p)))
    text = print_module(IRModule({"main": relay.Function([x], relay.Call(closure, [x]))}))
    lines = text.splitlines()
    fn_line = next(i for i, s in enumerate(lines) if "fn (" in s)
    relu_line = next(i for i, s in enumerate(lines) if "nn.relu" in s)
    assert relu_line > fn_line
    roundtrip(parse_module(text))


def test_tuples_and_projections_round_trip():
    x = relay.var("x", T23)
    t = relay.var("t", TupleType([T23, TupleType([T23])]))
    one = relay.Tuple([x])
    empty = relay.Tuple([])
    nested = relay.Tuple([x, relay.Tuple([relay.nn.relu(x), one]), empty])
    body = relay.Tuple([nested[1][0], t[1][0], one[0], nested, t])
    mod = IRModule({"main": relay.Function([x, t], body)})
    text = print_module(mod)
    assert "= (%x,);" in text and "= ();" in text and "%t.1;" in text
    roundtrip(mod)


def test_hand_written_nested_expressions_and_chained_projections():
    text = HEADER + """
def @main(%t: ((Tensor[(2), float32], Tensor[(2), float32]),), %y: Tensor[(2), float32]) {
  // a comment
  %0 = add(nn.relu(%t.0.1), %y);  /* chained projection, nested call */
  (%0, (%y))
}
"""
    mod = parse_module(text)
    body = mod["main"].body
    assert isinstance(body, relay.Tuple) and len(body.fields) == 2
    add_call = body.fields[0]
    assert add_call.args[0].args[0].index == 1
    assert add_call.args[0].args[0].tuple_value.index == 0
    roundtrip(mod)


def test_shared_subexpressions_keep_their_sharing():
    x = relay.var("x", T23)
    shared = relay.nn.relu(x)
    twice = relay.add(shared, shared)
    mod = IRModule({"main": relay.Function([x], relay.multiply(twice, shared))})
    text = print_module(mod)
    assert text.count("nn.relu") == 1
    back = roundtrip(mod)
    mul = back["main"].body
    assert mul.args[1] is mul.args[0].args[0] is mul.args[0].args[1]


def test_default_attributes_are_omitted_and_explicit_defaults_parse():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    func = relay.Function([x, w], relay.nn.conv2d(x, w))
    text = print_module(IRModule({"main": func}))
    assert "nn.conv2d(%x, %w)" in text
    explicit = text.replace("nn.conv2d(%x, %w)",
                            'nn.conv2d(%x, %w, strides=[1, 1], data_layout="NCHW", groups=1)')
    assert structural_equal(parse_module(explicit), IRModule({"main": func}))


def test_variable_names_are_uniquified_and_sanitised():
    a, b, c = relay.var("x", T23), relay.var("x", T23), relay.var("x_1", T23)
    d, e = relay.var("input.1", T23), relay.var("7", T23)
    f = relay.var("", T23)
    func = relay.Function([a, b, c, d, e, f], relay.Tuple([a, b, c, d, e, f]))
    text = print_module(IRModule({"main": func}))
    assert "(%x, %x_1, %x_1_1, %input_1, %v7, %v)" in text
    roundtrip(IRModule({"main": func}))


def test_unprintable_global_name_is_a_clear_error():
    x = relay.var("x", T23)
    with pytest.raises(PasshostError, match="global name '1st' cannot be printed"):
        print_module(IRModule({"1st": relay.Function([x], x)}))


# -- constants -----------------------------------------------------------------------------
DTYPE_VALUES = {
    "float16": [0.5, -1.25, 65504.0], "float32": [1.5, -0.1, 3.4028235e38],
    "float64": [0.1, -2.5e-300, 1e300], "int8": [-128, 0, 127], "uint8": [0, 7, 255],
    "int16": [-32768, 5, 32767], "int32": [-(2**31), 1, 2**31 - 1],
    "int64": [-(2**63), 1, 2**63 - 1], "bool": [True, False, True],
}


@pytest.mark.parametrize("dtype", sorted(DTYPE_VALUES))
def test_constants_of_every_dtype_round_trip_inline_and_via_metadata(dtype):
    small = np.array(DTYPE_VALUES[dtype], dtype=dtype)
    scalar = np.array(DTYPE_VALUES[dtype][0], dtype=dtype)
    matrix = small.reshape(3, 1)
    large = np.resize(small, (4, 5))
    empty = np.zeros((0, 3), dtype=dtype)
    consts = [relay.Constant(a) for a in (small, scalar, matrix, large, empty)]
    func = relay.Function([], relay.Tuple(consts))
    mod = IRModule({"main": func})
    text = print_module(mod)
    assert f"const([{', '.join(_element_text(v) for v in small)}], {dtype})" in text
    assert ", shape=[3, 1])" in text and ", shape=[0, 3])" in text
    assert "meta[Constant][0]" in text and "#[metadata]" in text
    back = roundtrip(mod)
    for orig, new in zip(consts, back["main"].body.fields):
        assert new.data.dtype == orig.data.dtype and new.data.shape == orig.data.shape
        assert new.data.tobytes() == orig.data.tobytes()
    roundtrip_expr(func)


def _element_text(v: object) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return str(v)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_edge_values_round_trip_bit_exactly(dtype):
    info = np.finfo(dtype)
    values = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, info.smallest_subnormal,
                       -info.smallest_subnormal, info.tiny, info.max, info.min, info.eps,
                       np.float64(0.1), 1 / 3], dtype=dtype)
    for_scalars = [relay.Constant(values[i:i + 1].reshape(())) for i in range(len(values))]
    func = relay.Function([], relay.Tuple([relay.Constant(values), *for_scalars]))
    mod = IRModule({"main": func})
    text = print_module(mod)
    assert "#[metadata]" not in text  # all inline
    assert "nan, -nan, inf, -inf, -0.0, 0.0" in text
    back = roundtrip(mod)
    assert back["main"].body.fields[0].data.tobytes() == values.tobytes()


def test_nan_with_payload_goes_to_the_metadata():
    arr = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)
    mod = IRModule({"main": relay.Function([], relay.Constant(arr))})
    text = print_module(mod)
    assert "meta[Constant][0]" in text
    assert parse_module(text)["main"].body.data.tobytes() == arr.tobytes()


def test_shared_large_constant_is_stored_once():
    big = relay.const(np.arange(100, dtype="float32"))
    func = relay.Function([], relay.Tuple([big, relay.Tuple([big])]))
    text = print_module(IRModule({"main": func}))
    assert text.count('"dtype"') == 1
    body = parse_module(text)["main"].body
    assert body.fields[0] is body.fields[1].fields[0]


def test_metadata_can_be_omitted_and_then_parsing_says_so():
    big = relay.const(np.ones((5, 5), dtype="float32"))
    mod = IRModule({"main": relay.Function([], relay.add(big, big))})
    text = mod.astext(show_meta_data=False)
    assert "meta[Constant][0]" in text and "// metadata omitted" in text
    assert "#[metadata]" not in text and str(mod) == text
    with pytest.raises(ParseError, match="text has none") as info:
        parse_module(text)
    assert (info.value.line, info.value.column) == (4, 7)
    assert str(relay.add(big, big)) == print_expr(relay.add(big, big))


# -- generated graphs ----------------------------------------------------------------------
@st.composite
def random_dags(draw):
    """Random DAGs of add/multiply/relu/tuple/projection/const (and a Primitive function)
    over a few variables, sharing nodes freely."""
    n_vars = draw(st.integers(1, 3))
    params = [relay.var(draw(st.sampled_from(["x", "y", "x_1", "in"])), T23)
              for _ in range(n_vars)]
    tensors: list[relay.Expr] = list(params)
    tuples: list[relay.Tuple] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["add", "multiply", "relu", "tuple", "proj", "const",
                                     "fn"]))
        pick = st.sampled_from(tensors)
        if kind in ("add", "multiply"):
            tensors.append(relay.get_op(kind)(draw(pick), draw(pick)))
        elif kind == "relu":
            tensors.append(relay.nn.relu(draw(pick)))
        elif kind == "tuple":
            tuples.append(relay.Tuple(draw(st.lists(pick, min_size=1, max_size=3))))
        elif kind == "proj" and tuples:
            tup = draw(st.sampled_from(tuples))
            tensors.append(tup[draw(st.integers(0, len(tup.fields) - 1))])
        elif kind == "const":
            values = draw(st.lists(st.floats(width=32), min_size=6, max_size=6))
            tensors.append(relay.const(np.array(values, dtype="float32").reshape(2, 3)))
        elif kind == "fn":
            p = relay.var("p", T23)
            fn = relay.Function([p], relay.nn.relu(p), T23, attrs={"Primitive": 1})
            tensors.append(relay.Call(fn, [draw(pick)]))
    outputs = draw(st.lists(st.sampled_from(tensors + tuples), min_size=1, max_size=3))
    result = outputs[0] if len(outputs) == 1 else relay.Tuple(outputs)
    return relay.Function(params, result)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_dags())
def test_random_dags_round_trip(func):
    roundtrip(IRModule({"main": func}))
    roundtrip_expr(func)
    roundtrip_expr(func.body)


# -- deep chains ---------------------------------------------------------------------------
def test_a_100000_call_chain_prints_and_parses():
    x = relay.var("x", shape=(2,))
    e: relay.Expr = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    mod = IRModule({"main": relay.Function([x], e)})
    text = print_module(mod)
    assert text.count("\n") > 100_000
    back = parse_module(text)
    assert structural_equal(mod, back)
    assert len(print_expr(e)) > 100_000


# -- errors --------------------------------------------------------------------------------
MAIN = "def @main(%x: Tensor[(2), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"

ERRORS = [
    # (text after HEADER, line, column, message fragment)
    (MAIN + "  nn.relu(%x)\n", 4, 1, "expected '}'"),
    (MAIN + "  %0 = nn.relu(%x)", 3, 19, "expected ';'"),
    (MAIN + "  nn.rleu(%x)\n}", 3, 3, "unknown operator 'nn.rleu'; did you mean 'nn.relu'"),
    (MAIN + "  nn.conv2d(%x, %w, stride=[2, 2])\n}", 3, 21,
     "unknown attribute of nn.conv2d 'stride'; did you mean 'strides'"),
    (MAIN + '  nn.conv2d(%x, %w, groups=1, strides="wide")\n}', 3, 39,
     "attribute 'strides': expected"),
    (MAIN + "  nn.relu(%x, alpha=0.5)\n}", 3, 15, "nn.relu takes no attributes"),
    (MAIN + "  nn.conv2d(%x, strides=[1, 1], %w)\n}", 3, 33, "expected an attribute"),
    ("def @main(%x: Tensor[(1, -3), float32]) { %x }", 2, 26, "non-negative integer"),
    ("def @main(%x: Tensor[(1, x), float32]) { %x }", 2, 26,
     "expected an integer dimension, found identifier 'x'"),
    ("def @main(%x: Tensor[(1, 2), flaot32]) { %x }", 2, 30,
     "unknown dtype 'flaot32'; did you mean 'float32'"),
    ("def @main(%x: Tensr[(1, 2), float32]) { %x }", 2, 15, "expected a type"),
    (MAIN + "  add(%x, %y)\n}", 3, 11, "undefined variable %y"),
    (MAIN + "  add(%x, %xx)\n}", 3, 11, "did you mean %x"),
    (MAIN + "  %0 = nn.relu(%x);\n  %0 = nn.relu(%0);\n  %0\n}", 4, 3,
     "duplicate binding %0 (first bound at line 3, column 3)"),
    ("def @main(%x, %x) { %x }", 2, 15, "duplicate binding %x"),
    (MAIN + "  %0 = fn (%x) { %x };\n  %0\n}", 3, 12, "duplicate binding %x"),
    (MAIN + "  add(%x, 1.5)\n}", 3, 11, "constants are written const(value, dtype)"),
    (MAIN + "  const(1.5, int32)\n}", 3, 9, "expected an integer for a int32 constant"),
    (MAIN + "  const([1, 300], uint8)\n}", 3, 13, "300 is out of range for uint8"),
    (MAIN + "  const([1, 2, 3], int8, shape=[2, 2])\n}", 3, 26, "shape [2, 2] holds 4"),
    (MAIN + "  const(1.5, float8)\n}", 3, 14, "unknown dtype 'float8'"),
    (MAIN + "  const(1e39, float32)\n}", 3, 9, "out of range for float32"),
    (MAIN + "  meta[Constant][0]\n}", 3, 3, "text has none"),
    (MAIN + "  @nothere(%x)\n}", 3, 3, "unknown global function '@nothere'"),
    (MAIN + "  %x(%x)\n}", 3, 3, "a Function or a GlobalVar, found Var(%x)"),
    (MAIN + "  %x.a\n}", 3, 6, "expected a tuple index"),
    (MAIN + "  ;\n}", 3, 3, "expected an expression"),
    (MAIN + "  %0 = nn.relu(%x);\n}", 4, 1, "expected the result"),
    (MAIN + '  nn.relu(%x, "a)\n}', 3, 15, "unterminated string"),
    (MAIN + "  nn.relu($x)\n}", 3, 11, "unexpected character '$'"),
    ("def @f() { () }\ndef @f() { () }", 3, 5, "function @f is defined twice"),
    ("def main() { () }", 2, 5, "expected a function name"),
    ("fn @main() { () }", 2, 1, "expected 'def', 'prim_func' or a directive"),
    ("#[bogus]\ndef @f() { () }", 2, 1, "unknown directive #[bogus]"),
    ("#[attrs] {a=1, a=2}", 2, 16, "duplicate attribute 'a'"),
    ("#[attrs] {a=}", 2, 13, "expected a value"),
    ("def @f [Primitive=1 (%x) { %x }", 2, 21, "expected ',' or ']'"),
    ("def @f(%x: Tensor[(2), float32]) -> { %x }", 2, 37, "expected a type"),
    ("def @f() { (@g: Tensor[(2), float32])() }", 2, 17,
     "a global's type must be a function type"),
    (MAIN + "  " + "nn.relu(" * 150 + "%x" + ")" * 150 + "\n}", 3, 803, "nested more than"),
    (MAIN + "  sum(%x, axis=[" + "1" * 5000 + "])\n}", 3, 17,
     "integer literal of 5000 digits is out of range"),
    ("def @f(%x: Tensor[(99999999999999999999999), float32]) { %x }", 2, 20,
     "integer literal of 23 digits is out of range"),
    ("def @f(%x: Tensor[(4294967296, 4294967296), float32]) { %x }", 2, 19,
     "holds 18446744073709551616 elements, more than a 64-bit size can count"),
    ("prim_func @f (%a: handle) {\n  buffer %A: float32[4294967296, 4294967296] = "
     "match(%a);\n}", 3, 21, "more than a 64-bit size can count"),
]


@pytest.mark.parametrize("body,line,column,fragment", ERRORS,
                         ids=[f"case{i}" for i in range(len(ERRORS))])
def test_malformed_text_raises_parse_error_with_position(body, line, column, fragment):
    with pytest.raises(ParseError) as info:
        parse_module(HEADER + body, source_name="model.txt")
    err = info.value
    assert fragment in err.message
    assert (err.line, err.column) == (line, column), str(err)
    assert str(err).startswith(f"model.txt:{line}:{column}: ")
    assert "(at " not in err.message  # the position is given once


def test_wrong_version_is_rejected():
    with pytest.raises(ParseError, match=r"unsupported text format version 'passhost\.text/9'"):
        parse_module('#[version = "passhost.text/9"]\n')
    with pytest.raises(ParseError, match="version directive must come first") as info:
        parse_module('def @f() { () }\n#[version = "passhost.text/1"]\n')
    assert info.value.line == 2


@pytest.mark.parametrize(("json_text", "fragment"), [
    ("[" * 100000 + "]" * 100000, "maximum recursion depth"),
    ('{"constants": [' + "1" * 5000 + "]}", "integer string conversion"),
    ('{"constants": [{"dtype": "float32", "shape": [99999999999999999999999, 7], '
     '"data": "AA=="}]}', "shape [99999999999999999999999, 7] of float32 needs"),
])
def test_metadata_passhost_never_writes_is_a_parse_error(json_text, fragment):
    text = HEADER + "def @f() { () }\n#[metadata]\n" + json_text + "\n"
    with pytest.raises(ParseError, match=re.escape(fragment)) as info:
        parse_module(text)
    assert info.value.line == 4


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_attributes_round_trip(value):
    x = relay.var("x", shape=(2,), dtype="float32")
    mod = IRModule({"main": relay.Function([x], relay.nn.leaky_relu(x, alpha=value))})
    back = parse_module(print_module(mod))
    assert structural_equal(mod, back)
    assert structural_hash(mod) == structural_hash(back)
    other = IRModule({"main": relay.Function([x], relay.nn.leaky_relu(x, alpha=0.5))})
    assert not structural_equal(mod, other)


def test_bad_metadata_is_reported_inside_the_metadata_section():
    func = relay.Function([], relay.const(np.ones(20, dtype="float32")))
    text = print_module(IRModule({"main": func}))
    directive_line = text.splitlines().index("#[metadata]") + 1
    with pytest.raises(ParseError, match="malformed metadata JSON") as info:
        parse_module(text.replace('"constants": [', '"constants": [,'))
    assert info.value.line == directive_line + 1
    with pytest.raises(ParseError, match=r"meta\[Constant\]\[1\] is out of range") as info:
        parse_module(text.replace("meta[Constant][0]", "meta[Constant][1]"))
    assert info.value.line == 4
    with pytest.raises(ParseError, match="unknown dtype 'float99'"):
        parse_module(text.replace('"dtype": "float32"', '"dtype": "float99"'))


def test_truncated_texts_never_escape_as_python_errors():
    x = relay.var("x", shape=(1, 3, 4, 4))
    w = relay.var("w", shape=(2, 3, 1, 1))
    p = relay.var("p", shape=(1, 2, 4, 4))
    fn = relay.Function([p], relay.add(p, relay.const(np.float32(2))), attrs={"Primitive": 1})
    conv = relay.nn.conv2d(x, w, strides=(1, 1), padding=(0, 0), channels=2)
    body = relay.Tuple([relay.Call(fn, [conv]), conv])
    text = print_module(IRModule({"main": relay.Function([x, w], body)},
                                 attrs={"k": (1, 2)}))
    for cut in range(len(text)):
        with contextlib.suppress(ParseError):
            parse_module(text[:cut])


def test_type_errors_in_parsed_text_point_to_the_source():
    text = HEADER + (
        "def @main(%a: Tensor[(2), float32], %b: Tensor[(3), float32]) {\n"
        "  %0 = nn.relu(%a);\n"
        "  add(%0, %b)\n"
        "}\n")
    mod = parse_module(text, source_name="bad.txt")
    with pytest.raises(IRTypeError) as info:
        _ = mod["main"].checked_type
    assert (info.value.span.line, info.value.span.column) == (4, 3)
    assert "bad.txt:4:3" in str(info.value)


# -- expressions alone ---------------------------------------------------------------------
def test_print_expr_annotates_free_variables_at_first_use():
    x, y = relay.var("x", T23), relay.var("y", T23)
    e = relay.multiply(relay.add(x, y), x)
    text = str(e)
    assert text == ("%0 = add(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]);\n"
                    "multiply(%0, %x)")
    back = roundtrip_expr(e)
    assert back.checked_type == T23
    assert str(x) == "%x: Tensor[(2, 3), float32]"
    assert str(relay.const(1, "int8")) == "const(1, int8)"
    assert str(relay.GlobalVar("g")) == "GlobalVar(@g)"


def test_parse_expr_reads_functions_and_bare_atoms():
    func = parse_expr("fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] { nn.relu(%x) }")
    assert isinstance(func, relay.Function) and func.checked_type == FuncType(
        [TensorType((2,))], TensorType((2,)))
    assert isinstance(parse_expr("@g(%x)").op, relay.GlobalVar)
    assert isinstance(parse_expr("const([1, 2], int64)"), relay.Constant)
    with pytest.raises(ParseError, match="expected the end of the expression"):
        parse_expr("%x %y")


# -- PrimFunc dispatch ---------------------------------------------------------------------
@frozen(eq=False, repr=False)
class _FakePrimFunc(BaseFunc):
    """A stand-in PrimFunc: a tag string."""

    tag: str

    _sfields = (("tag", VALUE),)

    @property
    def func_attrs(self):
        """No attributes."""
        return {}


def _fake_print_prim_func(name, func, meta):
    return f"prim_func @{name}() {{ {func.tag!r} }}\n".replace("'", '"')


def _fake_parse_prim_func(ts, meta):
    ts.expect_keyword("prim_func")
    name = ts.expect(GLOBAL).text[1:]
    ts.expect_punct("(")
    ts.expect_punct(")")
    ts.expect_punct("{")
    tag = ts.expect(STRING).text[1:-1]
    ts.expect_punct("}")
    return name, _FakePrimFunc(tag)


def test_prim_funcs_are_dispatched_to_the_tir_printer_and_parser(monkeypatch):
    printer = types.ModuleType("passhost.text.tir_printer")
    printer.print_prim_func = _fake_print_prim_func
    parser = types.ModuleType("passhost.text.tir_parser")
    parser.parse_prim_func = _fake_parse_prim_func
    monkeypatch.setitem(sys.modules, "passhost.text.tir_printer", printer)
    monkeypatch.setitem(sys.modules, "passhost.text.tir_parser", parser)
    x = relay.var("x", T23)
    main = relay.Function([x], relay.Call(relay.GlobalVar("kernel"), [x]))
    mod = IRModule({"kernel": _FakePrimFunc("loop"), "main": main, "k2": _FakePrimFunc("b")})
    text = print_module(mod)
    assert 'prim_func @kernel() { "loop" }\n\ndef @main' in text
    assert "@kernel(%x)" in text
    back = roundtrip(mod)
    assert back["main"].body.op is back.get_global_var("kernel")
