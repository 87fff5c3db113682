"""int8 TFLite models compiled for ``cmsis-nn, cpu``, against TFLite Micro (tolerance 0).

Single-operator models with random shapes, strides, padding, dilation, per-channel and
per-tensor quantisation, zero points and fused activations, and small networks, are built
with passhost.testing.tflite_builder. Each is compiled for a cmsis-nn target (plain C, DSP or
MVE processor), and both the host path (NumPy) and the generated C (compiled with the
plugin's kernels for that processor, with -Werror, loaded through ctypes) must equal TFLite
Micro's outputs bit for bit. Models the target refuses in part still equal TFLite Micro,
with the refused operators on the cpu target. A few models also run as self-checking C
programs under AddressSanitizer and UBSan.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")

import passhost
from passhost.frontend import from_tflite
from passhost.ir.module import IRModule
from passhost.runtime import CompiledModule, FunctionModule
from passhost.target import Target
from passhost.testing.tflite_builder import TfliteBuilder
from passhost.testing.tflite_models import (
    int8_cnn,
    int8_residual,
    matmul_out_scale,
    q_bias,
    q_input,
    q_weight,
    random_inputs,
    run_tflm,
    seeded_rng,
    zero_point,
)
from passhost.transform import PassContext
from passhost_cmsis_nn.calls import read_prim_func
from passhost_cmsis_nn.cbuild import (
    SANITIZER_FLAGS,
    STRICT_FLAGS,
    KernelLibrary,
    build_executable,
    build_shared_library,
    bundled_kernel_library,
)
from passhost_cmsis_nn.features import Features, features_of
from passhost_cmsis_nn.native import (
    build_c_module,
    c_executor,
    checker_source,
    feature_macros,
    record_calls,
    write_sources,
)

SEED = 20261123
ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
#: The processors the models are compiled for, in turn: plain C, DSP, MVE, DSP.
TARGETS = ("cmsis-nn", "cmsis-nn -mcpu=cortex-m4", "cmsis-nn -mcpu=cortex-m55",
           "cmsis-nn -mcpu=cortex-m55 -mattr=+nomve -debug_last_error")
#: Flags of the generated C: strict C99 with every warning an error.
C_FLAGS = (*STRICT_FLAGS, "-Wpedantic", "-Wl,--no-as-needed")
RUNS = 2  # input sets per model
rng_for = partial(seeded_rng, SEED)


# -- building models ---------------------------------------------------------------------------
def padding_for(rng: np.random.Generator, sizes: Sequence[int], kernel: Sequence[int],
                dilation: Sequence[int]) -> str:
    fits = all((k - 1) * d + 1 <= s for s, k, d in zip(sizes, kernel, dilation))
    return "VALID" if fits and rng.random() < 0.5 else "SAME"


# -- compiling and running ---------------------------------------------------------------------
def compile_for(buf: bytes, target: str) -> CompiledModule:
    mod, params = from_tflite(buf)
    with PassContext(opt_level=3):
        return passhost.build(mod, f"{target}, cpu", params)


def offloaded(compiled: CompiledModule) -> list[str]:
    """The CMSIS-NN functions the compiled model calls, in call order."""
    tir = compiled.tir.get("cmsis-nn")
    if tir is None:
        return []
    apis = {name: read_prim_func(name, func).api for name, func in tir.items()}
    return [apis[step.func] for step in compiled.plan.steps if step.func in apis]


def variant(features: Features) -> str:
    return "mve" if features.has_mve else "dsp" if features.has_dsp else "plain"


class CBuilds:
    """Builds the generated C of compiled models against the plugin's kernels, built once
    per processor variant (and per sanitizer setting) as shared libraries."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        self.kernels: dict[tuple[str, bool], KernelLibrary] = {}

    def kernel_library(self, features: Features, sanitize: bool = False) -> KernelLibrary:
        key = (variant(features), sanitize)
        if key not in self.kernels:
            flags = (*STRICT_FLAGS, *feature_macros(features),
                     *(SANITIZER_FLAGS if sanitize else ()))
            path = build_shared_library(self.root, name=f"kernels_{key[0]}_{int(sanitize)}",
                                        flags=flags, kernels=bundled_kernel_library())
            self.kernels[key] = KernelLibrary(bundled_kernel_library().include_dir, (path,),
                                              True)
        return self.kernels[key]

    def directory(self) -> Path:
        self.count += 1
        return self.root / f"model{self.count}"

    def build(self, tir: IRModule, features: Features, debug_last_error: bool = False,
              ) -> FunctionModule:
        """The C of ``tir``'s PrimFuncs as a runtime module (ctypes), built with C_FLAGS
        against the kernels for ``features``."""
        return build_c_module(tir, features, self.directory(),
                              debug_last_error=debug_last_error, flags=C_FLAGS,
                              kernels=self.kernel_library(features), name=f"model{self.count}")

    def module(self, compiled: CompiledModule) -> FunctionModule:
        """The compiled model's C as a runtime module (ctypes)."""
        target = Target(compiled.target.split(",")[0])
        return self.build(compiled.tir["cmsis-nn"], features_of(target),
                          target.options["debug_last_error"])

    def testbench(self, compiled: CompiledModule, inputs: Sequence[np.ndarray]) -> str:
        """Run the compiled model's recorded cmsis-nn calls as a C program built with
        AddressSanitizer and UBSan; returns its output (asserting it exited with 0)."""
        target = Target(compiled.target.split(",")[0])
        features = features_of(target)
        tir = compiled.tir["cmsis-nn"]
        out = self.directory()
        source = write_sources(tir, out, target.options["debug_last_error"])
        bench = out / "testbench.c"
        bench.write_text(checker_source(tir, record_calls(compiled, inputs)))
        exe = build_executable(out, name="testbench", sources=[source, bench],
                               flags=(*C_FLAGS, *SANITIZER_FLAGS, *feature_macros(features)),
                               include_dirs=[out],
                               kernels=self.kernel_library(features, sanitize=True))
        result = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout


