"""The ONNX data movement operators against onnxruntime (or ONNX's reference evaluator for
operator versions onnxruntime lacks): shapes and constants, Expand, Tile, Range, CumSum and
CumProd, Trilu, gathers and scatters, OneHot, DepthToSpace/SpaceToDepth, ReverseSequence,
Einsum, Pad, Split, and the errors of malformed nodes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.relay import evaluate  # noqa: E402
from passhost.relay.op.movement import IndexRangeError  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    check,
    make_model,
    node,
    rand,
    run_onnxruntime,
    run_passhost,
)

RNG = np.random.default_rng(20260311)
i64 = np.int64


def ints(*values: int) -> np.ndarray:
    return np.array(values, dtype="int64")


def check_reference(nodes, inputs, initializers=None, outputs=("y",), opset=17):
    """Compile with passhost and compare with ONNX's reference evaluator (for operator
    versions onnxruntime does not implement)."""
    model = make_model(nodes, inputs, initializers, outputs, opset)
    want = ReferenceEvaluator(model).run(None, inputs)
    got = run_passhost(model, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def imported(nodes, inputs, initializers=None, outputs=("y",), opset=17):
    """The imported values of the model's outputs (interpreted, not compiled: fast)."""
    model = make_model(nodes, inputs, initializers, outputs, opset)
    mod, params = from_onnx(model)
    return evaluate(mod, **inputs, **params), model


def assert_matches(text: str, pattern: str) -> None:
    assert re.search(pattern, text), text


def import_error(nodes, inputs, initializers=None, opset=17, outputs=("y",)):
    with pytest.raises(OnnxImportError) as info:
        from_onnx(make_model(nodes, inputs, initializers, outputs, opset))
    return str(info.value)


# -- shapes and constants ------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "target"), [
    ((3, 1), (2, 1, 6)), ((3, 1), (3, 4)), ((2, 3), (1, 1)), ((4,), (2, 3, 1)), ((1,), ()),
])
def test_expand_broadcasts_both_ways(shape, target):
    check([node("Expand", ["x", "s"])], {"x": rand(*shape)}, {"s": ints(*target)})


def test_expand_to_its_own_shape_is_the_input():
    values, _ = imported([node("Expand", ["x", "s"]), node("Relu", ["y"], ["z"])],
                         {"x": rand(2, 3)}, {"s": ints(1, 3)}, outputs=("z",))
    assert values.shape == (2, 3)


@pytest.mark.parametrize("repeats", [(1, 1, 1), (2, 1, 3), (1, 0, 2)])
def test_tile(repeats):
    check([node("Tile", ["x", "r"])], {"x": rand(2, 3, 2)}, {"r": ints(*repeats)})


@pytest.mark.parametrize(("start", "limit", "delta"), [
    (3, 9, 3), (10, 4, -2), (0, 5, 1), (5, 5, 1), (4, 10, -1), (1.5, 4.0, 0.5), (2.0, -1.0, -0.7),
])
def test_range_of_known_values_folds(start, limit, delta):
    dtype = "int32" if isinstance(start, int) else "float32"
    init = {n: np.array(v, dtype) for n, v in zip("sld", (start, limit, delta))}
    model = make_model([node("Range", ["s", "l", "d"]), node("Add", ["y", "y"], ["z"])],
                       {"x": rand(1)}, init, outputs=("z",))
    want = run_onnxruntime(model, {"x": rand(1)})[0]
    mod, params = from_onnx(model)
    got = evaluate(mod, x=rand(1), **params)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_size_shape_and_eyelike_are_constants():
    nodes = [node("Size", ["x"], ["n"]), node("Shape", ["x"], ["s"], start=-2, end=10),
             node("EyeLike", ["x2"], ["e"], k=1, dtype=TensorProto.INT32),
             node("EyeLike", ["x2"], ["f"], k=-2)]
    check(nodes, {"x": rand(2, 3, 4), "x2": rand(3, 5)}, outputs=("n", "s", "e", "f"))


def test_constant_of_shape_with_an_integer_value_and_an_empty_shape():
    value = onnx.helper.make_tensor("v", TensorProto.INT32, [1], [7])
    nodes = [node("ConstantOfShape", ["s"], ["c"], value=value),
             node("ConstantOfShape", ["e"], ["d"])]
    check(nodes, {"x": rand(1)}, {"s": ints(2, 3), "e": ints(0, 4)}, outputs=("c", "d"))


