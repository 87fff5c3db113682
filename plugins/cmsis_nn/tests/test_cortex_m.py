"""The Cortex-M tier: the plugin's kernels and generated C cross-compiled for Cortex-M3 (QEMU
mps2-an385, plain C, -O2) and Cortex-M55 (mps3-an547, DSP + MVE, -O3: the kernels' MVE
scratch-buffer rules, hardware floating point) and run under QEMU against TFLite Micro.

Each board runs one generated program embedding many random int8 single-operator cases: the
input, the kernel arguments (from the model's quantisation, as the target derives them) and
TFLite Micro's output for the same ``.tflite`` model. The program compares at tolerance 0,
prints the first mismatching element of a failing case and exits non-zero. Cases whose kernel
needs a scratch buffer get exactly the size ``buffer_size`` gives for the board, and are run a
second time one byte short, which must be an argument error. A network compiled by
``passhost.build`` runs as generated C the same way. The tier is skipped, with the reason, only
when the cross compiler, newlib or QEMU is not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_csrc_kernels import (
    c_array,
    c_dims,
    conv_data,
    out_scale,
    rand_int,
    tflite_window,
    tflm_conv,
    tflm_run,
    weights,
)

import passhost
from passhost.frontend import from_tflite
from passhost.relay.op import fixed_point as fp
from passhost.runtime import CompiledModule
from passhost.testing.tflite_builder import TfliteBuilder
from passhost_cmsis_nn import buffer_size as bs
from passhost_cmsis_nn import cortex_m as cm
from passhost_cmsis_nn.emit_c import HEADER_NAME
from passhost_cmsis_nn.features import Features
from passhost_cmsis_nn.patterns import KIND

UNAVAILABLE = cm.unavailable_reason()
needs_tools = pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE))
BOARDS = {"cortex-m3": (cm.CORTEX_M3, "-O2"), "cortex-m55": (cm.CORTEX_M55, "-O3")}


@dataclass(frozen=True)
class CCase:
    """One kernel call of the generated program: the C definitions it needs, the call (an
    expression of type ``arm_cmsis_nn_status`` that reads the scratch buffer through
    ``ctx``), its output array and TFLite Micro's output."""

    name: str
    decls: str
    call: str
    output: str
    expected: np.ndarray
    context_size: int = 0
    kernel: str = ""


def quant(rng: np.random.Generator) -> tuple[np.float32, int]:
    """A random (scale, zero point) for an int8 tensor."""
    return np.float32(rng.uniform(0.01, 0.05)), int(rng.integers(-100, 100))


def out_quant(rng: np.random.Generator, s_in: float, s_w: np.ndarray, depth: int,
              ) -> tuple[np.float32, int]:
    """An output (scale, zero point) for a sum over ``depth`` products, some saturating."""
    return out_scale(rng, s_in, s_w, depth), int(rng.integers(-60, 60))


def activation(rng: np.random.Generator) -> str:
    """A random fused activation."""
    return str(rng.choice(["NONE", "RELU", "RELU6"]))


def act_c(act: tuple[int, int]) -> str:
    """A cmsis_nn_activation initialiser."""
    return f"{{{act[0]}, {act[1]}}}"


def tile_c(hw: tuple[int, int]) -> str:
    """A cmsis_nn_tile initialiser from an (h, w) pair (the struct holds w first)."""
    return f"{{{hw[1]}, {hw[0]}}}"


# -- case generators -------------------------------------------------------------------------------
CONV_KINDS = {  # kind -> the kernel arm_convolve_wrapper_s8 must dispatch to
    "general": "arm_convolve_s8", "strided": "arm_convolve_s8",
    "1x1_fast": "arm_convolve_1x1_s8_fast", "1x1": "arm_convolve_1x1_s8",
    "1xN": "arm_convolve_1_x_n_s8",
}


def conv_geometry(rng: np.random.Generator, kind: str) -> dict[str, Any]:
    """Shapes, strides, dilation and padding mode of a convolution of ``kind``."""
    n, c, o = 1, int(rng.integers(1, 9)), int(rng.integers(1, 9))
    h, w = (int(v) for v in rng.integers(5, 11, 2))
    kh, kw = (int(v) for v in rng.integers(2, 4, 2))
    stride, dil, padding = (1, 1), (1, 1), "SAME"
    if kind == "strided":
        n = int(rng.integers(1, 3))
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        kh = max(kh, 3 - kw)  # not 1x1
        stride = ((2, 1), (1, 2), (2, 2))[rng.integers(3)]
        dil = ((1, 1), (2, 1), (1, 2))[rng.integers(3)]
        padding = str(rng.choice(["SAME", "VALID"]))
    elif kind in ("1x1_fast", "1x1"):
        kh = kw = 1
        padding = "VALID"
        stride = (1, 1) if kind == "1x1_fast" else ((2, 2), (1, 2), (2, 3))[rng.integers(3)]
    elif kind == "1xN":
        h, kh, kw = 1, 1, int(rng.integers(2, 6))
        c, sw = ((4, 1), (8, 2), (2, 2), (12, 1), (1, 4))[rng.integers(5)]
        stride = (1, sw)
        padding = str(rng.choice(["SAME", "VALID"]))
    return {"shape": (n, h, w, c), "o": o, "kernel": (kh, kw), "stride": stride, "dil": dil,
            "padding": padding}


