"""The model zoo (relay.testing): structure, parameter names and shapes, initialisation,
and interpreter runs. Expected counts and shapes are worked out from the architectures."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from passhost import relay
from passhost.ir.types import TensorType
from passhost.relay import testing
from passhost.relay.testing import mlp, mobilenet, resnet, transformer
from passhost.relay.testing.init import create_workload


def op_counts(func: relay.Function) -> Counter:
    """Number of calls of each operator in ``func``."""
    counts: Counter = Counter()

    def visit(node):
        if isinstance(node, relay.Call) and not isinstance(node.op, relay.Function):
            counts[node.op.name] += 1

    relay.analysis.post_order_visit(func, visit)
    return counts


def param_names(mod) -> list[str]:
    return [p.name_hint for p in mod["main"].params]


def run(mod, params, data: np.ndarray) -> np.ndarray:
    return relay.Interpreter(mod).run("main", {"data": data, **params})


def random_data(mod, seed: int = 1) -> np.ndarray:
    ty = mod["main"].params[0].checked_type
    return np.random.default_rng(seed).uniform(-1, 1, size=ty.shape).astype(ty.dtype)


@pytest.fixture(scope="module")
def resnet18():
    return resnet.get_workload()


# -- ResNet ------------------------------------------------------------------------------
def expected_resnet18_names() -> list[str]:
    """ResNet-18's parameters in post order, written out from the architecture."""
    bn = ("gamma", "beta", "moving_mean", "moving_var")
    names = ["data", *(f"bn_data_{s}" for s in bn), "conv0_weight", *(f"bn0_{s}" for s in bn)]
    for stage in range(1, 5):
        for unit in (1, 2):
            p = f"stage{stage}_unit{unit}"
            names += [f"{p}_bn1_{s}" for s in bn] + [f"{p}_conv1_weight"]
            names += [f"{p}_bn2_{s}" for s in bn] + [f"{p}_conv2_weight"]
            if unit == 1:
                names.append(f"{p}_sc_weight")
    names += [f"bn1_{s}" for s in bn] + ["fc1_weight", "fc1_bias"]
    return names


def test_resnet18_parameter_names_and_order(resnet18):
    mod, _ = resnet18
    names = param_names(mod)
    assert names[:11] == [
        "data", "bn_data_gamma", "bn_data_beta", "bn_data_moving_mean", "bn_data_moving_var",
        "conv0_weight", "bn0_gamma", "bn0_beta", "bn0_moving_mean", "bn0_moving_var",
        "stage1_unit1_bn1_gamma",
    ]
    assert names == expected_resnet18_names()
    # 1 data + 19 batch norms x 4 + 21 convolutions + fc weight and bias
    assert len(names) == 1 + 19 * 4 + 21 + 2


def test_resnet18_operator_counts(resnet18):
    mod, _ = resnet18
    counts = op_counts(mod["main"])
    # conv0 + 2 per unit x 8 units + 4 shortcut convs
    assert counts["nn.conv2d"] == 21
    # bn_data + bn0 + 2 per unit x 8 + final bn1
    assert counts["nn.batch_norm"] == 19
    # after bn0, 2 per unit x 8, after the final bn1
    assert counts["nn.relu"] == 18
    assert counts["add"] == 8
    for op in ("nn.max_pool2d", "nn.global_avg_pool2d", "nn.batch_flatten", "nn.dense",
               "nn.bias_add", "nn.softmax"):
        assert counts[op] == 1, op
    assert sum(counts.values()) == 21 + 19 + 18 + 8 + 6


def test_resnet18_types_and_attributes(resnet18):
    mod, _ = resnet18
    main = mod["main"]
    assert main.body.checked_type == TensorType((1, 1000), "float32")
    convs, bns = [], []

    def visit(node):
        if isinstance(node, relay.Call) and getattr(node.op, "name", "") == "nn.conv2d":
            convs.append(node)
        if isinstance(node, relay.Call) and getattr(node.op, "name", "") == "nn.batch_norm":
            bns.append(node)

    relay.analysis.post_order_visit(main, visit)
    assert all(math.isclose(b.attrs.epsilon, 2e-5) for b in bns)
    assert [bool(b.attrs.scale) for b in bns].count(False) == 1  # bn_data only
    conv0 = convs[0]
    assert tuple(conv0.attrs.kernel_size) == (7, 7)
    assert tuple(conv0.attrs.strides) == (2, 2)
    assert conv0.checked_type == TensorType((1, 64, 112, 112), "float32")
    # stride-2 convolutions: conv0, and conv1 + shortcut of the first unit of stages 2-4
    assert sum(tuple(c.attrs.strides) == (2, 2) for c in convs) == 1 + 2 * 3