@pytest.fixture(scope="session")
def c_builds(tmp_path_factory: pytest.TempPathFactory) -> CBuilds:
    return CBuilds(tmp_path_factory.mktemp("cmsis_nn_models"))


def check(b: TfliteBuilder, rng: np.random.Generator, target: str, c_builds: CBuilds,
          expected: Sequence[str]) -> CompiledModule:
    """Compile ``b``'s model for ``target`` and cpu: the CMSIS-NN calls are ``expected``
    and, on RUNS random input sets, the host path and the generated C equal TFLM."""
    buf = b.to_bytes()
    compiled = compile_for(buf, target)
    assert offloaded(compiled) == list(expected)
    runners = [compiled.executor()]
    if expected:
        runners.append(c_executor(compiled, c_builds.module(compiled)))
    for _ in range(RUNS):
        inputs = random_inputs(b, rng)
        want = run_tflm(buf, inputs, len(b.graph_outputs))
        for run in runners:
            got = run(*inputs)
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)
    return compiled


# -- single operators --------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(10))
def test_conv2d(case: int, c_builds: CBuilds) -> None:
    rng = rng_for(1, case)
    n, c, o = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    h = 1 if case % 5 == 0 else int(rng.integers(2, 11))
    w = int(rng.integers(2, 11))
    kh = 1 if h == 1 or case % 5 == 1 else int(rng.integers(1, 5))
    kw = 1 if case % 5 == 1 else int(rng.integers(1, 5))
    sh, sw = (1, 1) if case % 5 == 1 else (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    dh, dw = (1, 1) if case % 3 else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = padding_for(rng, (h, w), (kh, kw), (dh, dw))
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (n, h, w, c))
    wt, s_w = q_weight(b, rng, (o, kh, kw, c), 0, per_channel=bool(case % 2))
    bias = q_bias(b, rng, o) if case % 4 else None
    y = b.conv2d(x, wt, bias, stride=(sh, sw), padding=padding, dilation=(dh, dw),
                 activation=ACTIVATIONS[case % 4], zero_point=zero_point(rng),
                 scale=matmul_out_scale(rng, s_in, s_w, kh * kw * c))
    b.outputs(y)
    check(b, rng, TARGETS[case % 4], c_builds, ["arm_convolve_wrapper_s8"])