def conv_case(rng: np.random.Generator, name: str, kind: str, depthwise_mult: int,
              features: Features) -> CCase:
    """A random CONV_2D (``depthwise_mult`` 0) or DEPTHWISE_CONV_2D with that depth multiplier,
    from ``conv_geometry(kind)``."""
    g = conv_geometry(rng, kind)
    shape, (kh, kw), stride, dil, padding = (g["shape"], g["kernel"], g["stride"], g["dil"],
                                             g["padding"])
    o = shape[3] * depthwise_mult if depthwise_mult else g["o"]
    s_in, in_zp = quant(rng)
    s_w = rng.uniform(0.002, 0.02, o).astype(np.float32)
    depth = kh * kw * (1 if depthwise_mult else shape[3])
    s_out, out_zp = out_quant(rng, float(s_in), s_w, depth)
    act_name = activation(rng)
    x, w, bias = conv_data(rng, shape, o, (kh, kw), depthwise=bool(depthwise_mult))
    expected, (pt, pl) = tflm_conv(x, w, bias, s_in=s_in, in_zp=in_zp, s_w=s_w, s_out=s_out,
                                   out_zp=out_zp, stride=stride, dil=dil, padding=padding,
                                   activation=act_name, depthwise=bool(depthwise_mult))
    out_shape = expected.shape
    mult, shift = fp.quantize_multipliers(fp.conv_effective_scales(s_in, s_w, s_out))
    act = fp.activation_range(act_name, float(s_out), out_zp)
    geometry = f"{tile_c(stride)}, {tile_c((pt, pl))}, {tile_c(dil)}, {act_c(act)}"
    if depthwise_mult:
        params = (f"static const cmsis_nn_dw_conv_params {name}_p = {{{-in_zp}, {out_zp}, "
                  f"{depthwise_mult}, {geometry}}};\n")
        fn, kernel = "arm_depthwise_conv_wrapper_s8", ""
        size = bs.depthwise_conv_wrapper_s8(input_dims=shape, filter_dims=w.shape,
                                            output_dims=out_shape, dilation_hw=dil,
                                            **features._asdict())
    else:
        params = (f"static const cmsis_nn_conv_params {name}_p = {{{-in_zp}, {out_zp}, "
                  f"{geometry}}};\n")
        fn = "arm_convolve_wrapper_s8"
        window = {"input_dims": shape, "filter_dims": w.shape, "stride_hw": stride,
                  "padding_hw": (pt, pl), "dilation_hw": dil}
        kernel = bs.convolve_wrapper_s8_kernel(**window)
        assert kernel == CONV_KINDS[kind], (name, window)
        size = bs.convolve_wrapper_s8(**window, **features._asdict())
    decls = (c_array(f"{name}_x", x) + c_array(f"{name}_w", w) + c_array(f"{name}_b", bias)
             + c_array(f"{name}_m", mult) + c_array(f"{name}_s", shift)
             + f"static int8_t {name}_y[{expected.size}];\n" + params
             + f"static const cmsis_nn_per_channel_quant_params {name}_q = "
               f"{{{name}_m, {name}_s}};\n"
             + f"static const cmsis_nn_dims {name}_d[4] = {{{c_dims(shape)}, "
               f"{c_dims(w.shape)}, {c_dims((1, 1, 1, o))}, {c_dims(out_shape)}}};\n")
    call = (f"{fn}(&ctx, &{name}_p, &{name}_q, &{name}_d[0], {name}_x, &{name}_d[1], "
            f"{name}_w, &{name}_d[2], {name}_b, &{name}_d[3], {name}_y)")
    return CCase(name, decls, call, f"{name}_y", expected, size, kernel)