def test_resnet_shortcut_reads_first_relu(resnet18):
    mod, _ = resnet18
    shortcuts = []

    def visit(node):
        if (isinstance(node, relay.Call) and getattr(node.op, "name", "") == "nn.conv2d"
                and node.args[1].name_hint.endswith("_sc_weight")):
            shortcuts.append(node)

    relay.analysis.post_order_visit(mod["main"], visit)
    assert len(shortcuts) == 4
    for sc in shortcuts:
        unit = sc.args[1].name_hint[: -len("_sc_weight")]
        relu = sc.args[0]
        assert relu.op.name == "nn.relu"
        bn = relu.args[0].tuple_value
        assert bn.op.name == "nn.batch_norm"
        assert bn.args[1].name_hint == f"{unit}_bn1_gamma"


def test_resnet18_params_shapes(resnet18):
    mod, params = resnet18
    main = mod["main"]
    assert set(params) == set(param_names(mod)) - {"data"}
    for p in main.params[1:]:
        assert params[p.name_hint].shape == p.checked_type.shape
        assert params[p.name_hint].dtype == np.float32
    expected = {
        "bn_data_gamma": (3,), "conv0_weight": (64, 3, 7, 7), "bn0_moving_var": (64,),
        "stage1_unit1_conv1_weight": (64, 64, 3, 3), "stage1_unit1_sc_weight": (64, 64, 1, 1),
        "stage2_unit1_bn1_gamma": (64,), "stage2_unit1_conv1_weight": (128, 64, 3, 3),
        "stage2_unit1_conv2_weight": (128, 128, 3, 3), "stage2_unit1_sc_weight": (128, 64, 1, 1),
        "stage4_unit2_conv2_weight": (512, 512, 3, 3), "bn1_gamma": (512,),
        "fc1_weight": (1000, 512), "fc1_bias": (1000,),
    }
    for name, shape in expected.items():
        assert params[name].shape == shape, name
    # counted by hand: convs 11,171,008 + fc 513,000 + batch norms 15,884
    assert sum(a.size for a in params.values()) == 11_699_892


def test_resnet18_init_values(resnet18):
    _, params = resnet18
    for name, arr in params.items():
        if name.endswith(("gamma", "moving_var")):
            assert np.all(arr == 1), name
        elif name.endswith(("beta", "moving_mean", "bias")):
            assert np.all(arr == 0), name
    w = params["conv0_weight"]
    # He-uniform: magnitude 6 over fan_in = 3*7*7
    bound = math.sqrt(6 / (3 * 49))
    assert np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.95 * bound
    assert abs(float(w.mean())) < 0.05 * bound


def test_resnet_params_are_deterministic(resnet18):
    _, params = resnet18
    _, again = resnet.get_workload()
    assert params.keys() == again.keys()
    for name in params:
        np.testing.assert_array_equal(params[name], again[name])
    _, other = create_workload(resnet.get_net(1, 1000, 18), seed=1)
    assert not np.array_equal(params["conv0_weight"], other["conv0_weight"])


def test_resnet18_runs(resnet18):
    mod, params = resnet18
    out = run(mod, params, random_data(mod))
    assert out.shape == (1, 1000) and out.dtype == np.float32
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)
    assert out.std() > 0  # the classes get different probabilities


def test_resnet50_structure():
    mod, params = resnet.get_workload(num_layers=50)
    counts = op_counts(mod["main"])
    # conv0 + 3 per bottleneck unit x (3+4+6+3) + 4 shortcut convs
    assert counts["nn.conv2d"] == 1 + 3 * 16 + 4
    # bn_data + bn0 + 3 per unit x 16 + final bn1
    assert counts["nn.batch_norm"] == 1 + 1 + 3 * 16 + 1
    assert counts["add"] == 16
    assert mod["main"].body.checked_type == TensorType((1, 1000), "float32")
    assert params["stage1_unit1_conv1_weight"].shape == (64, 64, 1, 1)
    assert params["stage1_unit1_conv2_weight"].shape == (64, 64, 3, 3)
    assert params["stage1_unit1_conv3_weight"].shape == (256, 64, 1, 1)
    assert params["stage1_unit1_sc_weight"].shape == (256, 64, 1, 1)
    assert params["stage4_unit3_conv3_weight"].shape == (2048, 512, 1, 1)
    assert params["fc1_weight"].shape == (1000, 2048)


