"""The plugin's portable CMSIS-NN kernels (csrc/) against independent oracles.

Oracles: passhost's qnn operators (the NumPy reference of TFLite's integer arithmetic,
evaluated with the relay interpreter), TFLite Micro on single-operator ``.tflite`` models
(its own multipliers, paddings and clip bounds from the model's quantisation), hand-checked
values for the fixed-point edge cases, and tables written out from the buffer-size rules of
CMSIS-NN v4.1. Every comparison is bit-exact.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from tflite_micro import runtime

from passhost import relay
from passhost.relay.op import fixed_point as fp
from passhost.testing.tflite_builder import TfliteBuilder
from passhost_cmsis_nn import buffer_size as bs
from passhost_cmsis_nn.cbuild import (
    KERNEL_ROOT_ENV,
    SANITIZER_FLAGS,
    STRICT_FLAGS,
    CBuildError,
    build_executable,
    build_shared_library,
    bundled_kernel_library,
    kernel_library,
    load_library,
)

if TYPE_CHECKING:
    from conftest import CKernels

MIN32, MAX32 = -(2**31), 2**31 - 1
SUCCESS, ARG_ERROR = 0, -1
BUNDLED = bundled_kernel_library()


# -- reference: passhost's qnn operators -----------------------------------------------------------
def i32(v: Any) -> relay.Constant:
    return relay.const(np.asarray(v, dtype=np.int32))


def f32(v: Any) -> relay.Constant:
    return relay.const(np.asarray(v, dtype=np.float32))


def evaluate(make: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """Evaluate ``make(vars...)`` on ``arrays`` with passhost's relay interpreter."""
    params = [relay.var(f"x{i}", shape=a.shape, dtype=a.dtype.name) for i, a in enumerate(arrays)]
    return np.asarray(relay.evaluate(relay.Function(params, make(*params)), *arrays))


def clip(y: Any, act: Sequence[int]) -> Any:
    return relay.clip(y, a_min=float(act[0]), a_max=float(act[1]))


@dataclass
class ConvCase:
    """One int8 (depthwise) convolution: data, quantisation and geometry."""

    x: np.ndarray
    w: np.ndarray  # OHWI, or (1, KH, KW, C_out) for depthwise
    bias: np.ndarray | None
    s_in: np.float32
    s_w: np.ndarray
    s_out: np.float32
    in_zp: int
    out_zp: int
    stride: tuple[int, int]
    pad: tuple[int, int, int, int]  # top, left, bottom, right
    dil: tuple[int, int]
    act: tuple[int, int]
    out_shape: tuple[int, int, int, int]
    ch_mult: int = 0  # 0: a plain convolution

    def quant(self) -> tuple[np.ndarray, np.ndarray]:
        return fp.quantize_multipliers(fp.conv_effective_scales(self.s_in, self.s_w, self.s_out))

    def reference(self) -> np.ndarray:
        depthwise = self.ch_mult > 0
        weight = self.w[0][..., None] if depthwise else self.w
        product = np.float64(self.s_in) * self.s_w.astype(np.float64)

        def make(xv: Any) -> Any:
            y = relay.qnn.conv2d(
                xv, relay.const(weight), i32(self.in_zp), i32(0), f32(self.s_in),
                f32(self.s_w), strides=self.stride, padding=self.pad, dilation=self.dil,
                groups=self.x.shape[3] if depthwise else 1, data_layout="NHWC",
                kernel_layout="HWOI" if depthwise else "OHWI")
            if self.bias is not None:
                y = relay.nn.bias_add(y, relay.const(self.bias), axis=3)
            y = relay.qnn.requantize(y, relay.const(product, "float64"), i32(0),
                                     f32(self.s_out), i32(self.out_zp), axis=3)
            return clip(y, self.act)

        return evaluate(make, self.x)

    def run(self, k: CKernels, **kwargs: Any) -> tuple[int, np.ndarray]:
        mult, shift = self.quant()
        if self.ch_mult:
            params = k.dw_params(-self.in_zp, self.out_zp, self.ch_mult, self.stride,
                                 self.pad[:2], self.dil, self.act)
            return k.depthwise(self.x, self.w, self.bias, mult, shift, params, self.out_shape,
                               **kwargs)
        params = k.conv_params(-self.in_zp, self.out_zp, self.stride, self.pad[:2], self.dil,
                               self.act)
        return k.conv(self.x, self.w, self.bias, mult, shift, params, self.out_shape, **kwargs)


def rand_int(rng: np.random.Generator, shape: Sequence[int], dtype: str = "int8") -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=tuple(shape)).astype(dtype)


