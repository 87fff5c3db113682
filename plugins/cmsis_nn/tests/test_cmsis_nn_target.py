"""The cmsis-nn target kind: registration, processor features, partitioning and its
refusals, the lowered PrimFuncs (layouts, constants, context sizes), the generated C (its
error handling, debug_last_error), int16 operators, artifacts and the command line.

Oracles: the model's own weights and scales with the quantisation rules of the spec written
out here, the portable kernels' own ``*_get_buffer_size`` functions (C, via ctypes), TFLite
Micro, the relay interpreter on the unpartitioned graph, and plain NumPy.
"""

from __future__ import annotations

import math
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_cmsis_nn_models import (
    CBuilds,
    compile_for,
    offloaded,
    q_bias,
    q_input,
    q_weight,
    random_inputs,
    rng_for,
    run_tflm,
)

import passhost
import passhost_cmsis_nn.plugin as plugin
from passhost import cli, relay
from passhost.errors import OptionError
from passhost.frontend import from_tflite
from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Function
from passhost.relay.op import nn, qnn
from passhost.relay.op.registry import Op
from passhost.relay.transform import InferType, bind_params_by_name
from passhost.relay.visitor import post_order
from passhost.runtime import load_artifact
from passhost.target import Target
from passhost.testing import check_plugin
from passhost.testing.tflite_builder import TfliteBuilder
from passhost.text.module import parse_module, print_module
from passhost.transform import PassContext
from passhost.transform.pipeline import build_pipeline
from passhost_cmsis_nn.calls import LoweredCall, read_prim_func
from passhost_cmsis_nn.emit_c import HEADER_NAME, SOURCE_NAME, emit_c
from passhost_cmsis_nn.features import Features, features_of, target_features
from passhost_cmsis_nn.host import CmsisNNError, host_functions
from passhost_cmsis_nn.native import c_executor
from passhost_cmsis_nn.patterns import partition_for_cmsis_nn, rejection


@pytest.fixture(scope="session")
def native(tmp_path_factory: pytest.TempPathFactory) -> CBuilds:
    return CBuilds(tmp_path_factory.mktemp("cmsis_nn_target"))


def only_call(compiled: Any) -> tuple[str, LoweredCall]:
    ((name, func),) = compiled.tir["cmsis-nn"].items()
    return name, read_prim_func(name, func)


# -- registration and features -----------------------------------------------------------------
def test_the_plugin_meets_the_contract() -> None:
    record = check_plugin(plugin, "cmsis-nn")
    assert record.provides == {"targets": ["cmsis-nn"], "passes": ["CmsisNNMergeComposite"],
                               "pipelines": ["partition_for_cmsis_nn"],
                               "pattern_tables": ["cmsis-nn"]}
    target = Target("cmsis-nn -mcpu=cortex-m55 -mattr=+nomve;+nodsp -debug_last_error")
    assert dict(target.options) == {"mcpu": "cortex-m55", "mattr": ("+nomve", "+nodsp"),
                                    "debug_last_error": True}


# Facts: Cortex-M0/M3 have neither extension; M4, M7, M33, M35P the DSP extension; M55 and
# M85 also Helium (MVE), which needs DSP. +nomve removes MVE, +nodsp both.
@pytest.mark.parametrize(("mcpu", "mattr", "dsp", "mve"), [
    ("", (), False, False), ("cortex-m0", (), False, False), ("cortex-m3", (), False, False),
    ("cortex-m4", (), True, False), ("cortex-m7", (), True, False),
    ("cortex-m33", (), True, False), ("cortex-m35p", (), True, False),
    ("cortex-m55", (), True, True), ("cortex-m85", (), True, True),
    ("cortex-m55", ("+nomve",), True, False), ("cortex-m55", ("+nodsp",), False, False),
    ("cortex-m55+nomve", (), True, False), ("cortex-m7", ("+nodsp",), False, False),
    ("cortex-m4", ("+nomve",), True, False), ("Cortex-M85", ("+nomve+nodsp",), False, False),
])
def test_mcpu_and_mattr_give_the_features(mcpu: str, mattr: tuple[str, ...], dsp: bool,
                                          mve: bool) -> None:
    assert target_features(mcpu, mattr) == Features(dsp, mve)


