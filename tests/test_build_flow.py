"""The build flow: every step an instrumented pass, the two target hooks called at their
points with the right modules, the default lowering, the executor and its memory plan.

The host target here is ``ref-host`` (tests/toy_targets.py), whose runtime runs each
kernel call with the operator's reference kernel; the cpu target has its own tests.
"""

from __future__ import annotations

import numpy as np
import pytest

import passhost
from passhost import relay as ops
from passhost.backend import BuildError, build
from passhost.ir.module import IRModule
from passhost.relay import var
from passhost.relay.expr import Function
from passhost.relay.interpreter import evaluate
from passhost.runtime.plan import ExecutorPlan, PlanError
from passhost.tir import PrimFunc
from passhost.transform import PassContext
from passhost.workloads.zoo import get_model
from passhost_timing import PassTimingInstrument
from toy_targets import RefHostPlugin, ToyPlugin


@pytest.fixture
def toy(register_plugin) -> ToyPlugin:
    plugin = ToyPlugin()
    register_plugin(RefHostPlugin(), "ref-host")
    register_plugin(plugin, "toy")
    return plugin


def _conv_add_model() -> tuple[IRModule, dict[str, np.ndarray]]:
    x = var("x", shape=(1, 4, 8, 8))
    w = var("w", shape=(6, 4, 3, 3))
    b = var("b", shape=(6, 1, 1))
    y = ops.nn.relu(ops.add(ops.nn.conv2d(x, w, padding=(1, 1)), b))
    z = ops.add(y, y)
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((6, 4, 3, 3)).astype("float32"),
              "b": rng.standard_normal((6, 1, 1)).astype("float32")}
    return IRModule.from_expr(Function([x, w, b], z)), params


def _names(profiles) -> list[str]:
    out, stack = [], list(profiles)
    while stack:
        p = stack.pop(0)
        out.append(p.name)
        stack[:0] = p.children
    return out


def test_build_matches_the_interpreter_and_times_every_step(toy):
    mod, params = _conv_add_model()
    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype("float32")
    timing = PassTimingInstrument()
    with PassContext(opt_level=3, instruments=[timing]):
        compiled = build(mod, "toy, ref-host", params)
        top = timing.profile()
    got = compiled.executor()(x)[0]
    want = evaluate(mod, x=x, **params)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert [p.name for p in top] == ["build"]
    # InferType also runs before FuseOps and LowerTE, which require it
    steps = [p.name for p in top[0].children if p.name != "InferType"]
    assert steps == ["BindParams", "Optimize", "Partition.toy", "FuseOps", "RelayToTIR.toy",
                     "LowerTE", "tir.phase1", "TIRToRuntime.toy", "TIRToRuntime.ref-host",
                     "Package"]
    names = _names(top)
    for inner in ("SimplifyInference", "FoldConstant", "MergeComposite", "AnnotateTarget",
                  "PartitionGraph", "ToyPhasePass"):
        assert inner in names


def test_hooks_get_the_right_modules_at_their_points(toy):
    mod, params = _conv_add_model()
    with PassContext(opt_level=3):
        compiled = build(mod, "toy, ref-host", params)
    kinds = [e[0] for e in toy.events]
    assert kinds == ["relay_to_tir", "tir.phase1", "tir_to_runtime"]
    before = toy.events[0][1]
    owned = [n for n, f in before.items() if isinstance(f, Function)
             and f.attrs.get("Compiler") == "toy"]
    assert owned, "relay_to_tir sees the partitioned functions"
    assert not any(isinstance(f, PrimFunc) for f in before.functions.values()), \
        "relay_to_tir runs before the default lowering"
    phase = toy.events[1][1]
    prims = {n: f.attrs["target"] for n, f in phase.items() if isinstance(f, PrimFunc)}
    assert set(prims.values()) == {"toy", "ref-host"}
    runtime_mod = toy.events[2][1]
    assert sorted(runtime_mod) == sorted(owned), "tir_to_runtime gets only its PrimFuncs"
    assert [m.type_key for m in compiled.module.imported_modules] == ["toy"]


def test_external_target_without_relay_to_tir_is_an_error(register_plugin, toy):
    from passhost.relay.dataflow_pattern import is_op, wildcard
    from passhost.target import TargetKind

    class NoLowering:
        @passhost.hookimpl
        def passhost_register_targets(self):
            return [TargetKind("lazy", pattern_table=[("lazy.add", is_op("add")(
                wildcard(), wildcard()))])]

    register_plugin(NoLowering(), "lazy")
    mod, params = _conv_add_model()
    with pytest.raises(BuildError, match=r"'lazy' was given .* no relay_to_tir"), \
            PassContext(opt_level=3):
        build(mod, "lazy, ref-host", params)


