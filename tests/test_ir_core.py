"""Core IR: types, attribute fields, expressions, modules, visitors, type inference,
structural equality and the interpreter's input handling."""

from __future__ import annotations

import numpy as np
import pytest

from passhost import relay
from passhost.errors import AttrError, IRTypeError, PasshostError, UnknownNameError
from passhost.ir import (
    FrozenDict,
    FuncType,
    IRModule,
    TensorType,
    TupleType,
    structural_equal,
    structural_hash,
)
from passhost.ir.attrs import Attrs, attrs_class, bool_field, int_field, ints_field, str_field
from passhost.relay.interpreter import Interpreter, KernelError
from passhost.relay.op.registry import OpPattern, define_op

CHAIN = 100_000


def chain(x: relay.Var, n: int) -> relay.Expr:
    e: relay.Expr = x
    for _ in range(n):
        e = relay.nn.relu(e)
    return e


# -- types -----------------------------------------------------------------------------
def test_tensor_type_is_a_value():
    a = TensorType([1, 3], "float32")
    assert a == TensorType((1, 3), "float32")
    assert hash(a) == hash(TensorType((1, 3)))
    assert a != TensorType((1, 3), "int8")
    assert str(a) == "Tensor[(1, 3), float32]"
    assert a.size == 3 and a.ndim == 2


@pytest.mark.parametrize("shape", [(1, -2), ("a",), (1.5,), 7])
def test_tensor_type_rejects_bad_shapes(shape):
    with pytest.raises(AttrError, match="shape"):
        TensorType(shape, "float32")


def test_tensor_type_rejects_unknown_dtype():
    with pytest.raises(AttrError, match="unknown dtype 'float8'"):
        TensorType((1,), "float8")


def test_tuple_and_func_types_print():
    t = TupleType([TensorType((2,)), TensorType((3,), "int8")])
    assert str(t) == "(Tensor[(2), float32], Tensor[(3), int8])"
    f = FuncType([TensorType((2,))], t)
    assert str(f).startswith("fn (Tensor[(2), float32]) -> (")


# -- attribute fields ---------------------------------------------------------------------
@attrs_class
class _DemoAttrs(Attrs):
    strides: tuple[int, ...] = ints_field((1, 1), lengths=(2,), expand=2)
    groups: int = int_field(1, minimum=1)
    layout: str = str_field("NCHW", choices=("NCHW", "NHWC"))
    flag: bool = bool_field(False)


def test_attr_fields_normalise_values():
    a = _DemoAttrs(strides=[2, 3], groups=np.int64(2), flag=1)
    assert a.strides == (2, 3) and type(a.groups) is int and a.flag is True
    assert _DemoAttrs(strides=2).strides == (2, 2)
    assert a == _DemoAttrs(strides=(2, 3), groups=2, flag=True)
    assert a.with_changes(groups=4).groups == 4


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"strides": "x"}, "attribute 'strides': expected a tuple of 2 ints, found 'x'"),
    ({"strides": (1, 2, 3)}, "attribute 'strides'"),
    ({"groups": 0}, "attribute 'groups': expected an int >= 1, found 0"),
    ({"layout": "NCWH"}, "attribute 'layout': expected one of 'NCHW', 'NHWC'"),
    ({"flag": 2}, "attribute 'flag': expected a bool"),
])
def test_attr_fields_reject_bad_values(kwargs, fragment):
    with pytest.raises(AttrError) as info:
        _DemoAttrs(**kwargs)
    assert fragment in str(info.value)


# -- expressions --------------------------------------------------------------------------
def test_constant_is_read_only_and_does_not_alias_the_callers_array():
    arr = np.arange(4, dtype="float32")
    c = relay.Constant(arr)
    arr[0] = 42
    assert c.data[0] == 0
    with pytest.raises(ValueError):
        c.data[1] = 5
    assert c.checked_type == TensorType((4,), "float32")