@pytest.mark.parametrize(("shape", "target", "allowzero"), [
    ((2, 3, 4), (4, 0, -1), 0), ((2, 3, 4), (0, 12), 0), ((0, 3, 4), (3, 4, 0), 1),
    ((2, 3, 4), (-1,), 1), ((2, 3, 4), (2, 0, 2, 2), 0),
])
def test_reshape_with_copied_and_literal_zeros(shape, target, allowzero):
    check([node("Reshape", ["x", "s"], allowzero=allowzero)], {"x": rand(*shape)},
          {"s": ints(*target)}, opset=14)


def test_squeeze_unsqueeze_and_gather_with_computed_negative_indices():
    nodes = [node("Unsqueeze", ["x", "a"], ["u"]), node("Squeeze", ["u", "b"], ["s"]),
             node("Gather", ["s", "i"], ["y"], axis=-1)]
    check(nodes, {"x": rand(3, 4), "i": ints(-1, 0, -4, 2)},
          {"a": ints(-1, 0), "b": ints(-1)}, opset=13)


@pytest.mark.parametrize(("length", "count", "init", "attrs", "opset"), [
    (7, 4, {}, {"num_outputs": 4}, 18),
    (8, 3, {}, {"num_outputs": 3}, 18),
    (6, 3, {"split": ints(0, 6, 0)}, {}, 13),
    (0, 3, {"split": ints(0, 0, 0)}, {}, 13),
    (6, 2, {}, {"split": [2, 4]}, 11),
    (6, 3, {}, {}, 11),
])
def test_split(length, count, init, attrs, opset):
    outputs = [f"y{i}" for i in range(count)]
    inputs = ["x", *init]
    check([node("Split", inputs, outputs, axis=1, **attrs)], {"x": rand(2, length)}, init,
          outputs=outputs, opset=opset)


# -- pad -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "wrap"])
@pytest.mark.parametrize(("pads", "axes"), [
    ((1, 0, 2, 0, 2, 1), None), ((2, 2, 1, 2), (-1, 0)), ((-1, 2, 1, -2), (1, 2)),
])
def test_pad_modes_axes_and_negative_pads(mode, pads, axes):
    init = {"p": ints(*pads), "v": np.array(2.5, "float32")}
    inputs = ["x", "p", "v"]
    if axes is not None:
        init["a"] = ints(*axes)
        inputs.append("a")
    check([node("Pad", inputs, mode=mode)], {"x": rand(3, 4, 5)}, init, opset=19)


def test_pad_with_a_computed_constant_value():
    check([node("Pad", ["x", "p", "v"])], {"x": rand(2, 3), "v": np.array(-4.0, "float32")},
          {"p": ints(1, 0, 0, 2)}, opset=13)


def test_pad_before_version_11_takes_attributes():
    check([node("Pad", ["x"], pads=[0, 1, 2, 0], value=1.5, mode="constant")],
          {"x": rand(3, 2)}, opset=10)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_pad_matches_onnxruntime(data):
    """Property: random pads (negative ones crop) in every mode equal onnxruntime's."""
    mode = data.draw(st.sampled_from(["constant", "edge", "reflect", "wrap"]))
    low = -1 if mode == "constant" else 0
    pads = [data.draw(st.integers(low, 3)) for _ in range(4)]
    x = rand(4, 5)
    values, model = imported([node("Pad", ["x", "p"], mode=mode)], {"x": x},
                             {"p": ints(*pads)}, opset=19)
    np.testing.assert_array_equal(values, run_onnxruntime(model, {"x": x})[0])


# -- running sums and triangles ------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(axis=st.integers(-3, 2), exclusive=st.booleans(), reverse=st.booleans(),
       dtype=st.sampled_from(["float32", "int32", "float64"]))
def test_cumsum_matches_onnxruntime(axis, exclusive, reverse, dtype):
    x = (RNG.standard_normal((3, 4, 2)) * 4).astype(dtype)
    values, model = imported(
        [node("CumSum", ["x", "a"], exclusive=int(exclusive), reverse=int(reverse))],
        {"x": x}, {"a": np.array(axis, "int32")})
    np.testing.assert_allclose(values, run_onnxruntime(model, {"x": x})[0], rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumprod_against_the_reference(exclusive, reverse):
    x = rand(3, 4)
    check_reference([node("CumProd", ["x", "a"], exclusive=exclusive, reverse=reverse)],
                    {"x": x}, {"a": np.array(-1, "int64")}, opset=26)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -7, 9])
