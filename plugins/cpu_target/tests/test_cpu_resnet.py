"""Every fused function of ResNet-18, lowered with the default lowering and compiled for
the cpu target, agrees with the graph interpreter on the fused function."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_helpers import compile_funcs

from passhost.backend.lower_primitive import lower_primitive
from passhost.relay.expr import Call, Function
from passhost.relay.interpreter import Interpreter
from passhost.relay.testing import resnet
from passhost.relay.transform import (
    FoldConstant,
    FoldScaleAxis,
    FuseOps,
    InferType,
    SimplifyInference,
    bind_params_by_name,
)
from passhost.relay.visitor import post_order
from passhost.transform import PassContext, Sequential


@pytest.fixture(scope="module")
def fused_functions() -> list[Function]:
    mod, params = resnet.get_workload(num_layers=18)
    mod = mod.with_function("main", bind_params_by_name(mod["main"], params))
    with PassContext(opt_level=3):
        mod = Sequential([InferType(), SimplifyInference(), FoldConstant(), FoldScaleAxis(),
                          FuseOps()])(mod)
    return [n.op for n in post_order(mod["main"].body, stop=lambda n: isinstance(n, Function))
            if isinstance(n, Call) and isinstance(n.op, Function)]


def test_every_fused_function_matches_the_interpreter(fused_functions):
    assert len(fused_functions) > 20
    prims = {f"fused_{i}": lower_primitive(f, f"fused_{i}", {"target": "cpu"})
             for i, f in enumerate(fused_functions)}
    module = compile_funcs(prims)
    rng = np.random.default_rng(18)
    for i, func in enumerate(fused_functions):
        inputs = [rng.standard_normal(p.checked_type.shape).astype(p.checked_type.dtype)
                  for p in func.params]
        expected = np.asarray(Interpreter().run(func, inputs))
        out = np.full(expected.shape, np.nan, expected.dtype)
        module.get_function(f"fused_{i}")(*inputs, out)
        # float32 sums of thousands of products round differently in another order: near
        # zero, compare against the output's scale
        scale = float(np.max(np.abs(expected)))
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=f"fused function {i}")
