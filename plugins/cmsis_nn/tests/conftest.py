"""ctypes bindings of the plugin's C kernels for the tests: the CMSIS-NN structs, and a
:class:`CKernels` object per build variant (plain C, DSP, MVE: the ``ARM_MATH_*`` macros the
real library is built with) that calls the kernels on NumPy arrays."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from ctypes import POINTER, c_int, c_int8, c_int32, c_void_p
from typing import Any

import numpy as np
import pytest

from passhost_cmsis_nn.cbuild import (
    STRICT_FLAGS,
    build_shared_library,
    bundled_kernel_library,
    load_library,
)

VARIANT_FLAGS = {"plain": (), "dsp": ("-DARM_MATH_DSP",),
                 "mve": ("-DARM_MATH_DSP", "-DARM_MATH_MVEI")}


class Tile(ctypes.Structure):
    """cmsis_nn_tile."""

    _fields_ = [("w", c_int32), ("h", c_int32)]


class Context(ctypes.Structure):
    """cmsis_nn_context."""

    _fields_ = [("buf", c_void_p), ("size", c_int32)]


class Dims(ctypes.Structure):
    """cmsis_nn_dims."""

    _fields_ = [("n", c_int32), ("h", c_int32), ("w", c_int32), ("c", c_int32)]


class PerChannelQuant(ctypes.Structure):
    """cmsis_nn_per_channel_quant_params."""

    _fields_ = [("multiplier", POINTER(c_int32)), ("shift", POINTER(c_int32))]


class PerTensorQuant(ctypes.Structure):
    """cmsis_nn_per_tensor_quant_params."""

    _fields_ = [("multiplier", c_int32), ("shift", c_int32)]


class Activation(ctypes.Structure):
    """cmsis_nn_activation."""

    _fields_ = [("min", c_int32), ("max", c_int32)]


class ConvParams(ctypes.Structure):
    """cmsis_nn_conv_params."""

    _fields_ = [("input_offset", c_int32), ("output_offset", c_int32), ("stride", Tile),
                ("padding", Tile), ("dilation", Tile), ("activation", Activation)]


class DwConvParams(ctypes.Structure):
    """cmsis_nn_dw_conv_params."""

    _fields_ = [("input_offset", c_int32), ("output_offset", c_int32), ("ch_mult", c_int32),
                ("stride", Tile), ("padding", Tile), ("dilation", Tile),
                ("activation", Activation)]


class PoolParams(ctypes.Structure):
    """cmsis_nn_pool_params."""

    _fields_ = [("stride", Tile), ("padding", Tile), ("activation", Activation)]


class FcParams(ctypes.Structure):
    """cmsis_nn_fc_params."""

    _fields_ = [("input_offset", c_int32), ("filter_offset", c_int32),
                ("output_offset", c_int32), ("activation", Activation)]


_P = ctypes.POINTER
_CONV_ARGS = [_P(Context), _P(ConvParams), _P(PerChannelQuant), _P(Dims), _P(c_int8), _P(Dims),
              _P(c_int8), _P(Dims), _P(c_int32), _P(Dims), _P(c_int8)]
_DW_ARGS = [_P(Context), _P(DwConvParams), *_CONV_ARGS[2:]]
_POOL_ARGS = [_P(Context), _P(PoolParams), _P(Dims), c_void_p, _P(Dims), _P(Dims), c_void_p]
_ADD_ARGS = [c_void_p, c_void_p, *[c_int32] * 7, c_void_p, *[c_int32] * 6]
_MUL_ARGS = [c_void_p, c_void_p, c_int32, c_int32, c_void_p, *[c_int32] * 6]
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "arm_convolve_wrapper_s8": (c_int, _CONV_ARGS),
    "arm_convolve_s8": (c_int, _CONV_ARGS),
    "arm_convolve_1x1_s8_fast": (c_int, _CONV_ARGS),
    "arm_convolve_1x1_s8": (c_int, _CONV_ARGS),
    "arm_convolve_1_x_n_s8": (c_int, _CONV_ARGS),
    "arm_depthwise_conv_wrapper_s8": (c_int, _DW_ARGS),
    "arm_depthwise_conv_s8": (c_int, _DW_ARGS),
    "arm_depthwise_conv_3x3_s8": (c_int, _DW_ARGS),
    "arm_depthwise_conv_s8_opt": (c_int, _DW_ARGS),
    "arm_fully_connected_s8": (c_int, [_P(Context), _P(FcParams), _P(PerTensorQuant),
                                       *_CONV_ARGS[3:]]),
    "arm_avgpool_s8": (c_int, _POOL_ARGS), "arm_avgpool_s16": (c_int, _POOL_ARGS),
    "arm_max_pool_s8": (c_int, _POOL_ARGS), "arm_max_pool_s16": (c_int, _POOL_ARGS),
    "arm_elementwise_add_s8": (c_int, _ADD_ARGS), "arm_elementwise_add_s16": (c_int, _ADD_ARGS),
    "arm_elementwise_mul_s8": (c_int, _MUL_ARGS), "arm_elementwise_mul_s16": (c_int, _MUL_ARGS),
    "arm_softmax_s8": (None, [_P(c_int8), c_int32, c_int32, c_int32, c_int32, c_int32,
                              _P(c_int8)]),
    "phnn_doubling_high_mult": (c_int32, [c_int32, c_int32]),
    "phnn_divide_by_power_of_two": (c_int32, [c_int32, c_int32]),
    "phnn_mult_by_power_of_two": (c_int32, [c_int32, c_int32]),
    "phnn_requantize": (c_int32, [c_int32, c_int32, c_int32]),
    "phnn_exp_on_negative_values": (c_int32, [c_int32]),
    "phnn_one_over_one_plus_x": (c_int32, [c_int32]),
    "phnn_clz32": (c_int32, [ctypes.c_uint32]),
}
for _suffix in ("", "_dsp", "_mve"):
    _SIGNATURES[f"arm_convolve_wrapper_s8_get_buffer_size{_suffix}"] = (
        c_int32, [_P(ConvParams), _P(Dims), _P(Dims), _P(Dims)])
    _SIGNATURES[f"arm_depthwise_conv_wrapper_s8_get_buffer_size{_suffix}"] = (
        c_int32, [_P(DwConvParams), _P(Dims), _P(Dims), _P(Dims)])
    for _bits in ("s8", "s16"):
        _SIGNATURES[f"arm_avgpool_{_bits}_get_buffer_size{_suffix}"] = (c_int32, [c_int, c_int])


def dims(shape: Sequence[int]) -> Dims:
    """cmsis_nn_dims from an (n, h, w, c) shape."""
    return Dims(*(int(d) for d in shape))


def tile(hw: Sequence[int]) -> Tile:
    """cmsis_nn_tile from an (h, w) pair (the struct holds w first)."""
    return Tile(w=int(hw[1]), h=int(hw[0]))


def _ptr(arr: np.ndarray | None, ctype: Any) -> Any:
    return None if arr is None else arr.ctypes.data_as(POINTER(ctype))


class CKernels:
    """One build of the kernel library, with NumPy-level calls; each returns the status
    (where the C function has one) and the output array."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return getattr(self.lib, name)

    def _context(self, size: int) -> tuple[Context, Any]:
        if size <= 0:
            return Context(None, 0), None
        buf = ctypes.create_string_buffer(size)
        return Context(ctypes.cast(buf, c_void_p), size), buf

    def conv_params(self, in_offset: int, out_offset: int, stride_hw: Sequence[int],
                    padding_hw: Sequence[int], dilation_hw: Sequence[int],
                    act: Sequence[int]) -> ConvParams:
        """cmsis_nn_conv_params."""
        return ConvParams(in_offset, out_offset, tile(stride_hw), tile(padding_hw),
                          tile(dilation_hw), Activation(*act))

    def dw_params(self, in_offset: int, out_offset: int, ch_mult: int, stride_hw: Sequence[int],
                  padding_hw: Sequence[int], dilation_hw: Sequence[int],
                  act: Sequence[int]) -> DwConvParams:
        """cmsis_nn_dw_conv_params."""
        return DwConvParams(in_offset, out_offset, ch_mult, tile(stride_hw), tile(padding_hw),
                            tile(dilation_hw), Activation(*act))

    def _convlike(self, entry: str, params: Any, x: np.ndarray, w: np.ndarray,
                  bias: np.ndarray | None, mult: np.ndarray, shift: np.ndarray,
                  out_shape: Sequence[int], filter_dims: Sequence[int], ctx_size: int,
                  dims_override: dict[str, Sequence[int]] | None) -> tuple[int, np.ndarray]:
        x, w = np.ascontiguousarray(x, np.int8), np.ascontiguousarray(w, np.int8)
        mult = np.ascontiguousarray(mult, np.int32)
        shift = np.ascontiguousarray(shift, np.int32)
        b = None if bias is None else np.ascontiguousarray(bias, np.int32)
        out = np.zeros(out_shape, np.int8)
        shapes = {"input": x.shape, "filter": filter_dims, "output": out_shape,
                  **(dims_override or {})}
        ctx, keep = self._context(ctx_size)
        quant = PerChannelQuant(_ptr(mult, c_int32), _ptr(shift, c_int32))
        bias_dims = dims((1, 1, 1, out_shape[-1]))
        status = getattr(self.lib, entry)(
            ctypes.byref(ctx), ctypes.byref(params), ctypes.byref(quant),
            ctypes.byref(dims(shapes["input"])), _ptr(x, c_int8),
            ctypes.byref(dims(shapes["filter"])), _ptr(w, c_int8), ctypes.byref(bias_dims),
            _ptr(b, c_int32), ctypes.byref(dims(shapes["output"])), _ptr(out, c_int8))
        del keep
        return status, out

    def conv(self, x: np.ndarray, w_ohwi: np.ndarray, bias: np.ndarray | None,
             mult: np.ndarray, shift: np.ndarray, params: ConvParams,
             out_shape: Sequence[int], *, ctx_size: int | None = None,
             entry: str = "arm_convolve_wrapper_s8",
             dims_override: dict[str, Sequence[int]] | None = None) -> tuple[int, np.ndarray]:
        """A convolution entry point on NHWC ``x`` and OHWI ``w_ohwi``; the context holds
        ``ctx_size`` bytes (default: what this build's wrapper asks for)."""
        if ctx_size is None:
            ctx_size = self.conv_buffer_size("", params, x.shape, w_ohwi.shape, out_shape)
        return self._convlike(entry, params, x, w_ohwi, bias, mult, shift, out_shape,
                              w_ohwi.shape, ctx_size, dims_override)

    def depthwise(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                  mult: np.ndarray, shift: np.ndarray, params: DwConvParams,
                  out_shape: Sequence[int], *, ctx_size: int | None = None,
                  entry: str = "arm_depthwise_conv_wrapper_s8",
                  dims_override: dict[str, Sequence[int]] | None = None,
                  ) -> tuple[int, np.ndarray]:
        """A depthwise entry point on NHWC ``x`` and a (1, KH, KW, C_out) filter ``w``."""
        if ctx_size is None:
            ctx_size = self.dw_buffer_size("", params, x.shape, w.shape, out_shape)
        return self._convlike(entry, params, x, w, bias, mult, shift, out_shape, w.shape,
                              ctx_size, dims_override)

    def conv_buffer_size(self, variant: str, params: ConvParams, in_shape: Sequence[int],
                         filter_shape: Sequence[int], out_shape: Sequence[int]) -> int:
        """arm_convolve_wrapper_s8_get_buffer_size[variant] ('' or '_dsp' or '_mve')."""
        fn = getattr(self.lib, f"arm_convolve_wrapper_s8_get_buffer_size{variant}")
        return fn(ctypes.byref(params), ctypes.byref(dims(in_shape)),
                  ctypes.byref(dims(filter_shape)), ctypes.byref(dims(out_shape)))

    def dw_buffer_size(self, variant: str, params: DwConvParams, in_shape: Sequence[int],
                       filter_shape: Sequence[int], out_shape: Sequence[int]) -> int:
        """arm_depthwise_conv_wrapper_s8_get_buffer_size[variant]."""
        fn = getattr(self.lib, f"arm_depthwise_conv_wrapper_s8_get_buffer_size{variant}")
        return fn(ctypes.byref(params), ctypes.byref(dims(in_shape)),
                  ctypes.byref(dims(filter_shape)), ctypes.byref(dims(out_shape)))

    def fully_connected(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                        mult: int, shift: int, in_offset: int, out_offset: int,
                        act: Sequence[int], *,
                        dims_override: dict[str, Sequence[int]] | None = None,
                        ) -> tuple[int, np.ndarray]:
        """arm_fully_connected_s8 on ``x`` (N, C_in) and ``w`` (C_out, C_in), with TVM's
        dims: input (N, 1, 1, C_in), filter (C_in, 1, 1, C_out), output (N, 1, 1, C_out)."""
        x, w = np.ascontiguousarray(x, np.int8), np.ascontiguousarray(w, np.int8)
        b = None if bias is None else np.ascontiguousarray(bias, np.int32)
        (n, depth), units = x.shape, w.shape[0]
        out = np.zeros((n, units), np.int8)
        shapes = {"input": (n, 1, 1, depth), "filter": (depth, 1, 1, units),
                  "output": (n, 1, 1, units), **(dims_override or {})}
        ctx = Context(None, 0)
        params = FcParams(in_offset, 0, out_offset, Activation(*act))
        quant = PerTensorQuant(mult, shift)
        status = self.lib.arm_fully_connected_s8(
            ctypes.byref(ctx), ctypes.byref(params), ctypes.byref(quant),
            ctypes.byref(dims(shapes["input"])), _ptr(x, c_int8),
            ctypes.byref(dims(shapes["filter"])), _ptr(w, c_int8),
            ctypes.byref(dims((1, 1, 1, units))), _ptr(b, c_int32),
            ctypes.byref(dims(shapes["output"])), _ptr(out, c_int8))
        return status, out

    def pool(self, kind: str, x: np.ndarray, pool_hw: Sequence[int], stride_hw: Sequence[int],
             padding_hw: Sequence[int], act: Sequence[int], out_shape: Sequence[int], *,
             ctx_size: int | None = None) -> tuple[int, np.ndarray]:
        """arm_avgpool_* (kind 'avg') or arm_max_pool_* (kind 'max') on NHWC int8 or int16
        ``x``."""
        bits = "s8" if x.dtype == np.int8 else "s16"
        x = np.ascontiguousarray(x)
        out = np.zeros(out_shape, x.dtype)
        if ctx_size is None:
            ctx_size = (getattr(self.lib, f"arm_avgpool_{bits}_get_buffer_size")(
                out_shape[2], x.shape[3]) if kind == "avg" else 0)
        ctx, keep = self._context(ctx_size)
        params = PoolParams(tile(stride_hw), tile(padding_hw), Activation(*act))
        fn = getattr(self.lib, f"arm_avgpool_{bits}" if kind == "avg" else f"arm_max_pool_{bits}")
        status = fn(ctypes.byref(ctx), ctypes.byref(params), ctypes.byref(dims(x.shape)),
                    x.ctypes.data, ctypes.byref(dims((1, *pool_hw, 1))),
                    ctypes.byref(dims(out_shape)), out.ctypes.data)
        del keep
        return status, out

    def add(self, a: np.ndarray, b: np.ndarray, in1: tuple[int, int, int],
            in2: tuple[int, int, int], left_shift: int, out: tuple[int, int, int],
            act: Sequence[int]) -> tuple[int, np.ndarray]:
        """arm_elementwise_add_s8/_s16; in1/in2 are (offset, multiplier, shift), out is
        (offset, multiplier, shift)."""
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        y = np.zeros(a.shape, a.dtype)
        fn = self.lib.arm_elementwise_add_s8 if a.dtype == np.int8 else \
            self.lib.arm_elementwise_add_s16
        status = fn(a.ctypes.data, b.ctypes.data, *in1, *in2, left_shift, y.ctypes.data, *out,
                    *act, a.size)
        return status, y

    def mul(self, a: np.ndarray, b: np.ndarray, offsets: tuple[int, int],
            out: tuple[int, int, int], act: Sequence[int]) -> tuple[int, np.ndarray]:
        """arm_elementwise_mul_s8/_s16; out is (offset, multiplier, shift)."""
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        y = np.zeros(a.shape, a.dtype)
        fn = self.lib.arm_elementwise_mul_s8 if a.dtype == np.int8 else \
            self.lib.arm_elementwise_mul_s16
        status = fn(a.ctypes.data, b.ctypes.data, *offsets, y.ctypes.data, *out, *act, a.size)
        return status, y

    def softmax(self, x: np.ndarray, mult: int, shift: int, diff_min: int) -> np.ndarray:
        """arm_softmax_s8 over the last axis of int8 ``x``."""
        x = np.ascontiguousarray(x, np.int8)
        y = np.zeros(x.shape, np.int8)
        rows = x.size // x.shape[-1]
        self.lib.arm_softmax_s8(_ptr(x, c_int8), rows, x.shape[-1], mult, shift, diff_min,
                                _ptr(y, c_int8))
        return y


@pytest.fixture(scope="session")
def kernel_build_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A directory for this session's C builds."""
    return tmp_path_factory.mktemp("cmsis_nn_build")


@pytest.fixture(scope="session")
def kernels_for(kernel_build_dir: Any) -> Callable[[str], CKernels]:
    """Builds (once each) the plugin's kernels for a variant: 'plain', 'dsp' or 'mve'."""
    built: dict[str, CKernels] = {}

    def get(variant: str) -> CKernels:
        if variant not in built:
            path = build_shared_library(kernel_build_dir, name=f"phnn_{variant}",
                                        flags=(*STRICT_FLAGS, *VARIANT_FLAGS[variant]),
                                        kernels=bundled_kernel_library())
            built[variant] = CKernels(load_library(path))
        return built[variant]

    return get


@pytest.fixture(scope="session")
def kernels(kernels_for: Callable[[str], CKernels]) -> CKernels:
    """The plain-C build of the kernels."""
    return kernels_for("plain")