def test_const_helper_dtypes():
    assert relay.const(1.0).data.dtype == np.float32
    assert relay.const(3).data.dtype == np.int32
    assert relay.const([1, 2], "int8").checked_type == TensorType((2,), "int8")


def test_call_checks_its_attrs_and_callee():
    x = relay.var("x", shape=(2,))
    with pytest.raises(IRTypeError, match=r"nn\.relu takes no attributes"):
        relay.Call(relay.get_op("nn.relu"), [x], _DemoAttrs())
    with pytest.raises(IRTypeError, match="callee must be"):
        relay.Call(x, [x])


def test_unknown_operator_lists_close_matches():
    with pytest.raises(UnknownNameError) as info:
        relay.get_op("nn.rleu")
    assert "nn.relu" in str(info.value)


def test_builder_takes_inputs_by_keyword_and_rejects_unknown_attrs():
    x = relay.var("x", shape=(2,))
    assert relay.nn.relu(data=x).args == (x,)
    with pytest.raises(TypeError, match="missing input 'rhs'"):
        relay.add(x)
    with pytest.raises(AttrError, match="takes no attributes"):
        relay.nn.relu(x, alpha=1)


def test_expressions_are_immutable():
    x = relay.var("x", shape=(2,))
    call = relay.nn.relu(x)
    with pytest.raises(AttributeError):
        call.args = ()  # type: ignore[misc]


def test_function_attrs_are_frozen_and_copied_on_change():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.nn.relu(x))
    g = f.with_attr("Primitive", 1)
    assert f.attrs == {} and g.attrs == {"Primitive": 1}
    assert isinstance(g.attrs, FrozenDict)
    assert g.params == f.params and g.body is f.body


def test_free_vars_in_post_order():
    a, b, c = (relay.var(n, shape=(2,)) for n in "abc")
    e = relay.add(relay.add(b, a), relay.add(c, b))
    assert [v.name_hint for v in relay.analysis.free_vars(e)] == ["b", "a", "c"]
    f = relay.Function([a], relay.add(a, b))
    assert [v.name_hint for v in relay.analysis.free_vars(f)] == ["b"]


# -- modules ------------------------------------------------------------------------------
def test_module_maps_names_to_functions():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.nn.relu(x))
    mod = IRModule.from_expr(relay.nn.relu(x))
    assert list(mod) == ["main"] and "main" in mod
    gv = mod.get_global_var("main")
    mod2 = mod.with_function("other", f)
    assert "other" not in mod and "other" in mod2
    assert mod2.get_global_var("main") is gv
    mod2["main"] = f
    assert mod2["main"] is f and mod["main"] is not f
    assert mod.with_attr("executor", "graph").attrs["executor"] == "graph"
    assert mod.attrs == {}
    with pytest.raises(UnknownNameError, match="did you mean 'main'"):
        mod["mian"]


def test_module_rejects_non_functions():
    with pytest.raises(PasshostError, match="a module holds functions"):
        IRModule({"main": relay.var("x", shape=(1,))})


# -- visitors -----------------------------------------------------------------------------
def test_post_order_visits_each_node_once_children_first():
    x = relay.var("x", shape=(2,))
    r = relay.nn.relu(x)
    e = relay.add(r, r)
    order = relay.post_order(e)
    assert order == [x, r, e]
    seen = []
    relay.post_order_visit(e, seen.append)
    assert relay.get_op("nn.relu") in seen and relay.get_op("add") in seen


def test_mutator_keeps_unchanged_graphs_and_sharing():
    x = relay.var("x", shape=(2,))
    r = relay.nn.relu(x)
    f = relay.Function([x], relay.add(r, r))
    assert relay.ExprMutator().visit(f) is f

    class ReluToNeg(relay.ExprMutator):
        def visit_call(self, call, op, args):
            if call.op is relay.get_op("nn.relu"):
                return relay.add(args[0], args[0])
            return super().visit_call(call, op, args)

    g = ReluToNeg().visit(f)
    assert g is not f
    assert g.body.args[0] is g.body.args[1]  # the shared node stays shared
    assert g.body.args[0].op.name == "add"


