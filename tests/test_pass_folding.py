"""The folding passes: bind_params_by_name, FoldConstant, SimplifyInference and CanonicalizeOps
(FoldScaleAxis has tests/test_pass_fold_scale_axis.py).

Numbers are checked with the reference interpreter on zoo models whose batch-norm statistics
are randomised (the zoo's are the identity, which would hide mistakes) and whose softmax is
dropped (it saturates); structures are checked against expected IR written by hand or against
op counts worked out from the architectures.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import passhost.relay as relay
from folding_helpers import (
    Nesting,
    assert_same_numbers,
    bound_model,
    calls,
    nesting_of,
    op_counts,
    parse_main,
    run,
    sample_inputs,
)
from passhost.errors import IRTypeError, OptionError, UnknownNameError
from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal
from passhost.plugins.manager import get_host
from passhost.relay.transform import (
    CanonicalizeOps,
    ConvertLayout,
    FoldConstant,
    FoldScaleAxis,
    SimplifyInference,
    bind_params_by_name,
)
from passhost.relay.transform.bind import AmbiguousParamError
from passhost.text import parse_module
from passhost.transform import PassContext, Sequential
from passhost.workloads.zoo import get_model


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def resnet18() -> IRModule:
    """ResNet-18, parameters bound and randomised, softmax dropped."""
    return bound_model("resnet-18")


@pytest.fixture(scope="module")
def resnet18_simplified(resnet18: IRModule) -> IRModule:
    """ResNet-18 after SimplifyInference and FoldConstant."""
    return FoldConstant()(SimplifyInference()(resnet18))


@pytest.fixture(autouse=True)
def _clean(clean_contexts: None) -> Iterator[None]:
    yield


# -- registration ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [FoldConstant, SimplifyInference, FoldScaleAxis,
                                 CanonicalizeOps])
def test_pass_info_matches_registration(cls: type) -> None:
    spec = get_host().registries.passes.get(cls.pass_info.name)
    created = spec.create()
    assert isinstance(created, cls)
    assert (created.info.name, created.info.opt_level, tuple(created.info.required)) == (
        cls.pass_info.name, cls.pass_info.opt_level, tuple(cls.pass_info.required))
    assert (spec.opt_level, tuple(spec.required)) == (
        cls.pass_info.opt_level, tuple(cls.pass_info.required))


def test_pass_infos_are_the_documented_ones() -> None:
    infos = {c.pass_info.name: (c.pass_info.opt_level, tuple(c.pass_info.required))
             for c in (FoldConstant, SimplifyInference, FoldScaleAxis, CanonicalizeOps)}
    assert infos == {"FoldConstant": (2, ()), "SimplifyInference": (0, ("InferType",)),
                     "FoldScaleAxis": (3, ("InferType",)),
                     "CanonicalizeOps": (3, ("InferType",))}


# -- bind_params_by_name -----------------------------------------------------------------------
def test_bind_zoo_params_puts_each_array_in_its_place() -> None:
    mod, params = get_model("resnet-18")
    func = mod["main"]
    n_params, body = len(func.params), func.body
    bound = bind_params_by_name(func, params)
    assert [p.name_hint for p in bound.params] == ["data"]
    assert len(func.params) == n_params and func.body is body
    pairs = list(zip(relay.post_order(body), relay.post_order(bound.body)))
    replaced = [(old, new) for old, new in pairs if isinstance(old, relay.Var)
                and old.name_hint != "data"]
    assert len(replaced) == len(params)
    for old, new in replaced:
        assert isinstance(new, relay.Constant)
        np.testing.assert_array_equal(new.data, params[old.name_hint])


def test_bind_zoo_params_keeps_numbers() -> None:
    mod, params = get_model("mlp")
    func = mod["main"]
    bound = bind_params_by_name(func, params)
    x = sample_inputs(IRModule.from_expr(bound))[0]
    want = relay.evaluate(func, x, *(params[p.name_hint] for p in func.params[1:]))
    np.testing.assert_array_equal(relay.evaluate(bound, x), want)


def test_bind_copies_arrays_and_accepts_constants() -> None:
    x = relay.var("x", shape=(2,))
    w = relay.var("w", shape=(2,))
    c = relay.var("c", shape=(2,))
    func = relay.Function([x, w, c], relay.add(relay.multiply(x, w), c))
    arr = np.array([1.0, 2.0], dtype="float32")
    bound = bind_params_by_name(func, {"w": arr, "c": relay.const([10.0, 20.0])})
    arr[:] = 0.0
    assert arr.flags.writeable
    np.testing.assert_array_equal(relay.evaluate(bound, np.ones(2, "float32")), [11.0, 22.0])
    assert bind_params_by_name(func, {}) is func


def test_bind_unknown_name_lists_close_matches() -> None:
    x = relay.var("conv1_weight", shape=(2,))
    func = relay.Function([x], relay.nn.relu(x))
    with pytest.raises(UnknownNameError, match=r"conv1_wieght.*did you mean 'conv1_weight'"):
        bind_params_by_name(func, {"conv1_wieght": np.zeros(2, "float32")})


@pytest.mark.parametrize("value, found", [
    (np.zeros((3,), "float32"), "Tensor[(3), float32]"),
    (np.zeros((2,), "int32"), "Tensor[(2), int32]"),
])
def test_bind_type_mismatch_names_parameter(value: np.ndarray, found: str) -> None:
    w = relay.var("w", shape=(2,))
    func = relay.Function([w], relay.nn.relu(w))
    with pytest.raises(IRTypeError) as info:
        bind_params_by_name(func, {"w": value})
    message = str(info.value)
    assert "%w" in message and "Tensor[(2), float32]" in message and found in message


def test_bind_ambiguous_name_is_an_error_only_when_bound() -> None:
    a, b, y = relay.var("a", shape=(2,)), relay.var("a", shape=(2,)), relay.var("y", shape=(2,))
    func = relay.Function([a, b, y], relay.add(relay.add(a, b), y))
    with pytest.raises(AmbiguousParamError, match=r"'a'.*2 parameters"):
        bind_params_by_name(func, {"a": np.zeros(2, "float32")})
    bound = bind_params_by_name(func, {"y": np.ones(2, "float32")})
    assert [p.name_hint for p in bound.params] == ["a", "a"]


def test_bind_nested_function_uses() -> None:
    x, w, p = relay.var("x", shape=(2,)), relay.var("w", shape=(2,)), relay.var("p", shape=(2,))
    inner = relay.Function([p], relay.multiply(p, w))
    func = relay.Function([x, w], relay.Call(inner, [x]))
    bound = bind_params_by_name(func, {"w": np.full(2, 3.0, "float32")})
    assert [q.name_hint for q in bound.params] == ["x"]
    np.testing.assert_array_equal(relay.evaluate(bound, np.ones(2, "float32")), [3.0, 3.0])


# -- FoldConstant ------------------------------------------------------------------------------
def test_fold_constant_tiny_graph_structure() -> None:
    mod = parse_main("%0 = add(const([1.0, 2.0], float32), const([3.0, 4.0], float32));\n"
                     "%1 = multiply(%0, const(2.0, float32));\n"
                     "%2 = expand_dims(%1, axis=0);\n"
                     "add(%x, %2)", "%x: Tensor[(1, 2), float32]")
    want = parse_main("add(%x, const([8.0, 12.0], float32, shape=[1, 2]))",
                      "%x: Tensor[(1, 2), float32]")
    assert structural_equal(run(FoldConstant(), mod), want)


def test_fold_constant_returns_same_module_when_nothing_folds() -> None:
    mod = parse_main("%0 = add(%x, const(1.0, float32));\nnn.relu(%0)",
                     "%x: Tensor[(2), float32]")
    assert run(FoldConstant(), mod) is mod
    resnet, _ = get_model("resnet-18")
    assert run(FoldConstant(), resnet) is resnet


def test_fold_constant_tuple_valued_calls() -> None:
    data = np.arange(4, dtype="float32").reshape(1, 2, 2)
    bn = relay.nn.batch_norm(relay.const(data), relay.const([2.0, 1.0]), relay.const([1.0, 0.0]),
                             relay.const([0.0, 1.0]), relay.const([1.0, 4.0]), axis=1,
                             epsilon=0.0)
    x = relay.var("x", shape=(1, 2, 2))
    body = relay.Tuple([relay.add(x, bn[0]), bn])
    out = run(FoldConstant(), IRModule.from_expr(relay.Function([x], body)))["main"].body
    assert isinstance(out, relay.Tuple)
    total, whole = out.fields
    assert isinstance(total.args[1], relay.Constant)
    np.testing.assert_array_equal(total.args[1].data, [[[1.0, 3.0], [0.5, 1.0]]])
    assert isinstance(whole, relay.Tuple)
    assert all(isinstance(f, relay.Constant) for f in whole.fields)


def test_fold_constant_projection_of_tuple_is_the_field() -> None:
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    body = relay.nn.relu(relay.TupleGetItem(relay.Tuple([x, y]), 1))
    out = run(FoldConstant(), IRModule.from_expr(relay.Function([x, y], body)))
    assert out["main"].body.args[0] is out["main"].params[1]


def test_fold_constant_concatenate_of_constant_tuple() -> None:
    c = relay.concatenate(relay.Tuple([relay.const([1.0]), relay.const([2.0, 3.0])]), axis=0)
    x = relay.var("x", shape=(3,))
    out = run(FoldConstant(), IRModule.from_expr(relay.Function([x], relay.add(x, c))))
    np.testing.assert_array_equal(out["main"].body.args[1].data, [1.0, 2.0, 3.0])


def test_fold_constant_leaves_function_calls_and_primitive_functions() -> None:
    p = relay.var("p", shape=(2,))
    plain = relay.Function([p], relay.add(p, relay.add(relay.const([1.0, 1.0]),
                                                       relay.const([1.0, 1.0]))))
    q = relay.var("q", shape=(2,))
    prim = relay.Function([q], relay.add(q, relay.negative(relay.const([1.0, 1.0]))),
                          attrs={"Primitive": 1})
    two = relay.const([2.0, 2.0])
    body = relay.add(relay.Call(plain, [two]), relay.Call(prim, [two]))
    out = run(FoldConstant(), IRModule.from_expr(relay.Function([], body)))["main"].body
    folded_plain, kept_prim = out.args[0].op, out.args[1].op
    assert isinstance(folded_plain.body.args[1], relay.Constant)
    assert kept_prim is prim
    assert isinstance(out.args[0], relay.Call) and isinstance(out.args[1], relay.Call)


def test_fold_constant_global_calls_are_kept() -> None:
    mod = parse_module('#[version = "passhost.text/1"]\n'
                       "def @f(%p: Tensor[(2), float32]) -> Tensor[(2), float32] { nn.relu(%p) }\n"
                       "def @main() { @f(const([1.0, -1.0], float32)) }\n")
    assert run(FoldConstant(), mod) is mod


def _quantize_module() -> IRModule:
    x = relay.var("x", shape=(2,))
    q = relay.qnn.quantize(relay.const([0.5, -1.0]), relay.const(0.5), relay.const(0, "int32"))
    return IRModule.from_expr(relay.Function([x], relay.add(x, relay.cast(q, "float32"))))


def test_fold_constant_qnn_only_when_asked() -> None:
    mod = _quantize_module()
    kept = run(FoldConstant(), mod)
    assert [c.op.name for c in calls(kept, "qnn.quantize")] == ["qnn.quantize"]
    folded = run(FoldConstant(fold_qnn=True), mod)
    assert calls(folded, "qnn.quantize") == [] and calls(folded, "cast") == []
    np.testing.assert_array_equal(folded["main"].body.args[1].data, [1.0, -2.0])
    from_text = get_host().registries.passes.get("FoldConstant").create(
        {"fold_qnn": "true"}, from_text=True)
    assert calls(run(from_text, mod), "qnn.quantize") == []


def test_fold_constant_bad_option() -> None:
    with pytest.raises(OptionError, match=r"FoldConstant.*fold_qnn.*'yes'"):
        FoldConstant(fold_qnn="yes")


def test_fold_constant_nests_infer_type() -> None:
    assert nesting_of(FoldConstant(), _quantize_module()) == ["FoldConstant", "  InferType"]


def test_fold_constant_ill_typed_input_names_op() -> None:
    x = relay.var("x", shape=(2, 3))
    bad = relay.Function([x], relay.add(x, relay.add(relay.const([1.0, 2.0]),
                                                      relay.const([1.0, 2.0, 3.0]))))
    with pytest.raises(IRTypeError, match=r"add: argument 'rhs'"):
        FoldConstant()(IRModule.from_expr(bad))


def test_fold_constant_long_chain_is_not_recursive() -> None:
    x = relay.var("x", shape=(1,))
    value: relay.Expr = relay.add(x, relay.negative(relay.const([2.0])))
    for _ in range(100_000):
        value = relay.nn.relu(value)
    out = FoldConstant()(IRModule.from_expr(relay.Function([x], value)))
    bottom = out["main"].body
    for _ in range(100_000):
        bottom = bottom.args[0]
    assert isinstance(bottom.args[1], relay.Constant) and bottom.args[1].data.tolist() == [-2.0]


def _hwio_weights(mod: IRModule) -> IRModule:
    """``mod`` with every conv2d weight given through layout_transform(OIHW -> HWIO)."""

    class ToHWIO(relay.ExprMutator):
        def visit_call(self, call, op, args):
            if op is relay.nn.conv2d:
                weight = relay.layout_transform(args[1], src_layout="OIHW", dst_layout="HWIO")
                return relay.Call(op, [args[0], weight],
                                  call.attrs.with_changes(kernel_layout="HWIO"))
            return super().visit_call(call, op, args)

    return IRModule.from_expr(ToHWIO().visit(mod["main"]))


def test_fold_constant_folds_weight_layout_transforms(resnet18: IRModule) -> None:
    mod = _hwio_weights(resnet18)
    assert op_counts(mod)["layout_transform"] == 21
    out = run(FoldConstant(), mod)
    counts = op_counts(out)
    assert counts["layout_transform"] == 0
    assert counts == op_counts(resnet18)
    for conv in calls(out, "nn.conv2d"):
        weight = conv.args[1]
        o = conv.checked_type.shape[1]
        assert isinstance(weight, relay.Constant) and conv.attrs.kernel_layout == "HWIO"
        assert weight.data.shape[3] == o
    assert_same_numbers(resnet18, out)


def test_fold_constant_after_convert_layout(resnet18: IRModule) -> None:
    with PassContext(opt_level=3):
        converted = ConvertLayout(desired_layouts={"nn.conv2d": ["NHWC", "HWIO"]})(resnet18)
    weight_transforms = [c for c in calls(converted, "layout_transform")
                         if isinstance(c.args[0], relay.Constant)]
    assert len(weight_transforms) == 21
    out = run(FoldConstant(), converted)
    assert not [c for c in calls(out, "layout_transform")
                if isinstance(c.args[0], relay.Constant)]


# -- SimplifyInference -------------------------------------------------------------------------
_BN_PARAMS = ("%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], "
              "%b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]")


def test_simplify_batch_norm_structure() -> None:
    mod = parse_main("%0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.001);\n"
                     "%1 = %0.0;\nnn.dropout(%1)", _BN_PARAMS)
    want = parse_main(
        "%0 = add(%v, const(0.001, float32));\n%1 = sqrt(%0);\n%2 = divide(%g, %1);\n"
        "%3 = expand_dims(%2, axis=1, num_newaxis=2);\n%4 = multiply(%x, %3);\n"
        "%5 = multiply(%m, %2);\n%6 = subtract(%b, %5);\n"
        "%7 = expand_dims(%6, axis=1, num_newaxis=2);\nadd(%4, %7)", _BN_PARAMS)
    assert structural_equal(run(SimplifyInference(), mod), want)


def test_simplify_batch_norm_without_scale_and_center_last_axis() -> None:
    params = ("%x: Tensor[(4, 3), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32], "
              "%m: Tensor[(3), float32], %v: Tensor[(3), float32]")
    mod = parse_main("%0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=-1, center=false, "
                     "scale=false);\n%0.0", params)
    want = parse_main("%0 = add(%v, const(1e-05, float32));\n%1 = rsqrt(%0);\n"
                      "%2 = multiply(%x, %1);\n%3 = multiply(%m, %1);\n%4 = negative(%3);\n"
                      "add(%2, %4)", params)
    out = run(SimplifyInference(), mod)
    assert structural_equal(out, want)
    inputs = sample_inputs(mod)
    inputs[4] = np.abs(inputs[4])
    np.testing.assert_allclose(relay.evaluate(out, *inputs), relay.evaluate(mod, *inputs),
                               rtol=1e-5, atol=1e-5)


def test_simplify_batch_norm_other_fields_are_the_statistics() -> None:
    mod = parse_main("%0 = nn.batch_norm(%x, %g, %b, %m, %v);\n(%0.0, %0.1, %0.2)", _BN_PARAMS)
    out = run(SimplifyInference(), mod)
    func = out["main"]
    fields = func.body.fields
    assert fields[1] is func.params[3] and fields[2] is func.params[4]
    assert calls(out, "nn.batch_norm") == []
    inputs = sample_inputs(mod)
    inputs[4] = np.abs(inputs[4]) + 0.1
    for want, got in zip(relay.evaluate(mod, *inputs), relay.evaluate(out, *inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_simplify_layer_norm_numbers_and_structure() -> None:
    params = "%x: Tensor[(2, 5, 3), float32], %g: Tensor[(5), float32], %b: Tensor[(5), float32]"
    mod = parse_main("nn.layer_norm(%x, %g, %b, axis=1, epsilon=0.01)", params)
    want = parse_main(
        "%0 = mean(%x, axis=[1], keepdims=true);\n%1 = subtract(%x, %0);\n"
        "%2 = multiply(%1, %1);\n%3 = mean(%2, axis=[1], keepdims=true);\n"
        "%4 = add(%3, const(0.01, float32));\n%5 = sqrt(%4);\n%6 = divide(%1, %5);\n"
        "%7 = expand_dims(%g, axis=1);\n%8 = multiply(%6, %7);\n"
        "%9 = expand_dims(%b, axis=1);\nadd(%8, %9)", params)
    out = run(SimplifyInference(), mod)
    assert structural_equal(out, want)
    assert_same_numbers(mod, out)


def test_simplify_inference_resnet18(resnet18: IRModule,
                                     resnet18_simplified: IRModule) -> None:
    before = op_counts(resnet18)
    assert before["nn.batch_norm"] == 19 and before["multiply"] == 0
    simplified = run(SimplifyInference(), resnet18)
    counts = op_counts(simplified)
    assert counts["nn.batch_norm"] == 0 and counts["multiply"] >= 19
    assert_same_numbers(resnet18, simplified)
    folded = op_counts(resnet18_simplified)
    # each batch norm leaves one multiply and one add; ResNet-18 adds 8 residual sums.
    assert folded["multiply"] == 19 and folded["add"] == 19 + 8
    channel_consts = [c.args[1] for c in calls(resnet18_simplified, "multiply")]
    assert all(isinstance(c, relay.Constant) and c.data.shape[1:] == (1, 1)
               for c in channel_consts)
    assert_same_numbers(resnet18, resnet18_simplified)


@pytest.mark.parametrize("name", ["mobilenet-v1", "transformer"])
def test_simplify_inference_numbers(name: str) -> None:
    mod = bound_model(name)
    out = run(SimplifyInference(), mod)
    counts = op_counts(out)
    assert counts["nn.batch_norm"] == counts["nn.layer_norm"] == counts["nn.dropout"] == 0
    assert_same_numbers(mod, out)


# -- CanonicalizeOps ---------------------------------------------------------------------------
def test_canonicalize_bias_add_structure() -> None:
    params = "%x: Tensor[(1, 3, 4, 4), float32], %b: Tensor[(3), float32]"
    mod = parse_main("nn.bias_add(%x, %b)", params)
    want = parse_main("%0 = expand_dims(%b, axis=1, num_newaxis=2);\nadd(%x, %0)", params)
    out = run(CanonicalizeOps(), mod)
    assert structural_equal(out, want)
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("axis", [-1, 2])
def test_canonicalize_bias_add_last_axis(axis: int) -> None:
    params = "%x: Tensor[(2, 3, 5), float32], %b: Tensor[(5), float32]"
    mod = parse_main(f"nn.bias_add(%x, %b, axis={axis})", params)
    out = run(CanonicalizeOps(), mod)
    assert structural_equal(out, parse_main("add(%x, %b)", params))


def test_canonicalize_resnet18(resnet18: IRModule) -> None:
    out = run(CanonicalizeOps(), resnet18)
    before, after = op_counts(resnet18), op_counts(out)
    assert before["nn.bias_add"] == 1 and after["nn.bias_add"] == 0
    assert after["add"] == before["add"] + 1 and after["expand_dims"] == 0
    assert run(CanonicalizeOps(), out) is out
    assert_same_numbers(resnet18, out)


def test_canonicalize_ill_typed_input_names_op() -> None:
    x = relay.var("x", shape=(1, 3))
    bad = relay.nn.bias_add(x, relay.const([1.0, 2.0]))
    mod = IRModule.from_expr(relay.Function([x], bad))
    log = Nesting()
    with (pytest.raises(IRTypeError, match=r"nn.bias_add: argument 'bias'"),
          PassContext(opt_level=3, instruments=[log])):
        Sequential([CanonicalizeOps()])(mod)
    assert log.log == ["sequential", "  InferType"]
