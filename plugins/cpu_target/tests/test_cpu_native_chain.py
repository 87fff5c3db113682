"""The chained pointwise-depthwise kernel: a 1x1 convolution and the depthwise convolution of
its result, which FuseOps puts in one group, run as one native call
(``ph_pointwise_depthwise``) and give the reference interpreter's numbers. Planes chained
(of at least 784 floats, 28x28, whole column blocks and a partial last one), small planes
chained through the depthwise layer's channels-last groups (at most 256 outputs: the 1x1
layer's sums transposed, in panels of 32 channels, a partial last one), and planes run
through the two kernels in turn; every depthwise path that takes a plane at a time (3x3
and 5x5 "same", stride 2, tap by tap); activations and clamps on both layers, a residual on
the depthwise one, batches, one and two threads."""

from __future__ import annotations

import numpy as np
import pytest

import passhost
from passhost import relay
from passhost.relay.interpreter import evaluate
from passhost.transform import PassContext

RNG = np.random.default_rng(11)


def _activation(x: relay.Expr, name: str) -> relay.Expr:
    """``x`` through ``name``: "relu6" (a clip), "silu", "relu" or "none"."""
    if name == "relu6":
        return relay.clip(x, a_min=0.0, a_max=6.0)
    if name == "silu":
        return relay.nn.silu(x)
    if name == "relu":
        return relay.nn.relu(x)
    return x


def _block(n, cin, c, h, w, k, stride, pad, first, second, residual):
    """MobileNetV2's widening then filtering: a 1x1 convolution to ``c`` channels with a
    bias and ``first``, then a k x k depthwise one with a bias, a residual when asked, and
    ``second``. Returns the module, its weights and its input."""
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    x = relay.var("x", shape=(n, cin, h, w), dtype="float32")
    names = ["w1", "b1", "w2", "b2"]
    shapes = [(c, cin, 1, 1), (c, 1, 1), (c, 1, k, k), (c, 1, 1)]
    params = {name: RNG.uniform(-1, 1, shape).astype("float32")
              for name, shape in zip(names, shapes)}
    w1, b1, w2, b2 = (relay.var(name, shape=shape, dtype="float32")
                      for name, shape in zip(names, shapes))
    mid = _activation(relay.add(relay.nn.conv2d(x, w1, kernel_size=(1, 1), channels=c), b1),
                      first)
    out = relay.add(relay.nn.conv2d(mid, w2, strides=(stride, stride), padding=(pad,) * 4,
                                    groups=c, channels=c, kernel_size=(k, k)), b2)
    free = [x, w1, b1, w2, b2]
    if residual:
        r = relay.var("r", shape=(n, c, oh, ow), dtype="float32")
        free.append(r)
        params["r"] = RNG.uniform(-1, 1, (n, c, oh, ow)).astype("float32")
        out = relay.add(out, r)
    func = relay.Function(free, _activation(out, second))
    data = RNG.uniform(-1, 1, (n, cin, h, w)).astype("float32")
    return relay.IRModule.from_expr(func), params, data


def _run(mod, params, data, threads, chain=True):
    """The compiled module's output for ``data``, and its generated source."""
    config = {"relay.FuseOps.chain_depthwise": chain}
    with PassContext(opt_level=3, config=config):
        compiled = passhost.build(mod, f"cpu -num-threads={threads}", params)
    return compiled.executor()(x=data), compiled


