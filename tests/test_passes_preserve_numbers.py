"""Every standard pass preserves the numbers and leaves its input alone.

On the zoo models (weights bound as constants) and on hypothesis-generated graphs
(passhost.relay.testing.synthetic), the reference interpreter's outputs before and after
each pass agree (rtol 1e-5, with an absolute floor of 1e-5 of the output's magnitude for
values near zero). Every pass runs under ``testing.immutable_module``, which raises if it
changed its input module.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import transform as T
from passhost.relay.dataflow_pattern import is_constant, is_op, wildcard
from passhost.relay.testing.synthetic import BLOCKS, build_graph
from passhost.transform import PassContext, Sequential
from passhost.workloads.zoo import get_model

CONV_BIAS = [("demo.conv2d_bias", is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(),
                                                                         is_constant()),
                                                       is_constant())),
             ("demo.dense", is_op("nn.dense")(wildcard(), is_constant()))]


def _pipeline(*passes):
    return lambda: Sequential(list(passes))


PASSES = {
    "InferType": T.InferType,
    "FoldConstant": T.FoldConstant,
    "SimplifyInference": T.SimplifyInference,
    "FoldScaleAxis": T.FoldScaleAxis,
    "SimplifyInference,FoldConstant,FoldScaleAxis": _pipeline(
        T.SimplifyInference(), T.FoldConstant(), T.FoldScaleAxis()),
    "CanonicalizeOps": T.CanonicalizeOps,
    "ConvertLayout{nn.conv2d:NHWC:default}": lambda: T.ConvertLayout(
        {"nn.conv2d": ["NHWC", "default"]}),
    "ConvertLayout{nn.conv2d:NHWC:OHWI;nn.max_pool2d:NHWC}": lambda: T.ConvertLayout(
        {"nn.conv2d": ["NHWC", "OHWI"], "nn.max_pool2d": ["NHWC"]}),
    "ConvertLayout{nn.conv2d:NCHW4c:OIHW}": lambda: T.ConvertLayout(
        {"nn.conv2d": ["NCHW4c", "OIHW"]}),
    "EliminateCommonSubexpr": T.EliminateCommonSubexpr,
    "DeadCodeElimination": T.DeadCodeElimination,
    "FuseOps": T.FuseOps,
    "FuseOps{max_depth=2}": lambda: T.FuseOps(max_depth=2),
    "MergeComposite,AnnotateTarget,PartitionGraph": _pipeline(
        T.MergeComposite(CONV_BIAS), T.AnnotateTarget(["demo"]), T.PartitionGraph()),
    "standard pipeline": _pipeline(
        T.SimplifyInference(), T.FoldConstant(), T.FoldScaleAxis(), T.CanonicalizeOps(),
        T.ConvertLayout({"nn.conv2d": ["NHWC", "default"]}), T.FoldConstant(),
        T.EliminateCommonSubexpr(), T.DeadCodeElimination(), T.FuseOps()),
}


def run_pass(make, mod: IRModule) -> IRModule:
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        return make()(mod)


def assert_same_numbers(after: np.ndarray, before: np.ndarray) -> None:
    scale = float(np.max(np.abs(before))) if before.size else 1.0
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5 * max(scale, 1e-3))


#: Random ranges for the normalisation statistics, whose zoo values are the identity.
_STATISTICS = {"gamma": (0.5, 1.5), "beta": (-0.5, 0.5), "moving_mean": (-0.5, 0.5),
               "moving_var": (0.5, 2.0)}


def _with_random_statistics(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    out = dict(params)
    for name, value in params.items():
        for suffix, (low, high) in _STATISTICS.items():
            if name.endswith(suffix):
                out[name] = rng.uniform(low, high, value.shape).astype(value.dtype)
    return out


def _logits(func: relay.Function) -> relay.Function:
    """``func`` without a final softmax, whose saturation would hide differences."""
    body = func.body
    if isinstance(body, relay.Call) and getattr(body.op, "name", "") == "nn.softmax":
        return relay.Function(func.params, body.args[0])
    return func


@cache
def bound_zoo_model(name: str) -> tuple[IRModule, np.ndarray, np.ndarray]:
    """The zoo model with random normalisation statistics bound, up to its logits; an
    input; the interpreter's output on it."""
    mod, params = get_model(name)
    main = T.bind_params_by_name(_logits(mod["main"]), _with_random_statistics(params))
    mod = mod.with_function("main", main)
    ty = mod["main"].params[0].checked_type
    data = np.random.default_rng(0).uniform(-1, 1, ty.shape).astype(ty.dtype)
    return mod, data, relay.evaluate(mod, data)


# The larger models run the passes that reshape them most (to keep the suite quick).
ZOO_CASES = [(name, case) for name in ("resnet-18", "mobilenet-v1", "mlp", "transformer")
             for case in PASSES] + [
    (name, case) for name in ("resnet-50", "mobilenet-v2")
    for case in ("standard pipeline", "ConvertLayout{nn.conv2d:NHWC:default}",
                 "SimplifyInference,FoldConstant,FoldScaleAxis", "FuseOps")]


@pytest.mark.parametrize(("name", "case"), ZOO_CASES)
def test_zoo_model_numbers_survive_the_pass(name, case):
    mod, data, expected = bound_zoo_model(name)
    out = run_pass(PASSES[case], mod)
    assert_same_numbers(relay.evaluate(out, data), expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(choices=st.lists(st.integers(0, len(BLOCKS) - 1), min_size=1, max_size=10),
       case=st.sampled_from(list(PASSES)), seed=st.integers(0, 3))
def test_generated_graph_numbers_survive_every_pass(choices, case, seed):
    mod = build_graph(choices, seed=seed)
    data = np.random.default_rng(seed).uniform(-1, 1, (1, 4, 6, 6)).astype("float32")
    expected = relay.evaluate(mod, data)
    out = run_pass(PASSES[case], mod)
    assert_same_numbers(relay.evaluate(out, data), expected)
