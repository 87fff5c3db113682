"""bfloat16 through the ONNX importer and the graph operators, against ONNX's reference
evaluator (onnxruntime lacks most bfloat16 kernels).

ONNX's reference computes a bfloat16 operator in float32 and rounds the result once where it
applies one NumPy function (Exp, MatMul, Einsum, ...): there passhost must agree bit for bit.
Where the reference composes several NumPy steps on bfloat16 arrays it rounds after each of
them (and ReduceSum even accumulates in bfloat16), so there passhost is compared with the
reference run in float32 on the same (bfloat16) values and rounded once: within one
bfloat16 rounding. The hypothesis tests check the graph operators themselves: a bfloat16
result is the float32 result rounded to bfloat16.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")

from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost import relay  # noqa: E402
from passhost.errors import IRTypeError, PasshostError  # noqa: E402
from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.ir.types import TensorType  # noqa: E402
from passhost.relay import evaluate, nn  # noqa: E402
from passhost.relay.op import list_ops  # noqa: E402
from test_frontend_onnx import make_model, node, run_passhost  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
F32 = np.dtype(np.float32)
RNG = np.random.default_rng(20261126)
FAST = settings(max_examples=30, deadline=None)


def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(F32)


def uniform(lo: float, hi: float, *shape: int) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(F32)


def as_bf16(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float32 arrays rounded to bfloat16 (the others as they are)."""
    return {k: v.astype(BF16) if v.dtype == F32 else v for k, v in arrays.items()}