def fc_case(rng: np.random.Generator, name: str) -> CCase:
    """A random FULLY_CONNECTED with a batch of 1 to 3."""
    n, depth, units = int(rng.integers(1, 4)), int(rng.integers(5, 41)), int(rng.integers(3, 13))
    s_in, in_zp = quant(rng)
    s_w = np.float32(rng.uniform(0.002, 0.02))
    s_out, out_zp = out_quant(rng, float(s_in), np.array([s_w]), depth)
    act_name = activation(rng)
    x, w = rand_int(rng, (n, depth)), weights(rng, (units, depth))
    bias = rng.integers(-5000, 5000, units).astype(np.int32)
    b = TfliteBuilder()
    xi = b.input(x.shape, "int8", scale=float(s_in), zero_point=in_zp)
    wi = b.constant(w, scale=float(s_w))
    bi = b.constant(bias, scale=float(s_in * s_w))
    b.outputs(b.fully_connected(xi, wi, bi, activation=act_name, scale=float(s_out),
                                zero_point=out_zp))
    expected = tflm_run(b.to_bytes(), x)
    mult, shift = fp.quantize_multiplier(fp.fc_effective_scale(s_in, s_w, s_out))
    act = fp.activation_range(act_name, float(s_out), out_zp)
    decls = (c_array(f"{name}_x", x) + c_array(f"{name}_w", w) + c_array(f"{name}_b", bias)
             + f"static int8_t {name}_y[{expected.size}];\n"
             + f"static const cmsis_nn_fc_params {name}_p = {{{-in_zp}, 0, {out_zp}, "
               f"{act_c(act)}}};\n"
             + f"static const cmsis_nn_per_tensor_quant_params {name}_q = {{{mult}, {shift}}};\n"
             + f"static const cmsis_nn_dims {name}_d[4] = {{{c_dims((n, 1, 1, depth))}, "
               f"{c_dims((depth, 1, 1, units))}, {c_dims((1, 1, 1, units))}, "
               f"{c_dims((n, 1, 1, units))}}};\n")
    call = (f"arm_fully_connected_s8(&ctx, &{name}_p, &{name}_q, &{name}_d[0], {name}_x, "
            f"&{name}_d[1], {name}_w, &{name}_d[2], {name}_b, &{name}_d[3], {name}_y)")
    return CCase(name, decls, call, f"{name}_y", expected)


def pool_case(rng: np.random.Generator, name: str, kind: str, features: Features) -> CCase:
    """A random AVERAGE_POOL_2D (``kind`` 'avg') or MAX_POOL_2D."""
    shape = (1, int(rng.integers(4, 10)), int(rng.integers(4, 10)), int(rng.integers(1, 7)))
    pool = (int(rng.integers(2, 4)), int(rng.integers(1, 4)))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = str(rng.choice(["SAME", "VALID"]))
    scale, zp = quant(rng)
    act_name = activation(rng)
    x = rand_int(rng, shape)
    b = TfliteBuilder()
    xi = b.input(shape, "int8", scale=float(scale), zero_point=zp)
    layer = b.average_pool2d if kind == "avg" else b.max_pool2d
    b.outputs(layer(xi, pool, stride=stride, padding=padding, activation=act_name))
    expected = tflm_run(b.to_bytes(), x)
    pt, oh = tflite_window(shape[1], pool[0], stride[0], 1, padding)
    pl, ow = tflite_window(shape[2], pool[1], stride[1], 1, padding)
    act = fp.activation_range(act_name, float(scale), zp)
    size = bs.avgpool_s8(output_width=ow, channels=shape[3], **features._asdict()) \
        if kind == "avg" else 0
    decls = (c_array(f"{name}_x", x) + f"static int8_t {name}_y[{expected.size}];\n"
             + f"static const cmsis_nn_pool_params {name}_p = {{{tile_c(stride)}, "
               f"{tile_c((pt, pl))}, {act_c(act)}}};\n"
             + f"static const cmsis_nn_dims {name}_d[3] = {{{c_dims(shape)}, "
               f"{c_dims((1, *pool, 1))}, {c_dims((1, oh, ow, shape[3]))}}};\n")
    fn = "arm_avgpool_s8" if kind == "avg" else "arm_max_pool_s8"
    call = (f"{fn}(&ctx, &{name}_p, &{name}_d[0], {name}_x, &{name}_d[1], &{name}_d[2], "
            f"{name}_y)")
    return CCase(name, decls, call, f"{name}_y", expected, size)