def test_trilu_with_known_k(upper, k):
    init = {} if k is None else {"k": np.array(k, "int64")}
    check([node("Trilu", ["x", *init], upper=upper)],
          {"x": RNG.integers(-9, 9, (2, 4, 5)).astype("int64")}, init, opset=14)


def test_trilu_with_a_computed_k():
    check([node("Trilu", ["x", "k"], upper=0)], {"x": rand(3, 3), "k": np.array(-1, "int64")},
          opset=14)


# -- gathers and scatters ------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_with_negative_computed_indices(axis):
    data = rand(3, 4)
    n = data.shape[axis]
    indices = RNG.integers(-n, n, (2, 3)).astype("int64")
    check([node("GatherElements", ["x", "i"], axis=axis)], {"x": data, "i": indices})


@pytest.mark.parametrize(("dshape", "ishape", "batch_dims"), [
    ((2, 2), (2, 2), 0), ((2, 2, 2), (2, 1, 2), 0), ((3, 4, 5), (6, 1), 0),
    ((2, 3, 4), (2, 1), 1), ((2, 3, 4, 5), (2, 3, 2, 1), 2),
])
def test_gather_nd(dshape, ishape, batch_dims):
    depth = ishape[-1]
    sizes = np.array(dshape[batch_dims:batch_dims + depth])
    indices = (RNG.integers(-100, 100, ishape) % (2 * sizes) - sizes).astype("int64")
    check([node("GatherND", ["x", "i"], batch_dims=batch_dims)],
          {"x": rand(*dshape), "i": indices}, opset=13)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements_reductions(reduction):
    indices = np.array([[1, -1, 1], [0, 2, 1]], "int64")
    data = rand(3, 3)
    updates = rand(2, 3)
    if reduction == "none":
        indices = np.array([[1, 0, 2], [0, 2, 1]], "int64")
    check([node("ScatterElements", ["x", "i", "u"], axis=0, reduction=reduction)],
          {"x": data, "i": indices, "u": updates}, opset=18)


def test_deprecated_scatter_is_scatter_elements():
    check([node("Scatter", ["x", "i", "u"], axis=1)],
          {"x": rand(2, 5), "i": np.array([[1, 3], [0, 4]], "int64"), "u": rand(2, 2)},
          opset=10)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize(("dshape", "indices", "ushape"), [
    ((4, 3, 2), [[1], [-1]], (2, 3, 2)),
    ((4, 3), [[0, 1], [3, -1], [0, 1]], (3,)),
])
def test_scatter_nd_reductions(reduction, dshape, indices, ushape):
    indices = np.array(indices, "int64")
    if reduction == "none":
        indices = indices[:2]
        ushape = (2, *ushape[1:])
    check([node("ScatterND", ["x", "i", "u"], reduction=reduction)],
          {"x": rand(*dshape), "i": indices, "u": rand(*ushape)}, opset=18)


@pytest.mark.parametrize(("nodes", "inputs", "message"), [
    ([node("GatherElements", ["x", "i"], axis=1)], {"i": np.array([[0, 3], [1, 1]], "int64")},
     r"gather_elements: index 3 is out of range \[-3, 3\) for axis 1"),
    ([node("GatherND", ["x", "i"])], {"i": np.array([[1, -4]], "int64")},
     r"gather_nd: index -4 is out of range \[-3, 3\) for axis 1"),
    ([node("ScatterND", ["x", "i", "u"])], {"i": np.array([[2]], "int64"), "u": rand(1, 3)},
     r"scatter_nd: index 2 is out of range \[-2, 2\) for axis 0"),
    ([node("ReverseSequence", ["x", "n"], batch_axis=0, time_axis=1)], {"n": ints(1, 4)},
     r"reverse_sequence: sequence length 4 is out of range \[0, 3\]"),
])
def test_out_of_range_computed_indices_fail_when_run(nodes, inputs, message):
    inputs = {"x": rand(2, 3), **inputs}
    model = make_model(nodes, inputs, opset=13)
    with pytest.raises(IndexRangeError, match=message):
        run_passhost(model, inputs)


