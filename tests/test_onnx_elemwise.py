"""ONNX comparison, logic, bitwise, unary math and activation operators against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper

from passhost.frontend import OnnxImportError, from_onnx
from test_frontend_onnx import check, make_model, node, run_onnxruntime, run_passhost

RNG = np.random.default_rng(20261125)
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]
FEW = settings(max_examples=20, deadline=None)


def values(shape: tuple[int, ...], dtype: str, lo: float = -4.0, hi: float = 4.0) -> np.ndarray:
    """Random values of ``dtype``: floats in [lo, hi), integers over their whole range for
    8-bit types and within [-100, 100] (clipped to the type) for wider ones, bools."""
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        return RNG.uniform(lo, hi, shape).astype(dtype)
    info = np.iinfo(dtype)
    low, high = (info.min, info.max) if info.bits == 8 else (max(info.min, -100), 100)
    return RNG.integers(low, high, shape, endpoint=True).astype(dtype)


def check_float16(nodes, inputs, opset=17):
    """onnxruntime computes float16 activations in float32 and rounds once; passhost's
    compositions round after each step: allow a few float16 ulps."""
    model = make_model(nodes, inputs, opset=opset)
    got = run_passhost(model, inputs)[0]
    want = run_onnxruntime(model, inputs)[0]
    assert got.dtype == want.dtype == np.float16 and got.shape == want.shape
    np.testing.assert_allclose(got.astype("float32"), want.astype("float32"), rtol=4e-3,
                               atol=2e-3)


def check_float64(nodes, inputs, opset=17, rtol=1e-4):
    """onnxruntime lacks float64 kernels of many activations: compare passhost's float64 result
    with onnxruntime's float32 one on the same values."""
    model = make_model(nodes, inputs, opset=opset)
    got = run_passhost(model, inputs)[0]
    as32 = {k: v.astype("float32") for k, v in inputs.items()}
    want = run_onnxruntime(make_model(nodes, as32, opset=opset), as32)[0]
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5)


def check_passhost(nodes, inputs, want, opset=17, rtol=0.0):
    """Compare passhost with an expected array (where onnxruntime has no kernel): exactly,
    or to ``rtol`` (math functions whose C and NumPy versions may differ in the last bit)."""
    got = run_passhost(make_model(nodes, inputs, opset=opset), inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


def import_error(nodes, inputs, match, opset=17, initializers=None):
    model = make_model(nodes, inputs, initializers, opset=opset)
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model)


# -- comparisons ---------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type, dtype", [
    *((op, d) for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]
      for d in [*INTS, *FLOATS]), ("Equal", "bool")])
def test_comparisons_of_every_dtype_broadcast(op_type, dtype):
    a = values((2, 3, 4), dtype, -3, 3).round() if dtype.startswith("float") \
        else values((2, 3, 4), dtype)
    b = a[:1, :, 1:2].copy()  # shared values, so that equality happens
    check([node(op_type, ["a", "b"])], {"a": a, "b": b}, opset=19)


@pytest.mark.parametrize("op_type", ["Equal", "Less", "Greater"])
def test_comparisons_at_opset_7_and_9(op_type):
    dtype = "int32" if op_type == "Equal" else "float32"
    a, b = values((3, 4), dtype), values((3, 1), dtype)
    check([node(op_type, ["a", "b"])], {"a": a, "b": b}, opset=7)
    dtype = "int64" if op_type == "Equal" else "int16"
    a, b = values((3, 4), dtype), values((4,), dtype)
    check([node(op_type, ["a", "b"])], {"a": a, "b": b}, opset=9)


def test_nan_compares_unequal_and_unordered():
    a = np.array([np.nan, 1.0, np.nan, -np.inf], "float32")
    b = np.array([np.nan, np.nan, 0.0, -np.inf], "float32")
    for op_type in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
        check([node(op_type, ["a", "b"])], {"a": a, "b": b}, opset=16)


# -- logic ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)),
                                    ((3, 1), (1, 5)), ((), (2, 2))])
def test_binary_logic(op_type, shapes):
    check([node(op_type, ["a", "b"])],
          {"a": values(shapes[0], "bool"), "b": values(shapes[1], "bool")})