def test_mutator_binding_a_parameter_drops_it():
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    f = relay.Function([x, y], relay.add(x, y))

    class Bind(relay.ExprMutator):
        def visit_var(self, var):
            return relay.const(np.ones(2, "float32")) if var is y else var

    g = Bind().visit(f)
    assert g.params == (x,)
    np.testing.assert_array_equal(relay.evaluate(g, np.zeros(2, "float32")), np.ones(2))


def test_deep_chain_is_visited_typed_and_compared_without_recursion():
    x = relay.var("x", shape=(4,))
    e1, e2 = chain(x, CHAIN), chain(x, CHAIN)
    assert len(relay.post_order(e1)) == CHAIN + 1
    assert e1.checked_type == TensorType((4,))
    assert structural_equal(e1, e2)
    assert structural_hash(e1) == structural_hash(e2)
    f = relay.Function([x], e1)
    assert relay.ExprMutator().visit(f) is f
    out = relay.evaluate(f, np.array([-1, 0, 1, 2], "float32"))
    np.testing.assert_array_equal(out, [0, 0, 1, 2])


# -- type inference -----------------------------------------------------------------------
def test_type_error_names_op_argument_expected_and_found():
    x = relay.var("x", shape=(2, 3))
    bad = relay.add(x, relay.var("y", shape=(4,)))
    with pytest.raises(IRTypeError) as info:
        _ = bad.checked_type
    err = info.value
    assert (err.op, err.argument) == ("add", "rhs")
    assert "Tensor[(4), float32]" in str(err) and "broadcastable" in str(err)


def test_type_error_for_dtype_mismatch():
    bad = relay.add(relay.var("x", shape=(2,)), relay.var("y", shape=(2,), dtype="int8"))
    with pytest.raises(IRTypeError, match="argument 'rhs' expected dtype float32"):
        _ = bad.checked_type


def test_untyped_variable_is_reported():
    with pytest.raises(IRTypeError, match="%x has no type annotation"):
        _ = relay.nn.relu(relay.var("x")).checked_type


def test_tuple_projection_types():
    x = relay.var("x", shape=(2,))
    t = relay.Tuple([x, relay.const(1, "int8")])
    assert t[1].checked_type == TensorType((), "int8")
    with pytest.raises(IRTypeError, match="out of range"):
        _ = t[2].checked_type
    with pytest.raises(IRTypeError, match="expected a tuple"):
        _ = x[0].checked_type


def test_function_calls_are_checked_against_the_callee():
    p = relay.var("p", shape=(2,))
    f = relay.Function([p], relay.nn.relu(p), attrs={"Primitive": 1})
    ok = relay.Call(f, [relay.var("a", shape=(2,))])
    assert ok.checked_type == TensorType((2,))
    bad = relay.Call(f, [relay.var("a", shape=(3,))])
    with pytest.raises(IRTypeError, match=r"argument 0 expected Tensor\[\(2\), float32\]"):
        _ = bad.checked_type
    wrong_ret = relay.Function([p], p, ret_type=TensorType((2,), "int8"))
    with pytest.raises(IRTypeError, match="declared return type"):
        _ = wrong_ret.checked_type


def test_global_var_calls_use_the_callee_type():
    ty = FuncType([TensorType((2,))], TensorType((2,)))
    gv = relay.GlobalVar("helper", ty)
    x = relay.var("x", shape=(2,))
    assert relay.Call(gv, [x]).checked_type == TensorType((2,))
    with pytest.raises(IRTypeError, match="@untyped has no type"):
        _ = relay.Call(relay.GlobalVar("untyped"), [x]).checked_type