def test_features_of_a_target_and_bad_values() -> None:
    assert features_of(Target("cmsis-nn -mcpu=cortex-m55 -mattr=+nomve")) == (True, False)
    with pytest.raises(OptionError, match=r"unknown -mcpu 'cortex-m5'.*did you mean"):
        target_features("cortex-m5")
    with pytest.raises(OptionError, match=r"unknown feature flag '\+mve'.*\+nomve, \+nodsp"):
        target_features("cortex-m4", ("+mve",))


# -- partitioning ------------------------------------------------------------------------------
def conv_fc_model(rng: np.random.Generator) -> TfliteBuilder:
    b = TfliteBuilder()
    x, _ = q_input(b, rng, (1, 5, 5, 2))
    w, _ = q_weight(b, rng, (3, 3, 3, 2), 0, per_channel=True)
    y = b.conv2d(x, w, q_bias(b, rng, 3), activation="RELU", scale=0.07, zero_point=-128)
    y = b.average_pool2d(y, 2, activation="RELU6")
    fw, _ = q_weight(b, rng, (4, 12), 0, per_channel=False)
    b.outputs(b.softmax(b.fully_connected(b.reshape(y, (1, 12)), fw, q_bias(b, rng, 4),
                                          scale=0.11, zero_point=5)))
    return b


def composites(mod: IRModule) -> list[str]:
    """The Composite of each function partitioned for cmsis-nn, in name order."""
    out = []
    for _, func in sorted(mod.items(), key=lambda item: (len(item[0]), item[0])):
        if isinstance(func, Function) and func.attrs.get("Compiler") == "cmsis-nn":
            out.append(func.body.op.attrs["Composite"])
    return out


def test_partition_for_cmsis_nn_and_the_registered_pipeline() -> None:
    mod, params = from_tflite(conv_fc_model(rng_for(20)).to_bytes())
    parted = partition_for_cmsis_nn(mod, params)
    assert composites(parted) == ["cmsis-nn.qnn_conv2d", "cmsis-nn.qnn_avg_pool2d",
                                  "cmsis-nn.qnn_fully_connected", "cmsis-nn.qnn_softmax"]
    # Every operator went, the reshape before the dense layer with the fully connected one.
    assert [n for n in post_order(parted["main"].body)
            if isinstance(n, Call) and isinstance(n.op, Op)] == []
    # Without the weights bound, no convolution or dense layer has constant weights.
    assert composites(build_pipeline("partition_for_cmsis_nn")(mod)) == [
        "cmsis-nn.qnn_avg_pool2d", "cmsis-nn.qnn_softmax"]


def typed_main(buf: bytes) -> Any:
    """The body of a TFLite model's main with its weights bound, type-checked."""
    mod, params = from_tflite(buf)
    mod = mod.with_function("main", bind_params_by_name(mod["main"], params))
    return InferType()(mod)["main"].body


def relay_conv(kernel_zp: int) -> IRModule:
    x = relay.var("x", shape=(1, 4, 4, 2), dtype="int8")
    w = relay.const(np.arange(-9, 9, dtype="int8").reshape(3, 1, 3, 2)[:, :, :, :])
    acc = qnn.conv2d(x, w, relay.const(1, "int32"), relay.const(kernel_zp, "int32"),
                     relay.const(0.05, "float32"), relay.const(0.01, "float32"),
                     padding=(0, 1, 0, 1), channels=3, kernel_size=(1, 3),
                     data_layout="NHWC", kernel_layout="OHWI", out_dtype="int32")
    out = qnn.requantize(acc, relay.const(np.float64(np.float32(0.05)) * np.float32(0.01),
                                          "float64"),
                         relay.const(0, "int32"), relay.const(0.02, "float32"),
                         relay.const(-3, "int32"), axis=3, out_dtype="int8")
    return IRModule.from_expr(relay.Function([x], out))


def test_a_kernel_zero_point_other_than_0_is_refused() -> None:
    assert composites(partition_for_cmsis_nn(relay_conv(0))) == ["cmsis-nn.qnn_conv2d"]
    mod = relay_conv(2)
    assert composites(partition_for_cmsis_nn(mod)) == []
    assert rejection("cmsis-nn.qnn_conv2d", mod["main"].body) == \
        "qnn.conv2d: the kernel zero point is not 0"