@pytest.mark.parametrize("name", ["resnet-18", "mobilenet-v2", "mlp", "transformer"])
def test_zoo_models_through_the_default_lowering(toy, name):
    mod, params = get_model(name)
    main = mod["main"]
    inputs = {p.name_hint: np.random.default_rng(2).uniform(-1, 1, p.checked_type.shape)
              .astype(p.checked_type.dtype) for p in main.params if p.name_hint not in params}
    with PassContext(opt_level=3):
        compiled = build(mod, "ref-host", params)
    got = compiled.executor()(**inputs)
    want = evaluate(mod, **inputs, **params)
    want = list(want) if isinstance(want, tuple) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_memory_plan_reuses_bytes_without_overlapping_lifetimes(toy):
    mod, params = get_model("resnet-18")
    with PassContext(opt_level=3):
        plan = build(mod, "ref-host", params).plan
    # independent liveness: a tensor lives from the step writing it to its last reader
    # (outputs to the end); tensors whose bytes overlap must not both be live
    first, last = {}, {}
    for i, step in enumerate(plan.steps):
        for a in step.args:
            first.setdefault(a, i)
            last[a] = i
    for o in plan.outputs:
        last[o] = len(plan.steps)
    ids = [i for i, t in enumerate(plan.tensors) if t.kind == "storage"]
    peak = max(sum(plan.tensors[t].nbytes for t in ids if first[t] <= i <= last[t])
               for i in range(len(plan.steps)))
    written = sum(plan.tensors[t].nbytes for t in ids)
    assert plan.arena_size <= 1.5 * peak < written / 2
    span = {t: (plan.storage_offsets[plan.tensors[t].storage],
                plan.storage_offsets[plan.tensors[t].storage] + plan.tensors[t].nbytes)
            for t in ids}
    assert all(span[t][0] % 64 == 0 for t in ids)
    shared = 0
    for a in ids:
        for b in ids:
            if a < b and span[a][0] < span[b][1] and span[b][0] < span[a][1]:
                shared += 1
                assert last[a] <= first[b] or last[b] <= first[a], (a, b)
    assert shared > len(ids)  # bytes are reused, again and again


def _reshape_model(read_twice: bool = False) -> IRModule:
    """A matrix product whose result is reshaped and normalised (``read_twice``: the product
    is also added to the result, so the reshape is not its only reader)."""
    x, w = var("x", shape=(4, 6), dtype="float32"), var("w", shape=(8, 6), dtype="float32")
    product = ops.nn.dense(x, w)
    out = ops.nn.softmax(ops.reshape(product, newshape=(2, 2, 8)), axis=-1)
    if read_twice:
        out = ops.add(out, ops.reshape(ops.nn.relu(product), newshape=(2, 2, 8)))
    return IRModule.from_expr(Function([x, w], out))


def test_a_reshape_of_a_result_read_by_nothing_else_is_a_view_not_a_step(toy):
    mod = _reshape_model()
    compiled = build(mod, "ref-host")
    plan = compiled.plan
    assert [s.func for s in plan.steps] == ["fused_nn_dense", "fused_nn_softmax"]
    product, shaped = plan.steps[0].args[-1], plan.steps[1].args[0]
    assert plan.tensors[shaped].shape == (2, 2, 8)
    assert plan.tensors[shaped].storage == plan.tensors[product].storage
    assert any(f.attrs.get("reshape_only") for f in compiled.tir["ref-host"]
               .functions.values())  # the function is kept, for the plans that copy
    data = np.random.default_rng(3).uniform(-1, 1, (4, 6)).astype("float32")
    weight = np.random.default_rng(4).uniform(-1, 1, (8, 6)).astype("float32")
    np.testing.assert_allclose(compiled.executor()(data, weight)[0],
                               evaluate(mod, data, weight), rtol=1e-5, atol=1e-6)


def test_a_reshape_of_a_value_read_twice_or_of_an_input_or_giving_the_output_copies(toy):
    plan = build(_reshape_model(read_twice=True), "ref-host").plan
    assert any(s.func.startswith("fused_reshape") for s in plan.steps)
    x = var("x", shape=(4, 6), dtype="float32")
    plan = build(IRModule.from_expr(Function([x], ops.reshape(x, newshape=(24,)))),
                 "ref-host").plan
    assert [s.func for s in plan.steps] == ["fused_reshape"]
    w = var("w", shape=(8, 6), dtype="float32")
    plan = build(IRModule.from_expr(Function([x, w], ops.reshape(ops.nn.dense(x, w),
                                                                 newshape=(32,)))),
                 "ref-host").plan
    assert [s.func for s in plan.steps] == ["fused_nn_dense", "fused_reshape"]