def weights(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Random int8 weights; TFLite's int8 weights are symmetric (no -128)."""
    w = rand_int(rng, shape)
    w[w == -128] = -127
    return w


def conv_data(rng: np.random.Generator, shape: Sequence[int], o: int, kernel: Sequence[int],
              depthwise: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random int8 NHWC input of ``shape``, int8 weights (OHWI, or (1, KH, KW, O) when
    ``depthwise``) and int32 bias for a convolution with ``o`` output channels."""
    kh, kw = kernel
    x = rand_int(rng, shape)
    w = weights(rng, (1, kh, kw, o) if depthwise else (o, kh, kw, shape[3]))
    return x, w, rng.integers(-5000, 5000, o).astype(np.int32)


def rand_act(rng: np.random.Generator, scale: float, zp: int) -> tuple[int, int]:
    choice = rng.integers(4)
    if choice == 0:
        return -128, 127
    if choice == 1:
        return fp.activation_range("RELU6", scale, zp)
    lo = int(rng.integers(-128, 0))
    return lo, int(rng.integers(lo, 128))


def out_scale(rng: np.random.Generator, s_in: float, s_w: np.ndarray, depth: int) -> np.float32:
    # int8 products have a spread of about 74 * 74 * sqrt(depth); aim at +-40 output steps,
    # times a random factor so that some cases saturate.
    return np.float32(s_in * float(np.median(s_w)) * 137.0 * math.sqrt(depth)
                      * rng.uniform(0.3, 3.0))


def conv_geometry(rng: np.random.Generator, size: int, k: int, s: int, d: int
                  ) -> tuple[int, int, int]:
    """(pad_before, pad_after, out) along one axis; pads below the dilated kernel."""
    dk = (k - 1) * d + 1
    while True:
        lo, hi = (int(v) for v in rng.integers(0, dk, 2))
        out = (size + lo + hi - dk) // s + 1
        if out >= 1:
            return lo, hi, out


def random_conv(rng: np.random.Generator, kind: str) -> ConvCase:
    """A random convolution of ``kind``: general, 1x1_fast, 1x1 or 1xN (the dispatch
    paths of arm_convolve_wrapper_s8)."""
    n = int(rng.choice([1, 1, 2]))
    h, w = (int(v) for v in rng.integers(1, 9, 2))
    c, o = (int(v) for v in rng.integers(1, 9, 2))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    sh, sw = (int(v) for v in rng.integers(1, 3, 2))
    dh, dw = (int(v) for v in rng.choice([1, 1, 2], 2))
    if kind in ("1x1_fast", "1x1"):
        kh = kw = dh = dw = 1
        sh, sw = (1, 1) if kind == "1x1_fast" else ((2, 1), (1, 2), (2, 3))[rng.integers(3)]
    elif kind == "1xN":
        h, kh, dw, kw = 1, 1, 1, int(rng.integers(2, 5))
        c, sw = ((4, 1), (8, 2), (2, 2), (12, 1))[rng.integers(4)]
    pt, pb, oh = conv_geometry(rng, h, kh, sh, dh)
    pl, pr, ow = conv_geometry(rng, w, kw, sw, dw)
    if kind in ("1x1_fast", "1x1"):
        pt = pb = pl = pr = 0
        oh, ow = (h - 1) // sh + 1, (w - 1) // sw + 1
    elif kind == "1xN":
        pt = pb = 0
        oh = 1
    s_in = np.float32(rng.uniform(0.01, 0.05))
    s_w = rng.uniform(0.002, 0.02, o).astype(np.float32)
    s_out = out_scale(rng, s_in, s_w, kh * kw * c)
    zp = int(rng.integers(-128, 128))
    return ConvCase(
        rand_int(rng, (n, h, w, c)), rand_int(rng, (o, kh, kw, c)),
        None if rng.integers(4) == 0 else rng.integers(-20000, 20000, o).astype(np.int32),
        s_in, s_w, s_out, int(rng.integers(-128, 128)), zp, (sh, sw), (pt, pl, pb, pr),
        (dh, dw), rand_act(rng, float(s_out), zp), (n, oh, ow, o))


def random_depthwise(rng: np.random.Generator, kind: str) -> ConvCase:
    """A random depthwise convolution of ``kind``: general (any multiplier, dilation,
    batch), 3x3 or opt (the dispatch paths of arm_depthwise_conv_wrapper_s8)."""
    n, mult = int(rng.choice([1, 2])), int(rng.integers(1, 4))
    h, w = (int(v) for v in rng.integers(2, 9, 2))
    c = int(rng.integers(1, 7))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    sh, sw = (int(v) for v in rng.integers(1, 3, 2))
    dh, dw = (int(v) for v in rng.choice([1, 2], 2))
    if kind in ("3x3", "opt"):
        n, mult, dh, dw = 1, 1, 1, 1
        if kind == "3x3":
            kh = kw = 3
    pt, pb, oh = conv_geometry(rng, h, kh, sh, dh)
    pl, pr, ow = conv_geometry(rng, w, kw, sw, dw)
    if kind == "opt" and kh == kw == 3:
        pt = 2 if pt < 2 else pt  # a 3x3 filter with padding 2 takes the opt path
        oh = (h + pt + pb - 3) // sh + 1
    o = c * mult
    s_in = np.float32(rng.uniform(0.01, 0.05))
    s_w = rng.uniform(0.002, 0.02, o).astype(np.float32)
    s_out = out_scale(rng, s_in, s_w, kh * kw)
    zp = int(rng.integers(-128, 128))
    return ConvCase(
        rand_int(rng, (n, h, w, c)), rand_int(rng, (1, kh, kw, o)),
        None if rng.integers(4) == 0 else rng.integers(-5000, 5000, o).astype(np.int32),
        s_in, s_w, s_out, int(rng.integers(-128, 128)), zp, (sh, sw), (pt, pl, pb, pr),
        (dh, dw), rand_act(rng, float(s_out), zp), (n, oh, ow, o), ch_mult=mult)


# -- fixed-point primitives ------------------------------------------------------------------------
def test_doubling_high_mult_edges_and_random(kernels: CKernels) -> None:
    f = kernels.phnn_doubling_high_mult
    assert f(MIN32, MIN32) == MAX32  # the one saturating case
    assert f(MIN32, MAX32) == -MAX32
    assert f(MAX32, MAX32) == MAX32 - 1
    # 2ab / 2^32 = k + 1/2 ties round half up for both signs.
    assert [f(1, 2**30), f(-1, 2**30), f(3, 2**30), f(-3, 2**30)] == [1, 0, 2, -1]
    rng = np.random.default_rng(1)
    a, b = (rng.integers(MIN32, MAX32, 300, endpoint=True) for _ in range(2))
    got = [f(int(x), int(y)) for x, y in zip(a, b)]
    assert got == fp.saturating_rounding_doubling_high_mul(a, b).tolist()


def test_divide_by_power_of_two_ties_and_all_exponents(kernels: CKernels) -> None:
    f = kernels.phnn_divide_by_power_of_two
    assert [f(5, 1), f(-5, 1), f(-6, 2), f(-5, 2), f(-7, 2), f(-2, 2)] == [3, -3, -2, -1, -2, -1]
    assert [f(MIN32, 31), f(MAX32, 31), f(-(2**30), 31), f(-(2**30) + 1, 31)] == [-1, 1, -1, 0]
    assert f(MIN32, 0) == MIN32 and f(MIN32, 32) == -1 and f(MIN32, 33) == 0
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.integers(MIN32, MAX32, 200, endpoint=True), [MIN32, MAX32, 0, -1]])
    for e in range(36):  # softmax divides by up to 2^35
        assert [f(int(v), e) for v in x] == fp.rounding_divide_by_pot(x, e).tolist()


def test_mult_by_power_of_two_saturates(kernels: CKernels) -> None:
    f = kernels.phnn_mult_by_power_of_two
    assert f(2**26, 5) == MAX32 and f(-(2**26), 5) == MIN32 and f(2**26 - 1, 5) == MAX32 - 31
    rng = np.random.default_rng(3)
    x = rng.integers(-(2**28), 2**28, 100)
    for e in (0, 1, 2, 5, 31):
        assert [f(int(v), e) for v in x] == [
            fp.saturating_rounding_multiply_by_pot(int(v), e) for v in x]


def test_requantize_all_shifts(kernels: CKernels) -> None:
    f = kernels.phnn_requantize
    assert f(100, 2**30, 0) == 50
    assert f(-3, 2**30, 0) == -1 and f(-6, 2**30, -1) == -2  # ties away from zero
    assert f(2**30, 2**30, 2) == 0  # (2^30 << 2) wraps to 0, as the C reference kernels do
    assert f(MAX32, MAX32, -31) == 1
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.integers(-(2**20), 2**20, 60), [MIN32, MAX32, 0, -1, 1]])
    m = rng.integers(2**30, 2**31 - 1, x.size)
    for s in range(-31, 31):
        assert [f(int(a), int(b), s) for a, b in zip(x, m)] == \
            fp.multiply_by_quantized_multiplier(x, m, s).tolist()


def test_softmax_primitives(kernels: CKernels) -> None:
    exp, inv = kernels.phnn_exp_on_negative_values, kernels.phnn_one_over_one_plus_x
    assert exp(0) == MAX32
    points = [-1, -(2**24), -(2**24) - 1, -(2**26), -(5 * 2**26) - 12345, -(31 * 2**26), MIN32]
    assert [exp(p) for p in points] == fp.exp_on_negative_values(np.array(points)).tolist()
    assert abs(exp(-(2**26)) - math.exp(-1) * 2**31) < 1e-6 * 2**31
    rng = np.random.default_rng(5)
    neg = rng.integers(MIN32, 0, 200, endpoint=True)
    assert [exp(int(v)) for v in neg] == fp.exp_on_negative_values(neg).tolist()
    pos = np.concatenate([rng.integers(0, MAX32, 200, endpoint=True), [0, MAX32]])
    assert [inv(int(v)) for v in pos] == fp.one_over_one_plus_x_for_x_in_0_1(pos).tolist()
    assert [kernels.phnn_clz32(v) for v in (0, 1, 2**19, 2**31, 2**32 - 1)] == [32, 31, 12, 0, 0]


# -- kernels against passhost's qnn reference ------------------------------------------------------
CONV_KINDS = ("general", "1x1_fast", "1x1", "1xN")
DW_KINDS = ("general", "3x3", "opt")


#: op -> (case generator, its kinds, the first kind's seed)
RANDOM_CASES: dict[str, tuple[Callable[[np.random.Generator, str], ConvCase], tuple[str, ...],
                              int]] = {
    "conv": (random_conv, CONV_KINDS, 100),
    "depthwise": (random_depthwise, DW_KINDS, 200),
}


@pytest.mark.parametrize(("op", "kind"), [(op, kind) for op, (_, kinds, _) in RANDOM_CASES.items()
                                          for kind in kinds])
def test_random_cases(kernels: CKernels, op: str, kind: str) -> None:
    """Eight random cases of each convolution and depthwise kernel equal the reference."""
    make, kinds, seed = RANDOM_CASES[op]
    rng = np.random.default_rng(seed + kinds.index(kind))
    for _ in range(8):
        case = make(rng, kind)
        status, out = case.run(kernels)
        assert status == SUCCESS
        np.testing.assert_array_equal(out, case.reference())


def py_buffer_size(case: ConvCase, **features: bool) -> int:
    """buffer_size.py's answer for a case."""
    if case.ch_mult:
        return bs.depthwise_conv_wrapper_s8(input_dims=case.x.shape, filter_dims=case.w.shape,
                                            output_dims=case.out_shape, dilation_hw=case.dil,
                                            **features)
    return bs.convolve_wrapper_s8(input_dims=case.x.shape, filter_dims=case.w.shape,
                                  stride_hw=case.stride, padding_hw=case.pad[:2],
                                  dilation_hw=case.dil, **features)


@pytest.mark.parametrize("variant", ["dsp", "mve"])
def test_conv_and_depthwise_on_dsp_and_mve_builds(kernels_for: Callable[[str], CKernels],
                                                  variant: str) -> None:
    # The buffer each path needs differs per build; with the size the build's wrapper asks
    # for (and that buffer_size.py gives for the variant), every path runs and is exact.
    k = kernels_for(variant)
    features = {"has_dsp": True, "has_mve": variant == "mve"}
    rng = np.random.default_rng(300 + len(variant))
    cases = [random_conv(rng, kind) for kind in CONV_KINDS for _ in range(2)]
    cases += [random_depthwise(rng, kind) for kind in DW_KINDS for _ in range(2)]
    for case in cases:
        size = py_buffer_size(case, **features)
        status, out = case.run(k, ctx_size=size)
        assert status == SUCCESS
        np.testing.assert_array_equal(out, case.reference())


def fc_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, s_in: np.float32,
                 s_w: np.float32, s_out: np.float32, in_zp: int, out_zp: int,
                 act: Sequence[int]) -> np.ndarray:
    def make(xv: Any) -> Any:
        y = relay.qnn.dense(xv, relay.const(w), i32(in_zp), i32(0), f32(s_in), f32(s_w))
        if bias is not None:
            y = relay.nn.bias_add(y, relay.const(bias), axis=1)
        # TFLite takes the product of the scales in float32.
        y = relay.qnn.requantize(y, f32(np.float32(s_in) * np.float32(s_w)), i32(0), f32(s_out),
                                 i32(out_zp))
        return clip(y, act)

    return evaluate(make, x)


def test_fully_connected_random_cases(kernels: CKernels) -> None:
    rng = np.random.default_rng(400)
    for _ in range(12):
        n, depth, units = (int(v) for v in rng.integers(1, (4, 40, 12)))
        x, w = rand_int(rng, (n, depth)), rand_int(rng, (units, depth))
        bias = None if rng.integers(4) == 0 else rng.integers(-20000, 20000, units).astype(np.int32)
        s_in, s_w = np.float32(rng.uniform(0.01, 0.05)), np.float32(rng.uniform(0.002, 0.02))
        s_out = out_scale(rng, float(s_in), np.array([s_w]), depth)
        in_zp, out_zp = (int(v) for v in rng.integers(-128, 128, 2))
        act = rand_act(rng, float(s_out), out_zp)
        mult, shift = fp.quantize_multiplier(fp.fc_effective_scale(s_in, s_w, s_out))
        status, out = kernels.fully_connected(x, w, bias, mult, shift, -in_zp, out_zp, act)
        assert status == SUCCESS
        np.testing.assert_array_equal(
            out, fc_reference(x, w, bias, s_in, s_w, s_out, in_zp, out_zp, act))


def random_pool(rng: np.random.Generator, dtype: str) -> dict[str, Any]:
    n, c = int(rng.choice([1, 2])), int(rng.integers(1, 6))
    h, w = (int(v) for v in rng.integers(1, 9, 2))
    kh, kw = (int(v) for v in rng.integers(1, 4, 2))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    pt, pb, oh = conv_geometry(rng, h, kh, sh, 1)
    pl, pr, ow = conv_geometry(rng, w, kw, sw, 1)
    info = np.iinfo(dtype)
    lo = int(rng.integers(info.min, 0)) if rng.integers(2) else int(info.min)
    hi = int(rng.integers(0, info.max + 1)) if rng.integers(2) else int(info.max)
    return {"x": rand_int(rng, (n, h, w, c), dtype), "pool": (kh, kw), "stride": (sh, sw),
            "pad": (pt, pl, pb, pr), "act": (lo, hi), "out_shape": (n, oh, ow, c)}


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_pool_random_cases(kernels: CKernels, kind: str, dtype: str) -> None:
    rng = np.random.default_rng(500 + len(kind) + len(dtype))
    op = relay.nn.avg_pool2d if kind == "avg" else relay.nn.max_pool2d
    extra = {"count_include_pad": False} if kind == "avg" else {}
    for _ in range(10):
        p = random_pool(rng, dtype)
        expected = evaluate(lambda xv, p=p: clip(op(
            xv, pool_size=p["pool"], strides=p["stride"], padding=p["pad"], layout="NHWC",
            **extra), p["act"]), p["x"])
        status, out = kernels.pool(kind, p["x"], p["pool"], p["stride"], p["pad"][:2], p["act"],
                                   p["out_shape"])
        assert status == SUCCESS
        np.testing.assert_array_equal(out, expected)


def binary_case(rng: np.random.Generator, dtype: str) -> dict[str, Any]:
    shape = tuple(int(v) for v in rng.integers(1, 6, 3))
    a, b = rand_int(rng, shape, dtype), rand_int(rng, shape, dtype)
    s1, s2, so = (np.float32(v) for v in rng.uniform(0.002, 0.1, 3))
    info = np.iinfo(dtype)
    # int16 kernels have no offsets: TFLite's int16 add and mul require zero points 0.
    zps = (0, 0, 0) if dtype == "int16" else tuple(int(v) for v in rng.integers(-128, 128, 3))
    lo = int(rng.integers(info.min, 0)) if rng.integers(2) else int(info.min)
    return {"a": a, "b": b, "scales": (s1, s2, so), "zps": zps,
            "act": (lo, int(info.max) if rng.integers(2) else int(rng.integers(lo, info.max)))}


def binary_reference(op: str, c: dict[str, Any], so: np.float32) -> np.ndarray:
    (s1, s2, _), (z1, z2, zo) = c["scales"], c["zps"]
    fn = relay.qnn.add if op == "add" else relay.qnn.mul
    return evaluate(lambda av, bv: clip(fn(av, bv, f32(s1), i32(z1), f32(s2), i32(z2), f32(so),
                                           i32(zo)), c["act"]), c["a"], c["b"])


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_add_random_cases(kernels: CKernels, dtype: str) -> None:
    rng = np.random.default_rng(600 + len(dtype))
    for _ in range(10):
        c = binary_case(rng, dtype)
        (s1, s2, so), (z1, z2, zo) = c["scales"], c["zps"]
        p = fp.add_params(s1, s2, so, dtype)
        status, out = kernels.add(c["a"], c["b"], (-z1, p.lhs_multiplier, p.lhs_shift),
                                  (-z2, p.rhs_multiplier, p.rhs_shift), p.left_shift,
                                  (zo, p.output_multiplier, p.output_shift), c["act"])
        assert status == SUCCESS
        np.testing.assert_array_equal(out, binary_reference("add", c, so))


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_mul_random_cases(kernels: CKernels, dtype: str) -> None:
    rng = np.random.default_rng(700 + len(dtype))
    span = 128.0 if dtype == "int8" else 32768.0
    for _ in range(10):
        c = binary_case(rng, dtype)
        s1, s2, so = c["scales"]
        so = np.float32(s1 * s2 * span * rng.uniform(0.1, 2.0))  # products fill the range
        m, s = fp.quantize_multiplier(fp.mul_effective_scale(s1, s2, so))
        z1, z2, zo = c["zps"]
        status, out = kernels.mul(c["a"], c["b"], (-z1, -z2), (zo, m, s), c["act"])
        assert status == SUCCESS
        np.testing.assert_array_equal(out, binary_reference("mul", c, so))


def test_mul_multiplier_carry_and_flush(kernels: CKernels) -> None:
    # (1 - 2^-23)(1 + 2^-23) = 1 - 2^-46: its multiplier rounds up to 2^31 and is carried to
    # (2^30, 1), which multiplies by exactly 1. 2^-34 flushes to (0, 0): the output is the
    # zero point.
    a = np.arange(-11, 12, dtype=np.int8)
    b = a[::-1].copy()
    cases = [((np.float32(1 - 2.0**-23), np.float32(1 + 2.0**-23), np.float32(1.0)), (2**30, 1),
              np.clip((a.astype(int) - 3) * (b.astype(int) + 2) + 7, -128, 127)),
             ((np.float32(1.0), np.float32(1.0), np.float32(2.0**34)), (0, 0),
              np.full(a.shape, 7))]
    for scales, quantized, expected in cases:
        m, s = fp.quantize_multiplier(fp.mul_effective_scale(*scales))
        assert (m, s) == quantized
        status, out = kernels.mul(a, b, (-3, 2), (7, m, s), (-128, 127))
        assert status == SUCCESS
        np.testing.assert_array_equal(out, expected)
        c = {"a": a, "b": b, "scales": scales, "zps": (3, -2, 7), "act": (-128, 127)}
        np.testing.assert_array_equal(out, binary_reference("mul", c, scales[2]))


def test_softmax_random_cases(kernels: CKernels) -> None:
    rng = np.random.default_rng(800)
    shapes = [(3, 10), (1, 1), (2, 1000), (4, 7, 5)]
    for shape, s_in in zip(shapes * 3, [0.01, 0.05, 0.1, 0.5, 1.0, 3.0, 0.003, 0.2, 0.02,
                                        0.07, 0.4, 0.015]):
        x = rand_int(rng, shape)
        x[..., 0] = x[..., -1]  # a repeated value
        scale = np.float32(s_in)
        p = fp.softmax_params(float(scale))
        expected = evaluate(lambda xv, s=scale: relay.qnn.softmax(
            xv, f32(s), i32(0), f32(1 / 256), i32(-128)), x)
        np.testing.assert_array_equal(kernels.softmax(x, *p), expected)
    # 4096 equal values: the sum reaches 2^31 and wraps, as the reference's int32 sum does.
    equal = np.full((1, 4096), 5, dtype=np.int8)
    p = fp.softmax_params(0.1)
    assert kernels.softmax(equal, *p).tolist() == fp.softmax_int8(equal, p).tolist()


# -- kernels against TFLite Micro ------------------------------------------------------------------
def tflm_run(model: bytes, *inputs: np.ndarray) -> np.ndarray:
    interp = runtime.Interpreter.from_bytes(model)
    for i, value in enumerate(inputs):
        interp.set_input(value, i)
    interp.invoke()
    return interp.get_output(0)


def tflite_window(size: int, k: int, s: int, d: int, padding: str) -> tuple[int, int]:
    """(pad_before, out) as TFLite computes them for SAME/VALID."""
    dk = (k - 1) * d + 1
    out = (size + s - 1) // s if padding == "SAME" else (size + s - dk) // s
    return max((out - 1) * s + dk - size, 0) // 2, out


def tflm_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray, *, s_in: np.float32, in_zp: int,
              s_w: np.ndarray, s_out: np.float32, out_zp: int, stride: tuple[int, int],
              dil: tuple[int, int], padding: str, activation: str,
              depthwise: bool) -> tuple[np.ndarray, tuple[int, int]]:
    """TFLite Micro's output for NHWC int8 ``x`` of one CONV_2D (OHWI ``w``) or
    DEPTHWISE_CONV_2D ((1, KH, KW, C_out) ``w``) with per-channel weight scales ``s_w``, and
    the (top, left) padding TFLite uses; the output's shape is checked against TFLite's."""
    b = TfliteBuilder()
    xi = b.input(x.shape, "int8", scale=float(s_in), zero_point=in_zp)
    wi = b.constant(w, scale=s_w, quantized_dimension=3 if depthwise else 0)
    bi = b.constant(bias, scale=s_in * s_w)
    layer = b.depthwise_conv2d if depthwise else b.conv2d
    b.outputs(layer(xi, wi, bi, stride=stride, padding=padding, dilation=dil,
                    activation=activation, scale=float(s_out), zero_point=out_zp))
    expected = tflm_run(b.to_bytes(), x)
    _, kh, kw, _ = w.shape
    pt, oh = tflite_window(x.shape[1], kh, stride[0], dil[0], padding)
    pl, ow = tflite_window(x.shape[2], kw, stride[1], dil[1], padding)
    assert expected.shape == (x.shape[0], oh, ow, w.shape[3 if depthwise else 0])
    return expected, (pt, pl)