@pytest.mark.parametrize("case", range(10))
def test_depthwise_conv2d(case: int, c_builds: CBuilds) -> None:
    rng = rng_for(2, case)
    n = 1 if case % 3 else 2
    h, w = int(rng.integers(2, 11)), int(rng.integers(2, 11))
    c, m = int(rng.integers(1, 7)), 1 if case % 2 else int(rng.integers(1, 4))
    kh, kw = (3, 3) if case % 4 == 0 else (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    dh, dw = (1, 1) if case % 3 else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = padding_for(rng, (h, w), (kh, kw), (dh, dw))
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (n, h, w, c))
    wt, s_w = q_weight(b, rng, (1, kh, kw, c * m), 3, per_channel=bool(case % 2))
    y = b.depthwise_conv2d(x, wt, q_bias(b, rng, c * m), stride=(sh, sw), padding=padding,
                           dilation=(dh, dw), activation=ACTIVATIONS[case % 4],
                           zero_point=zero_point(rng),
                           scale=matmul_out_scale(rng, s_in, s_w, kh * kw))
    b.outputs(y)
    # One input channel is one group: an ordinary convolution.
    api = "arm_convolve_wrapper_s8" if c == 1 else "arm_depthwise_conv_wrapper_s8"
    check(b, rng, TARGETS[case % 4], c_builds, [api])


@pytest.mark.parametrize("case", range(8))
def test_fully_connected(case: int, c_builds: CBuilds) -> None:
    rng = rng_for(3, case)
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(2, 5))))
    keep = case % 3 == 0
    depth = shape[-1] if keep or case % 2 else shape[-1] * shape[-2]
    units = int(rng.integers(1, 10))
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, shape)
    wt, s_w = q_weight(b, rng, (units, depth), 0, per_channel=False)
    bias = q_bias(b, rng, units) if case % 4 != 1 else None
    y = b.fully_connected(x, wt, bias, keep_num_dims=keep, activation=ACTIVATIONS[case % 4],
                          scale=matmul_out_scale(rng, s_in, s_w, depth),
                          zero_point=zero_point(rng))
    b.outputs(y)
    check(b, rng, TARGETS[case % 4], c_builds, ["arm_fully_connected_s8"])


@pytest.mark.parametrize("op", ["average_pool2d", "max_pool2d"])
@pytest.mark.parametrize("case", range(6))
def test_pools(op: str, case: int, c_builds: CBuilds) -> None:
    rng = rng_for(4, case, len(op))
    h, w, c = int(rng.integers(2, 10)), int(rng.integers(2, 10)), int(rng.integers(1, 6))
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    b = TfliteBuilder()
    x, _ = q_input(b, rng, (1, h, w, c))
    y = getattr(b, op)(x, (kh, kw), stride=(sh, sw),
                       padding=padding_for(rng, (h, w), (kh, kw), (1, 1)),
                       activation=ACTIVATIONS[case % 4])
    b.outputs(y)
    api = "arm_avgpool_s8" if op == "average_pool2d" else "arm_max_pool_s8"
    check(b, rng, TARGETS[case % 4], c_builds, [api])


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("case", range(6))
def test_add_and_mul(op: str, case: int, c_builds: CBuilds) -> None:
    """Two computed inputs of one shape, or a computed input and a constant broadcast to it."""
    rng = rng_for(5, case, len(op))
    shape = tuple(int(d) for d in rng.integers(1, 8, int(rng.integers(1, 5))))
    b = TfliteBuilder()
    x, s1 = q_input(b, rng, shape, "a")
    if case % 3 == 2:
        s2 = float(np.float32(rng.uniform(0.005, 0.1)))
        other = tuple(1 if rng.random() < 0.5 else d for d in shape)
        y = b.constant(rng.integers(-128, 128, other).astype("int8"), name="k", scale=s2,
                       zero_point=zero_point(rng))
    else:
        y, s2 = q_input(b, rng, shape, "b")
    if op == "add":
        s_out = (s1 + s2) * 74 / 60 * rng.uniform(0.5, 2)
    else:
        s_out = s1 * s2 * 74 * 74 / 60 * rng.uniform(0.5, 2)
    args = (y, x) if case % 2 else (x, y)
    z = getattr(b, op)(*args, activation=ACTIVATIONS[case % 4], scale=float(s_out),
                       zero_point=zero_point(rng))
    b.outputs(z)
    check(b, rng, TARGETS[case % 4], c_builds, [f"arm_elementwise_{op}_s8"])