def as_f32(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The bfloat16 arrays as float32 (exactly)."""
    return {k: v.astype(F32) if v.dtype == BF16 else v for k, v in arrays.items()}


def bits(x: np.ndarray) -> np.ndarray:
    """bfloat16 values as their bit patterns, every NaN the same."""
    out = x.view(np.uint16).copy()
    out[np.isnan(x.astype(F32))] = 0x7FC0
    return out


def assert_rounded_once(got: np.ndarray, want: np.ndarray) -> None:
    """``got`` (bfloat16) is ``want`` (computed in float32, rounded to bfloat16) up to one
    rounding of the float32 value, which may differ in its last float32 bits."""
    assert got.dtype == want.dtype == BF16
    assert got.shape == want.shape
    g, w = got.astype(F32), want.astype(F32)
    scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
    np.testing.assert_allclose(g, w, rtol=2.0**-7, atol=2.0**-14 * scale)


# -- ONNX nodes whose reference rounds once: bit for bit ------------------------------------------
EXACT_UNARY = [
    ("Exp", normal(3, 5)), ("Log", uniform(0.1, 9, 3, 5)), ("Sqrt", uniform(0, 9, 3, 5)),
    ("Tanh", normal(3, 5)), ("Erf", normal(3, 5)), ("Sin", normal(3, 5)), ("Cos", normal(3, 5)),
    ("Tan", uniform(-1.4, 1.4, 3, 5)), ("Asin", uniform(-1, 1, 3, 5)),
    ("Acos", uniform(-1, 1, 3, 5)), ("Atan", normal(3, 5)), ("Sinh", normal(3, 5)),
    ("Cosh", normal(3, 5)), ("Asinh", normal(3, 5)), ("Acosh", uniform(1, 9, 3, 5)),
    ("Atanh", uniform(-0.99, 0.99, 3, 5)), ("Abs", normal(3, 5)), ("Neg", normal(3, 5)),
    ("Floor", normal(3, 5, scale=4)), ("Ceil", normal(3, 5, scale=4)),
    ("Round", normal(3, 5, scale=4)), ("Sign", normal(3, 5)), ("Relu", normal(3, 5)),
    ("Reciprocal", uniform(0.5, 4, 3, 5)),
]


@pytest.mark.parametrize("op_type, x", EXACT_UNARY, ids=[c[0] for c in EXACT_UNARY])
def test_unary_math_matches_the_reference_bit_for_bit(op_type, x):
    feeds = {"x": x.astype(BF16)}
    model = make_model([node(op_type, ["x"])], feeds, opset=18)
    got = run_passhost(model, feeds)[0]
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    assert got.dtype == BF16
    np.testing.assert_array_equal(bits(got), bits(want))


# -- ONNX nodes against the float32 reference, rounded once ---------------------------------------
def _case(case_id, nodes, inputs, inits=None, opset=18, outputs=("y",)):
    return pytest.param(nodes, inputs, inits or {}, opset, outputs, id=case_id)


def _axes(*axes: int) -> np.ndarray:
    return np.array(axes, np.int64)


def _cancelling(rows: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    """x and w whose row products nearly cancel: x = [a, a], w = [b, -b * (1 + 2**-7)], so
    that rounding each product to bfloat16 would swamp their sum."""
    a = normal(rows, half).astype(BF16).astype(F32)
    b = normal(rows, half).astype(BF16).astype(F32)
    return (np.concatenate([a, a], axis=1),
            np.concatenate([b, -(b * np.float32(1 + 2.0**-7)).astype(BF16).astype(F32)], axis=1))


CANCELLING = _cancelling(3, 100)
ROUNDED_ONCE = [
    _case("Sigmoid", [node("Sigmoid", ["x"])], {"x": normal(4, 6, scale=3)}),
    _case("Softplus", [node("Softplus", ["x"])], {"x": normal(4, 6, scale=3)}),
    _case("Softsign", [node("Softsign", ["x"])], {"x": normal(4, 6, scale=3)}),
    _case("Elu", [node("Elu", ["x"], alpha=0.7)], {"x": normal(4, 6, scale=0.05)}),
    _case("Selu", [node("Selu", ["x"])], {"x": normal(4, 6, scale=0.05)}),
    _case("Celu", [node("Celu", ["x"], alpha=2.0)], {"x": normal(4, 6, scale=0.05)}),
    _case("HardSigmoid", [node("HardSigmoid", ["x"], alpha=0.3, beta=0.4)],
          {"x": normal(4, 6, scale=2)}),
    _case("HardSwish", [node("HardSwish", ["x"])], {"x": normal(4, 6, scale=3)}),
    _case("Gelu", [node("Gelu", ["x"])], {"x": normal(4, 6, scale=2)}, opset=20),
    _case("Gelu-tanh", [node("Gelu", ["x"], approximate="tanh")],
          {"x": normal(4, 6, scale=2)}, opset=20),
    _case("Mish", [node("Mish", ["x"])], {"x": normal(4, 6, scale=2)}),
    _case("LeakyRelu", [node("LeakyRelu", ["x"], alpha=0.3)], {"x": normal(4, 6)}),
    _case("PRelu", [node("PRelu", ["x", "s"])], {"x": normal(4, 6)}, {"s": normal(6)}),
    _case("ThresholdedRelu", [node("ThresholdedRelu", ["x"], alpha=0.5)], {"x": normal(4, 6)}),
    _case("Clip", [node("Clip", ["x", "lo", "hi"])], {"x": normal(4, 6)},
          {"lo": np.array(-0.3, F32), "hi": np.array(0.7, F32)}),
    _case("Pow", [node("Pow", ["x", "e"])], {"x": uniform(0.5, 3, 4, 6)},
          {"e": np.array(0.3, F32)}),
    _case("Mod-fmod", [node("Mod", ["x", "d"], fmod=1)], {"x": normal(4, 6, scale=5)},
          {"d": uniform(0.5, 2, 6)}),
    _case("Div", [node("Div", ["x", "d"])], {"x": normal(4, 6), "d": uniform(0.5, 2, 4, 6)}),
    _case("Softmax", [node("Softmax", ["x"], axis=1)], {"x": normal(3, 7, 2, scale=3)}),
    _case("LogSoftmax", [node("LogSoftmax", ["x"])], {"x": normal(3, 7, scale=3)}),
    _case("Hardmax", [node("Hardmax", ["x"])], {"x": normal(3, 7)}),
    _case("ReduceSum", [node("ReduceSum", ["x", "a"])], {"x": normal(4, 300)},
          {"a": _axes(1)}),
    _case("ReduceMean", [node("ReduceMean", ["x", "a"], keepdims=0)], {"x": normal(4, 300)},
          {"a": _axes(-1)}),
    _case("ReduceMax", [node("ReduceMax", ["x", "a"])], {"x": normal(4, 30)}, {"a": _axes(0)}),
    _case("ReduceMin", [node("ReduceMin", ["x"])], {"x": normal(4, 30)}),
    _case("ReduceProd", [node("ReduceProd", ["x", "a"])], {"x": uniform(0.5, 1.5, 4, 20)},
          {"a": _axes(1)}),
    _case("ReduceL1", [node("ReduceL1", ["x", "a"])], {"x": normal(4, 200)}, {"a": _axes(1)}),
    _case("ReduceL2", [node("ReduceL2", ["x", "a"])], {"x": normal(4, 200)}, {"a": _axes(1)}),
    _case("ReduceSumSquare", [node("ReduceSumSquare", ["x", "a"])], {"x": normal(4, 200)},
          {"a": _axes(1)}),
    _case("ReduceLogSum", [node("ReduceLogSum", ["x", "a"])], {"x": uniform(0, 1, 4, 200)},
          {"a": _axes(1)}),
    _case("ReduceLogSumExp", [node("ReduceLogSumExp", ["x", "a"])], {"x": normal(4, 200)},
          {"a": _axes(1)}),
    _case("ReduceMax-empty", [node("ReduceMax", ["x", "a"], keepdims=0)],
          {"x": np.zeros((3, 0), F32)}, {"a": _axes(1)}),
    _case("Sum", [node("Sum", ["x", "u", "v"])], {"x": normal(5), "u": normal(5),
                                                  "v": normal(5)}),
    _case("Mean", [node("Mean", ["x", "u", "v"])], {"x": normal(5), "u": normal(5),
                                                    "v": normal(5)}),
    _case("Max", [node("Max", ["x", "u"])], {"x": normal(5), "u": normal(5)}),
    _case("Min", [node("Min", ["x", "u"])], {"x": normal(5), "u": normal(5)}),
    _case("ArgMax", [node("ArgMax", ["x"], axis=1)], {"x": normal(4, 9)}),
    _case("ArgMin", [node("ArgMin", ["x"], axis=0, select_last_index=1)], {"x": normal(4, 9)}),
    _case("TopK", [node("TopK", ["x", "k"], ["y", "i"])], {"x": normal(3, 9)},
          {"k": np.array([4], np.int64)}, outputs=("y", "i")),
    _case("CumSum", [node("CumSum", ["x", "a"], exclusive=1)], {"x": normal(3, 200)},
          {"a": np.array(1, np.int64)}),
    _case("MatMul", [node("MatMul", ["x", "w"])], {"x": normal(2, 3, 64)},
          {"w": normal(64, 5)}),
    _case("Einsum", [node("Einsum", ["x", "w"], equation="bij,jk->bik")],
          {"x": normal(2, 3, 40)}, {"w": normal(40, 5)}, opset=12),
    _case("Einsum-3", [node("Einsum", ["x", "w", "o"], equation="bi,bi,bi->b")],
          {"x": CANCELLING[0]}, {"w": CANCELLING[1], "o": np.ones((3, 200), F32)}, opset=12),
    _case("Gemm", [node("Gemm", ["x", "w", "c"], alpha=0.7, beta=1.3, transB=1)],
          {"x": normal(3, 40)}, {"w": normal(5, 40), "c": normal(5)}),
    _case("Conv", [node("Conv", ["x", "w"], pads=[1, 1, 1, 1])], {"x": normal(1, 3, 6, 6)},
          {"w": normal(4, 3, 3, 3)}),
    _case("AveragePool", [node("AveragePool", ["x"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
          {"x": normal(1, 2, 6, 6)}),
    _case("MaxPool", [node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[2, 2])],
          {"x": normal(1, 2, 6, 6)}),
    _case("GlobalAveragePool", [node("GlobalAveragePool", ["x"])], {"x": normal(1, 3, 9, 9)}),
    _case("LpPool", [node("LpPool", ["x"], kernel_shape=[2, 2], p=3)],
          {"x": normal(1, 2, 5, 5)}),
    _case("InstanceNormalization", [node("InstanceNormalization", ["x", "s", "b"])],
          {"x": normal(2, 3, 5, 5, scale=3)}, {"s": normal(3), "b": normal(3)}),
    _case("BatchNormalization", [node("BatchNormalization", ["x", "s", "b", "m", "v"])],
          {"x": normal(2, 3, 4)},
          {"s": normal(3), "b": normal(3), "m": normal(3), "v": uniform(0.5, 2, 3)}),
    _case("LayerNormalization", [node("LayerNormalization", ["x", "s", "b"], axis=-1)],
          {"x": normal(3, 64, scale=4)}, {"s": normal(64), "b": normal(64)}),
    _case("RMSNormalization", [node("RMSNormalization", ["x", "s"])],
          {"x": normal(3, 64, scale=4)}, {"s": normal(64)}, opset=23),
    _case("GroupNormalization", [node("GroupNormalization", ["x", "s", "b"], num_groups=2)],
          {"x": normal(2, 4, 3, 3)}, {"s": normal(4), "b": normal(4)}, opset=21),
    _case("LpNormalization", [node("LpNormalization", ["x"], p=2)], {"x": normal(3, 8)}),
    _case("MeanVarianceNormalization", [node("MeanVarianceNormalization", ["x"])],
          {"x": normal(2, 3, 4, 4, scale=3)}),
    _case("LRN", [node("LRN", ["x"], size=3)], {"x": normal(1, 5, 3, 3)}),
    _case("Resize-linear", [node("Resize", ["x", "", "sc"], mode="linear")],
          {"x": normal(1, 2, 4, 4)}, {"sc": np.array([1, 1, 1.5, 2], F32)}),
    _case("Attention", [node("Attention", ["q", "k", "v"], is_causal=1)],
          {"q": normal(1, 2, 4, 8), "k": normal(1, 2, 6, 8), "v": normal(1, 2, 6, 8)},
          opset=23),
    _case("RotaryEmbedding", [node("RotaryEmbedding", ["x", "cos", "sin", "p"])],
          {"x": normal(1, 2, 3, 8)},
          {"cos": uniform(-1, 1, 5, 4), "sin": uniform(-1, 1, 5, 4),
           "p": np.array([[0, 2, 4]], np.int64)}, opset=23),
    _case("LSTM", [node("LSTM", ["x", "w", "r", "b"], ["", "y"], hidden_size=4)],
          {"x": normal(3, 2, 5)},
          {"w": normal(1, 16, 5), "r": normal(1, 16, 4), "b": normal(1, 32)}, opset=14),
    _case("GRU", [node("GRU", ["x", "w", "r"], ["y"], hidden_size=4)], {"x": normal(3, 2, 5)},
          {"w": normal(1, 12, 5), "r": normal(1, 12, 4)}, opset=14),
    _case("RNN", [node("RNN", ["x", "w", "r"], ["y"], hidden_size=4)], {"x": normal(3, 2, 5)},
          {"w": normal(1, 4, 5), "r": normal(1, 4, 4)}, opset=14),
    _case("AffineGrid", [node("AffineGrid", ["t", "size"])], {"t": normal(2, 2, 3)},
          {"size": np.array([2, 1, 5, 7], np.int64)}, opset=20),
    _case("GridSample", [node("GridSample", ["x", "g"])],
          {"x": normal(1, 2, 4, 5), "g": uniform(-1.1, 1.1, 1, 3, 3, 2)}, opset=22),
    _case("RoiAlign", [node("RoiAlign", ["x", "r", "i"], output_height=2, output_width=2)],
          {"x": normal(1, 2, 6, 6)},
          {"r": np.array([[0.5, 1, 4.5, 5], [1, 0, 3, 2.5]], F32),
           "i": np.array([0, 0], np.int64)}, opset=22),
    _case("Col2Im", [node("Col2Im", ["x", "im", "blk"])], {"x": normal(1, 4, 9)},
          {"im": np.array([4, 4], np.int64), "blk": np.array([2, 2], np.int64)}, opset=18),
    _case("SwiGLU", [node("SwiGLU", ["x", "u"])], {"x": normal(3, 8), "u": normal(3, 8)},
          opset=28),
    _case("SoftmaxCrossEntropyLoss", [node("SoftmaxCrossEntropyLoss", ["x", "t"])],
          {"x": normal(4, 5, scale=2)}, {"t": np.array([0, 3, 1, 4], np.int64)}),
]


@pytest.mark.parametrize("nodes, inputs, inits, opset, outputs", ROUNDED_ONCE)
def test_operators_compute_in_float32_and_round_once(nodes, inputs, inits, opset, outputs):
    feeds, weights = as_bf16(inputs), as_bf16(inits)
    model = make_model(nodes, feeds, weights, outputs=outputs, opset=opset)
    got = run_passhost(model, feeds)
    model32 = make_model(nodes, as_f32(feeds), as_f32(weights), outputs=outputs, opset=opset)
    want = ReferenceEvaluator(model32).run(None, as_f32(feeds))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w.dtype == F32:
            assert_rounded_once(g, w.astype(BF16))
        else:
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


#: Nodes whose reference computes each bfloat16 step in float32 and rounds it, as passhost:
#: QuantizeLinear divides in the scale's type (bfloat16) before rounding to integers.
REFERENCE_STEPS = [
    _case("QuantizeLinear", [node("QuantizeLinear", ["x", "s", "z"])],
          {"x": normal(3, 4, scale=4)},
          {"s": np.array(0.05, F32), "z": np.array(3, np.int8)}, opset=21),
    _case("DequantizeLinear", [node("DequantizeLinear", ["x", "s"])],
          {"x": RNG.integers(-128, 127, (3, 4)).astype(np.int8)},
          {"s": np.array(0.0123, F32)}, opset=21),
]


@pytest.mark.parametrize("nodes, inputs, inits, opset, outputs", REFERENCE_STEPS)
def test_quantisation_with_bfloat16_scales_matches_the_reference(nodes, inputs, inits, opset,
                                                                 outputs):
    feeds, weights = as_bf16(inputs), as_bf16(inits)
    model = make_model(nodes, feeds, weights, outputs=outputs, opset=opset)
    got = run_passhost(model, feeds)[0]
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8 if got.itemsize == 1 else np.uint16),
                                  want.view(np.uint8 if want.itemsize == 1 else np.uint16))


def test_a_composition_rounds_once_where_bfloat16_steps_lose_every_digit():
    # exp(x) - 1 in bfloat16 steps is 0 or a multiple of 2**-8 for small x; Elu computed in
    # float32 keeps x's digits.
    x = np.array([-1e-3, -2e-4, -3e-5], BF16)
    model = make_model([node("Elu", ["x"])], {"x": x})
    got = run_passhost(model, {"x": x})[0].astype(F32)
    np.testing.assert_allclose(got, np.expm1(x.astype(F32)), rtol=2.0**-7)


def test_layer_normalization_statistics_have_the_stash_type():
    x = normal(2, 16).astype(BF16)
    nodes = [node("LayerNormalization", ["x", "s"], ["y", "mean", "inv"])]
    model = make_model(nodes, {"x": x}, {"s": np.ones(16, BF16)}, outputs=("y", "mean", "inv"))
    y, mean, inv = run_passhost(model, {"x": x})
    assert (y.dtype, mean.dtype, inv.dtype) == (BF16, F32, F32)
    x32 = x.astype(F32)
    np.testing.assert_allclose(mean[:, 0], x32.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(inv[:, 0], 1 / np.sqrt(x32.var(axis=1) + 1e-5), rtol=1e-5)


def test_pow_keeps_a_float32_exponent():
    # Rounding the exponent 0.3 to bfloat16 (0.30078125) would move 100 ** e by 3%.
    x = np.array([100.0, 7.0], BF16)
    model = make_model([node("Pow", ["x", "e"])], {"x": x}, {"e": np.array(0.3, F32)})
    got = run_passhost(model, {"x": x})[0]
    assert got.dtype == BF16
    np.testing.assert_array_equal(bits(got), bits(np.power(x.astype(F32), np.float32(0.3))
                                                  .astype(BF16)))


@pytest.mark.parametrize("opset, stash", [(18, None), (27, None), (27, 1), (27, 11)])
def test_range_computes_bfloat16_in_its_stash_type(opset, stash):
    bounds = {"s": np.array(0.5, BF16), "l": np.array(90.0, BF16), "d": np.array(0.3, BF16)}
    attrs = {} if stash is None else {"stash_type": stash}
    model = make_model([node("Range", ["s", "l", "d"], **attrs)], {}, bounds, opset=opset)
    got = run_passhost(model, {})[0]
    want = ReferenceEvaluator(model).run(None, {})[0]
    assert got.dtype == BF16 and got.shape == want.shape == (298,)
    np.testing.assert_array_equal(bits(got), bits(want))


def test_a_range_stash_type_other_than_float_or_double_is_an_error():
    bounds = {"s": np.array(0.5, BF16), "l": np.array(9.0, BF16), "d": np.array(0.5, BF16)}
    model = make_model([node("Range", ["s", "l", "d"], stash_type=10)], {}, bounds, opset=27)
    with pytest.raises(OnnxImportError, match=r"Range node .*stash_type 1 .* found 10"):
        from_onnx(model)


def test_operators_without_bfloat16_reject_it_naming_the_node():
    x = np.ones((2, 2), BF16)
    model = make_model([node("BitwiseNot", ["x"])], {"x": x}, opset=18)
    with pytest.raises(OnnxImportError, match=r"BitwiseNot node .*bitwise_not.*bfloat16"):
        from_onnx(model)


def test_bfloat16_constants_in_a_model_round_trip_through_the_text_format():
    from passhost.text import parse_module, print_module

    model = make_model([node("Softmax", ["x"]), node("Mul", ["y", "c"], ["z"])],
                       {"x": normal(2, 3).astype(BF16)},
                       {"c": np.array([0.1, 1e30, -3.5], BF16)}, outputs=("z",))
    mod, _ = from_onnx(model)
    text = print_module(mod)
    assert "bfloat16" in text
    assert print_module(parse_module(text)) == text


# -- the graph operators: bfloat16 is the float32 result rounded once -----------------------------
def _floats(shape: tuple[int, ...], lo: float, hi: float):
    lo, hi = float(np.float32(lo)), float(np.float32(hi))
    return st.lists(st.floats(lo, hi, width=32), min_size=math.prod(shape),
                    max_size=math.prod(shape)).map(
        lambda v: np.array(v, F32).reshape(shape).astype(BF16))


def _run(builder, *arrays: np.ndarray) -> np.ndarray:
    params = [relay.var(f"p{i}", shape=a.shape, dtype=a.dtype.name) for i, a in enumerate(arrays)]
    return np.asarray(evaluate(relay.Function(params, builder(*params)), *arrays))


UNARY_OPS = {
    "exp": (relay.exp, -8, 8), "log": (relay.log, 0.01, 100), "sqrt": (relay.sqrt, 0, 100),
    "rsqrt": (relay.rsqrt, 0.01, 100), "tanh": (relay.tanh, -5, 5),
    "sigmoid": (relay.sigmoid, -20, 20), "erf": (relay.erf, -4, 4),
    "sin": (relay.sin, -7, 7), "cos": (relay.cos, -7, 7), "atan": (relay.atan, -9, 9),
    "sinh": (relay.sinh, -5, 5), "acosh": (relay.acosh, 1, 50),
    "round": (relay.round, -50, 50), "sign": (relay.sign, -2, 2),
    "negative": (relay.negative, -9, 9), "abs": (relay.abs, -9, 9),
    "nn.relu": (nn.relu, -9, 9), "nn.softplus": (nn.softplus, -30, 30),
    "nn.silu": (nn.silu, -20, 20),
    "nn.leaky_relu": (lambda x: nn.leaky_relu(x, alpha=0.1), -9, 9),
    "clip": (lambda x: relay.clip(x, a_min=-0.3, a_max=1.7), -3, 3),
    "nn.softmax": (lambda x: nn.softmax(x, axis=1), -9, 9),
    "nn.log_softmax": (lambda x: nn.log_softmax(x, axis=0), -9, 9),
    "sum": (lambda x: relay.sum(x, axis=1), -9, 9),
    "mean": (lambda x: relay.mean(x, axis=(0,), keepdims=True), -9, 9),
    "max": (lambda x: relay.max(x, axis=1), -9, 9),
    "min": (lambda x: relay.min(x), -9, 9),
    "prod": (lambda x: relay.prod(x, axis=0), -2, 2),
    "cumsum": (lambda x: relay.cumsum(x, axis=1), -9, 9),
}


@pytest.mark.parametrize("name", sorted(UNARY_OPS))
@FAST
@given(data=st.data())
def test_a_bfloat16_result_is_the_float32_result_rounded_once(name, data):
    build, lo, hi = UNARY_OPS[name]
    x = data.draw(_floats((3, 5), lo, hi))
    got = _run(build, x)
    want = _run(build, x.astype(F32)).astype(BF16)
    assert got.dtype == BF16
    np.testing.assert_array_equal(bits(got), bits(want))


BINARY_OPS = {
    "add": relay.add, "subtract": relay.subtract, "multiply": relay.multiply,
    "divide": relay.divide, "power": relay.power, "maximum": relay.maximum,
    "minimum": relay.minimum, "mod": relay.mod, "floor_mod": relay.floor_mod,
    "matmul": relay.matmul,
}


@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@FAST
@given(data=st.data())
def test_a_bfloat16_binary_result_is_the_float32_result_rounded_once(name, data):
    a = data.draw(_floats((4, 4), 0.1, 9))
    b = data.draw(_floats((4, 4), 0.1, 3))
    got = _run(BINARY_OPS[name], a, b)
    want = _run(BINARY_OPS[name], a.astype(F32), b.astype(F32)).astype(BF16)
    np.testing.assert_array_equal(bits(got), bits(want))


def test_a_bfloat16_sum_accumulates_in_float32():
    # 4096 ones: a bfloat16 accumulator stops at 256.
    x = np.ones((4096,), BF16)
    assert float(_run(lambda v: relay.sum(v), x)) == 4096.0
    assert float(_run(lambda v: relay.mean(v), x)) == 1.0


def test_every_one_input_operator_taking_float32_takes_bfloat16():
    missing = []
    for op in list_ops():
        if len(op.inputs) != 1:
            continue
        for shape in ((2, 3), (1, 2, 4, 4)):
            try:
                attrs = op.make_attrs({})
                op.infer_type([TensorType(shape, "float32")], attrs)
            except PasshostError:  # needs attributes or another shape
                continue
            try:
                op.infer_type([TensorType(shape, "bfloat16")], attrs)
            except IRTypeError:
                missing.append(op.name)
    assert missing == []
