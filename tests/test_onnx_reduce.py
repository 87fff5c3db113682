"""The ONNX variadic operators (Min, Max, Sum, Mean), reductions, ArgMax/ArgMin and TopK
against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.relay.visitor import post_order  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    check,
    make_model,
    node,
    rand,
    run_onnxruntime,
    run_passhost,
)

RNG = np.random.default_rng(20261123)

REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def ints(dtype: str, *shape: int, high: int = 6) -> np.ndarray:
    """Integers in [-high, high) (in [0, high) for unsigned dtypes)."""
    low = 0 if np.dtype(dtype).kind == "u" else -high
    return RNG.integers(low, high, size=shape).astype(dtype)


def data_for(op: str, *shape: int) -> np.ndarray:
    """Float32 data suiting ``op``: positive for ReduceLogSum, near 1 for ReduceProd."""
    if op == "ReduceLogSum":
        return rand(*shape, positive=True)
    if op == "ReduceProd":
        return (1 + 0.3 * rand(*shape)).astype("float32")
    return rand(*shape)


def reduce_model(op: str, axes: list[int] | None, opset: int, **attrs: int):
    """A Reduce* node with ``axes`` as its version takes them (input or attribute)."""
    axes_as_input = opset >= (13 if op == "ReduceSum" else 18)
    if axes is not None and not axes_as_input:
        attrs["axes"] = axes
    init = {"axes": np.array(axes, "int64")} if axes is not None and axes_as_input else {}
    return [node(op, ["x", *init], **attrs)], init


def assert_same(got, want, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# -- Max, Min, Sum, Mean -------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("shapes", [[(3, 4)], [(2, 3, 4), (4,)], [(2, 1, 4), (3, 1), (1,)]])
def test_variadic_operators_broadcast_any_number_of_inputs(op, shapes):
    inputs = {f"x{i}": rand(*s) for i, s in enumerate(shapes)}
    check([node(op, list(inputs))], inputs, opset=13)


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint64",
                                   "float16", "float64"])
def test_max_and_min_of_every_dtype(op, dtype):
    inputs = {"a": ints(dtype, 2, 3, 4), "b": ints(dtype, 3, 1), "c": ints(dtype, 4)}
    check([node(op, list(inputs))], inputs, opset=13)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_operators_of_opset_6_take_equal_shapes(op):
    inputs = {"a": rand(2, 3), "b": rand(2, 3), "c": rand(2, 3)}
    check([node(op, list(inputs))], inputs, opset=6)


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(["Max", "Min", "Sum", "Mean"]),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4,
                                                max_side=4),
       count=st.integers(1, 3))
def test_variadic_operators_match_onnxruntime(op, shapes, count):
    """Property: any 1-3 mutually broadcastable inputs give onnxruntime's result."""
    inputs = {f"x{i}": rand(*s) for i, s in enumerate(shapes.input_shapes[:count])}
    check([node(op, list(inputs))], inputs, opset=13)


# -- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axes, keepdims", [(None, 1), (None, 0), ([1], 0), ([0, -1], 1)])
@pytest.mark.parametrize("opset", [11, 18])
def test_reductions_with_axes_as_attribute_or_input(op, axes, keepdims, opset):
    nodes, init = reduce_model(op, axes, opset, keepdims=keepdims)
    check(nodes, {"x": data_for(op, 2, 3, 4)}, init, opset=opset)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("axes", [None, []])
@pytest.mark.parametrize("noop", [0, 1])
def test_empty_axes_reduce_everything_or_nothing(op, axes, noop):
    """Without axes, noop_with_empty_axes=1 reduces each element alone (ReduceL1 gives
    abs(x)); otherwise every axis is reduced."""
    nodes, init = reduce_model(op, axes, 18, noop_with_empty_axes=noop)
    check(nodes, {"x": data_for(op, 3, 4)}, init, opset=18)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions_over_an_empty_set_give_their_identity(op, keepdims):
    nodes, init = reduce_model(op, [1], 18, keepdims=keepdims)
    check(nodes, {"x": np.zeros((2, 0, 3), "float32")}, init, opset=18)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_reductions_over_an_empty_set(op, dtype):
    nodes, init = reduce_model(op, [0], 18)
    check(nodes, {"x": np.zeros((0, 3), dtype)}, init, opset=18)


