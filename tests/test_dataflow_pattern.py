"""The pattern language of passhost.relay.dataflow_pattern and its pattern-table registry."""

from __future__ import annotations

import numpy as np
import pytest

from passhost import relay
from passhost.errors import AttrError, UnknownNameError
from passhost.relay.dataflow_pattern import (
    is_constant,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match_bindings,
    wildcard,
)


def _conv_graph():
    x = relay.var("x", shape=(1, 2, 3, 3))
    w = relay.const(np.arange(4, dtype="float32").reshape(2, 2, 1, 1))
    b = relay.const(np.array([0.5, -0.5], dtype="float32"))
    conv = relay.nn.conv2d(x, w, strides=(1, 1))
    bias = relay.nn.bias_add(conv, b)
    return x, w, b, conv, bias, relay.nn.relu(bias)


def test_leaf_patterns():
    x, w, _, conv, _, relu = _conv_graph()
    assert wildcard().match(x) and wildcard().match(relu) and wildcard().match(w)
    assert is_constant().match(w) and not is_constant().match(x)
    assert is_var().match(x) and is_var("x").match(x)
    assert not is_var("y").match(x) and not is_var().match(conv)


def test_call_patterns_match_operator_arguments_and_arity():
    _, _, _, conv, bias, relu = _conv_graph()
    assert is_op("nn.conv2d")(wildcard(), is_constant()).match(conv)
    assert not is_op("nn.conv2d")(is_constant(), is_constant()).match(conv)
    assert not is_op("nn.conv2d")(wildcard()).match(conv)
    assert not is_op("nn.relu")(wildcard()).match(bias)
    # An operator pattern that is not called matches the operator itself, not its calls.
    assert is_op("nn.relu").match(relu.op)
    assert not is_op("nn.relu").match(relu)


def test_unknown_operator_lists_close_matches():
    with pytest.raises(UnknownNameError, match=r"did you mean 'nn\.conv2d'"):
        is_op("nn.conv2")
    with pytest.raises(TypeError, match="is_op takes an operator name"):
        is_op(relay.get_op("nn.relu"))
    with pytest.raises(TypeError, match="argument 0 of a call pattern must be a Pattern"):
        is_op("nn.relu")(relay.var("x"))


def test_optional_matches_with_and_without_the_option():
    _, _, _, conv, bias, relu = _conv_graph()
    base = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), is_constant())
    pattern = base.optional(lambda p: is_op("nn.relu")(p))
    assert pattern.match(relu) and pattern.match(bias)
    assert not pattern.match(conv)
    # The bindings of the longer form include the relu; of the shorter, only the base.
    assert match_bindings(pattern, relu)[base] is bias
    assert match_bindings(pattern, bias)[base] is bias


def test_alternatives_and_bindings():
    x, w, _, conv, bias, _ = _conv_graph()
    data, weight = wildcard(), is_constant()
    conv_p = is_op("nn.conv2d")(data, weight)
    pattern = is_op("nn.relu")(wildcard()) | is_op("nn.bias_add")(conv_p, is_constant())
    bindings = match_bindings(pattern, bias)
    assert bindings[data] is x and bindings[weight] is w and bindings[conv_p] is conv
    assert bindings[pattern] is bias
    assert match_bindings(pattern, conv) is None


def test_alternative_undoes_the_bindings_of_a_failed_branch():
    v = relay.var("v", shape=(2,))
    c = relay.const(np.ones(2, dtype="float32"))
    expr = relay.add(c, relay.nn.relu(v))
    x = wildcard()
    # The left branch binds x to c, then fails on relu(c); the right branch must see x free.
    pattern = is_op("add")(x, is_op("nn.relu")(x)) | is_op("add")(is_constant(), x)
    bindings = match_bindings(pattern, expr)
    assert bindings is not None and bindings[x] is expr.args[1]


def test_a_pattern_node_used_twice_matches_one_expression():
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
    x = wildcard()
    same = is_op("add")(x, x)
    assert same.match(relay.add(a, a))
    assert not same.match(relay.add(a, b))