CASES = [  # n, cin, c, h, w, k, stride, pad
    (1, 16, 24, 64, 64, 3, 2, 1),    # chained, stride 2, whole blocks
    (1, 8, 20, 48, 48, 3, 1, 1),     # chained, "same" 3x3, 72 blocks
    (2, 5, 9, 45, 47, 3, 1, 1),      # chained, a partial last block, batch of two
    (1, 6, 12, 50, 41, 5, 2, 2),     # chained, 5x5 stride 2, a partial block
    (1, 7, 11, 46, 46, 5, 1, 2),     # chained, "same" 5x5
    (1, 4, 10, 64, 40, 3, 1, 0),     # chained, unpadded: tap by tap
    (1, 12, 30, 28, 28, 3, 1, 1),    # chained, the smallest plane that is
    (1, 12, 30, 27, 29, 3, 1, 1),    # two kernels, "same" 3x3, one float short of it
    (1, 12, 30, 17, 16, 3, 1, 1),    # two kernels, 272 outputs: too many for small planes
    (2, 9, 17, 14, 14, 3, 2, 1),     # small planes, stride 2 into 7x7, a batch of two
    (1, 12, 30, 28, 28, 5, 2, 2),    # small planes, 5x5 stride 2 from a plane chained above
    (1, 20, 40, 7, 7, 3, 1, 1),      # small planes, two panels (the second partial)
    (1, 24, 64, 14, 14, 3, 1, 1),    # small planes, "same" 3x3 (MobileNetV2's 14x14)
    (1, 33, 70, 14, 14, 5, 1, 2),    # small planes, "same" 5x5, three panels, odd inputs
    (1, 8, 20, 14, 14, 3, 2, 0),     # small planes, the last input row and column unread
    (2, 5, 16, 16, 16, 3, 1, 1),     # small planes, 256 outputs: the most they take
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("n", "cin", "c", "h", "w", "k", "stride", "pad"), CASES)
def test_pointwise_then_depthwise_is_one_native_call_with_the_reference_numbers(
        threads, n, cin, c, h, w, k, stride, pad):
    mod, params, data = _block(n, cin, c, h, w, k, stride, pad, "relu6", "relu6",
                               residual=False)
    (got,), compiled = _run(mod, params, data, threads)
    assert len(compiled.plan.steps) == 1
    assert "_pointwise_depthwise(" in compiled.get_source()
    np.testing.assert_allclose(got, evaluate(mod, x=data, **params), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("first", "second", "residual"),
                         [("silu", "silu", False), ("relu", "none", True),
                          ("none", "relu6", True), ("silu", "none", False)])
@pytest.mark.parametrize("hw", [56, 45, 20])
def test_both_epilogues_and_a_residual_are_applied(first, second, residual, hw):
    """Chained planes of whole column blocks (56x56) and with a partial last one (45x45),
    and the two kernels (20x20)."""
    mod, params, data = _block(1, 6, 16, hw, hw, 3, 1, 1, first, second, residual)
    (got,), compiled = _run(mod, params, data, 2)
    assert len(compiled.plan.steps) == 1
    np.testing.assert_allclose(got, evaluate(mod, x=data, **params), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("hw", "k", "stride", "first", "second", "residual"),
                         [(56, 3, 2, "relu6", "relu6", False),
                          (45, 3, 1, "silu", "silu", False),
                          (14, 3, 2, "relu6", "relu6", False),
                          (14, 3, 1, "relu6", "none", True),
                          (14, 5, 1, "silu", "silu", False),
                          (7, 5, 1, "silu", "silu", True)])
def test_the_chain_gives_the_two_kernels_numbers_bit_for_bit(hw, k, stride, first, second,
                                                             residual):
    """The chain sums as the 1x1 and depthwise kernels do, in the same order: on large
    planes, and on small ones (14x14 and 7x7) through the channels-last groups, where the
    depthwise layer on its own takes a row path (3x3 "same" at 14x14) or those groups."""
    mod, params, data = _block(1, 24, 40, hw, hw, k, stride, k // 2, first, second, residual)
    (chained,), compiled = _run(mod, params, data, 2)
    (apart,), separate = _run(mod, params, data, 2, chain=False)
    assert len(compiled.plan.steps) == 1 and len(separate.plan.steps) == 2
    np.testing.assert_array_equal(chained, apart)


def test_a_middle_tensor_used_twice_stays_apart():
    """The 1x1 layer's clamped result feeds the depthwise layer and is an output too: the
    layers stay apart."""
    mod, params, data = _block(1, 4, 8, 48, 48, 3, 1, 1, "relu6", "none", residual=False)
    main = mod["main"]
    body = main.body
    mid = body.args[0].args[0].args[0]
    func = relay.Function(main.params, relay.Tuple([body, mid]))
    mod = relay.IRModule.from_expr(func)
    (got, middle), compiled = _run(mod, params, data, 1)
    assert "_pointwise_depthwise(" not in compiled.get_source()
    want = evaluate(mod, x=data, **params)
    np.testing.assert_allclose(got, want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(middle, want[1], rtol=1e-4, atol=1e-5)