@pytest.mark.parametrize("case", range(6))
def test_softmax(case: int, c_builds: CBuilds) -> None:
    rng = rng_for(6, case)
    rows = [int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4)))]
    b = TfliteBuilder()
    x = b.input((*rows, int(rng.integers(1, 13))), "int8", name="x",
                scale=float(rng.uniform(0.005, 0.1)), zero_point=zero_point(rng))
    beta = 1.0 if case % 3 == 0 else float(rng.uniform(0.3, 2.0))
    b.outputs(b.softmax(x, beta=beta))
    check(b, rng, TARGETS[case % 4], c_builds, ["arm_softmax_s8"])


def test_the_1xn_convolution_tvm_gave_no_buffer_gets_one_on_mve(c_builds: CBuilds) -> None:
    """Input height 1, filter height 1, out_w % 4 == 0 but stride_w * C % 4 != 0: CMSIS-NN
    dispatches to arm_convolve_s8, which needs a buffer on MVE (TVM's formula gave none)."""
    rng = rng_for(7)
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (1, 1, 8, 3))
    wt, s_w = q_weight(b, rng, (4, 1, 3, 3), 0, per_channel=True)
    b.outputs(b.conv2d(x, wt, q_bias(b, rng, 4), padding="SAME", zero_point=3,
                       scale=matmul_out_scale(rng, s_in, s_w, 9)))
    compiled = check(b, rng, "cmsis-nn -mcpu=cortex-m55", c_builds, ["arm_convolve_wrapper_s8"])
    (func,) = (f for _, f in compiled.tir["cmsis-nn"].items())
    assert read_prim_func("conv", func).context_size == 4 * math.ceil(3 * 3 / 8) * 8


# -- what the target refuses stays on the host -------------------------------------------------
def test_fully_connected_with_a_kernel_zero_point_stays_on_the_host(c_builds: CBuilds) -> None:
    rng = rng_for(8, 1)
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (2, 6))
    wt, s_w = q_weight(b, rng, (5, 6), 0, per_channel=False, zp=3)
    b.outputs(b.fully_connected(x, wt, q_bias(b, rng, 5), zero_point=1,
                                scale=matmul_out_scale(rng, s_in, s_w, 6)))
    check(b, rng, "cmsis-nn", c_builds, [])


def test_depthwise_without_bias_stays_on_the_host(c_builds: CBuilds) -> None:
    rng = rng_for(8, 2)
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (1, 5, 5, 3))
    wt, s_w = q_weight(b, rng, (1, 3, 3, 3), 3, per_channel=True)
    b.outputs(b.depthwise_conv2d(x, wt, None, zero_point=-3,
                                 scale=matmul_out_scale(rng, s_in, s_w, 9)))
    check(b, rng, "cmsis-nn -mcpu=cortex-m7", c_builds, [])