@pytest.mark.parametrize(("indices", "axis", "values"), [
    (np.array([0, 3, -1, -4, 7, -9], "int64"), -1, None),
    (np.array([[1, 4], [-2, 0]], "int32"), 0, None),
    (np.array([[1.0, 4.0], [-2.0, 0.0]], "float32"), 1, None),
    (np.array([2, 0], "int64"), -2, np.array([3, 8], "int32")),
])
def test_one_hot(indices, axis, values):
    init = {"d": np.array(5.0, "float32")}
    inputs = {"i": indices, "v": values if values is not None else ints(-1, 4)}
    # onnxruntime implements few combinations of index, depth and value types.
    check_reference([node("OneHot", ["i", "d", "v"], axis=axis)], inputs, init, opset=11)


# -- rearrangements ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode):
    check([node("DepthToSpace", ["x"], blocksize=2, mode=mode)], {"x": rand(2, 8, 3, 2)},
          opset=13)


def test_space_to_depth():
    check([node("SpaceToDepth", ["x"], blocksize=3)], {"x": rand(2, 2, 6, 3)}, opset=13)


def test_space_to_depth_crd_against_the_reference():
    check_reference([node("SpaceToDepth", ["x"], blocksize=2, mode="CRD")],
                    {"x": rand(1, 3, 4, 6)}, opset=28)


@pytest.mark.parametrize(("batch_axis", "time_axis", "shape", "lengths"), [
    (1, 0, (4, 3, 2), (4, 1, 0)), (0, 1, (3, 4), (4, 1, 2)),
])
def test_reverse_sequence(batch_axis, time_axis, shape, lengths):
    check([node("ReverseSequence", ["x", "n"], batch_axis=batch_axis, time_axis=time_axis)],
          {"x": rand(*shape), "n": ints(*lengths)})