TFLM_CONV = [  # (input NHWC, O, kernel, stride, dilation, padding, activation, depth mult)
    ((1, 9, 7, 3), 5, (3, 3), (1, 1), (1, 1), "SAME", "NONE", 0),
    ((1, 8, 8, 8), 4, (1, 1), (1, 1), (1, 1), "VALID", "RELU", 0),
    ((1, 1, 16, 4), 6, (1, 5), (1, 2), (1, 1), "SAME", "RELU6", 0),
    ((1, 10, 9, 2), 3, (3, 2), (2, 1), (2, 2), "VALID", "NONE", 0),
    ((1, 8, 8, 4), 4, (3, 3), (1, 1), (1, 1), "SAME", "RELU6", 1),
    ((1, 7, 9, 3), 6, (3, 3), (2, 2), (1, 1), "SAME", "NONE", 2),
    ((1, 9, 8, 2), 6, (2, 3), (1, 1), (2, 1), "VALID", "RELU", 3),
]


@pytest.mark.parametrize("case", TFLM_CONV, ids=[str(i) for i in range(len(TFLM_CONV))])
def test_conv_and_depthwise_against_tflm(kernels: CKernels, case: tuple[Any, ...]) -> None:
    shape, o, (kh, kw), stride, dil, padding, activation, mult = case
    rng = np.random.default_rng(900 + TFLM_CONV.index(case))
    s_in = np.float32(0.03)
    s_w = rng.uniform(0.002, 0.02, o).astype(np.float32)
    depth = kh * kw * (1 if mult else shape[3])
    s_out = out_scale(rng, float(s_in), s_w, depth)
    in_zp, out_zp = -7, 11
    x, w, bias = conv_data(rng, shape, o, (kh, kw), depthwise=bool(mult))
    expected, (pt, pl) = tflm_conv(x, w, bias, s_in=s_in, in_zp=in_zp, s_w=s_w, s_out=s_out,
                                   out_zp=out_zp, stride=stride, dil=dil, padding=padding,
                                   activation=activation, depthwise=bool(mult))
    conv = ConvCase(x, w, bias, s_in, s_w, s_out, in_zp, out_zp, stride, (pt, pl, 0, 0), dil,
                    fp.activation_range(activation, float(s_out), out_zp),
                    expected.shape, ch_mult=mult)
    status, out = conv.run(kernels)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("seed", range(3))