def test_a_depthwise_convolution_without_bias_is_refused() -> None:
    rng = rng_for(21)
    b = TfliteBuilder()
    x, _ = q_input(b, rng, (1, 5, 5, 3))
    w, _ = q_weight(b, rng, (1, 3, 3, 3), 3, per_channel=True)
    b.outputs(b.depthwise_conv2d(x, w, None, scale=0.5))
    root = typed_main(b.to_bytes())
    assert rejection("cmsis-nn.qnn_conv2d", root) == "a depthwise convolution needs a bias"


def test_a_fused_pad_one_larger_at_the_end_at_most() -> None:
    rng = rng_for(21, 1)
    reasons = []
    for pads in ([[0, 0], [1, 1], [0, 1], [0, 0]], [[0, 0], [0, 2], [0, 0], [0, 0]]):
        b = TfliteBuilder()
        x, _ = q_input(b, rng, (1, 5, 5, 2))
        w, _ = q_weight(b, rng, (3, 3, 3, 2), 0, per_channel=True)
        b.outputs(b.conv2d(b.pad(x, pads), w, None, padding="VALID", scale=0.5))
        reasons.append(rejection("cmsis-nn.qnn_conv2d", typed_main(b.to_bytes()),
                                 fused_pad=True))
    assert reasons[0] is None
    assert reasons[1] == ("the fused pad makes the padding (top, left, bottom, right) "
                          "(0, 0, 2, 0): CMSIS-NN pads the bottom and right by at most one "
                          "more than the top and left")


def test_softmax_output_quantisation_other_than_1_over_256_is_refused() -> None:
    """TFLite (not TFLite Micro) accepts an output scale within 0.1 % of 1/256."""
    for scale, taken in ((1.0 / 256, True), (1.0 / 256 * 1.0005, False)):
        b = TfliteBuilder()
        x = b.input((2, 7), "int8", name="x", scale=0.05, zero_point=1)
        b.outputs(b.softmax(x, scale=scale, zero_point=-128))
        mod, _ = from_tflite(b.to_bytes())
        assert composites(partition_for_cmsis_nn(mod)) == (["cmsis-nn.qnn_softmax"] * taken)
        reason = rejection("cmsis-nn.qnn_softmax", mod["main"].body)
        assert (reason is None) == taken
        assert taken or "expected (1/256, -128)" in reason


def int16_add(zp: int) -> IRModule:
    a = relay.var("a", shape=(2, 5), dtype="int16")
    b = relay.var("b", shape=(2, 5), dtype="int16")
    out = qnn.add(a, b, relay.const(0.002, "float32"), relay.const(zp, "int32"),
                  relay.const(0.003, "float32"), relay.const(0, "int32"),
                  relay.const(0.004, "float32"), relay.const(0, "int32"))
    return IRModule.from_expr(relay.Function([a, b], out))


def test_int16_add_with_a_zero_point_is_refused() -> None:
    assert composites(partition_for_cmsis_nn(int16_add(0))) == ["cmsis-nn.qnn_add"]
    mod = int16_add(5)
    assert composites(partition_for_cmsis_nn(mod)) == []
    assert rejection("cmsis-nn.qnn_add", mod["main"].body) == \
        "qnn.add: int16 with a zero point other than 0"