def binary_case(rng: np.random.Generator, name: str, op: str) -> CCase:
    """A random ADD or MUL of two int8 tensors of one shape."""
    shape = tuple(int(v) for v in rng.integers(1, 7, 3))
    a, bv = rand_int(rng, shape), rand_int(rng, shape)
    (s1, z1), (s2, z2) = quant(rng), quant(rng)
    so = np.float32(s1 + s2) if op == "add" else np.float32(s1 * s2 * rng.uniform(30, 120))
    zo = int(rng.integers(-60, 60))
    act_name = activation(rng)
    b = TfliteBuilder()
    ai = b.input(shape, "int8", scale=float(s1), zero_point=z1)
    bi = b.input(shape, "int8", scale=float(s2), zero_point=z2)
    layer = b.add if op == "add" else b.mul
    b.outputs(layer(ai, bi, activation=act_name, scale=float(so), zero_point=zo))
    expected = tflm_run(b.to_bytes(), a, bv)
    lo, hi = fp.activation_range(act_name, float(so), zo)
    decls = (c_array(f"{name}_a", a) + c_array(f"{name}_b", bv)
             + f"static int8_t {name}_y[{expected.size}];\n")
    if op == "add":
        p = fp.add_params(float(s1), float(s2), float(so))
        call = (f"arm_elementwise_add_s8({name}_a, {name}_b, {-z1}, {p.lhs_multiplier}, "
                f"{p.lhs_shift}, {-z2}, {p.rhs_multiplier}, {p.rhs_shift}, {p.left_shift}, "
                f"{name}_y, {zo}, {p.output_multiplier}, {p.output_shift}, {lo}, {hi}, "
                f"{a.size})")
    else:
        m, s = fp.quantize_multiplier(fp.mul_effective_scale(s1, s2, so))
        call = (f"arm_elementwise_mul_s8({name}_a, {name}_b, {-z1}, {-z2}, {name}_y, {zo}, "
                f"{m}, {s}, {lo}, {hi}, {a.size})")
    return CCase(name, decls, call, f"{name}_y", expected)


def softmax_case(rng: np.random.Generator, name: str, shape: tuple[int, int]) -> CCase:
    """A random int8 SOFTMAX over rows of ``shape``."""
    s_in = np.float32(rng.choice([0.02, 0.1, 0.25, 1.0]))
    x = rand_int(rng, shape)
    b = TfliteBuilder()
    b.outputs(b.softmax(b.input(shape, "int8", scale=float(s_in), zero_point=3)))
    expected = tflm_run(b.to_bytes(), x)
    p = fp.softmax_params(float(s_in))
    decls = c_array(f"{name}_x", x) + f"static int8_t {name}_y[{expected.size}];\n"
    # arm_softmax_s8 returns nothing: the comma expression makes the call a status.
    call = (f"(arm_softmax_s8({name}_x, {shape[0]}, {shape[1]}, {p.multiplier}, {p.shift}, "
            f"{p.diff_min}, {name}_y), ARM_CMSIS_NN_SUCCESS)")
    return CCase(name, decls, call, f"{name}_y", expected)


def board_cases(seed: int, features: Features) -> list[CCase]:
    """Random cases of every kernel for a board with ``features``."""
    rng = np.random.default_rng(seed)
    cases = [conv_case(rng, f"conv_{kind}_{i}", kind, 0, features)
             for kind in CONV_KINDS for i in range(2)]
    cases += [conv_case(rng, f"dw{mult}_{kind}_{i}", kind, mult, features)
              for kind, mult in (("general", 1), ("strided", 1), ("strided", 2), ("general", 3))
              for i in range(2)]
    cases += [fc_case(rng, f"fc_{i}") for i in range(3)]
    cases += [pool_case(rng, f"{kind}pool_{i}", kind, features)
              for kind in ("avg", "max") for i in range(2)]
    cases += [binary_case(rng, f"{op}_{i}", op) for op in ("add", "mul") for i in range(2)]
    cases += [softmax_case(rng, f"softmax_{i}", shape)
              for i, shape in enumerate([(3, 10), (2, 300)])]
    return cases


# -- the generated program -------------------------------------------------------------------------
PROGRAM_HEAD = """#include <stdio.h>
#include "arm_nnfunctions.h"

static int check(const char *name, arm_cmsis_nn_status status, const int8_t *got,
                 const int8_t *want, int size)
{
    int i;
    if (status != ARM_CMSIS_NN_SUCCESS) {
        printf("MISMATCH %s: status %d\\n", name, (int)status);
        return 1;
    }
    for (i = 0; i < size; ++i) {
        if (got[i] != want[i]) {
            printf("MISMATCH %s: element %d is %d, TFLite Micro gives %d\\n", name, i,
                   (int)got[i], (int)want[i]);
            return 1;
        }
    }
    return 0;
}

static int check_arg_error(const char *name, arm_cmsis_nn_status status)
{
    if (status == ARM_CMSIS_NN_ARG_ERROR)
        return 0;
    printf("MISMATCH %s: a context one byte short gave status %d\\n", name, (int)status);
    return 1;
}
"""