@pytest.mark.parametrize("pads", [((1, 1), (1, 2)), ((0, 2), (0, 0)), ((2, 1), (1, 1))])
def test_a_pad_fuses_into_the_convolution_only_if_at_most_one_larger_at_the_end(
        pads: tuple[tuple[int, int], tuple[int, int]], c_builds: CBuilds) -> None:
    """An explicit PAD before a VALID convolution: (1, 1)/(1, 2) fuses (the partition holds
    the pad); a bottom pad two larger than the top, or a top pad larger than the bottom,
    does not (the pad runs on the cpu target, the convolution still on cmsis-nn)."""
    rng = rng_for(8, 3, sum(map(sum, pads)))
    b = TfliteBuilder()
    x, s_in = q_input(b, rng, (1, 5, 6, 2))
    padded = b.pad(x, [[0, 0], list(pads[0]), list(pads[1]), [0, 0]])
    wt, s_w = q_weight(b, rng, (3, 3, 3, 2), 0, per_channel=True)
    b.outputs(b.conv2d(padded, wt, q_bias(b, rng, 3), padding="VALID", zero_point=2,
                       scale=matmul_out_scale(rng, s_in, s_w, 18)))
    compiled = check(b, rng, "cmsis-nn -mcpu=cortex-m4", c_builds, ["arm_convolve_wrapper_s8"])
    fused = pads == ((1, 1), (1, 2))
    assert [s.func.startswith("fused_nn_pad") for s in compiled.plan.steps] == \
        ([False] if fused else [True, False])


def test_adding_a_computed_input_broadcast_stays_on_the_host(c_builds: CBuilds) -> None:
    rng = rng_for(8, 5)
    b = TfliteBuilder()
    x, s1 = q_input(b, rng, (2, 3, 4), "a")
    y, s2 = q_input(b, rng, (3, 1), "b")
    b.outputs(b.add(x, y, scale=(s1 + s2) * 1.5, zero_point=0))
    check(b, rng, "cmsis-nn", c_builds, [])


# -- networks ----------------------------------------------------------------------------------
NETWORKS: dict[str, tuple[Callable[[np.random.Generator], TfliteBuilder], list[str]]] = {
    "cnn": (int8_cnn, ["arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8",
                       "arm_avgpool_s8", "arm_fully_connected_s8", "arm_softmax_s8"]),
    "residual": (int8_residual, ["arm_convolve_wrapper_s8", "arm_elementwise_add_s8",
                                 "arm_max_pool_s8", "arm_elementwise_mul_s8",
                                 "arm_elementwise_add_s8"]),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_networks(name: str, target: str, c_builds: CBuilds) -> None:
    make, expected = NETWORKS[name]
    rng = rng_for(9, len(name), TARGETS.index(target))
    check(make(rng), rng, target, c_builds, expected)


@pytest.mark.parametrize("target", TARGETS[1:3])
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_networks_under_address_and_undefined_behaviour_sanitizers(
        name: str, target: str, c_builds: CBuilds) -> None:
    """The generated C of each network, called on the inputs the host path saw (whose
    outputs equal TFLM's, above), in a program built with -fsanitize=undefined,address."""
    make, _ = NETWORKS[name]
    rng = rng_for(10, len(name))
    b = make(rng)
    compiled = compile_for(b.to_bytes(), target)
    assert c_builds.testbench(compiled, random_inputs(b, rng)).endswith("0 mismatches\n")


@pytest.mark.parametrize("make", [
    lambda b, rng, x: b.conv2d(x, q_weight(b, rng, (3, 1, 2, 4), 0, True)[0],
                               q_bias(b, rng, 3), stride=(1, 2), scale=0.5, zero_point=1),
    lambda b, rng, x: b.fully_connected(b.reshape(x, (1, -1)),
                                        q_weight(b, rng, (3, 48), 0, False)[0], None,
                                        scale=0.5),
    lambda b, rng, x: b.average_pool2d(x, 3, stride=2, padding="SAME", activation="RELU"),
    lambda b, rng, x: b.mul(x, x, scale=0.02, zero_point=-2),
], ids=["conv", "fully_connected", "avg_pool", "mul"])
def test_single_operators_under_sanitizers(make: Callable[..., int], c_builds: CBuilds) -> None:
    rng = rng_for(11)
    b = TfliteBuilder()
    x, _ = q_input(b, rng, (1, 3, 4, 4))
    b.outputs(make(b, rng, x))
    buf = b.to_bytes()
    compiled = compile_for(buf, "cmsis-nn -mcpu=cortex-m55 -debug_last_error")
    inputs = random_inputs(b, rng)
    np.testing.assert_array_equal(compiled.executor()(*inputs)[0], run_tflm(buf, inputs, 1)[0])
    assert c_builds.testbench(compiled, inputs).endswith("0 mismatches\n")