def test_fully_connected_against_tflm(kernels: CKernels, seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    n, depth, units = 1 + seed, 7 + 9 * seed, 5 + seed
    x, w = rand_int(rng, (n, depth)), rand_int(rng, (units, depth))
    w[w == -128] = -127
    bias = rng.integers(-5000, 5000, units).astype(np.int32)
    s_in, s_w = np.float32(0.021), np.float32(rng.uniform(0.002, 0.02))
    s_out = out_scale(rng, float(s_in), np.array([s_w]), depth)
    activation = ("NONE", "RELU", "RELU6")[seed]
    b = TfliteBuilder()
    xi = b.input(x.shape, "int8", scale=float(s_in), zero_point=5)
    wi = b.constant(w, scale=float(s_w))
    bi = b.constant(bias, scale=float(s_in * s_w))
    b.outputs(b.fully_connected(xi, wi, bi, activation=activation, scale=float(s_out),
                                zero_point=-3))
    mult, shift = fp.quantize_multiplier(fp.fc_effective_scale(s_in, s_w, s_out))
    status, out = kernels.fully_connected(
        x, w, bias, mult, shift, -5, -3, fp.activation_range(activation, float(s_out), -3))
    assert status == SUCCESS
    np.testing.assert_array_equal(out, tflm_run(b.to_bytes(), x))


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pools_against_tflm(kernels: CKernels, kind: str, padding: str) -> None:
    rng = np.random.default_rng(1100 + len(kind) + len(padding))
    x = rand_int(rng, (1, 9, 7, 3))
    scale, zp, pool, stride = 0.05, -4, (3, 2), (2, 2)
    b = TfliteBuilder()
    xi = b.input(x.shape, "int8", scale=scale, zero_point=zp)
    layer = b.average_pool2d if kind == "avg" else b.max_pool2d
    b.outputs(layer(xi, pool, stride=stride, padding=padding, activation="RELU6"))
    pt, oh = tflite_window(9, 3, 2, 1, padding)
    pl, ow = tflite_window(7, 2, 2, 1, padding)
    status, out = kernels.pool(kind, x, pool, stride, (pt, pl),
                               fp.activation_range("RELU6", scale, zp), (1, oh, ow, 3))
    assert status == SUCCESS
    np.testing.assert_array_equal(out, tflm_run(b.to_bytes(), x))


@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("seed", range(2))
def test_add_mul_against_tflm(kernels: CKernels, op: str, seed: int) -> None:
    rng = np.random.default_rng(1200 + seed + len(op))
    a, bv = rand_int(rng, (2, 5, 3)), rand_int(rng, (2, 5, 3))
    s1, s2 = (float(np.float32(v)) for v in rng.uniform(0.005, 0.05, 2))
    so = float(np.float32(s1 + s2) if op == "add" else np.float32(s1 * s2 * 60))
    z1, z2, zo = (int(v) for v in rng.integers(-100, 100, 3))
    activation = ("NONE", "RELU")[seed]
    b = TfliteBuilder()
    ai = b.input(a.shape, "int8", scale=s1, zero_point=z1)
    bi = b.input(bv.shape, "int8", scale=s2, zero_point=z2)
    layer = b.add if op == "add" else b.mul
    b.outputs(layer(ai, bi, activation=activation, scale=so, zero_point=zo))
    act = fp.activation_range(activation, so, zo)
    if op == "add":
        p = fp.add_params(s1, s2, so)
        status, out = kernels.add(a, bv, (-z1, p.lhs_multiplier, p.lhs_shift),
                                  (-z2, p.rhs_multiplier, p.rhs_shift), p.left_shift,
                                  (zo, p.output_multiplier, p.output_shift), act)
    else:
        m, s = fp.quantize_multiplier(fp.mul_effective_scale(s1, s2, so))
        status, out = kernels.mul(a, bv, (-z1, -z2), (zo, m, s), act)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, tflm_run(b.to_bytes(), a, bv))