@pytest.mark.parametrize("bounds", ["lo", "hi", "lo hi"])
@pytest.mark.parametrize("known", [True, False])
def test_clip_to_known_or_computed_bounds(bounds, known):
    x = values((3, 4, 5), "float32")
    given = {"lo": np.array(-0.5, "float32"), "hi": np.array(0.7, "float32")}
    names = ["x", *(b if b in bounds.split() else "" for b in ("lo", "hi"))]
    chosen = {b: given[b] for b in bounds.split()}
    if known:
        check([node("Clip", names)], {"x": x}, initializers=chosen)
    else:
        check([node("Clip", names)], {"x": x, **chosen})


def test_not():
    check([node("Not", ["x"])], {"x": values((3, 4, 5), "bool")})


@pytest.mark.parametrize("op_type, function", [
    ("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor),
    ("Equal", np.equal), ("Greater", np.greater), ("Less", np.less),
    ("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Pow", np.power)])
@pytest.mark.parametrize("b_shape, attrs, aligned", [
    ((2, 3, 4, 5), {}, (2, 3, 4, 5)),
    ((5,), {"broadcast": 1}, (5,)),
    ((4, 5), {"broadcast": 1}, (4, 5)),
    ((3, 4), {"broadcast": 1, "axis": 1}, (3, 4, 1)),
    ((2,), {"broadcast": 1, "axis": 0}, (2, 1, 1, 1)),
    ((3, 1), {"broadcast": 1, "axis": -3}, (3, 1, 1)),
])
def test_opset_6_broadcast_and_axis_attributes(op_type, function, b_shape, attrs, aligned):
    # onnxruntime runs no opset-6 models: the expected value is NumPy's on the aligned input.
    dtype = {"And": "bool", "Or": "bool", "Xor": "bool", "Pow": "float32"}.get(op_type, "int32")
    a, b = values((2, 3, 4, 5), dtype), values(b_shape, dtype)
    if op_type == "Pow":
        a = np.abs(a) + np.float32(0.5)
    check_passhost([node(op_type, ["a", "b"], **attrs)], {"a": a, "b": b},
                   function(a, b.reshape(aligned)), opset=6,
                   rtol=2e-7 if op_type == "Pow" else 0.0)


@pytest.mark.parametrize("b_shape, attrs, match", [
    ((5,), {}, r"one shape \(broadcast=0\)"),
    ((3,), {"broadcast": 1}, r"match the axes of input 0"),
    ((3, 4), {"broadcast": 1, "axis": 2}, r"match the axes of input 0 .* from axis 2"),
    ((3,), {"broadcast": 1, "axis": 4}, r"axis in \[-4, 4\), found 4"),
])
def test_opset_6_broadcast_errors_name_the_node(b_shape, attrs, match):
    import_error([node("And", ["a", "b"], **attrs)],
                 {"a": values((2, 3, 4, 5), "bool"), "b": values(b_shape, "bool")},
                 r"And node 'And_\d+': expected .*" + match, opset=6)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float16"])
def test_where_broadcasts_all_three(dtype):
    check([node("Where", ["c", "a", "b"])],
          {"c": values((2, 1, 4), "bool"), "a": values((3, 1), dtype),
           "b": values((2, 3, 4), dtype)})


@pytest.mark.parametrize("dtype", ["bool", "uint16", "uint64", "int8"])
def test_where_of_dtypes_onnxruntime_lacks(dtype):
    c, a, b = values((2, 1, 4), "bool"), values((3, 1), dtype), values((2, 3, 4), dtype)
    check_passhost([node("Where", ["c", "a", "b"])], {"c": c, "a": a, "b": b},
                   np.where(c, a, b))


def test_where_at_opset_9():
    check([node("Where", ["c", "a", "b"])],
          {"c": values((3, 4), "bool"), "a": values((3, 4), "float32"),
           "b": values((4,), "float32")}, opset=9)


def test_a_transformer_style_mask():
    """Equal -> Not -> And -> Where with a NaN guard, as exported attention masks are."""
    nodes = [node("Equal", ["ids", "pad"], ["is_pad"]), node("Not", ["is_pad"], ["keep"]),
             node("And", ["keep", "causal"], ["mask"]), node("Neg", ["big"], ["minus"]),
             node("Where", ["mask", "scores", "minus"], ["masked"]),
             node("IsNaN", ["masked"], ["nan"]), node("Where", ["nan", "zero", "masked"])]
    ids = np.array([[5, 7, 0, 0], [1, 2, 3, 0]], "int64")
    causal = np.tril(np.ones((4, 4), bool))
    scores = values((2, 4, 4), "float32")
    scores[0, 1, 1] = np.nan
    check(nodes, {"ids": ids.reshape(2, 1, 4), "causal": causal, "scores": scores,
                  "pad": np.zeros((1,), "int64"), "big": np.full((1,), 1e9, "float32"),
                  "zero": np.zeros((1,), "float32")})


# -- floating-point classes ----------------------------------------------------------------------
SPECIAL = np.array([[np.nan, np.inf, -np.inf, 0.0, -1.5, 6.0e4]], "float32")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("opset", [9, 13, 20])
def test_isnan(dtype, opset):
    check([node("IsNaN", ["x"])], {"x": np.tile(SPECIAL.astype(dtype), (2, 1))}, opset=opset)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("positive, negative", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf_detects_the_signs_asked_for(dtype, positive, negative):
    check([node("IsInf", ["x"], detect_positive=positive, detect_negative=negative)],
          {"x": np.tile(SPECIAL.astype(dtype), (2, 1))}, opset=20 if dtype == "float16" else 10)


# -- bitwise -------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"])
@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_of_every_integer_dtype(op_type, dtype):
    inputs = {"a": values((2, 3, 4), dtype)}
    if op_type != "BitwiseNot":
        inputs["b"] = values((3, 1), dtype)
    check([node(op_type, list(inputs))], inputs, opset=18)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_bit_shift_of_unsigned_integers(direction, dtype):
    bits = np.dtype(dtype).itemsize * 8
    x = values((3, 5), dtype)
    y = RNG.integers(0, bits, (5,)).astype(dtype)
    check([node("BitShift", ["x", "n"], direction=direction)], {"x": x, "n": y}, opset=11)


@FEW
@given(st.sampled_from(INTS), st.sampled_from(["LEFT", "RIGHT"]),
       st.lists(st.integers(-70, 70), min_size=6, max_size=6), st.integers(0, 2**31))
def test_bit_shift_at_opset_28_signed_and_out_of_range(dtype, direction, amounts, seed):
    """Signed right shifts are arithmetic; negative amounts and amounts of the bit width or
    more give the sign fill alone."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (2, 6), endpoint=True, dtype=dtype)
    bits = info.bits
    y = np.array([a % (2 * bits) if info.min == 0 else a for a in amounts]).astype(dtype)
    check([node("BitShift", ["x", "n"], direction=direction)], {"x": x, "n": y}, opset=28)


def test_bit_shift_needs_a_known_direction():
    x = values((3,), "uint8")
    import_error([node("BitShift", ["x", "x"], direction="UP")], {"x": x},
                 r"BitShift node .*direction 'LEFT' or 'RIGHT', found 'UP'", opset=11)
    import_error([node("BitShift", ["x", "x"])], {"x": x},
                 r"BitShift node .*expected attribute 'direction'", opset=11)


# -- Mod -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_of_computed_integers(dtype, fmod):
    a = values((4, 6), dtype)
    b = values((6,), dtype)
    b[b == 0] = 3
    check([node("Mod", ["a", "b"], fmod=fmod)], {"a": a, "b": b}, opset=13)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fmod, opset", [(1, 10), (1, 13), (0, 28), (1, 28)])
def test_mod_of_computed_floats(dtype, fmod, opset):
    a = values((4, 6), dtype, -9, 9)
    b = values((6,), dtype, 0.5, 3) * np.array([1, -1, 1, -1, 1, -1], dtype)
    check([node("Mod", ["a", "b"], fmod=fmod)], {"a": a, "b": b}, opset=opset)


def test_mod_of_floats_special_values():
    a = np.array([0.0, -0.0, np.inf, 5.0, 3.0, -3.0, np.nan, 5.0], "float32")
    b = np.array([-2.0, 2.0, 2.0, 0.0, np.inf, np.inf, 1.0, np.nan], "float32")
    for fmod in (0, 1):
        check([node("Mod", ["a", "b"], fmod=fmod)], {"a": a, "b": b}, opset=28)


def test_mod_by_zero_integers_gives_zero():
    a = np.array([7, -7, 0], "int32")
    check_passhost([node("Mod", ["a", "b"])], {"a": a, "b": np.zeros(3, "int32")},
                   np.zeros(3, "int32"))


def test_mod_of_known_values_folds_away():
    model = make_model([node("Shape", ["x"], ["s"]), node("Mod", ["s", "m"], ["r"], fmod=0),
                        node("Mul", ["s", "r"])], {"x": values((6, 5, 3), "float32")},
                       {"m": np.array([4, -3, 2], "int64")})
    mod, _ = from_onnx(model)
    assert "floor_mod" not in str(mod) and "const([12, -5, 3], int64)" in str(mod)
    out = run_passhost(model, {"x": values((6, 5, 3), "float32")})[0]
    np.testing.assert_array_equal(out, np.array([6, 5, 3]) * np.mod([6, 5, 3], [4, -3, 2]))


def test_mod_needs_fmod_0_or_1():
    x = values((3,), "int32")
    import_error([node("Mod", ["x", "x"], fmod=2)], {"x": x},
                 r"Mod node .*expected fmod 0 or 1, found 2")


# -- unary math ----------------------------------------------------------------------------------
DOMAINS = {"Log": (0.1, 5), "Reciprocal": (0.5, 4), "Asin": (-0.99, 0.99),
           "Acos": (-0.99, 0.99), "Atanh": (-0.9, 0.9), "Acosh": (1.01, 5), "Tan": (-1.4, 1.4)}


@pytest.mark.parametrize("op_type", ["Neg", "Abs", "Log", "Reciprocal", "Floor", "Ceil",
                                     "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos",
                                     "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                                     "Softsign"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_math_of_floats(op_type, dtype):
    lo, hi = DOMAINS.get(op_type, (-3, 3))
    x = values((2, 3, 5), dtype, lo, hi)
    opset = 22 if op_type in ("Sin", "Tan", "Softsign") else 13
    if dtype == "float64" and op_type not in ("Neg", "Abs", "Log", "Reciprocal", "Floor",
                                              "Ceil", "Round", "Sign", "Sin", "Cos"):
        check_float64([node(op_type, ["x"])], {"x": x}, opset=opset)
    elif dtype == "float16" and op_type == "Softsign":
        check_float16([node(op_type, ["x"])], {"x": x}, opset=opset)
    else:
        check([node(op_type, ["x"])], {"x": x}, opset=opset)


def test_round_takes_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, 1e30, np.nan], "float32")
    check([node("Round", ["x"])], {"x": x}, opset=11)


@pytest.mark.parametrize("op_type, dtype", [
    *(("Neg", d) for d in INTS if d.startswith("int")),
    *((op, d) for op in ["Abs", "Sign"] for d in INTS)])
def test_integer_neg_abs_sign(op_type, dtype):
    check([node(op_type, ["x"])], {"x": values((4, 5), dtype)}, opset=13)


@pytest.mark.parametrize("opset", [6, 7])
def test_unary_math_at_old_opsets(opset):
    nodes = [node("Neg", ["x"], ["n"]), node("Abs", ["n"], ["a"]),
             node("Reciprocal", ["a"], ["r"]), node("Floor", ["r"], ["f"]),
             node("Ceil", ["r"], ["c"]), node("Add", ["f", "c"], ["s"]),
             node("Log", ["s"], ["y"])]
    x = values((3, 4), "float32", 0.1, 0.9)
    want = np.log(np.floor(1 / x) + np.ceil(1 / x))
    model = make_model(nodes, {"x": x}, opset=opset)
    np.testing.assert_allclose(run_passhost(model, {"x": x})[0], want, rtol=1e-6)


# -- activations ---------------------------------------------------------------------------------
ACTIVATIONS = [
    ("Elu", {}), ("Elu", {"alpha": 0.3}), ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 0.5}),
    ("Celu", {}), ("Celu", {"alpha": 2.5}), ("HardSigmoid", {}),
    ("HardSigmoid", {"alpha": 0.4, "beta": 0.2}), ("HardSwish", {}), ("Softplus", {}),
    ("Mish", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"}),
    ("Gelu", {"approximate": "none"}), ("ThresholdedRelu", {}),
    ("ThresholdedRelu", {"alpha": -0.5}), ("Shrink", {}), ("Shrink", {"lambd": 1.5, "bias": 0.7}),
    ("Softsign", {}),
]


@pytest.mark.parametrize("op_type, attrs, dtype", [
    (op, attrs, d) for op, attrs in ACTIVATIONS for d in FLOATS
    if (op, d) != ("Celu", "float16")])  # onnxruntime has no float16 Celu
def test_activations(op_type, attrs, dtype):
    x = values((2, 3, 7), dtype, -5, 5)
    nodes = [node(op_type, ["x"], **attrs)]
    opset = 20 if op_type == "Gelu" else 18
    if dtype == "float64" and op_type != "Shrink":
        check_float64(nodes, {"x": x}, opset=opset)
    elif dtype == "float16":
        check_float16(nodes, {"x": x}, opset=opset)
    else:
        check(nodes, {"x": x}, opset=opset)


@pytest.mark.parametrize("op_type", ["Elu", "Selu", "HardSigmoid", "Softplus", "Softsign"])
def test_activations_at_opset_6(op_type):
    x = values((3, 4), "float32")
    model = make_model([node(op_type, ["x"])], {"x": x}, opset=6)
    want = run_onnxruntime(make_model([node(op_type, ["x"])], {"x": x}, opset=7), {"x": x})
    np.testing.assert_allclose(run_passhost(model, {"x": x})[0], want[0], rtol=1e-5)


@FEW
@given(st.sampled_from(["Elu", "Selu", "Celu", "HardSigmoid", "ThresholdedRelu", "Shrink"]),
       st.floats(0.05, 3.0), st.floats(-1.0, 1.0))
def test_activation_attributes(op_type, a, b):
    attrs = {"Elu": {"alpha": a}, "Selu": {"alpha": a, "gamma": b + 1.5},
             "Celu": {"alpha": a}, "HardSigmoid": {"alpha": a, "beta": b},
             "ThresholdedRelu": {"alpha": b}, "Shrink": {"lambd": a, "bias": b}}[op_type]
    check([node(op_type, ["x"], **attrs)], {"x": values((4, 9), "float32", -4, 4)})


def test_softplus_neither_overflows_nor_underflows():
    x = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], "float32")
    check_passhost([node("Softplus", ["x"])], {"x": x},
                   np.logaddexp(0, x.astype("float64")).astype("float32"))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_shrink_of_integers(dtype):
    x = values((3, 8), dtype)
    check([node("Shrink", ["x"], lambd=1.5, bias=1.0)], {"x": x}, opset=9)


@pytest.mark.parametrize("alpha", [1.0, 0.25, 2.0])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_swish(alpha, dtype):
    nodes, inputs = [node("Swish", ["x"], alpha=alpha)], {"x": values((3, 5), dtype)}
    (check_float16 if dtype == "float16" else check)(nodes, inputs, opset=24)


@pytest.mark.parametrize("slope_shape", [(1,), (5,), (4, 1), (3, 4, 5), (1, 4, 1)])
def test_prelu_slope_broadcasts_to_the_input(slope_shape):
    check([node("PRelu", ["x", "s"])], {"x": values((3, 4, 5), "float32")},
          {"s": values(slope_shape, "float32")}, opset=16)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64", "float64"])
def test_prelu_of_other_dtypes(dtype):
    x, s = values((3, 4), dtype), values((4,), dtype)
    want = np.where(x < 0, x * s, x).astype(dtype)
    check_passhost([node("PRelu", ["x", "s"])], {"x": x, "s": s}, want, opset=16)


def test_prelu_before_opset_7_has_one_slope_per_channel():
    x, s = values((2, 3, 4, 4), "float32"), values((3,), "float32")
    want = np.where(x < 0, x * s.reshape(3, 1, 1), x)
    check_passhost([node("PRelu", ["x", "s"])], {"x": x, "s": s}, want, opset=6)


def test_prelu_slope_must_broadcast_to_the_input():
    import_error([node("PRelu", ["x", "s"])], {"x": values((3, 4), "float32")},
                 r"PRelu node .*slope broadcastable to the input's shape \[3, 4\], found "
                 r"shape \[2, 4\]", initializers={"s": values((2, 4), "float32")})
    import_error([node("PRelu", ["x", "s"])], {"x": values((2, 3, 4), "float32")},
                 r"PRelu node .*one slope per channel \(3\), found 4", opset=6,
                 initializers={"s": values((4,), "float32")})


@pytest.mark.parametrize("op_type", ["LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset, axis", [(11, None), (11, 0), (11, 1), (11, -1), (11, 2),
                                         (13, None), (13, 0), (13, 1), (13, -2)])
def test_log_softmax_and_hardmax_axis_semantics(op_type, opset, axis):
    attrs = {} if axis is None else {"axis": axis}
    x = values((2, 3, 4), "float32")
    if op_type == "Hardmax":
        x[0, 1, :] = x[0, 1, 0]  # ties: the first maximum wins
    check([node(op_type, ["x"], **attrs)], {"x": x}, opset=opset)


def test_log_softmax_and_hardmax_of_float16_and_float64():
    for dtype in ("float16", "float64"):
        x = {"x": values((3, 6), dtype)}
        check([node("LogSoftmax", ["x"])], x, opset=13)
    check([node("Hardmax", ["x"], axis=0)], {"x": values((3, 6), "float16")}, opset=13)


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("nodes, inputs, match", [
    ([node("Gelu", ["x"], approximate="erf")], {"x": values((2,), "float32")},
     r"Gelu node .*approximate 'none' or 'tanh', found 'erf'"),
    ([node("Celu", ["x"], alpha=0.0)], {"x": values((2,), "float32")},
     r"Celu node .*non-zero alpha"),
    ([node("LogSoftmax", ["x"], axis=3)], {"x": values((2, 3), "float32")},
     r"LogSoftmax node .*axis in \[-2, 2\), found 3"),
    ([node("Hardmax", ["x"], axis=-3)], {"x": values((2, 3), "float32")},
     r"Hardmax node .*axis in \[-2, 2\), found -3"),
    ([node("Not", ["x"])], {"x": values((2,), "float32")},
     r"Not node .*logical_not: argument 'data' expected dtype bool, found"),
    ([node("BitwiseAnd", ["x", "x"])], {"x": values((2,), "float32")},
     r"BitwiseAnd node .*bitwise_and: argument 'lhs' expected dtype int8"),
    ([node("And", ["x", "b"])], {"x": values((2, 3), "bool"), "b": values((4,), "bool")},
     r"And node .*logical_and: argument 'rhs' expected a shape broadcastable"),
    ([node("Sin", ["x"])], {"x": values((2,), "int32")},
     r"Sin node .*sin: argument 'data' expected dtype float16"),
])
def test_malformed_nodes_name_the_node(nodes, inputs, match):
    import_error(nodes, inputs, match, opset=20)


def test_activations_after_conv_and_matmul_fuse_and_agree():
    """Conv -> HardSwish (MobileNetV3) and MatMul -> Gelu (BERT), where the compiled code
    fuses the activation's operators into the producer's epilogue."""
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), node("HardSwish", ["c"], ["h"]),
             node("Flatten", ["h"], ["f"]), node("MatMul", ["f", "m"], ["g"]),
             node("Gelu", ["g"], ["e"]), node("PRelu", ["e", "s"], ["p"]),
             node("LogSoftmax", ["p"])]
    init = {"w": values((4, 3, 3, 3), "float32", -1, 1),
            "m": values((4 * 6 * 6, 10), "float32", -0.2, 0.2),
            "s": values((10,), "float32", 0, 0.5)}
    check(nodes, {"x": values((2, 3, 6, 6), "float32")}, init, opset=20)


# -- BitCast ------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, target", [
    ("float32", "int32"), ("int32", "float32"), ("float64", "uint64"), ("bool", "uint8"),
    ("uint16", "float16"), ("int8", "uint8"), ("bfloat16", "int16")])
def test_bit_cast_reads_the_bits_as_another_dtype(source, target):
    pytest.importorskip("ml_dtypes")  # registers bfloat16 with NumPy
    bits = np.random.default_rng(3).integers(0, 256, size=(2, 3, np.dtype(source).itemsize),
                                             dtype=np.uint8)
    x = (bits % 2).astype(source) if source == "bool" else bits.view(source).reshape(2, 3)
    if source != "bool" and np.dtype(source).kind == "f":
        x = np.where(np.isfinite(x.astype("float64")), x, np.zeros((), source)).astype(source)
    dtype = helper.np_dtype_to_tensor_dtype(np.dtype(target))
    want = x.view(target)
    check_passhost([node("BitCast", ["x"], to=dtype)], {"x": x}, want, opset=26)


def test_bit_cast_to_another_width_names_the_node():
    import_error([node("BitCast", ["x"], to=TensorProto.INT64)],
                 {"x": values((2, 3), "float32")}, r"BitCast node .*8-byte elements \(as int64\)",
                 opset=26)