def test_a_plan_whose_live_tensors_share_bytes_is_refused(toy):
    mod, params = get_model("resnet-18")
    with PassContext(opt_level=3):
        data = build(mod, "ref-host", params).plan.to_json()
    assert ExecutorPlan.from_json(data).to_json() == data
    data["storage_offsets"] = [0] * len(data["storage_offsets"])
    with pytest.raises(PlanError, match=r"tensors \d+ and \d+ are live at once and share "
                                        r"bytes of the arena"):
        ExecutorPlan.from_json(data)
    data["storage_offsets"] = [32] * len(data["storage_offsets"])
    with pytest.raises(PlanError, match=r"storage offsets \[32\] are not non-negative "
                                        r"multiples of 64"):
        ExecutorPlan.from_json(data)
    blocks = len(data["storage_sizes"])
    data["storage_offsets"] = [0]
    with pytest.raises(PlanError, match=rf"1 storage offsets for {blocks} storage blocks"):
        ExecutorPlan.from_json(data)


def test_opt_level_zero_lowers_every_operator_alone(toy):
    mod, params = _conv_add_model()
    with PassContext(opt_level=0):
        compiled = build(mod, "ref-host", params)
    assert len(compiled.plan.steps) == 4  # conv2d, add, relu, add: no fusion at O0
    x = np.ones((1, 4, 8, 8), "float32")
    np.testing.assert_allclose(compiled.executor()(x)[0], evaluate(mod, x=x, **params),
                               rtol=1e-5)


def test_lower_te_shares_structurally_equal_functions(toy):
    mod, params = get_model("resnet-18")
    with PassContext(opt_level=3):
        compiled = build(mod, "ref-host", params)
    funcs = compiled.tir["ref-host"]
    views = {name for name, f in funcs.items() if f.attrs.get("reshape_only")}
    assert views == {"fused_nn_batch_flatten"}  # a view of the pool's result, not a step
    assert len(funcs) < len(compiled.plan.steps) + len(views)
    called = {step.func for step in compiled.plan.steps}
    assert called | views == set(funcs)


def test_build_does_not_change_its_input(toy):
    mod, params = _conv_add_model()
    text = mod.astext()
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        build(mod, "toy, ref-host", params)
    assert mod.astext() == text


def test_unknown_target_and_bad_list_errors(toy):
    mod, params = _conv_add_model()
    with pytest.raises(passhost.errors.UnknownNameError, match=r"did you mean.*'toy'"):
        build(mod, "toyy, ref-host", params)
    with pytest.raises(passhost.target.TargetError, match="host"):
        build(mod, "toy", params)
    with pytest.raises(TypeError, match="IRModule"):
        build(mod["main"], "cpu", params)


def test_an_instrument_vetoing_every_pass_only_skips_what_may_be_skipped(toy):
    """Vetoing ``RelayToTIR.toy`` used to skip it, and the build then failed with an
    unrelated message; the steps the build cannot do without run (with a warning each)."""
    from passhost.instrument import PassInstrument
    from passhost.transform import VetoOverruledWarning

    class VetoAll(PassInstrument):
        def should_run(self, mod, info):
            return False

    mod, params = _conv_add_model()
    with pytest.warns(VetoOverruledWarning) as warned, \
            PassContext(opt_level=3, instruments=[VetoAll()]):
        compiled = build(mod, "toy, ref-host", params)
    overruled = {str(w.message).split(" vetoed ")[1].split(",")[0] for w in warned}
    assert {"build", "RelayToTIR.toy", "LowerTE", "TIRToRuntime.ref-host", "Package"} <= overruled
    assert "FoldConstant" not in overruled  # an optimisation: skipped as asked
    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype("float32")
    np.testing.assert_allclose(compiled.executor()(x)[0],
                               evaluate(mod, x=x, **params), rtol=1e-5, atol=1e-5)


def test_partitioning_runs_with_the_target_current(register_plugin):
    """The pattern table and its checks see the target (and so its options) as
    ``Target.current()``, as relay_to_tir and tir_to_runtime do."""
    from passhost.plugins import OptionSpec, hookimpl
    from passhost.relay.dataflow_pattern import is_op, wildcard
    from passhost.target import Target, TargetKind

    seen: list[tuple[str, str]] = []

    def refuse(root):
        seen.append(("check", str(Target.current())))
        return False

    def table(target):
        seen.append(("table", str(target)))
        seen.append(("table current", str(Target.current())))
        return [("picky.add", is_op("add")(wildcard(), wildcard()), refuse)]

    class Picky:
        @hookimpl
        def passhost_register_targets(self):
            return [TargetKind("picky", options=(OptionSpec("level", int, 0),),
                               tir_to_runtime=lambda target, mod: None, pattern_table=table,
                               summary="refuses every match (tests)")]

    register_plugin(RefHostPlugin(), "ref-host")
    register_plugin(Picky(), "picky")
    mod, params = _conv_add_model()
    build(mod, "picky -level=2, ref-host", params)
    assert Target.current() is None
    assert seen and set(seen) == {("table", "picky -level=2"), ("table current", "picky -level=2"),
                                  ("check", "picky -level=2")}