@pytest.mark.parametrize("s_in", [0.02, 0.25, 2.0])
def test_softmax_against_tflm(kernels: CKernels, s_in: float) -> None:
    x = rand_int(np.random.default_rng(1300), (4, 37))
    b = TfliteBuilder()
    b.outputs(b.softmax(b.input(x.shape, "int8", scale=s_in, zero_point=3)))
    out = kernels.softmax(x, *fp.softmax_params(float(np.float32(s_in))))
    np.testing.assert_array_equal(out, tflm_run(b.to_bytes(), x))


# -- buffer sizes ----------------------------------------------------------------------------------
# (input, filter, stride, padding, dilation) -> bytes for (plain, DSP, MVE), worked out from
# CMSIS-NN v4.1's rules by hand.
CONV_SIZES = [
    ((1, 8, 8, 3), (8, 3, 3, 3), (1, 1), (1, 1), (1, 1), (108, 108, 128)),  # general, 27 taps
    ((1, 4, 4, 3), (8, 1, 1, 3), (1, 1), (0, 0), (1, 1), (0, 0, 0)),  # 1x1 fast, C % 4 != 0
    ((1, 5, 5, 4), (8, 1, 1, 4), (2, 2), (0, 0), (1, 1), (0, 0, 0)),  # 1x1 strided
    ((1, 1, 16, 4), (8, 1, 3, 4), (1, 1), (0, 1), (1, 1), (48, 48, 0)),  # 1xN
    ((1, 1, 8, 3), (4, 1, 3, 3), (1, 1), (0, 1), (1, 1), (36, 36, 64)),  # C=3: not 1xN
    ((1, 5, 5, 4), (4, 1, 1, 4), (1, 1), (0, 0), (2, 2), (16, 16, 32)),  # dilated 1x1: general
    ((2, 6, 6, 10), (3, 2, 2, 10), (1, 1), (1, 0), (1, 1), (160, 160, 160)),  # 40 taps
]
DW_SIZES = [  # (input, filter, output channels, dilation) -> (plain, DSP, MVE)
    ((1, 8, 8, 16), (1, 3, 3, 16), 16, (1, 1), (0, 288, 4464)),
    ((1, 8, 8, 8), (1, 3, 3, 16), 16, (1, 1), (0, 0, 0)),  # ch_mult 2
    ((2, 8, 8, 16), (1, 3, 3, 16), 16, (1, 1), (0, 0, 0)),  # batch 2
    ((1, 8, 8, 16), (1, 3, 3, 16), 16, (2, 1), (0, 0, 0)),  # dilated
    ((1, 6, 6, 5), (1, 2, 4, 5), 5, (1, 1), (0, 80, 3968)),
]
FEATURES = ({"has_dsp": False, "has_mve": False}, {"has_dsp": True, "has_mve": False},
            {"has_dsp": True, "has_mve": True})