def test_has_attr_on_calls_and_functions():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.const(np.ones((2, 2, 3, 3), dtype="float32"))
    conv = relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1))
    pattern = is_op("nn.conv2d")(wildcard(), wildcard())
    assert pattern.has_attr({"strides": [2, 2], "padding": (1, 1, 1, 1)}).match(conv)
    assert not pattern.has_attr({"strides": (1, 1)}).match(conv)
    assert not pattern.has_attr({"no_such_attribute": 1}).match(conv)
    p = relay.var("p", shape=(2,))
    composite = relay.Function([p], relay.nn.relu(p), attrs={"Composite": "ext.relu"})
    call = relay.Call(composite, [relay.var("y", shape=(2,))])
    assert is_op("nn.relu")(wildcard()).has_attr({}).match(composite.body)
    assert wildcard().has_attr({"Composite": "ext.relu"}).match(composite)
    assert wildcard().has_attr({"Composite": "ext.relu"})(wildcard()).match(call)
    assert not wildcard().has_attr({"Composite": "ext.conv"})(wildcard()).match(call)
    assert not wildcard().has_attr({"Composite": "ext.relu"}).match(p)


def test_has_dtype_and_has_shape():
    x = relay.var("x", shape=(1, 4), dtype="int8")
    y = relay.cast(x, "int32")
    assert wildcard().has_dtype("int8").match(x)
    assert not wildcard().has_dtype("int8").match(y)
    assert is_op("cast")(wildcard().has_dtype("int8")).has_dtype("int32").match(y)
    assert wildcard().has_shape((1, 4)).match(y) and wildcard().has_shape([1, 4]).match(y)
    assert not wildcard().has_shape((4, 1)).match(y)
    assert not is_op("cast").has_dtype("int32").match(y.op)
    with pytest.raises(AttrError, match="unknown dtype 'int7'"):
        wildcard().has_dtype("int7")


def test_tuple_patterns():
    x = relay.var("x", shape=(1, 2, 3, 3))
    gamma, beta = relay.const(np.ones(2, "float32")), relay.const(np.zeros(2, "float32"))
    bn = relay.nn.batch_norm(x, gamma, beta, beta, gamma)
    item = relay.TupleGetItem(bn, 0)
    tup = relay.Tuple([x, item])
    bn_p = is_op("nn.batch_norm")(wildcard(), *[is_constant() for _ in range(4)])
    assert is_tuple_get_item(bn_p, 0).match(item)
    assert is_tuple_get_item(bn_p).match(item)
    assert not is_tuple_get_item(bn_p, 1).match(item)
    assert is_tuple([is_var("x"), is_tuple_get_item(bn_p)]).match(tup)
    assert not is_tuple([is_var("x")]).match(tup)


def test_patterns_print_as_the_code_that_builds_them():
    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    pattern = conv.optional(lambda p: is_op("nn.relu")(p)).has_dtype("float32")
    assert repr(pattern) == ("(is_op('nn.relu')(is_op('nn.conv2d')(wildcard(), is_constant())) "
                             "| is_op('nn.conv2d')(wildcard(), is_constant()))"
                             ".has_dtype('float32')")
    assert repr(is_tuple_get_item(is_tuple([is_var("a")]), 0).has_shape((2,))) == \
        "is_tuple_get_item(is_tuple([is_var('a')]), 0).has_shape((2,))"
    assert repr(wildcard().has_attr({"strides": [1, 1]})) == \
        "wildcard().has_attr({'strides': (1, 1)})"


def test_matching_explores_only_as_deep_as_the_pattern():
    x = relay.var("x", shape=(4,))
    expr = x
    for _ in range(20000):
        expr = relay.nn.relu(expr)
    pattern = is_op("nn.relu")(is_op("nn.relu")(wildcard()))
    bindings = match_bindings(pattern, expr)
    assert bindings is not None and len(bindings) == 5  # 2 ops, 2 calls, the wildcard