def test_resnet_depths_unit_counts():
    # 34 layers: basic units (3, 4, 6, 3); 101: bottleneck units (3, 4, 23, 3)
    c34 = op_counts(resnet.get_net(1, 10, 34))
    assert c34["nn.conv2d"] == 1 + 2 * 16 + 4 and c34["add"] == 16
    c101 = op_counts(resnet.get_net(1, 10, 101))
    assert c101["nn.conv2d"] == 1 + 3 * 33 + 4 and c101["add"] == 33


def test_resnet18_small_image_stem():
    mod, params = resnet.get_workload(num_classes=10, image_shape=(3, 32, 32))
    counts = op_counts(mod["main"])
    assert counts["nn.conv2d"] == 21
    assert counts["nn.batch_norm"] == 18  # no bn0
    assert counts["nn.relu"] == 17
    assert "nn.max_pool2d" not in counts
    assert params["conv0_weight"].shape == (64, 3, 3, 3)
    assert not any(n.startswith("bn0_") for n in params)
    assert mod["main"].body.checked_type == TensorType((1, 10), "float32")


def test_resnet_cifar_depth_rule():
    # height <= 28: 3 stages of (num_layers - 2) / 6 basic units, filters 16, 32, 64
    net = resnet.get_net(1, 10, 20, image_shape=(3, 28, 28))
    counts = op_counts(net)
    assert counts["nn.conv2d"] == 1 + 2 * 9 + 3
    assert net.body.checked_type == TensorType((1, 10), "float32")
    with pytest.raises(ValueError):
        resnet.get_net(1, 10, 18, image_shape=(3, 28, 28))
    with pytest.raises(ValueError):
        resnet.get_net(1, 10, 19)


def test_resnet18_nhwc():
    mod, params = resnet.get_workload(image_shape=(224, 224, 3), layout="NHWC")
    assert mod["main"].params[0].checked_type == TensorType((1, 224, 224, 3), "float32")
    assert params["conv0_weight"].shape == (7, 7, 3, 64)
    assert params["stage2_unit1_sc_weight"].shape == (1, 1, 64, 128)
    assert op_counts(mod["main"])["nn.conv2d"] == 21
    assert mod["main"].body.checked_type == TensorType((1, 1000), "float32")


def logits(mod) -> relay.Function:
    """``main`` without its final softmax."""
    main = mod["main"]
    assert main.body.op.name == "nn.softmax"
    return relay.Function(main.params, main.body.args[0])


def test_resnet_nhwc_computes_as_nchw():
    nchw, params = resnet.get_workload(num_classes=10, image_shape=(3, 64, 64))
    nhwc, _ = resnet.get_workload(num_classes=10, image_shape=(64, 64, 3), layout="NHWC")
    # OIHW kernels become HWIO; per-channel parameters are unchanged
    hwio = {k: (v.transpose(2, 3, 1, 0) if v.ndim == 4 else v) for k, v in params.items()}
    data = random_data(nchw)
    a = relay.Interpreter().run(logits(nchw), {"data": data, **params})
    b = relay.Interpreter().run(logits(nhwc), {"data": data.transpose(0, 2, 3, 1), **hwio})
    assert a.std() > 0
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6 * np.abs(a).max())


# -- MobileNet ---------------------------------------------------------------------------
def test_mobilenet_v1_structure_and_run():
    mod, params = mobilenet.get_workload()
    counts = op_counts(mod["main"])
    assert counts["nn.conv2d"] == 1 + 13 * 2
    assert counts["nn.batch_norm"] == 27
    assert counts["nn.relu"] == 27
    depthwise = []

    def visit(node):
        is_conv = isinstance(node, relay.Call) and getattr(node.op, "name", "") == "nn.conv2d"
        if is_conv and node.attrs.groups > 1:
            depthwise.append(node.attrs.groups)

    relay.analysis.post_order_visit(mod["main"], visit)
    assert depthwise == [32, 64, 128, 128, 256, 256, 512, 512, 512, 512, 512, 512, 1024]
    assert param_names(mod)[:3] == ["data", "conv_block_1_conv_weight", "conv_block_1_bn_gamma"]
    assert params["separable_conv_block_1_weight"].shape == (32, 1, 3, 3)
    assert params["separable_conv_block_1_conv2_weight"].shape == (64, 32, 1, 1)
    assert params["separable_conv_block_13_conv2_weight"].shape == (1024, 1024, 1, 1)
    assert params["fc_weight"].shape == (1000, 1024)
    assert params["fc_bias"].shape == (1000,)
    assert mod["main"].body.checked_type == TensorType((1, 1000), "float32")
    out = run(mod, params, random_data(mod))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)