def program(cases: list[CCase]) -> str:
    """A C program running ``cases``: it prints a line per failure, then the totals, and
    returns 1 if any case failed."""
    scratch = max([c.context_size for c in cases] + [4])
    body, short = [], 0
    for c in cases:
        buf = "scratch" if c.context_size else "NULL"
        body.append(f"    ctx.buf = {buf};\n    ctx.size = {c.context_size};\n"
                    f"    failed += check(\"{c.name}\", {c.call}, {c.output}, {c.name}_e, "
                    f"{c.expected.size});\n")
        if c.context_size:
            short += 1
            body.append(f"    ctx.size = {c.context_size - 1};\n"
                        f"    failed += check_arg_error(\"{c.name}\", {c.call});\n")
    decls = "".join(c.decls + c_array(f"{c.name}_e", c.expected) for c in cases)
    return (PROGRAM_HEAD + decls
            + f"static int32_t scratch[{(scratch + 3) // 4}];\n\n"
            + "int main(void)\n{\n    cmsis_nn_context ctx;\n    int failed = 0;\n"
            + "".join(body)
            + f'    printf("{len(cases) + short} checks ({len(cases)} cases, {short} short '
              f'contexts): %d failed\\n", failed);\n'
            + "    return failed != 0;\n}\n")


def build(tmp: Path, board: cm.CortexM, optimize: str, cases: list[CCase], name: str) -> Path:
    """Cross-compile the program of ``cases`` for ``board`` into ``tmp/<name>.elf``."""
    src = tmp / f"{name}.c"
    src.write_text(program(cases))
    return cm.cross_compile([src], board, tmp, name=f"{name}.elf", optimize=optimize)


@pytest.fixture(scope="module")
def board_program(tmp_path_factory: pytest.TempPathFactory,
                  ) -> Callable[[str], tuple[Path, list[CCase]]]:
    """The cases and the ELF file of each board's program, built once."""
    built: dict[str, tuple[Path, list[CCase]]] = {}

    def get(cpu: str) -> tuple[Path, list[CCase]]:
        if cpu not in built:
            board, optimize = BOARDS[cpu]
            cases = board_cases(4000 + list(BOARDS).index(cpu), board.features)
            elf = build(tmp_path_factory.mktemp(cpu), board, optimize, cases, "kernels")
            built[cpu] = elf, cases
        return built[cpu]

    return get


# -- tests -----------------------------------------------------------------------------------------
@needs_tools
@pytest.mark.parametrize("cpu", list(BOARDS))
def test_kernels_equal_tflm_on_the_board(board_program: Callable[..., Any], cpu: str) -> None:
    elf, cases = board_program(cpu)
    result = cm.run_qemu(elf, BOARDS[cpu][0], timeout=30)
    short = sum(1 for c in cases if c.context_size)
    assert result.stdout.splitlines()[-1:] == [
        f"{len(cases) + short} checks ({len(cases)} cases, {short} short contexts): 0 failed"
    ], result.stdout + result.stderr
    assert result.status == 0
    # Every dispatch path of the convolution wrapper ran, and some kernels used the scratch
    # buffer (the board's own sizes: on Cortex-M55 the MVE ones).
    assert {c.kernel for c in cases} >= set(CONV_KINDS.values())
    assert short >= 2


def disassemble(elf: Path) -> str:
    """``objdump -d`` of an ELF file."""
    objdump = shutil.which("arm-none-eabi-objdump")
    assert objdump, "arm-none-eabi-objdump comes with gcc-arm-none-eabi"
    return subprocess.run([objdump, "-d", str(elf)], capture_output=True, text=True,
                          check=True).stdout


def elf_attributes(elf: Path) -> str:
    """The Arm build attributes of an ELF file (``readelf -A``)."""
    readelf = shutil.which("arm-none-eabi-readelf")
    assert readelf, "arm-none-eabi-readelf comes with gcc-arm-none-eabi"
    return subprocess.run([readelf, "-A", str(elf)], capture_output=True, text=True,
                          check=True).stdout


@needs_tools
def test_each_board_program_is_built_for_its_processor(
        board_program: Callable[..., Any]) -> None:
    m3 = elf_attributes(board_program("cortex-m3")[0])
    assert "Tag_CPU_arch: v7\n" in m3 and "MVE" not in m3 and "Tag_FP_arch" not in m3
    m55 = elf_attributes(board_program("cortex-m55")[0])
    assert "Tag_CPU_arch: v8.1-M.mainline" in m55
    assert "Tag_MVE_arch: MVE Integer and FP" in m55 and "Tag_DSP_extension: Allowed" in m55
    assert "Tag_ABI_VFP_args: VFP registers" in m55  # -mfloat-abi=hard


HELIUM = """#include <stdio.h>
#include <stdint.h>

static void add32(const int32_t *restrict a, const int32_t *restrict b, int32_t *restrict out,
                  int n)
{
    int i;
    for (i = 0; i < n; ++i)
        out[i] = a[i] + b[i];
}

static void max8(const int8_t *restrict a, const int8_t *restrict b, int8_t *restrict out,
                 int n)
{
    int i;
    for (i = 0; i < n; ++i)
        out[i] = a[i] > b[i] ? a[i] : b[i];
}
"""