# -- einsum --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("equation", "shapes"), [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("bii->bi", [(2, 3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bnqd,bnkd->bnqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ab,b->a", [(3, 4), (4,)]),
])
def test_einsum(equation, shapes):
    inputs = {f"x{i}": rand(*s) for i, s in enumerate(shapes)}
    check([node("Einsum", list(inputs), equation=equation)], inputs, opset=12)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_gather_elements_and_scatter_elements_match_onnxruntime(data):
    """Property: random shapes, axes and (negative) indices."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ishape = tuple(data.draw(st.integers(1, n)) for n in shape)
    n = shape[axis]
    indices = RNG.integers(-n, n, ishape).astype("int64")
    x, u = rand(*shape), rand(*ishape)
    nodes = [node("GatherElements", ["x", "i"], ["g"], axis=axis),
             node("ScatterElements", ["x", "i", "u"], ["s"], axis=axis, reduction="add")]
    values, model = imported(nodes, {"x": x, "i": indices, "u": u}, outputs=("g", "s"),
                             opset=18)
    for got, want in zip(values, run_onnxruntime(model, {"x": x, "i": indices, "u": u})):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_einsum_matches_numpy(data):
    """Property: random equations (repeated letters, sums, outer and inner products, one to
    three operands, explicit or implicit outputs) equal numpy.einsum."""
    sizes = dict(zip("abcd", data.draw(st.lists(st.integers(1, 3), min_size=4, max_size=4))))
    term = st.text("abcd", max_size=4)
    terms = data.draw(st.lists(term, min_size=1, max_size=3))
    used = sorted(set("".join(terms)))
    equation = ",".join(terms)
    if data.draw(st.booleans()):
        equation += "->" + "".join(data.draw(st.permutations(used))[:data.draw(
            st.integers(0, len(used)))])
    inputs = {f"x{i}": RNG.standard_normal([sizes[c] for c in t]) for i, t in enumerate(terms)}
    values, _ = imported([node("Einsum", list(inputs), equation=equation)], inputs, opset=12)
    want = np.einsum(equation, *inputs.values())
    assert values.shape == want.shape
    np.testing.assert_allclose(values, want, rtol=1e-9, atol=1e-12)


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("nodes", "init", "message"), [
    ([node("Einsum", ["x", "x"], equation="ij->ij")], {}, r"Einsum node .*'ij->ij'.*2 operands"),
    ([node("Einsum", ["x"], equation="ijk->i")], {}, r"Einsum node .*rank 2"),
    ([node("Einsum", ["x"], equation="ij->k")], {}, r"Einsum node .*appear in no input"),
    ([node("Einsum", ["x"], equation="i1->i")], {}, r"Einsum node .*letters"),
    ([node("Einsum", ["x"], equation="...->")], {}, r"Einsum node .*no '...' for the 2 axes"),
    ([node("Einsum", ["x"], equation="ii")], {}, r"Einsum node .*lengths \[2, 3\]"),
    ([node("Expand", ["x", "s"])], {"s": ints(5, 3)}, r"Expand node .*broadcasts"),
    ([node("Tile", ["x", "r"])], {"r": ints(2)}, r"Tile node .*2 non-negative repeats"),
    ([node("Range", ["s", "s", "z"])], {"s": np.array(1, "int64"), "z": np.array(0, "int64")},
     r"Range node .*non-zero delta"),
    ([node("Range", ["x", "x", "x"])], {}, r"Range node .*must be known while importing"),
    ([node("Reshape", ["x", "s"], allowzero=1)], {"s": ints(0, -1)}, r"Reshape node .*-1"),
    ([node("Reshape", ["x", "s"])], {"s": ints(-1, -1)}, r"Reshape node .*at most one -1"),
    ([node("Unsqueeze", ["x", "a"])], {"a": ints(1, 1)}, r"Unsqueeze node .*distinct axes"),
    ([node("Squeeze", ["x", "a"])], {"a": ints(0)}, r"Squeeze node .*length 1"),
    ([node("Gather", ["x", "i"])], {"i": ints(2)}, r"Gather node .*indices in \[-2, 2\)"),
    ([node("GatherElements", ["x", "i"])], {"i": np.full((1, 3), -3, "int64")},
     r"GatherElements node .*\[-2, 2\), found -3"),
    ([node("GatherND", ["x", "i"])], {"i": ints(1, 3)}, r"GatherND node .*\[-3, 3\), found 3"),
    ([node("ScatterND", ["x", "i", "x"], reduction="max")],
     {"i": np.zeros((2, 1), "int64")}, r"ScatterND node .*reduction none, add or mul "),
    ([node("Split", ["x", "s"], ["y", "z"])], {"s": ints(1, 2)},
     r"Split node .*2 non-negative sizes summing to 2"),
    ([node("Split", ["x"], ["y", "z"], axis=1)], {}, r"Split node .*divisible into 2"),
    ([node("Slice", ["x", "s", "s", "s"])], {"s": ints(0, 0, 0)}, r"Slice node .*distinct"),
    ([node("Pad", ["x", "p"])], {"p": ints(1, 2)}, r"Pad node .*expected 4 pads"),
    ([node("Pad", ["x", "p"])], {"p": ints(-3, 0, 0, 0)}, r"Pad node .*crop at most"),
    ([node("DepthToSpace", ["x"], blocksize=2)], {}, r"DepthToSpace node .*4-D"),
    ([node("OneHot", ["x", "d", "v"])], {"d": np.array(0.0, "float32"), "v": rand(2)},
     r"OneHot node .*depth >= 1"),
    ([node("ReverseSequence", ["x", "n"], batch_axis=0, time_axis=0)], {"n": ints(1, 1)},
     r"ReverseSequence node .*0 and 1"),
    ([node("ReverseSequence", ["x", "n"])], {"n": ints(1, 1, 3)},
     r"ReverseSequence node .*lengths in \[0, 2\]"),
    ([node("CumSum", ["x", "a"])], {"a": np.array(2, "int32")}, r"CumSum node .*axis in"),
    ([node("EyeLike", ["x"], dtype=TensorProto.STRING)], {}, r"EyeLike node .*string"),
    ([node("ConstantOfShape", ["s"])], {"s": ints(-1)}, r"ConstantOfShape node .*non-neg"),
])
def test_malformed_nodes_name_the_node(nodes, init, message):
    assert_matches(import_error(nodes, {"x": rand(2, 3)}, init, opset=17), message)


def test_shape_operands_computed_at_run_time_are_named():
    message = import_error([node("Slice", ["x", "s", "e"])],
                           {"x": rand(4), "s": ints(0), "e": ints(2)})
    assert_matches(message, r"Slice node .*the starts \(input 1, 's'\) must be known while "
                            r"importing: the output's shape depends on its values")


def test_wrap_padding_needs_pad_version_19():
    message = import_error([node("Pad", ["x", "p"], mode="wrap")], {"x": rand(2, 3)},
                           {"p": ints(0, 1, 0, 1)}, opset=18)
    assert_matches(message, r"Pad node .*mode constant, edge or reflect, found 'wrap'")