# -- structural equality --------------------------------------------------------------------
def _func(name_x: str = "x", swap: bool = False, value: float = 1.0) -> relay.Function:
    x, y = relay.var(name_x, shape=(2,)), relay.var("y", shape=(2,))
    a, b = (y, x) if swap else (x, y)
    return relay.Function([x, y], relay.add(relay.add(a, b), relay.const(value)))


def test_structural_equality_is_up_to_renaming_of_bound_variables():
    assert structural_equal(_func(), _func("renamed"))
    assert structural_hash(_func()) == structural_hash(_func("renamed"))


@pytest.mark.parametrize("other", [_func(swap=True), _func(value=2.0)])
def test_structural_equality_sees_differences(other):
    assert not structural_equal(_func(), other)
    assert structural_hash(_func()) != structural_hash(other)


def test_free_variables_are_equal_only_to_themselves_by_default():
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
    assert structural_equal(relay.nn.relu(a), relay.nn.relu(a))
    assert not structural_equal(relay.nn.relu(a), relay.nn.relu(b))
    assert structural_equal(relay.nn.relu(a), relay.nn.relu(b), map_free_vars=True)


def test_structural_equality_compares_attrs_and_dtypes():
    x = relay.var("x", shape=(2,))
    assert not structural_equal(relay.const(1, "int8"), relay.const(1, "int32"))
    f1 = relay.Function([x], x, attrs={"Primitive": 1})
    f2 = relay.Function([x], x, attrs={"Primitive": 0})
    assert not structural_equal(f1, f2)


def test_module_structural_equality():
    m1 = IRModule({"main": _func(), "aux": _func(value=3.0)})
    m2 = IRModule({"aux": _func("z", value=3.0), "main": _func("q")})
    assert structural_equal(m1, m2)
    assert structural_hash(m1) == structural_hash(m2)
    assert not structural_equal(m1, m2.with_attr("k", 1))
    assert not structural_equal(m1, m2.without("aux"))


# -- interpreter ----------------------------------------------------------------------------
def test_interpreter_checks_inputs_by_position_and_name():
    f = _func()
    one = np.ones(2, "float32")
    np.testing.assert_array_equal(relay.evaluate(f, one, one), [3, 3])
    np.testing.assert_array_equal(Interpreter().run(f, {"x": one, "y": one}), [3, 3])
    with pytest.raises(IRTypeError, match=r"input %x expected Tensor\[\(2\), float32\]"):
        relay.evaluate(f, np.ones(2, "float64"), one)
    with pytest.raises(PasshostError, match="missing inputs"):
        Interpreter().run(f, {"x": one})
    with pytest.raises(PasshostError, match="expected 2 inputs, found 1"):
        relay.evaluate(f, one)


def test_interpreter_never_mutates_inputs():
    x = relay.var("x", shape=(3,))
    arr = np.array([-1, 2, -3], "float32")
    before = arr.copy()
    relay.evaluate(relay.Function([x], relay.nn.relu(x)), arr)
    np.testing.assert_array_equal(arr, before)


def test_interpreter_reports_a_kernel_that_breaks_its_type():
    broken = define_op(
        "test.broken_kernel", inputs=("data",), type_rel=lambda args, _a: args.tensor(0),
        compute=lambda _a, x: x.astype("float64"), pattern=OpPattern.ELEMWISE)
    x = relay.var("x", shape=(2,))
    with pytest.raises(KernelError, match=r"test\.broken_kernel returned array"):
        relay.evaluate(relay.Function([x], broken(x)), np.ones(2, "float32"))


def test_interpreter_runs_nested_functions_and_tuples():
    p = relay.var("p", shape=(2,))
    inner = relay.Function([p], relay.Tuple([p, relay.nn.relu(p)]), attrs={"Primitive": 1})
    x = relay.var("x", shape=(2,))
    call = relay.Call(inner, [x])
    f = relay.Function([x], relay.add(call[0], call[1]))
    np.testing.assert_array_equal(relay.evaluate(f, np.array([-1, 2], "float32")), [-1, 4])