@needs_tools
def test_cortex_m55_runs_helium_vector_code(tmp_path: Path) -> None:
    # Loops that GCC 12 vectorises for MVE at -O3 give NumPy's results under QEMU: the reset
    # handler enables the vector unit, and QEMU's Helium emulation is used and exact. (The
    # kernels themselves are scalar code: GCC 12 vectorises none of their loops.)
    rng = np.random.default_rng(4200)
    a, b = (rng.integers(-(2**30), 2**30, 203).astype(np.int32) for _ in range(2))
    p, q = rand_int(rng, (203,)), rand_int(rng, (203,))
    src = tmp_path / "helium.c"
    src.write_text(HELIUM + c_array("a", a) + c_array("b", b) + c_array("p", p)
                   + c_array("q", q) + c_array("sum", a + b) + c_array("top", np.maximum(p, q))
                   + """static int32_t out32[203];
static int8_t out8[203];

int main(void)
{
    int i, bad = 0;
    add32(a, b, out32, 203);
    max8(p, q, out8, 203);
    for (i = 0; i < 203; ++i)
        bad += (out32[i] != sum[i]) + (out8[i] != top[i]);
    printf("%d wrong\\n", bad);
    return bad != 0;
}
""")
    elf = cm.cross_compile([src], cm.CORTEX_M55, tmp_path, name="helium.elf", optimize="-O3")
    code = disassemble(elf)
    # Integer arithmetic on q registers: M-profile has it only with MVE.
    assert re.search(r"\tvadd\.i32\tq\d", code) and re.search(r"\tvmax\.s8\tq\d", code)
    result = cm.run_qemu(elf, cm.CORTEX_M55)
    assert (result.status, result.stdout) == (0, "0 wrong\n")


@needs_tools
def test_a_mismatch_is_reported_and_fails(tmp_path: Path) -> None:
    # One expected value off by one: the program names the case, the element, the value it
    # computed (TFLite Micro's real one) and the expected one, and exits with status 1.
    rng = np.random.default_rng(4100)
    good = conv_case(rng, "conv_ok", "general", 0, cm.CORTEX_M3.features)
    bad = fc_case(rng, "fc_bad")
    expected = bad.expected.reshape(-1).copy()
    true_value = int(expected[3])
    expected[3] = true_value + 1 if true_value < 127 else 126
    elf = build(tmp_path, cm.CORTEX_M3, "-O2", [good, replace(bad, expected=expected)],
                "mismatch")
    result = cm.run_qemu(elf, cm.CORTEX_M3)
    assert result.status == 1
    assert result.stdout.splitlines() == [
        f"MISMATCH fc_bad: element 3 is {true_value}, TFLite Micro gives {int(expected[3])}",
        "3 checks (2 cases, 1 short contexts): 1 failed"]


# -- the generated C of a whole network -----------------------------------------------------------
def network_model(rng: np.random.Generator) -> bytes:
    """An int8 network every operator of which the cmsis-nn target offloads: conv (3x3,
    RELU), depthwise 3x3, residual add, mul, 1x1 conv, max pool, average pool, reshape,
    fully connected, softmax."""
    def conv_weights(shape: tuple[int, ...], axis: int, s_in: float) -> tuple[int, int]:
        s_w = rng.uniform(0.005, 0.02, shape[axis]).astype(np.float32)
        bias = rng.integers(-3000, 3000, shape[axis]).astype(np.int32)
        return (b.constant(weights(rng, shape), scale=s_w, quantized_dimension=axis),
                b.constant(bias, scale=np.float32(s_in) * s_w))

    # Output scales chosen (for this seed) so that no layer saturates much and the softmax
    # output takes ten different values: a mistake anywhere shows in the output.
    b = TfliteBuilder()
    x = b.input((1, 8, 8, 3), "int8", scale=0.03, zero_point=-5)
    c1 = b.conv2d(x, *conv_weights((6, 3, 3, 3), 0, 0.03), activation="RELU", scale=0.12,
                  zero_point=-128)
    dw = b.depthwise_conv2d(c1, *conv_weights((1, 3, 3, 6), 3, 0.12), scale=0.5, zero_point=3)
    mixed = b.mul(b.add(dw, c1, scale=0.6, zero_point=-10), dw, scale=20.0, zero_point=5)
    c2 = b.conv2d(mixed, *conv_weights((8, 1, 1, 6), 0, 20.0), padding="VALID", scale=40.0,
                  zero_point=0)
    pooled = b.average_pool2d(b.max_pool2d(c2, 2, stride=2), 2, stride=2)
    fc_w = b.constant(weights(rng, (10, 32)), scale=2.5e-6)
    fc_b = b.constant(rng.integers(-300, 300, 10).astype(np.int32),
                      scale=np.float32(40.0) * np.float32(2.5e-6))
    fc = b.fully_connected(b.reshape(pooled, (1, 32)), fc_w, fc_b, scale=0.05, zero_point=0)
    b.outputs(b.softmax(fc))
    return b.to_bytes()