def test_mobilenet_v2_structure_and_run():
    mod, params = mobilenet.get_workload_v2(num_classes=10, image_shape=(3, 64, 64))
    counts = op_counts(mod["main"])
    # blocks per stage (1, 2, 3, 4, 3, 3, 1) = 17; the first (expansion 1) has no expansion
    # conv: stem + 2 + 16 * 3 + head 1x1 conv
    assert counts["nn.conv2d"] == 1 + 2 + 16 * 3 + 1
    assert counts["nn.batch_norm"] == 52
    # relu6 after every conv except the 17 linear projections
    assert counts["clip"] == 52 - 17
    # residual adds: every repeat after the first in stages of n > 1
    assert counts["add"] == 1 + 2 + 3 + 2 + 2
    assert params["conv_stem_weight"].shape == (32, 3, 3, 3)
    assert params["block2_expand_weight"].shape == (96, 16, 1, 1)
    assert params["block2_depthwise_weight"].shape == (96, 1, 3, 3)
    assert params["block17_project_weight"].shape == (320, 960, 1, 1)
    assert params["conv_head_weight"].shape == (1280, 320, 1, 1)
    assert params["fc_weight"].shape == (10, 1280)
    assert mod["main"].body.checked_type == TensorType((1, 10), "float32")
    out = run(mod, params, random_data(mod))
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)
    same, _ = mobilenet.get_workload(num_classes=10, image_shape=(3, 64, 64), version=2)
    assert param_names(same) == param_names(mod)


def test_mobilenet_nhwc_kernel_layouts():
    mod, params = mobilenet.get_workload(num_classes=10, image_shape=(64, 64, 3), layout="NHWC")
    assert params["conv_block_1_conv_weight"].shape == (3, 3, 3, 32)  # HWIO
    assert params["separable_conv_block_1_weight"].shape == (3, 3, 32, 1)  # HWOI (depthwise)
    assert params["separable_conv_block_1_conv2_weight"].shape == (1, 1, 32, 64)
    assert params["separable_conv_block_1_bn1_gamma"].shape == (32,)
    assert mod["main"].body.checked_type == TensorType((1, 10), "float32")
    v2, p2 = mobilenet.get_workload_v2(num_classes=10, image_shape=(64, 64, 3), layout="NHWC")
    assert p2["block2_depthwise_weight"].shape == (3, 3, 96, 1)
    assert v2["main"].body.checked_type == TensorType((1, 10), "float32")


# -- MLP ---------------------------------------------------------------------------------
def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_mlp_default_structure():
    mod, params = mlp.get_workload()
    assert param_names(mod) == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                "fc3_weight", "fc3_bias"]
    assert params["fc1_weight"].shape == (128, 784)
    assert params["fc2_weight"].shape == (64, 128)
    assert params["fc3_weight"].shape == (10, 64)
    counts = op_counts(mod["main"])
    assert counts == Counter({"nn.batch_flatten": 1, "nn.dense": 3, "nn.bias_add": 3,
                              "nn.relu": 2, "nn.softmax": 1})
    assert mod["main"].body.checked_type == TensorType((1, 10), "float32")


def test_mlp_runs_and_matches_numpy():
    mod, params = mlp.get_workload(batch_size=4, hidden_units=(512, 512))
    assert params["fc3_weight"].shape == (10, 512)
    data = random_data(mod)
    out = run(mod, params, data)
    h = data.reshape(4, -1)
    for i in (1, 2):
        h = np.maximum(h @ params[f"fc{i}_weight"].T + params[f"fc{i}_bias"], 0)
    expected = _softmax(h @ params["fc3_weight"].T + params["fc3_bias"])
    assert out.shape == (4, 10)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)