def test_a_reduction_with_an_empty_output_reduces_nothing():
    nodes, init = reduce_model("ReduceMax", [1], 18, keepdims=0)
    check(nodes, {"x": np.zeros((0, 3), "float32")}, init, opset=18)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_reductions(op, dtype):
    x = ints(dtype, 3, 4) if op != "ReduceLogSum" else ints(dtype, 3, 4) % 6 + 1
    nodes, init = reduce_model(op, [1], 18)
    check(nodes, {"x": x}, init, opset=18)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_max_and_min_reductions_of_bytes(op, dtype):
    nodes, init = reduce_model(op, [0], 18, keepdims=0)
    check(nodes, {"x": ints(dtype, 4, 5)}, init, opset=18)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_max_and_min_reductions_of_bools(op):
    nodes, init = reduce_model(op, [1], 20)
    check(nodes, {"x": RNG.integers(0, 2, size=(3, 4)).astype(bool)}, init, opset=20)


@pytest.mark.parametrize("op, identity", [("ReduceMax", False), ("ReduceMin", True)])
def test_max_and_min_reductions_of_an_empty_set_of_bools(op, identity):
    """onnxruntime rejects these; ONNX defines them (False < True)."""
    x = np.zeros((3, 0), bool)
    nodes, init = reduce_model(op, [1], 20, keepdims=0)
    (got,) = run_passhost(make_model(nodes, {"x": x}, init, opset=20), {"x": x})
    np.testing.assert_array_equal(got, np.full(3, identity))
    assert got.dtype == bool


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceL1", "ReduceL2", "ReduceLogSumExp"])
def test_reductions_of_a_scalar(op):
    check([node(op, ["x"])], {"x": np.array(-2.5, "float32")}, opset=13)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceL2", "ReduceLogSumExp"])
def test_float16_reductions(op):
    x = rand(3, 16).astype("float16")
    model = make_model([node(op, ["x"], axes=[1])], {"x": x}, opset=11)
    assert_same(run_passhost(model, {"x": x}), run_onnxruntime(model, {"x": x}),
                rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_log_sum_exp_neither_overflows_nor_loses_infinities(dtype, keepdims):
    inf = np.inf
    x = np.array([[1000, 1000, 999], [-1000, -1000, -1001], [-inf, -inf, -inf],
                  [inf, 1, 2], [-inf, 0, 0]], dtype)
    model = make_model([node("ReduceLogSumExp", ["x"], axes=[1], keepdims=keepdims)],
                       {"x": x}, opset=13)
    (got,) = run_passhost(model, {"x": x})
    log_sum = np.log(1 + 1 + np.exp(-1.0))
    want = np.array([1000 + log_sum, -1000 + log_sum, -inf, inf, np.log(2)], dtype)
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-6)
    assert got.dtype == dtype and got.shape == ((5, 1) if keepdims else (5,))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), op=st.sampled_from(REDUCTIONS), keepdims=st.sampled_from([0, 1]))
def test_reductions_match_onnxruntime(data, op, keepdims):
    """Property: any shape, any distinct axes (either sign) give onnxruntime's result."""
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    rank = len(shape)
    chosen = data.draw(st.lists(st.integers(0, rank - 1), max_size=rank, unique=True))
    axes = [a - rank if data.draw(st.booleans()) else a for a in chosen]
    nodes, init = reduce_model(op, axes or None, 18, keepdims=keepdims)
    check(nodes, {"x": data_for(op, *shape)}, init, opset=18)


# -- ArgMax, ArgMin ------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 2, -2])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions_pick_the_first_or_last_of_ties(op, axis, keepdims, last):
    x = ints("int32", 3, 4, 5, high=2)  # few values: many ties
    check([node(op, ["x"], axis=axis, keepdims=keepdims, select_last_index=last)], {"x": x},
          opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("opset, attrs", [(6, {}), (11, {"axis": -1, "keepdims": 0})])
def test_arg_reductions_of_older_opsets(op, opset, attrs):
    check([node(op, ["x"], **attrs)], {"x": rand(3, 4)}, opset=opset)


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float16", "float64"])
def test_argmax_of_other_dtypes(dtype):
    check([node("ArgMax", ["x"], axis=1)], {"x": ints(dtype, 4, 7)}, opset=13)


# -- TopK ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis, k", [(-1, 3), (0, 2), (1, 5), (1, 0)])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_topk_with_ties_lower_index_first(largest, axis, k, dtype):
    x = ints(dtype, 4, 5, high=3)  # few values: many ties
    check([node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)], {"x": x},
          {"k": np.array([k], "int64")}, outputs=("v", "i"), opset=11)


@pytest.mark.parametrize("opset", [1, 9])
def test_topk_with_k_as_attribute(opset):
    check([node("TopK", ["x"], ["v", "i"], k=2)], {"x": rand(3, 6)}, outputs=("v", "i"),
          opset=max(opset, 6))


