"""The scaled 1x1 convolution: squeeze-and-excitation's per-channel product with the data,
then the 1x1 layer after it, which FuseOps puts in one group, run as one native call
(``ph_conv2d_nchw_scaled``) with the reference interpreter's numbers. The kernel scales the
prepared weights (packed panels on large planes, the transposed form's panels on a 7x7
one) or, where they outnumber the data, the data; scales per image or one for the batch;
the epilogue (bias, residual, clamp, activation); one and two threads."""

from __future__ import annotations

import numpy as np
import pytest

import passhost
from passhost import relay
from passhost.relay.interpreter import evaluate
from passhost.transform import PassContext

RNG = np.random.default_rng(12)


def _block(n, c, o, h, w, scales=None, residual=False, tail="none"):
    """``x * s`` then a 1x1 convolution to ``o`` channels with a bias, a residual when
    asked, and ``tail`` ("relu", "silu" or "none"); ``s`` is [scales or n, c, 1, 1]. Returns
    the module, its weights and its inputs."""
    x = relay.var("x", shape=(n, c, h, w), dtype="float32")
    s = relay.var("s", shape=(scales or n, c, 1, 1), dtype="float32")
    shapes = {"w": (o, c, 1, 1), "b": (o, 1, 1)}
    params = {k: RNG.uniform(-1, 1, v).astype("float32") for k, v in shapes.items()}
    wv, bv = (relay.var(k, shape=v, dtype="float32") for k, v in shapes.items())
    out = relay.add(relay.nn.conv2d(relay.multiply(x, s), wv, kernel_size=(1, 1), channels=o),
                    bv)
    free = [x, s, wv, bv]
    if residual:
        r = relay.var("r", shape=(n, o, h, w), dtype="float32")
        free.append(r)
        params["r"] = RNG.uniform(-1, 1, (n, o, h, w)).astype("float32")
        out = relay.add(out, r)
    if tail == "relu":
        out = relay.nn.relu(out)
    elif tail == "silu":
        out = relay.nn.silu(out)
    inputs = {"x": RNG.uniform(-1, 1, (n, c, h, w)).astype("float32"),
              "s": RNG.uniform(0, 1, (scales or n, c, 1, 1)).astype("float32")}
    return relay.IRModule.from_expr(relay.Function(free, out)), params, inputs


def _run(mod, params, inputs, threads, scale=True):
    """The compiled module's output for ``inputs``, and the compiled module."""
    with PassContext(opt_level=3, config={"relay.FuseOps.scale_pointwise": scale}):
        compiled = passhost.build(mod, f"cpu -num-threads={threads}", params)
    return compiled.executor()(**inputs), compiled


CASES = [  # n, c, o, h, w, scales
    (1, 16, 8, 56, 56, None),   # weights scaled, packed panels, whole column blocks
    (1, 24, 40, 45, 47, None),  # weights scaled, a partial last block
    (1, 144, 24, 7, 7, None),   # weights scaled, the transposed form's panels
    (1, 40, 96, 5, 5, None),    # the data scaled: more weights than data
    (2, 12, 20, 30, 30, None),  # a scale per image
    (3, 12, 20, 30, 30, 1),     # one scale for the batch
    (2, 32, 64, 6, 6, None),    # the data scaled, per image
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "c", "o", "h", "w", "scales"), CASES)
def test_the_scale_and_the_convolution_are_one_native_call_with_the_reference_numbers(
        threads, n, c, o, h, w, scales):
    mod, params, inputs = _block(n, c, o, h, w, scales)
    (got,), compiled = _run(mod, params, inputs, threads)
    assert len(compiled.plan.steps) == 1
    assert "_conv2d_nchw_scaled(" in compiled.get_source()
    np.testing.assert_allclose(got, evaluate(mod, **inputs, **params), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("residual", "tail"), [(True, "relu"), (False, "silu"),
                                                (True, "none")])
@pytest.mark.parametrize("hw", [40, 4])
def test_the_epilogue_and_a_residual_are_applied(residual, tail, hw):
    mod, params, inputs = _block(2, 8, 12, hw, hw, residual=residual, tail=tail)
    (got,), compiled = _run(mod, params, inputs, 2)
    assert len(compiled.plan.steps) == 1
    np.testing.assert_allclose(got, evaluate(mod, **inputs, **params), rtol=1e-4, atol=1e-5)


def test_the_option_off_keeps_the_product_a_step_of_its_own():
    mod, params, inputs = _block(1, 16, 8, 20, 20)
    (got,), compiled = _run(mod, params, inputs, 1, scale=False)
    assert len(compiled.plan.steps) == 2
    assert "_conv2d_nchw_scaled(" not in compiled.get_source()
    np.testing.assert_allclose(got, evaluate(mod, **inputs, **params), rtol=1e-4, atol=1e-5)


def test_the_inputs_are_left_alone():
    mod, params, inputs = _block(2, 24, 8, 30, 30)
    before = {k: v.copy() for k, v in inputs.items()}
    _run(mod, params, inputs, 2)
    for k, v in inputs.items():
        np.testing.assert_array_equal(v, before[k])