def cmsis_nn_module(compiled: CompiledModule) -> Any:
    """The runtime module of ``compiled``'s cmsis-nn functions."""
    return next(m for m in compiled.module.imported_modules if m.type_key == KIND)


def network_program(compiled: CompiledModule, inputs: list[np.ndarray],
                    expected: list[np.ndarray]) -> str:
    """A C program running ``compiled``'s executor plan (every step a generated entry
    function) on each input and comparing the output with ``expected``."""
    plan = compiled.plan
    ctypes = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t"}
    (_, x), = plan.inputs
    (out,) = plan.outputs
    decls = [f"static int64_t arena[{(plan.arena_size + 7) // 8}];"]

    def arg(index: int) -> str:
        t = plan.tensors[index]
        if t.kind == "input":
            return "x"
        if t.kind == "param":
            name = f"param_{len(decls)}"
            decls.append(c_array(name, np.asarray(compiled.params[t.name])).rstrip())
            return name
        return f"({ctypes[t.dtype]} *)((char *)arena + {plan.storage_offsets[t.storage]})"

    steps = "".join(f"    status = {s.func}({', '.join(arg(a) for a in s.args)});\n"
                    f"    if (status != 0)\n        return status;\n" for s in plan.steps)
    samples = np.stack([a.reshape(-1) for a in inputs])
    wants = np.stack([a.reshape(-1) for a in expected])
    return (f'#include <stdio.h>\n#include "{HEADER_NAME}"\n\n' + "\n".join(decls) + "\n"
            + f"static const int8_t inputs[{len(inputs)}][{x.nbytes}] = {{"
            + ", ".join("{" + ", ".join(map(str, row)) + "}" for row in samples.tolist())
            + "};\n"
            + f"static const int8_t expected[{len(inputs)}][{wants.shape[1]}] = {{"
            + ", ".join("{" + ", ".join(map(str, row)) + "}" for row in wants.tolist())
            + "};\n\n"
            + "static int32_t run(const int8_t *x)\n{\n    int32_t status;\n" + steps
            + "    return 0;\n}\n\n"
            + "int main(void)\n{\n    int k, i, failed = 0;\n"
            + f"    const int8_t *y = {arg(out)};\n"
            + f"    for (k = 0; k < {len(inputs)}; ++k) {{\n"
            + "        int32_t status = run(inputs[k]);\n"
            + "        if (status != 0) {\n"
            + '            printf("sample %d: status %d\\n", k, (int)status);\n'
            + "            ++failed;\n            continue;\n        }\n"
            + f"        for (i = 0; i < {wants.shape[1]}; ++i) {{\n"
            + "            if (y[i] != expected[k][i]) {\n"
            + '                printf("sample %d: element %d is %d, TFLite Micro gives %d\\n", '
              "k, i, (int)y[i], (int)expected[k][i]);\n"
            + "                ++failed;\n                break;\n            }\n        }\n"
            + "    }\n"
            + f'    printf("{len(inputs)} samples: %d failed\\n", failed);\n'
            + "    return failed != 0;\n}\n")


@needs_tools
@pytest.mark.parametrize("cpu", list(BOARDS))
def test_generated_network_c_equals_tflm_on_the_board(tmp_path: Path, cpu: str) -> None:
    # passhost.build's generated C for the board's processor (its contexts sized for that
    # processor), cross-compiled with the kernels and run over the executor plan's steps.
    board, optimize = BOARDS[cpu]
    rng = np.random.default_rng(4300)
    model = network_model(rng)
    mod, params = from_tflite(model)
    compiled = passhost.build(mod, target=f"cmsis-nn -mcpu={cpu}, cpu", params=params)
    module = cmsis_nn_module(compiled)
    assert all(module.get_function(s.func) is not None for s in compiled.plan.steps), \
        "every operator runs as generated C"
    assert len(compiled.plan.steps) == 9
    for name, text in module.files.items():
        (tmp_path / name).write_text(text)
    inputs = [rand_int(rng, (1, 8, 8, 3)) for _ in range(4)]
    expected = [tflm_run(model, x) for x in inputs]
    main = tmp_path / "main.c"
    main.write_text(network_program(compiled, inputs, expected))
    sources = [main, *(tmp_path / n for n in module.files if n.endswith(".c"))]
    elf = cm.cross_compile(sources, board, tmp_path, name="network.elf", optimize=optimize,
                           include_dirs=[tmp_path])
    result = cm.run_qemu(elf, board)
    assert (result.status, result.stdout) == (0, "4 samples: 0 failed\n")
    assert min(len(np.unique(y)) for y in expected) >= 5  # an informative output