def test_topk_of_version_10_takes_k_as_input():
    check([node("TopK", ["x", "k"], ["v", "i"], axis=0)], {"x": rand(6, 3)},
          {"k": np.array([6], "int64")}, outputs=("v", "i"), opset=10)


def test_topk_unsorted_gives_the_same_elements():
    x = rand(3, 8)
    model = make_model([node("TopK", ["x", "k"], ["v", "i"], sorted=0)], {"x": x},
                       {"k": np.array([4], "int64")}, outputs=("v", "i"), opset=11)
    got, want = run_passhost(model, {"x": x}), run_onnxruntime(model, {"x": x})
    np.testing.assert_array_equal(np.sort(got[1], axis=1), np.sort(want[1], axis=1))
    np.testing.assert_array_equal(np.take_along_axis(x, got[1], axis=1), got[0])


def test_topk_values_alone_may_be_used():
    check([node("TopK", ["x", "k"], ["v", "i"])], {"x": rand(3, 6)},
          {"k": np.array([2], "int64")}, outputs=("v",), opset=11)


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, init, opset, message", [
    ([node("ReduceSum", ["x"], axes=[3])], {}, 11,
     r"ReduceSum node 'ReduceSum_\d+'.*axis in \[-3, 3\), found 3"),
    ([node("ReduceL2", ["x", "a"])], {"a": np.array([1, -2], "int64")}, 18,
     r"ReduceL2 node .*distinct axes, found \[1, -2\]"),
    ([node("ReduceMax", ["x", "x"])], {}, 18,
     r"ReduceMax node .*input 1 \('x'\) must be known while importing"),
    ([node("ArgMax", ["x"], axis=-4)], {}, 13, r"ArgMax node .*axis in \[-3, 3\), found -4"),
    ([node("TopK", ["x", "k"], ["v", "i"])], {"k": np.array([5], "int64")}, 11,
     r"TopK node .*k in \[0, 4\] \(the length of axis 2\), found 5"),
    ([node("TopK", ["x", "k"], ["v", "i"])], {"k": np.array([-1], "int64")}, 11,
     r"TopK node .*k in \[0, 4\].*found -1"),
    ([node("TopK", ["x", "k"], ["v", "i"])], {"k": np.array([1, 2], "int64")}, 11,
     r"TopK node .*one k, found \[1, 2\]"),
    ([node("TopK", ["x"], ["v", "i"])], {}, 11,
     r"TopK node .*expected 2 inputs \(TopK version 11\), found 1"),
    ([node("TopK", ["x", "x"], ["v", "i"])], {}, 11, r"TopK node .*must be known"),
    ([node("TopK", ["x"], ["v", "i"], k=1, axis=3)], {}, 9, r"TopK node .*axis in \[-3, 3\)"),
    ([node("Max", [])], {}, 13,
     r"Max node .*expected at least 1 inputs \(Max version 13\), found 0"),
    ([node("Sum", ["x", "n"])], {"n": np.ones(4, "int32")}, 13, r"Sum node 'Sum_\d+'"),
])
def test_malformed_nodes_name_the_node(nodes, init, opset, message):
    outputs = [o for o in nodes[-1].output if o]
    model = make_model(nodes, {"x": rand(2, 3, 4)}, init, outputs=outputs, opset=opset)
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(model)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_reductions_of_an_empty_axis_are_rejected(op):
    model = make_model([node(op, ["x"], axis=1)], {"x": np.zeros((2, 0), "float32")},
                       opset=13)
    with pytest.raises(OnnxImportError, match=rf"{op} node .*non-empty axis 1"):
        from_onnx(model)


def test_shape_arithmetic_folds_to_constants():
    """Reductions, ArgMax, TopK and Max of a shape are known while importing."""
    nodes = [node("Shape", ["x"], ["s"]), node("ReduceProd", ["s"], ["p"], keepdims=0),
             node("ReduceMax", ["s"], ["m"]), node("Max", ["s", "m"], ["mm"]),
             node("ArgMax", ["s"], ["am"]), node("TopK", ["s", "k"], ["tv", "ti"]),
             node("Cast", ["p"], ["pf"], to=onnx.TensorProto.FLOAT),
             node("Mul", ["x", "pf"], ["y"])]
    outputs = ("y", "mm", "am", "tv", "ti")
    init = {"k": np.array([2], "int64")}
    model = make_model(nodes, {"x": rand(2, 3, 4)}, init, outputs=outputs, opset=13)
    mod, _ = from_onnx(model)
    ops = {getattr(n.op, "name", None) for n in post_order(mod["main"]) if hasattr(n, "op")}
    assert ops == {"multiply"}
    check(nodes, {"x": rand(2, 3, 4)}, init, outputs=outputs, opset=13)
