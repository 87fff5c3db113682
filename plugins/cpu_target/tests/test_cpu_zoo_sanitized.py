"""The zoo models compiled for the cpu target with the native kernels and the generated
loops built with warnings as errors and AddressSanitizer and UndefinedBehaviorSanitizer
(``PASSHOST_CPU_CFLAGS``), run in a process with the sanitizer runtime preloaded, and
checked against the reference interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from passhost_cpu_target.native.build import EXTRA_FLAGS_VAR, find_compiler

#: Small zoo models covering dense layers, convolutions (depthwise included; ResNet-18's
#: 7x7 stem on the wide grid and its 512-channel layers by Winograd on 7x7 planes), pools,
#: matrix products and compiled loops (softmax, layer norm, GELU); ResNet-18 also with its
#: convolutions in NHWC (":NHWC", ConvertLayout), each a native NHWC convolution, and its
#: max pool the native NHWC one; and in NCHW16c, each a native channel-blocked convolution
#: (the stem from NCHW data, the 3x3 stride-1 layers by Winograd), the max pool the NHWC
#: kernel over the blocks. "se" is no zoo model but squeeze-and-excitation blocks (SCRIPT's
#: se_blocks): a batch of two, each block's per-channel product and 1x1 layer one scaled
#: convolution, its weights scaled on a 28x28 plane, its data on a 4x4 one.
MODELS = ("mlp", "transformer", "mobilenet-v2", "resnet18", "resnet18:NHWC",
          "resnet18:NCHW16c", "se")

SCRIPT = """
import sys
import warnings

import numpy as np

import passhost
from passhost.relay.interpreter import evaluate
from passhost.relay.transform import CanonicalizeOps, ConvertLayout, InferType
from passhost.relay.transform import SimplifyInference
from passhost.workloads.zoo import get_model
from passhost.transform import PassContext

from passhost import relay


def se_blocks():
    # two squeeze-and-excitation blocks: x * sigmoid(conv(mean(x))), then a 1x1 layer
    rng = np.random.default_rng(1)
    x = relay.var("x", shape=(2, 16, 28, 28), dtype="float32")
    params, body = {}, x
    for i, (c, o, pool) in enumerate([(16, 24, 7), (24, 64, 1)]):
        if pool > 1:
            body = relay.nn.max_pool2d(body, pool_size=(pool, pool), strides=(pool, pool))
        ws = {f"g{i}": (c, c, 1, 1), f"w{i}": (o, c, 1, 1), f"b{i}": (o, 1, 1)}
        params.update({k: rng.uniform(-1, 1, v).astype("float32") for k, v in ws.items()})
        g, w, b = (relay.var(k, shape=v, dtype="float32") for k, v in ws.items())
        gate = relay.sigmoid(relay.nn.conv2d(relay.mean(body, axis=[2, 3], keepdims=True), g,
                                             kernel_size=(1, 1)))
        body = relay.add(relay.nn.conv2d(relay.multiply(body, gate), w, kernel_size=(1, 1)), b)
    free = relay.analysis.free_vars(body)
    return relay.IRModule.from_expr(relay.Function(free, body)), params


# a kernel or loop unit that fails to build, or builds only with fewer flags than the
# first (NativeBuildWarning: -Werror refusing a warning once hid a bug that way), is an error
warnings.simplefilter("error")
for name in sys.argv[1:]:
    model, _, layout = name.partition(":")
    mod, params = se_blocks() if model == "se" else get_model(model)
    if layout:  # batch norms folded and biases added, so that the new layout flows on
        mod = CanonicalizeOps()(SimplifyInference()(InferType()(mod)))
        mod = ConvertLayout({"nn.conv2d": [layout, "HWIO" if layout == "NHWC" else "OIHW"]})(mod)
    (x,) = mod["main"].params[: len(mod["main"].params) - len(params)]
    data = np.random.default_rng(0).uniform(-1, 1, x.checked_type.shape).astype("float32")
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, "cpu -num-threads=2", params=params)
    got = compiled.executor()(data)[0]
    want = evaluate(mod, **{x.name_hint: data}, **params)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=name)
    assert "loops.c" in compiled.module.files, name
    if model == "se":
        assert compiled.module.get_source().count("_conv2d_nchw_scaled(") == 2, name
    if layout:  # every convolution and the max pool native in the new layout
        source = compiled.module.get_source()
        conv = "_conv2d_nhwc(" if layout == "NHWC" else "_conv2d_nchwc("
        assert conv in source and "max_pool2d_nhwc" in source, name
        assert "_conv2d_nchw(" not in source and "max_pool2d_nchw" not in source, name
        assert "conv2d_gemm" not in source, name
    print(name, "ok")
"""


def test_zoo_models_run_clean_under_the_sanitizers(tmp_path):
    compiler = find_compiler()
    if compiler is None:
        pytest.skip("no C compiler")
    runtime = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True,
                             text=True, check=False).stdout.strip()
    if not os.path.isabs(runtime):
        pytest.skip(f"the AddressSanitizer runtime is not installed ({compiler})")
    env = {**os.environ, "PASSHOST_CACHE_DIR": str(tmp_path / "cache"),
           EXTRA_FLAGS_VAR: "-g -Wall -Werror -fsanitize=address,undefined "
                            "-fno-sanitize-recover=all -fno-omit-frame-pointer",
           "LD_PRELOAD": runtime, "ASAN_OPTIONS": "detect_leaks=0",
           "UBSAN_OPTIONS": "print_stacktrace=1"}
    result = subprocess.run([sys.executable, "-c", SCRIPT, *MODELS], capture_output=True,
                            text=True, env=env, check=False, timeout=900)
    assert result.returncode == 0, result.stderr[-6000:]
    assert "runtime error" not in result.stderr, result.stderr[-6000:]
    assert result.stdout.split() == [word for name in MODELS for word in (name, "ok")]
    libraries = list((tmp_path / "cache").glob("*.so"))
    assert len(libraries) >= 1 + len(MODELS)  # the kernels and each model's loops
    for library in libraries:  # every one of them was built with both sanitizers
        content = library.read_bytes()
        assert b"__asan_" in content and b"__ubsan_" in content, library.name