# -- the lowered PrimFuncs ---------------------------------------------------------------------
def quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier as the spec states it (section 2)."""
    if m == 0:
        return 0, 0
    q, e = math.frexp(m)
    qf = math.floor(q * 2**31 + 0.5)
    if qf == 2**31:
        qf, e = 2**30, e + 1
    return (0, 0) if e < -31 else (qf, e)


def test_convolution_constants_are_the_weights_in_ohwi_and_the_specs_multipliers() -> None:
    rng = rng_for(22)
    b = TfliteBuilder()
    x = b.input((1, 6, 5, 3), "int8", name="x", scale=0.04, zero_point=-7)
    w_data = rng.integers(-127, 128, (4, 3, 2, 3)).astype("int8")
    s_w = rng.uniform(0.002, 0.02, 4).astype("float32")
    w = b.constant(w_data, name="w", scale=s_w, quantized_dimension=0)
    bias = rng.integers(-3000, 3000, 4).astype("int32")
    b.outputs(b.conv2d(x, w, b.constant(bias), stride=(2, 1), dilation=(1, 2),
                       padding="SAME", activation="RELU6", scale=0.3, zero_point=-9))
    name, call = only_call(compile_for(b.to_bytes(), "cmsis-nn -mcpu=cortex-m7"))
    args = call.args
    assert call.api == "arm_convolve_wrapper_s8"
    np.testing.assert_array_equal(call.constant(args["filter"]), w_data)
    np.testing.assert_array_equal(call.constant(args["bias"]), bias)
    want = [quantize_multiplier(float(np.float32(0.04)) * float(s) / float(np.float32(0.3)))
            for s in s_w]
    assert list(zip(call.constant(args["multiplier"]).tolist(),
                    call.constant(args["shift"]).tolist())) == want
    # SAME padding of 6 rows by 3 with stride 2 pads 0 at the top (1 at the bottom); of 5
    # columns by 2 dilated (3 wide) pads 1 at the left.
    assert (args["input_offset"], args["output_offset"]) == (7, -9)
    assert (args["stride"], args["padding"], args["dilation"]) == ((1, 2), (1, 0), (2, 1))
    relu6 = -9 + round(6 / np.float32(0.3))
    assert (args["act_min"], args["act_max"]) == (-9, relu6)
    assert (args["input_dims"], args["filter_dims"], args["bias_dims"], args["output_dims"]) \
        == ((1, 6, 5, 3), (4, 3, 2, 3), (1, 1, 1, 4), (1, 3, 5, 4))
    assert name == "cmsis_nn_main_0"


def test_depthwise_and_fully_connected_constants() -> None:
    rng = rng_for(23)
    b = TfliteBuilder()
    x = b.input((1, 4, 4, 2), "int8", name="x", scale=0.04, zero_point=3)
    dw = rng.integers(-127, 128, (1, 3, 3, 4)).astype("int8")
    y = b.depthwise_conv2d(x, b.constant(dw, scale=[0.01] * 4, quantized_dimension=3),
                           q_bias(b, rng, 4), scale=0.2, zero_point=0)
    fc = rng.integers(-127, 128, (5, 64)).astype("int8")
    b.outputs(b.fully_connected(y, b.constant(fc, scale=0.015), None, scale=0.6, zero_point=2))
    compiled = compile_for(b.to_bytes(), "cmsis-nn")
    calls = [read_prim_func(n, f) for n, f in sorted(compiled.tir["cmsis-nn"].items())]
    dw_call, fc_call = calls
    np.testing.assert_array_equal(dw_call.constant(dw_call.args["filter"]), dw)
    assert dw_call.args["ch_mult"] == 2 and dw_call.args["filter_dims"] == (1, 3, 3, 4)
    np.testing.assert_array_equal(fc_call.constant(fc_call.args["filter"]), fc)
    assert fc_call.args["bias"] == "NULL"
    assert (fc_call.args["multiplier"], fc_call.args["shift"]) == quantize_multiplier(
        float(np.float32(0.2)) * float(np.float32(0.015)) / float(np.float32(0.6)))
    assert (fc_call.args["input_dims"], fc_call.args["filter_dims"],
            fc_call.args["output_dims"]) == ((1, 1, 1, 64), (64, 1, 1, 5), (1, 1, 1, 5))


def test_add_multipliers_follow_the_spec() -> None:
    b = TfliteBuilder()
    x = b.input((3, 4), "int8", name="a", scale=0.03, zero_point=2)
    y = b.input((3, 4), "int8", name="b", scale=0.05, zero_point=-4)
    b.outputs(b.add(x, y, scale=0.07, zero_point=1))
    _, call = only_call(compile_for(b.to_bytes(), "cmsis-nn"))
    s1, s2, so = (float(np.float32(s)) for s in (0.03, 0.05, 0.07))
    twice_max = 2 * max(s1, s2)
    got = call.args
    assert (got["input_1_offset"], got["input_2_offset"], got["out_offset"]) == (-2, 4, 1)
    assert (got["input_1_mult"], got["input_1_shift"]) == quantize_multiplier(s1 / twice_max)
    assert (got["input_2_mult"], got["input_2_shift"]) == quantize_multiplier(s2 / twice_max)
    assert (got["out_mult"], got["out_shift"]) == quantize_multiplier(
        twice_max / ((1 << 20) * so))
    assert (got["left_shift"], got["block_size"]) == (20, 12)


def test_prim_funcs_print_and_parse_back() -> None:
    compiled = compile_for(conv_fc_model(rng_for(24)).to_bytes(), "cmsis-nn -mcpu=cortex-m4")
    tir = compiled.tir["cmsis-nn"]
    text = print_module(tir)
    assert 'in "global.workspace"' in text and "allocate_const" in text
    again = parse_module(text)
    assert print_module(again) == text
    assert emit_c(again).source == emit_c(tir).source


# Shapes of each dispatch path: 1x1 (fast and strided), 1xN, general, dilated; depthwise
# 3x3, with a channel multiplier, batch 2.
@pytest.mark.parametrize(("shape", "kernel", "stride", "dilation", "depthwise"), [
    ((1, 5, 5, 3), (1, 1), 1, 1, False), ((1, 5, 5, 3), (1, 1), 2, 1, False),
    ((1, 1, 8, 4), (1, 3), 1, 1, False), ((1, 1, 8, 3), (1, 3), 1, 1, False),
    ((1, 6, 6, 3), (3, 3), 1, 1, False), ((1, 6, 6, 3), (3, 2), 1, 2, False),
    ((1, 6, 6, 5), (3, 3), 1, 1, True), ((1, 6, 6, 2), (3, 3), 2, 1, True),
    ((2, 6, 6, 3), (2, 2), 1, 1, True),
])
@pytest.mark.parametrize("mcpu", ["", "cortex-m4", "cortex-m55"])
def test_context_sizes_are_what_the_library_asks_for(
        shape: tuple[int, ...], kernel: tuple[int, int], stride: int, dilation: int,
        depthwise: bool, mcpu: str, kernels_for: Callable[[str], Any]) -> None:
    """The context of each convolution is what the portable kernels' own
    ``*_get_buffer_size`` returns on that processor (ctypes)."""
    rng = rng_for(25, *shape, *kernel)
    b = TfliteBuilder()
    x, _ = q_input(b, rng, shape)
    c = shape[3]
    if depthwise:
        m = 1 if c > 2 else 2
        w, _ = q_weight(b, rng, (1, *kernel, c * m), 3, per_channel=True)
        b.outputs(b.depthwise_conv2d(x, w, q_bias(b, rng, c * m), stride=stride,
                                     dilation=dilation, scale=0.5))
    else:
        w, _ = q_weight(b, rng, (4, *kernel, c), 0, per_channel=True)
        b.outputs(b.conv2d(x, w, None, stride=stride, dilation=dilation,
                           padding="VALID" if kernel == (1, 1) else "SAME", scale=0.5))
    _, call = only_call(compile_for(b.to_bytes(), f"cmsis-nn -mcpu={mcpu}" if mcpu
                                    else "cmsis-nn"))
    a = call.args
    lib = kernels_for("plain")
    suffix = {"": "", "cortex-m4": "_dsp", "cortex-m55": "_mve"}[mcpu]
    hw = (lambda t: (t[1], t[0]))  # noqa: E731 - the calls hold tiles as (w, h)
    act = (a["act_min"], a["act_max"])
    if depthwise:
        params = lib.dw_params(a["input_offset"], a["output_offset"], a["ch_mult"],
                               hw(a["stride"]), hw(a["padding"]), hw(a["dilation"]), act)
        want = lib.dw_buffer_size(suffix, params, a["input_dims"], a["filter_dims"],
                                  a["output_dims"])
    else:
        params = lib.conv_params(a["input_offset"], a["output_offset"], hw(a["stride"]),
                                 hw(a["padding"]), hw(a["dilation"]), act)
        want = lib.conv_buffer_size(suffix, params, a["input_dims"], a["filter_dims"],
                                    a["output_dims"])
    assert a["context_size"] == call.context_size == want
    assert (a["context"] == "NULL") == (want == 0)


# -- the generated C ---------------------------------------------------------------------------
def test_the_c_returns_every_failing_status_and_declares_its_entries() -> None:
    compiled = compile_for(conv_fc_model(rng_for(26)).to_bytes(), "cmsis-nn")
    source = compiled.get_source("cmsis-nn")
    header = compiled.module.imported_modules[0].get_source(HEADER_NAME)
    names = sorted((n for n, _ in compiled.tir["cmsis-nn"].items()), key=lambda n: (len(n), n))
    # Every call but arm_softmax_s8's (which returns void) has its status checked and
    # returned (the C printer's status check: any nonzero status).
    assert source.count(" = (int32_t)(status);\n") == len(names) - 1
    assert source.count(" != 0) {\n") == len(names) - 1
    assert source.count("\n    return ph_status;\n}") == len(names) - 1
    assert "!status" not in source and "last_error" not in source
    assert [line.split("(")[0].split()[-1] for line in header.splitlines()
            if line.startswith("int32_t ")] == names
    assert "int32_t cmsis_nn_main_0(const int8_t *in0, int8_t *out);" in header
    assert "#include <stdio.h>" not in source and "malloc" not in source


def bad_dims_module(debug: bool) -> tuple[IRModule, Features]:
    """A convolution whose call claims 5 output channels for a filter of 4."""
    rng = rng_for(27)
    b = TfliteBuilder()
    x, _ = q_input(b, rng, (1, 4, 4, 3))
    w, _ = q_weight(b, rng, (4, 3, 3, 3), 0, per_channel=True)
    b.outputs(b.conv2d(x, w, q_bias(b, rng, 4), scale=0.5))
    target = "cmsis-nn -mcpu=cortex-m55" + (" -debug_last_error" if debug else "")
    tir = compile_for(b.to_bytes(), target).tir["cmsis-nn"]
    text = print_module(tir)
    assert text.count("1, 4, 4, 4);") == 1
    return parse_module(text.replace("1, 4, 4, 4);", "1, 4, 4, 5);")), features_of(
        Target(target))


@pytest.mark.parametrize("debug", [False, True])
def test_bad_dimensions_return_the_error_status_through_the_c(debug: bool, native: CBuilds,
                                                              ) -> None:
    tir, features = bad_dims_module(debug)
    x, out = np.zeros((1, 4, 4, 3), "int8"), np.zeros((1, 4, 4, 4), "int8")
    c_module = native.build(tir, features, debug)
    with pytest.raises(CmsisNNError) as c_error:
        c_module.get_function("cmsis_nn_main_0")(x, out)
    with pytest.raises(CmsisNNError) as host_error:
        host_functions(tir, features, debug)["cmsis_nn_main_0"](x, out)
    for err in (c_error.value, host_error.value):
        assert (err.function, err.status) == ("cmsis_nn_main_0", -1)
        assert err.call == ("arm_convolve_wrapper_s8" if debug else None)
    assert str(c_error.value) == (
        "cmsis-nn function cmsis_nn_main_0: arm_convolve_wrapper_s8 returned -1 "
        "(ARM_CMSIS_NN_ARG_ERROR)" if debug else
        "cmsis-nn function cmsis_nn_main_0 returned -1 (ARM_CMSIS_NN_ARG_ERROR)")
    if debug:
        assert "conv dims" in str(host_error.value)
        assert "cmsis_nn_last_error" in c_module.source


def test_a_context_sized_for_another_processor_is_refused(native: CBuilds) -> None:
    """Lowered for plain C (an im2col of 2*36 int16) but run by MVE kernels, which need
    4*ceil(36/8)*8 bytes: the C returns ARM_CMSIS_NN_ARG_ERROR, and so does the host path
    of an MVE target reading the same PrimFunc."""
    rng = rng_for(28)
    b = TfliteBuilder()
    x, _ = q_input(b, rng, (1, 4, 4, 4))
    w, _ = q_weight(b, rng, (2, 3, 3, 4), 0, per_channel=True)
    b.outputs(b.conv2d(x, w, None, scale=0.5))
    tir = compile_for(b.to_bytes(), "cmsis-nn").tir["cmsis-nn"]
    mve = target_features("cortex-m55")
    c_module = native.build(tir, mve)
    arrays = (np.ones((1, 4, 4, 4), "int8"), np.zeros((1, 4, 4, 2), "int8"))
    with pytest.raises(CmsisNNError, match="returned -1"):
        c_module.get_function("cmsis_nn_main_0")(*arrays)
    with pytest.raises(CmsisNNError, match="context holds 144 bytes, the kernel needs 160"):
        host_functions(tir, mve, True)["cmsis_nn_main_0"](*arrays)
    plain = target_features("")
    host_functions(tir, plain)["cmsis_nn_main_0"](*arrays)
    native.build(tir, plain).get_function("cmsis_nn_main_0")(*arrays)


# -- int16 ----------------------------------------------------------------------------------------
def int16_model(op: str) -> IRModule:
    x = relay.var("x", shape=(1, 7, 6, 3), dtype="int16")
    pool = dict(pool_size=(3, 2), strides=(2, 2), padding=(1, 0, 1, 1), layout="NHWC")
    if op == "avg_pool":
        wide = nn.avg_pool2d(relay.cast(x, dtype="int32"), **pool)
        out = relay.clip(relay.cast(wide, dtype="int16"), a_min=-1000.0, a_max=30000.0)
    elif op == "max_pool":
        out = nn.max_pool2d(x, **pool)
    else:
        k = relay.const(np.arange(-63, 63, dtype="int16").reshape(1, 7, 6, 3) * 501)
        out = getattr(qnn, op)(x, k, relay.const(0.0011, "float32"), relay.const(0, "int32"),
                               relay.const(0.0007, "float32"), relay.const(0, "int32"),
                               relay.const(0.0013 if op == "add" else 0.03, "float32"),
                               relay.const(0, "int32"))
    return IRModule.from_expr(relay.Function([x], out))


@pytest.mark.parametrize("op", ["avg_pool", "max_pool", "add", "mul"])
def test_int16_operators(op: str, native: CBuilds) -> None:
    """int16 pools, add and mul: the host path and the C equal the relay interpreter on the
    unpartitioned graph (and max pooling plain NumPy)."""
    mod = int16_model(op)
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, "cmsis-nn -mcpu=cortex-m4, cpu")
    api = {"avg_pool": "arm_avgpool_s16", "max_pool": "arm_max_pool_s16",
           "add": "arm_elementwise_add_s16", "mul": "arm_elementwise_mul_s16"}[op]
    assert offloaded(compiled) == [api]
    dsp = target_features("cortex-m4")
    c_run = c_executor(compiled, native.build(compiled.tir["cmsis-nn"], dsp))
    rng = rng_for(29, len(op))
    for _ in range(2):
        x = rng.integers(-32768, 32768, (1, 7, 6, 3)).astype("int16")
        want = np.asarray(relay.evaluate(mod, x=x))
        np.testing.assert_array_equal(compiled.executor()(x)[0], want)
        np.testing.assert_array_equal(c_run(x)[0], want)
        if op == "max_pool":
            padded = np.full((1, 9, 7, 3), -32768, "int16")
            padded[:, 1:8, 0:6] = x
            numpy_max = np.stack([[padded[0, 2 * i:2 * i + 3, 2 * j:2 * j + 2].max((0, 1))
                                   for j in range(3)] for i in range(4)])[None]
            np.testing.assert_array_equal(want, numpy_max)


# -- artifacts and the command line --------------------------------------------------------------
def test_compile_and_run_from_the_command_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    rng = rng_for(30)
    b = conv_fc_model(rng)
    model, out = tmp_path / "model.tflite", tmp_path / "model.tar"
    model.write_bytes(b.to_bytes())
    target = "cmsis-nn -mcpu=cortex-m55 -debug_last_error, cpu"
    assert cli.main(["compile", str(model), "--target", target, "-o", str(out)]) == 0
    with tarfile.open(out) as tar:
        names = tar.getnames()
        stored = tar.extractfile(f"modules/cmsis-nn/{SOURCE_NAME}").read().decode()
    assert {"tir/cmsis-nn.txt", f"modules/cmsis-nn/{SOURCE_NAME}",
            f"modules/cmsis-nn/{HEADER_NAME}"} <= set(names)
    capsys.readouterr()
    assert cli.main(["run", str(out)]) == 0
    assert "output 0" in capsys.readouterr().out
    loaded = load_artifact(out)
    assert emit_c(loaded.tir["cmsis-nn"], debug_last_error=True).source == stored
    assert "cmsis_nn_last_error" in stored
    executor = loaded.executor()
    for _ in range(2):
        inputs = random_inputs(b, rng)
        np.testing.assert_array_equal(executor(*inputs)[0], run_tflm(b.to_bytes(), inputs, 1)[0])