@pytest.mark.parametrize("row", CONV_SIZES, ids=[str(i) for i in range(len(CONV_SIZES))])
def test_conv_buffer_size_table(kernels: CKernels, row: tuple[Any, ...]) -> None:
    in_shape, f_shape, stride, pad, dil, expected = row
    got = [bs.convolve_wrapper_s8(input_dims=in_shape, filter_dims=f_shape, stride_hw=stride,
                                  padding_hw=pad, dilation_hw=dil, **f) for f in FEATURES]
    assert tuple(got) == expected
    params = kernels.conv_params(0, 0, stride, pad, dil, (-128, 127))
    out_shape = (in_shape[0], 1, 1, f_shape[0])  # not used by the rules
    assert tuple(kernels.conv_buffer_size(v, params, in_shape, f_shape, out_shape)
                 for v in ("", "_dsp", "_mve")) == expected


@pytest.mark.parametrize("row", DW_SIZES, ids=[str(i) for i in range(len(DW_SIZES))])
def test_depthwise_buffer_size_table(kernels: CKernels, row: tuple[Any, ...]) -> None:
    in_shape, f_shape, out_c, dil, expected = row
    out_shape = (in_shape[0], in_shape[1], in_shape[2], out_c)
    got = [bs.depthwise_conv_wrapper_s8(input_dims=in_shape, filter_dims=f_shape,
                                        output_dims=out_shape, dilation_hw=dil, **f)
           for f in FEATURES]
    assert tuple(got) == expected
    params = kernels.dw_params(0, 0, out_c // in_shape[3], (1, 1), (1, 1), dil, (-128, 127))
    assert tuple(kernels.dw_buffer_size(v, params, in_shape, f_shape, out_shape)
                 for v in ("", "_dsp", "_mve")) == expected


def test_s16_and_pool_buffer_size_tables(kernels: CKernels) -> None:
    def conv16(c: int, dil: tuple[int, int]) -> list[int]:
        return [bs.convolve_wrapper_s16(input_dims=(1, 8, 8, c), filter_dims=(4, 3, 3, c),
                                        dilation_hw=dil, **f) for f in FEATURES]

    def dw16(c: int, mult: int) -> list[int]:
        return [bs.depthwise_conv_wrapper_s16(input_dims=(1, 8, 8, c),
                                              filter_dims=(1, 3, 3, c * mult), ch_mult=mult,
                                              dilation_hw=(1, 1), **f) for f in FEATURES]

    assert conv16(16, (1, 1)) == [0, 576, 0]  # 144 taps < 512
    assert conv16(64, (1, 1)) == [0, 0, 0]  # 576 taps
    assert conv16(16, (2, 2)) == [0, 0, 0]
    assert dw16(16, 1) == [0, 288, 1160]
    assert dw16(64, 1) == [0, 0, 0]
    assert dw16(16, 2) == [0, 0, 0]
    for fn, bits in ((bs.avgpool_s8, "s8"), (bs.avgpool_s16, "s16")):
        assert [fn(output_width=5, channels=16, **f) for f in FEATURES] == [0, 64, 0]
        assert [getattr(kernels, f"arm_avgpool_{bits}_get_buffer_size{v}")(5, 16)
                for v in ("", "_dsp", "_mve")] == [0, 64, 0]


@pytest.mark.parametrize("variant", ["plain", "dsp", "mve"])
def test_python_buffer_sizes_match_each_build(kernels_for: Callable[[str], CKernels],
                                              variant: str) -> None:
    k = kernels_for(variant)
    features = FEATURES[("plain", "dsp", "mve").index(variant)]
    rng = np.random.default_rng(1400)
    for case in [random_conv(rng, kind) for kind in CONV_KINDS * 5]:
        params = k.conv_params(0, 0, case.stride, case.pad[:2], case.dil, (-128, 127))
        assert k.conv_buffer_size("", params, case.x.shape, case.w.shape, case.out_shape) == \
            py_buffer_size(case, **features)
    for case in [random_depthwise(rng, kind) for kind in DW_KINDS * 5]:
        params = k.dw_params(0, 0, case.ch_mult, case.stride, case.pad[:2], case.dil,
                             (-128, 127))
        assert k.dw_buffer_size("", params, case.x.shape, case.w.shape, case.out_shape) == \
            py_buffer_size(case, **features)
    assert k.arm_avgpool_s8_get_buffer_size(3, 10) == bs.avgpool_s8(output_width=3,
                                                                    channels=10, **features)


def tvm_conv_buffer_size(in_shape: Sequence[int], f_shape: Sequence[int],
                         out_shape: Sequence[int], stride: Sequence[int], pad: Sequence[int],
                         dil: Sequence[int], has_mve: bool) -> int:
    """TVM's formula (buffer_size.cc, spec 1.5), kept here to show the bug."""
    n, in_h, _, c = in_shape
    _, kh, kw, _ = f_shape
    if tuple(pad) == (0, 0) and c % 4 == 0 and tuple(stride) == (1, 1) and (kh, kw) == (1, 1) \
            and tuple(dil) == (1, 1):
        return 0
    if out_shape[1] == 1 and in_h == 1 and kh == 1 and out_shape[2] % 4 == 0 and n == 1 \
            and tuple(dil) == (1, 1):
        return 0 if has_mve else 2 * c * kw * kh * 2
    return 4 * ((c * kw * kh + 7) // 8) * 8 if has_mve else 2 * c * kw * kh * 2


def test_tvm_1xn_buffer_bug_gets_a_buffer(kernels_for: Callable[[str], CKernels]) -> None:
    # in_h 1, k_h 1, out_w % 4 == 0 but stride_w * C % 4 != 0: TVM sizes no buffer on MVE,
    # yet the library dispatches to arm_convolve_s8, which needs one.
    mve = kernels_for("mve")
    rng = np.random.default_rng(1500)
    x, w = rand_int(rng, (1, 1, 8, 3)), rand_int(rng, (4, 1, 3, 3))
    s_w = np.array([0.01, 0.02, 0.005, 0.012], np.float32)
    case = ConvCase(x, w, None, np.float32(0.03), s_w, np.float32(0.4), 3, -9, (1, 1),
                    (0, 1, 0, 1), (1, 1), (-128, 127), (1, 1, 8, 4))
    assert tvm_conv_buffer_size(x.shape, w.shape, case.out_shape, (1, 1), (0, 1), (1, 1),
                                has_mve=True) == 0
    assert bs.convolve_wrapper_s8_kernel(input_dims=x.shape, filter_dims=w.shape,
                                         stride_hw=(1, 1), padding_hw=(0, 1),
                                         dilation_hw=(1, 1)) == "arm_convolve_s8"
    size = py_buffer_size(case, has_dsp=True, has_mve=True)
    assert size == 64
    assert case.run(mve, ctx_size=0)[0] == ARG_ERROR
    assert case.run(mve, ctx_size=size - 1)[0] == ARG_ERROR
    status, out = case.run(mve, ctx_size=size)
    assert status == SUCCESS
    np.testing.assert_array_equal(out, case.reference())


@pytest.mark.parametrize("variant", ["plain", "dsp", "mve"])
def test_too_small_context_is_an_argument_error(kernels_for: Callable[[str], CKernels],
                                                variant: str) -> None:
    k = kernels_for(variant)
    rng = np.random.default_rng(1600)
    general = random_conv(rng, "general")  # made a 3x3 SAME convolution: arm_convolve_s8
    o, c = general.w.shape[0], general.x.shape[3]
    general = replace(general, w=rand_int(rng, (o, 3, 3, c)), stride=(1, 1), pad=(1, 1, 1, 1),
                      dil=(1, 1), out_shape=(*general.x.shape[:3], o))
    opt = random_depthwise(rng, "opt")
    pool_x = rand_int(rng, (1, 4, 4, 6))
    for case in (general, opt):
        size = py_buffer_size(case, **FEATURES[("plain", "dsp", "mve").index(variant)])
        assert case.run(k, ctx_size=size)[0] == SUCCESS
        if size:
            assert case.run(k, ctx_size=size - 1)[0] == ARG_ERROR
            assert case.run(k, ctx_size=0)[0] == ARG_ERROR
    assert (variant == "dsp") == (k.pool("avg", pool_x, (2, 2), (2, 2), (0, 0), (-128, 127),
                                         (1, 2, 2, 6), ctx_size=23)[0] == ARG_ERROR)
    assert k.pool("avg", pool_x, (2, 2), (2, 2), (0, 0), (-128, 127), (1, 2, 2, 6),
                  ctx_size=24)[0] == SUCCESS


def test_buffer_size_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"input_dims: expected 4 positive ints .* \(1, 0, 4, 4\)"):
        bs.convolve_wrapper_s8(input_dims=(1, 0, 4, 4), filter_dims=(1, 1, 1, 4),
                               stride_hw=(1, 1), padding_hw=(0, 0), dilation_hw=(1, 1))
    with pytest.raises(ValueError, match=r"padding_hw: expected 2 ints \(h, w\) of at least 0"):
        bs.convolve_wrapper_s8(input_dims=(1, 4, 4, 4), filter_dims=(1, 1, 1, 4),
                               stride_hw=(1, 1), padding_hw=(-1, 0), dilation_hw=(1, 1))
    with pytest.raises(ValueError, match="channels: expected a positive int, found 0"):
        bs.avgpool_s8(output_width=3, channels=0, has_dsp=True)


# -- argument errors ------------------------------------------------------------------------------
def test_bad_arguments_return_arg_error(kernels: CKernels) -> None:
    rng = np.random.default_rng(1700)
    conv = random_conv(rng, "general")
    n, _, w, c = conv.x.shape
    # Filter channels disagreeing with the input's, through the wrapper.
    assert conv.run(kernels, dims_override={"filter": (conv.w.shape[0], 1, 1, c + 1)})[0] \
        == ARG_ERROR
    # The 1x1 kernels refuse padding; the fast one also refuses strides.
    fast = random_conv(rng, "1x1_fast")
    assert fast.run(kernels, entry="arm_convolve_1x1_s8_fast")[0] == SUCCESS
    padded = replace(fast, pad=(1, 0, 1, 0))
    assert padded.run(kernels, entry="arm_convolve_1x1_s8_fast")[0] == ARG_ERROR
    assert padded.run(kernels, entry="arm_convolve_1x1_s8")[0] == ARG_ERROR
    strided = replace(fast, stride=(2, 1))
    assert strided.run(kernels, entry="arm_convolve_1x1_s8_fast")[0] == ARG_ERROR
    # 1xN needs input height 1.
    assert conv.run(kernels, entry="arm_convolve_1_x_n_s8",
                    dims_override={"input": (n, 2, w, c)})[0] == ARG_ERROR
    # Depthwise: the opt and 3x3 kernels need C_in == C_out; channel counts must agree.
    dw = random_depthwise(rng, "general")
    o = 2 * dw.x.shape[3]
    dw = replace(dw, ch_mult=2, w=rand_int(rng, (1, 3, 3, o)), s_w=np.repeat(dw.s_w[:1], o),
                 bias=None, stride=(1, 1), pad=(1, 1, 1, 1), dil=(1, 1),
                 out_shape=(*dw.x.shape[:3], o))
    assert dw.run(kernels)[0] == SUCCESS
    for entry in ("arm_depthwise_conv_s8_opt", "arm_depthwise_conv_3x3_s8"):
        assert dw.run(kernels, entry=entry)[0] == ARG_ERROR
    wrong = replace(dw, ch_mult=3)
    assert wrong.run(kernels, entry="arm_depthwise_conv_s8")[0] == ARG_ERROR
    # Fully connected: input elements per batch must equal the accumulation depth.
    x, wt = rand_int(rng, (2, 6)), rand_int(rng, (3, 6))
    assert kernels.fully_connected(x, wt, None, 2**30, -3, 0, 0, (-128, 127))[0] == SUCCESS
    assert kernels.fully_connected(x, wt, None, 2**30, -3, 0, 0, (-128, 127),
                                   dims_override={"input": (2, 1, 1, 5)})[0] == ARG_ERROR
    # Average pool: a window entirely in the padding has no element to average.
    px = rand_int(rng, (1, 2, 2, 1))
    assert kernels.pool("avg", px, (1, 1), (1, 1), (1, 0), (-128, 127), (1, 3, 2, 1))[0] \
        == ARG_ERROR
    assert kernels.pool("max", px, (1, 1), (1, 1), (0, 0), (-128, 127), (1, 2, 2, 1))[0] \
        == SUCCESS


# -- sanitizers: a C main embedding cases and printing the outputs ---------------------------------
def c_array(name: str, arr: np.ndarray) -> str:
    ctype = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t"}[arr.dtype.name]
    values = ", ".join(str(int(v)) for v in arr.reshape(-1)) or "0"
    return f"static {ctype} {name}[] = {{{values}}};\n"


def c_dims(shape: Sequence[int]) -> str:
    return "{" + ", ".join(str(int(d)) for d in shape) + "}"


def conv_c_call(i: int, case: ConvCase, ctx_size: int) -> tuple[str, str]:
    """Globals and statements running ``case`` the way generated code does."""
    mult, shift = case.quant()
    out_size = math.prod(case.out_shape)
    globals_ = (c_array(f"x{i}", case.x) + c_array(f"w{i}", case.w) + c_array(f"m{i}", mult)
                + c_array(f"s{i}", shift)
                + (c_array(f"b{i}", case.bias) if case.bias is not None else "")
                + f"static int8_t y{i}[{out_size}];\n"
                + (f"static int8_t ctx_buf{i}[{ctx_size}];\n" if ctx_size else ""))
    bias = f"b{i}" if case.bias is not None else "NULL"
    ctx = f"{{ctx_buf{i}, {ctx_size}}}" if ctx_size else "{NULL, 0}"
    tiles = (f"{{{case.stride[1]}, {case.stride[0]}}}, {{{case.pad[1]}, {case.pad[0]}}}, "
             f"{{{case.dil[1]}, {case.dil[0]}}}, {{{case.act[0]}, {case.act[1]}}}")
    if case.ch_mult:
        params = (f"cmsis_nn_dw_conv_params p = {{{-case.in_zp}, {case.out_zp}, "
                  f"{case.ch_mult}, {tiles}}};")
        fn = "arm_depthwise_conv_wrapper_s8"
    else:
        params = f"cmsis_nn_conv_params p = {{{-case.in_zp}, {case.out_zp}, {tiles}}};"
        fn = "arm_convolve_wrapper_s8"
    body = f"""
    {{
        cmsis_nn_context ctx = {ctx};
        {params}
        cmsis_nn_per_channel_quant_params q = {{m{i}, s{i}}};
        cmsis_nn_dims in = {c_dims(case.x.shape)}, f = {c_dims(case.w.shape)};
        cmsis_nn_dims b = {c_dims((1, 1, 1, case.out_shape[3]))}, o = {c_dims(case.out_shape)};
        if ({fn}(&ctx, &p, &q, &in, x{i}, &f, w{i}, &b, {bias}, &o, y{i}) != ARM_CMSIS_NN_SUCCESS)
            return 1;
        print8("case{i}", y{i}, {out_size});
    }}"""
    return globals_, body


SANITIZER_MAIN = """#include <stdio.h>
#include "arm_nnfunctions.h"

static void print8(const char *label, const int8_t *v, int n)
{
    int i;
    printf("%s", label);
    for (i = 0; i < n; ++i)
        printf(" %d", v[i]);
    printf("\\n");
}
"""


def test_kernels_under_address_and_undefined_sanitizers(tmp_path: Path) -> None:
    rng = np.random.default_rng(1800)
    cases = [random_conv(rng, kind) for kind in CONV_KINDS]
    cases += [random_depthwise(rng, kind) for kind in DW_KINDS]
    globals_, bodies, expected = [], [], {}
    for i, case in enumerate(cases):
        g, body = conv_c_call(i, case, py_buffer_size(case, has_dsp=True, has_mve=True))
        globals_.append(g)
        bodies.append(body)
        expected[f"case{i}"] = case.reference().reshape(-1).tolist()
    # Softmax with a long row and int8 add/mul with extreme values, as plain calls.
    sm = rand_int(rng, (3, 300))
    p = fp.softmax_params(0.3)
    a = np.array([-128, 127, 0, -1, 1, 100, -100, 127], np.int8)
    add_scales = tuple(np.float32(v) for v in (0.02, 0.3, 0.01))
    ap = fp.add_params(*add_scales)
    globals_.append(c_array("sm", sm) + "static int8_t smy[900];\n" + c_array("a", a)
                    + "static int8_t addy[8], muly[8];\n")
    bodies.append(f"""
    arm_softmax_s8(sm, 3, 300, {p.multiplier}, {p.shift}, {p.diff_min}, smy);
    print8("softmax", smy, 900);
    arm_elementwise_add_s8(a, a, 128, {ap.lhs_multiplier}, {ap.lhs_shift}, -127,
                           {ap.rhs_multiplier}, {ap.rhs_shift}, 20, addy, -128,
                           {ap.output_multiplier}, {ap.output_shift}, -128, 127, 8);
    print8("add", addy, 8);
    arm_elementwise_mul_s8(a, a, 128, 128, muly, -128, 1073741824, -8, -128, 127, 8);
    print8("mul", muly, 8);""")
    expected["softmax"] = fp.softmax_int8(sm, p).reshape(-1).tolist()
    expected["add"] = binary_reference("add", {"a": a, "b": a, "scales": add_scales,
                                                "zps": (-128, 127, -128), "act": (-128, 127)},
                                       add_scales[2]).tolist()
    # (a + 128)^2 / 512 - 128: products over the whole range 0..255^2.
    expected["mul"] = np.clip(np.array([fp.multiply_by_quantized_multiplier(
        (int(v) + 128) ** 2, 2**30, -8) - 128 for v in a]), -128, 127).tolist()
    main = tmp_path / "main.c"
    main.write_text(SANITIZER_MAIN + "".join(globals_) + "\nint main(void)\n{"
                    + "".join(bodies) + "\n    return 0;\n}\n")
    exe = build_executable(tmp_path, name="sanitized", sources=[main],
                           flags=(*STRICT_FLAGS, *SANITIZER_FLAGS, "-DARM_MATH_DSP",
                                  "-DARM_MATH_MVEI"), kernels=BUNDLED)
    result = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "runtime error" not in result.stderr
    got = {line.split()[0]: [int(v) for v in line.split()[1:]]
           for line in result.stdout.splitlines()}
    assert got == expected


# -- the build helper ------------------------------------------------------------------------------
def test_compile_error_names_the_compiler_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("int broken(void) { return undeclared_name; }\n")
    with pytest.raises(CBuildError) as err:
        build_shared_library(tmp_path, name="bad", sources=[bad], kernels=BUNDLED)
    message = str(err.value)
    assert "failed with exit code" in message and "bad.c" in message
    assert "undeclared_name" in message and "compiler output:" in message


def test_kernel_root_swaps_in_another_checkout(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # A directory laid out like a CMSIS-NN checkout (here: our own sources rearranged)
    # replaces the bundled kernels when PASSHOST_CMSIS_NN_ROOT names it.
    root = tmp_path / "cmsis-nn"
    (root / "Include").mkdir(parents=True)
    (root / "Source" / "AllFunctions").mkdir(parents=True)
    for src in BUNDLED.include_dir.iterdir():
        target = root / ("Include" if src.suffix == ".h" else "Source/AllFunctions")
        if src.suffix in (".h", ".c"):
            (target / src.name).write_text(src.read_text())
    monkeypatch.setenv(KERNEL_ROOT_ENV, str(root))
    swapped = kernel_library()
    assert not swapped.bundled and swapped.include_dir == root / "Include"
    lib = load_library(build_shared_library(tmp_path, name="swapped"))
    assert lib.phnn_requantize(100, 2**30, 0) == 50
    monkeypatch.setenv(KERNEL_ROOT_ENV, str(tmp_path / "missing"))
    with pytest.raises(CBuildError, match=r"\$PASSHOST_CMSIS_NN_ROOT: expected a CMSIS-NN "
                                          r"checkout at .*missing, found no Include/"):
        kernel_library()
    monkeypatch.delenv(KERNEL_ROOT_ENV)
    assert kernel_library().bundled