HELLO = """#include <stdio.h>
int main(void)
{
    volatile float half = 0.5f;
    printf("float %d\\n", (int)(half * 84.0f));
    return 7;
}
"""
FAULT = """#include <stdio.h>
int main(void)
{
    printf("before the fault\\n");
    fflush(stdout);
    __asm__ volatile(".inst.n 0xde00"); /* a permanently undefined instruction */
    return 0;
}
"""
SPIN = """int main(void)
{
    volatile int forever = 1;
    while (forever) {
    }
    return 0;
}
"""


@needs_tools
@pytest.mark.parametrize("cpu", list(BOARDS))
def test_exit_status_output_and_faults(tmp_path: Path, cpu: str) -> None:
    board = BOARDS[cpu][0]
    hello, fault = tmp_path / "hello.c", tmp_path / "fault.c"
    hello.write_text(HELLO)
    fault.write_text(FAULT)
    # main's return value is QEMU's exit status; floating point works (on the M55 in
    # hardware, which the reset handler enables through CPACR).
    result = cm.run_qemu(cm.cross_compile([hello], board, tmp_path, name="hello.elf"), board)
    assert (result.status, result.stdout) == (7, "float 42\n")
    # An unexpected exception (here UsageFault escalated to HardFault, number 3) ends the
    # program with FAULT_EXIT_STATUS instead of hanging until the timeout.
    result = cm.run_qemu(cm.cross_compile([fault], board, tmp_path, name="fault.elf"), board)
    assert result.status == cm.FAULT_EXIT_STATUS
    assert "before the fault\n" in result.stdout
    assert result.stderr == "cortex-m: unexpected exception 003\n"  # semihosting SYS_WRITE0


@needs_tools
def test_a_program_that_does_not_end_is_stopped(tmp_path: Path) -> None:
    spin = tmp_path / "spin.c"
    spin.write_text(SPIN)
    elf = cm.cross_compile([spin], cm.CORTEX_M3, tmp_path, name="spin.elf")
    with pytest.raises(cm.CortexMError, match=r"spin.elf on cortex-m3 on mps2-an385 did not "
                                              r"end within 1 s; QEMU was stopped"):
        cm.run_qemu(elf, cm.CORTEX_M3, timeout=1)


def test_boards_and_their_features() -> None:
    assert (cm.CORTEX_M3.machine, cm.CORTEX_M3.features) == ("mps2-an385", (False, False))
    assert (cm.CORTEX_M55.machine, cm.CORTEX_M55.features) == ("mps3-an547", (True, True))
    assert cm.CORTEX_M3.kernel_defines == ()
    assert cm.CORTEX_M55.kernel_defines == ("-DARM_MATH_DSP", "-DARM_MATH_MVEI")
    assert cm.CORTEX_M55.cpu_flags == ("-mthumb", "-mcpu=cortex-m55", "-mfloat-abi=hard")
    assert cm.board("cortex-m55") is cm.CORTEX_M55
    with pytest.raises(cm.CortexMError, match="no QEMU board for processor 'cortex-m7'; the "
                                              "boards emulate cortex-m3, cortex-m55"):
        cm.board("cortex-m7")
    with pytest.raises(ValueError, match="float_abi must be soft, softfp or hard, found 'x'"):
        cm.CortexM("cortex-m4", "mps2-an386", "x", "mps2_an385.ld")
    for script in ("startup.c", cm.CORTEX_M3.linker_script, cm.CORTEX_M55.linker_script,
                   "sections.ld"):
        assert (cm.HARNESS_DIR / script).is_file()


def test_missing_tools_are_named_with_their_packages(tmp_path: Path) -> None:
    reason = cm.unavailable_reason("no-such-arm-gcc", "no-such-qemu")
    assert reason == ("the Cortex-M tools are missing: no-such-arm-gcc not found (package "
                      "gcc-arm-none-eabi); no-such-qemu not found (package qemu-system-arm)")
    assert not cm.toolchain_available("no-such-arm-gcc", "no-such-qemu")
    src = tmp_path / "main.c"
    src.write_text("int main(void) { return 0; }\n")
    with pytest.raises(cm.CortexMError, match=r"cannot build program.elf for cortex-m3 on "
                                              r"mps2-an385: no-such-arm-gcc not found \(package "
                                              r"gcc-arm-none-eabi\)"):
        cm.cross_compile([src], cm.CORTEX_M3, tmp_path, compiler="no-such-arm-gcc")
    with pytest.raises(cm.CortexMError, match=r"cannot run main.c on cortex-m55 on mps3-an547: "
                                              r"no-such-qemu not found"):
        cm.run_qemu(src, cm.CORTEX_M55, qemu="no-such-qemu")
    with pytest.raises(cm.CortexMError, match=r"run_qemu: no program at .*absent.elf"):
        cm.run_qemu(tmp_path / "absent.elf", cm.CORTEX_M55)
