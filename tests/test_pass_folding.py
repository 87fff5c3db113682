"""The folding passes: bind_params_by_name, FoldConstant, SimplifyInference, FoldScaleAxis and
CanonicalizeOps.

Numbers are checked with the reference interpreter on zoo models whose batch-norm statistics
are randomised (the zoo's are the identity, which would hide mistakes) and whose softmax is
dropped (it saturates); structures are checked against expected IR written by hand or against
op counts worked out from the architectures.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

import passhost.relay as relay
from passhost.errors import IRTypeError, OptionError, UnknownNameError
from passhost.instrument import PassInstrument
from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal
from passhost.plugins.manager import get_host
from passhost.relay.op.registry import Op
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

IMMUTABLE = {"testing.immutable_module": True}


# -- helpers -----------------------------------------------------------------------------------
def op_counts(mod: IRModule) -> Counter:
    """How many calls of each operator ``main`` makes."""
    return Counter(n.op.name for n in relay.post_order(mod["main"])
                   if isinstance(n, relay.Call) and isinstance(n.op, Op))


def calls(mod: IRModule, name: str) -> list[relay.Call]:
    """The calls of operator ``name`` in ``main``."""
    op = relay.get_op(name)
    return [n for n in relay.post_order(mod["main"]) if isinstance(n, relay.Call) and n.op is op]


def randomised(params: dict[str, np.ndarray], negative_gamma: bool = False,
               ) -> dict[str, np.ndarray]:
    """``params`` with random batch-norm statistics (gamma > 0 unless ``negative_gamma``,
    which flips every third channel)."""
    rng = np.random.default_rng(0)
    out = {}
    for name, value in params.items():
        if name.endswith("_gamma"):
            value = rng.uniform(0.5, 1.5, value.shape)
            if negative_gamma:
                value[::3] *= -1
        elif name.endswith(("_beta", "_moving_mean")):
            value = rng.normal(0.0, 0.2, value.shape)
        elif name.endswith("_moving_var"):
            value = rng.uniform(0.5, 2.0, value.shape)
        out[name] = np.asarray(value, dtype="float32")
    return out


@functools.cache
def bound_model(name: str, negative_gamma: bool = False) -> IRModule:
    """Zoo model ``name`` with randomised bound parameters and without its final softmax."""
    mod, params = get_model(name)
    func = bind_params_by_name(mod["main"], randomised(params, negative_gamma))
    body = func.body
    if isinstance(body, relay.Call) and body.op is relay.nn.softmax:
        body = body.args[0]
    return IRModule.from_expr(relay.Function(func.params, body))


def sample_inputs(mod: IRModule) -> list[np.ndarray]:
    """Random inputs for the parameters of ``main``."""
    rng = np.random.default_rng(1)
    return [rng.standard_normal(p.checked_type.shape).astype(p.checked_type.dtype)
            for p in mod["main"].params]


_REFERENCE: dict[int, tuple[IRModule, list[np.ndarray], np.ndarray]] = {}


def reference(mod: IRModule) -> tuple[list[np.ndarray], np.ndarray]:
    """Sample inputs of ``mod`` and its output on them (computed once per module)."""
    entry = _REFERENCE.get(id(mod))
    if entry is None or entry[0] is not mod:
        inputs = sample_inputs(mod)
        entry = _REFERENCE[id(mod)] = (mod, inputs, relay.evaluate(mod, *inputs))
    return entry[1], entry[2]


def assert_same_numbers(before: IRModule, after: IRModule) -> None:
    """``after`` computes what ``before`` does (tolerance relative to the output scale)."""
    inputs, want = reference(before)
    got = relay.evaluate(after, *inputs)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


def run(pass_: object, mod: IRModule) -> IRModule:
    """Run a pass under the immutable-module check."""
    with PassContext(opt_level=3, config=IMMUTABLE):
        return pass_(mod)  # type: ignore[operator]


def parse_main(body: str, params: str) -> IRModule:
    """A module whose main has these parameters and body text."""
    return parse_module(f'#[version = "passhost.text/1"]\ndef @main({params}) {{\n{body}\n}}\n')


class Nesting(PassInstrument):
    """Records ``"  " * depth + name`` of every pass run."""

    def __init__(self) -> None:
        self.depth = 0
        self.log: list[str] = []

    def run_before_pass(self, mod: IRModule, info: object) -> None:
        """Log the pass at the current depth and go one level down."""
        self.log.append("  " * self.depth + info.name)  # type: ignore[attr-defined]
        self.depth += 1

    def run_after_pass(self, mod: IRModule, info: object) -> None:
        """Come back up one level."""
        self.depth -= 1


def nesting_of(pass_: object, mod: IRModule) -> list[str]:
    """The pass tree that running ``pass_`` on ``mod`` produces."""
    nest = Nesting()
    with PassContext(opt_level=3, instruments=[nest]):
        pass_(mod)  # type: ignore[operator]
    return nest.log


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


# -- FoldScaleAxis -----------------------------------------------------------------------------
def _conv_module(scale: np.ndarray, *, relu: bool = False, bias: bool = False,
                 layouts: tuple[str, str] = ("NCHW", "OIHW"), groups: int = 1) -> IRModule:
    """``multiply([relu](conv2d(x, W) [+ b]), scale)`` with C = 4 channels."""
    data_layout, kernel_layout = layouts
    rng = np.random.default_rng(2)
    x_shape = (1, 4, 5, 5) if data_layout == "NCHW" else (1, 5, 5, 4)
    oihw = rng.standard_normal((4, 4 // groups, 3, 3)).astype("float32")
    weight = np.transpose(oihw, [ "OIHW".index(d) for d in kernel_layout])
    x = relay.var("x", shape=x_shape)
    value = relay.nn.conv2d(x, relay.const(weight), padding=1, groups=groups,
                            data_layout=data_layout, kernel_layout=kernel_layout)
    if bias:
        value = relay.nn.bias_add(value, relay.const(rng.standard_normal(4).astype("float32")),
                                  axis=data_layout.index("C"))
    if relu:
        value = relay.nn.relu(value)
    return IRModule.from_expr(relay.Function([x], relay.multiply(value, relay.const(scale))))


def _expected_weight(mod: IRModule, vector: np.ndarray) -> np.ndarray:
    conv = calls(mod, "nn.conv2d")[0]
    layout = conv.attrs.kernel_layout
    shape = [1] * 4
    shape[layout.index("O")] = 4
    return conv.args[1].data * vector.reshape(shape)


SCALE = np.array([0.5, 2.0, 1.5, 0.25], dtype="float32")


def test_fold_scale_axis_backward_structure() -> None:
    mod = _conv_module(SCALE.reshape(4, 1, 1))
    out = run(FoldScaleAxis(), mod)
    x = relay.var("x", shape=(1, 4, 5, 5))
    want = relay.Function([x], relay.nn.conv2d(x, relay.const(_expected_weight(mod, SCALE)),
                                               padding=1))
    assert structural_equal(out, IRModule.from_expr(want))
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("layouts, shape", [
    (("NCHW", "OIHW"), (1, 4, 1, 1)),
    (("NHWC", "HWIO"), (4,)),
    (("NHWC", "OHWI"), (1, 1, 1, 4)),
    (("NHWC", "HWOI"), (1, 4)),
])
def test_fold_scale_axis_backward_layouts(layouts: tuple[str, str], shape: tuple[int, ...],
                                          ) -> None:
    mod = _conv_module(SCALE.reshape(shape), layouts=layouts)
    out = run(FoldScaleAxis(), mod)
    assert op_counts(out) == Counter({"nn.conv2d": 1})
    np.testing.assert_array_equal(out["main"].body.args[1].data, _expected_weight(mod, SCALE))
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("options", [{"bias": True}, {"relu": True}, {"bias": True, "relu": True},
                                     {"groups": 4}, {"groups": 2, "bias": True}])
def test_fold_scale_axis_backward_through_bias_relu_groups(options: dict) -> None:
    mod = _conv_module(SCALE.reshape(4, 1, 1), **options)
    out = run(FoldScaleAxis(), mod)
    assert op_counts(out)["multiply"] == 0
    assert_same_numbers(mod, out)


@pytest.mark.parametrize("scale, reason", [
    (np.array([0.5, -2.0, 1.5, 0.25], "float32").reshape(4, 1, 1), "negative through relu"),
    (np.ones((1, 5, 5), "float32"), "varies along space"),
    (np.ones((2, 4, 1, 1), "float32"), "broadcasts to a larger shape"),
])
def test_fold_scale_axis_backward_refusals(scale: np.ndarray, reason: str) -> None:
    mod = _conv_module(scale, relu=True)
    out = run(FoldScaleAxis(), mod)
    assert structural_equal(out, mod), reason


def test_fold_scale_axis_backward_needs_single_user() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    w = relay.const(np.ones((4, 4, 1, 1), "float32"))
    conv = relay.nn.conv2d(x, w)
    body = relay.Tuple([relay.multiply(conv, relay.const(SCALE.reshape(4, 1, 1))), conv])
    mod = IRModule.from_expr(relay.Function([x], body))
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


def test_fold_scale_axis_dense_backward() -> None:
    x = relay.var("x", shape=(2, 3))
    weight = np.arange(12, dtype="float32").reshape(4, 3)
    body = relay.multiply(relay.nn.dense(x, relay.const(weight)), relay.const(SCALE))
    mod = IRModule.from_expr(relay.Function([x], body))
    out = run(FoldScaleAxis(), mod)
    want = relay.Function([x], relay.nn.dense(x, relay.const(weight * SCALE[:, None])))
    assert structural_equal(out, IRModule.from_expr(want))


def test_fold_scale_axis_forward_structure() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    weight = np.random.default_rng(3).standard_normal((2, 4, 3, 3)).astype("float32")
    scaled = relay.multiply(x, relay.const(SCALE.reshape(4, 1, 1)))
    mod = IRModule.from_expr(relay.Function(
        [x], relay.nn.conv2d(scaled, relay.const(weight), padding=1)))
    out = run(FoldScaleAxis(), mod)
    want = relay.Function([x], relay.nn.conv2d(
        x, relay.const(weight * SCALE.reshape(1, 4, 1, 1)), padding=1))
    assert structural_equal(out, IRModule.from_expr(want))
    assert_same_numbers(mod, out)


def _forward_module(scale: np.ndarray, extra_user: bool = False, groups: int = 1) -> IRModule:
    """``relu(x * s + b)`` feeding two convolutions (and ``exp`` when ``extra_user``)."""
    rng = np.random.default_rng(4)
    x = relay.var("x", shape=(1, 4, 5, 5))
    shifted = relay.add(relay.multiply(x, relay.const(scale.reshape(4, 1, 1))),
                        relay.const(rng.standard_normal((4, 1, 1)).astype("float32")))
    act = relay.nn.relu(shifted)
    w1 = rng.standard_normal((3, 4 // groups, 3, 3)).astype("float32")
    w2 = rng.standard_normal((2, 4, 1, 1)).astype("float32")
    outs = [relay.nn.conv2d(act, relay.const(w1), padding=1, groups=1),
            relay.nn.conv2d(act, relay.const(w2))]
    if extra_user:
        outs.append(relay.exp(act))
    return IRModule.from_expr(relay.Function([x], relay.Tuple(outs)))


def test_fold_scale_axis_forward_through_add_and_relu() -> None:
    mod = _forward_module(SCALE)
    out = run(FoldScaleAxis(), mod)
    assert op_counts(out) == Counter({"nn.conv2d": 2, "add": 1, "nn.relu": 1})
    inputs = sample_inputs(mod)
    for want, got in zip(relay.evaluate(mod, *inputs), relay.evaluate(out, *inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale, extra_user", [
    (np.array([0.5, -2.0, 1.5, 0.25], "float32"), False),
    (SCALE, True),
])
def test_fold_scale_axis_forward_refusals(scale: np.ndarray, extra_user: bool) -> None:
    mod = _forward_module(scale, extra_user)
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


def test_fold_scale_axis_forward_skips_grouped_conv() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    scaled = relay.multiply(x, relay.const(SCALE.reshape(4, 1, 1)))
    conv = relay.nn.conv2d(scaled, relay.const(np.ones((4, 1, 3, 3), "float32")), groups=4)
    mod = IRModule.from_expr(relay.Function([x], conv))
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


@pytest.mark.parametrize("forward", [False, True])
def test_fold_scale_axis_leaves_channel_blocked_convs(forward: bool) -> None:
    # a scale along the blocks, (1, C / 8, 1, 1, 1), is no vector along O or I
    x = relay.var("x", shape=(1, 2, 4, 4, 8))
    weight = relay.const(np.random.default_rng(5).standard_normal((16, 16, 1, 1))
                         .astype("float32"))
    scale = relay.const(np.array([0.5, 2.0], "float32").reshape(1, 2, 1, 1, 1))
    if forward:
        body = relay.nn.conv2d(relay.multiply(x, scale), weight, data_layout="NCHW8c")
    else:
        body = relay.multiply(relay.nn.conv2d(x, weight, data_layout="NCHW8c"), scale)
    mod = IRModule.from_expr(relay.Function([x], body))
    assert structural_equal(run(FoldScaleAxis(), mod), mod)


# Multiplies left after SimplifyInference + FoldConstant (one per batch norm) and after
# FoldScaleAxis, from the architectures (MXNet-style pre-activation ResNets):
# - ResNet-18: bn_data, bn0, 8 units x (bn1, bn2), final bn1 = 19. Backward folding takes bn0
#   (after conv0) and the 8 bn2 (after conv1); forward folding takes bn_data (-> conv0) and the
#   8 bn1 (-> relu -> conv1 and the shortcut conv); the final bn1 feeds relu -> pooling: 1 left.
#   With negative gammas the bn1 relus block forward folding: 1 + 8 = 9 left.
# - ResNet-50: 16 bottleneck units x 3 bns + 3 = 51; backward takes bn0, 16 bn2, 16 bn3;
#   forward bn_data and 16 bn1: 1 left (17 with negative gammas).
# - MobileNet v1: every one of the 27 bns directly follows a conv: backward takes all 27.
@pytest.mark.parametrize("name, negative, before, after", [
    ("resnet-18", False, 19, 1),
    ("resnet-18", True, 19, 9),
    ("resnet-50", False, 51, 1),
    ("mobilenet-v1", False, 27, 0),
])
def test_fold_scale_axis_zoo_counts_and_numbers(name: str, negative: bool, before: int,
                                                after: int) -> None:
    mod = bound_model(name, negative)
    simplified = FoldConstant()(SimplifyInference()(mod))
    assert op_counts(simplified)["multiply"] == before
    out = run(FoldScaleAxis(), simplified)
    counts = op_counts(out)
    assert counts["multiply"] == after
    assert counts["nn.conv2d"] == op_counts(mod)["nn.conv2d"]
    assert counts["add"] == op_counts(simplified)["add"]
    if name != "resnet-50":  # its interpreter run is the slowest; ResNet-18 covers the units
        assert_same_numbers(mod, out)


def test_fold_scale_axis_no_pattern_keeps_structure() -> None:
    mod, params = get_model("resnet-18")
    out = run(FoldScaleAxis(), mod)
    assert structural_equal(out, mod)
    bound = IRModule.from_expr(bind_params_by_name(mod["main"], params))
    assert structural_equal(run(FoldScaleAxis(), bound), bound)


def test_fold_scale_axis_nests_fold_constant() -> None:
    mod = _conv_module(SCALE.reshape(4, 1, 1))
    assert nesting_of(FoldScaleAxis(), mod) == ["FoldScaleAxis", "  FoldConstant",
                                                "    InferType"]


def test_fold_scale_axis_ill_typed_input_names_op() -> None:
    x = relay.var("x", shape=(1, 4, 5, 5))
    bad = relay.multiply(relay.nn.conv2d(x, relay.const(np.ones((4, 3, 1, 1), "float32"))),
                         relay.const(SCALE.reshape(4, 1, 1)))
    with pytest.raises(IRTypeError, match=r"nn.conv2d: argument 'weight'"):
        FoldScaleAxis()(IRModule.from_expr(relay.Function([x], bad)))


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