# -- transformer -------------------------------------------------------------------------
def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x.astype(np.float64))


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _encoder_reference(x: np.ndarray, p: dict, heads: int) -> np.ndarray:
    """A float64 NumPy encoder block, written per head with explicit loops."""
    x = x.astype(np.float64)
    b, _, d = x.shape
    dh = d // heads

    def lin(t, name):
        return t @ p[f"{name}_weight"].T.astype(np.float64) + p[f"{name}_bias"]

    q, k, v = lin(x, "attn_q"), lin(x, "attn_k"), lin(x, "attn_v")
    ctx = np.zeros_like(x)
    for bi in range(b):
        for h in range(heads):
            cols = slice(h * dh, (h + 1) * dh)
            scores = q[bi, :, cols] @ k[bi, :, cols].T / math.sqrt(dh)
            ctx[bi, :, cols] = _softmax(scores) @ v[bi, :, cols]
    h1 = _layer_norm(lin(ctx, "attn_out") + x, p["ln1_gamma"], p["ln1_beta"])
    f = lin(h1, "ffn1")
    f = f * 0.5 * (1 + _erf(f / math.sqrt(2)))
    return _layer_norm(lin(f, "ffn2") + h1, p["ln2_gamma"], p["ln2_beta"])


def test_transformer_structure():
    mod, params = transformer.get_workload()
    main = mod["main"]
    assert main.params[0].checked_type == TensorType((1, 16, 64), "float32")
    assert main.body.checked_type == TensorType((1, 16, 64), "float32")
    counts = op_counts(main)
    assert counts["nn.dense"] == 6  # q, k, v, output projection, 2 feed-forward
    assert counts["nn.bias_add"] == 6
    assert counts["nn.batch_matmul"] == 2
    assert counts["nn.softmax"] == 1
    assert counts["nn.layer_norm"] == 2
    assert counts["erf"] == 1
    assert counts["add"] == 3  # two residuals and the 1 + erf of GELU
    assert params["attn_q_weight"].shape == (64, 64)
    assert params["ffn1_weight"].shape == (256, 64)
    assert params["ffn2_weight"].shape == (64, 256)
    assert params["ln2_gamma"].shape == (64,)
    assert np.all(params["ln1_gamma"] == 1) and np.all(params["ln1_beta"] == 0)


def test_transformer_runs_and_matches_numpy():
    mod, params = transformer.get_workload(batch_size=2, seq_len=8, d_model=32, num_heads=4,
                                           d_ff=64)
    # non-zero biases and layer-norm affine parameters, so every term is exercised
    rng = np.random.default_rng(7)
    params = {k: (v + rng.uniform(-0.5, 0.5, v.shape).astype(v.dtype)
                  if k.endswith(("bias", "gamma", "beta")) else v) for k, v in params.items()}
    data = random_data(mod)
    out = run(mod, params, data)
    assert out.shape == data.shape
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, _encoder_reference(data, params, 4), rtol=1e-4, atol=1e-4)


# -- create_workload ---------------------------------------------------------------------
def test_create_workload_initialisers_and_errors():
    x = relay.var("data", shape=(2, 6))
    w = relay.var("dense_weight", shape=(4, 6))
    b = relay.var("dense_bias", shape=(4,))
    net = relay.nn.bias_add(relay.nn.dense(x, w, units=4), b, axis=-1)
    mod, params = create_workload(relay.Function([x, w, b], net), seed=3)
    assert set(params) == {"dense_weight", "dense_bias"}
    bound = math.sqrt(6 / 6)  # He-uniform over fan_in = 6
    assert np.abs(params["dense_weight"]).max() <= bound
    assert np.all(params["dense_bias"] == 0)
    assert mod["main"].params[0] is x
    _, again = create_workload(relay.Function([x, w, b], net), seed=3)
    np.testing.assert_array_equal(params["dense_weight"], again["dense_weight"])
    odd = relay.var("mystery", shape=(4,))
    with pytest.raises(ValueError, match="mystery"):
        create_workload(relay.Function([x, odd], relay.add(x, relay.nn.relu(x))))


def test_testing_package_exports():
    assert testing.resnet is resnet and testing.mobilenet is mobilenet
    assert testing.mlp is mlp and testing.transformer is transformer
    assert testing.create_workload is create_workload
    from passhost.relay.testing import op_examples

    assert callable(op_examples.all_examples)


@pytest.mark.parametrize("build", [mobilenet.get_workload, mobilenet.get_workload_v2,
                                   lambda: resnet.get_workload(num_layers=18)])
def test_zoo_logits_do_not_vanish(build):
    """The default initialiser keeps activations at a useful size, so numerical checks on
    zoo models (passes preserve the numbers) are not trivially true."""
    mod, params = build()
    main = mod["main"]
    assert main.body.op.name == "nn.softmax"
    logits = relay.Function(main.params, main.body.args[0])
    data = np.random.default_rng(1).uniform(-1, 1, main.params[0].checked_type.shape)
    out = relay.evaluate(logits, data=data.astype("float32"), **params)
    assert 0.05 < float(np.std(out)) < 1e3
