"""The host path of the ``cmsis-nn`` target: the PrimFuncs' CMSIS-NN calls run with NumPy.

Each PrimFunc becomes a Python function taking one array per parameter (inputs, then the
output, which it writes in place), computing what the CMSIS-NN function computes with the
arguments the PrimFunc passes it: the integer arguments and the constant buffers, never the
graph's scales. The sums of products are the ``qnn.conv2d`` / ``qnn.dense`` and pooling
reference kernels, the requantisation and the elementwise and softmax arithmetic are
:mod:`passhost.relay.op.fixed_point`'s, so the host path is bit-exact with the reference
operators and with the generated C.

Arguments the library would refuse (``ARM_CMSIS_NN_ARG_ERROR``: dimensions that do not fit
together or the buffers, a context smaller than the processor's kernels need) make the
function raise :class:`CmsisNNError` when it is called, as the generated C returns the
status then. With ``-debug_last_error`` the error names the CMSIS-NN call and the reason, as
the C records the failing call; without it, only the function and the status.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from passhost.errors import PasshostError
from passhost.ir import IRModule
from passhost.relay.op import AvgPool2DAttrs, Conv2DAttrs, DenseAttrs, MaxPool2DAttrs, get_op
from passhost.relay.op import fixed_point as fp
from passhost_cmsis_nn import buffer_size
from passhost_cmsis_nn.calls import LoweredCall, is_null, read_prim_func
from passhost_cmsis_nn.features import Features

__all__ = ["ARG_ERROR", "CmsisNNError", "STATUS_NAMES", "compile_prim_func", "host_functions"]

#: ``arm_cmsis_nn_status`` values by name.
STATUS_NAMES = {0: "ARM_CMSIS_NN_SUCCESS", -1: "ARM_CMSIS_NN_ARG_ERROR",
                -2: "ARM_CMSIS_NN_NO_IMPL_ERROR"}
ARG_ERROR = -1

Run = Callable[..., None]


class CmsisNNError(PasshostError):
    """A CMSIS-NN call of a ``cmsis-nn`` function failed: ``function`` (the entry function),
    ``status`` (the ``arm_cmsis_nn_status``) and, with ``-debug_last_error``, ``call`` (the
    CMSIS-NN function) and ``reason``."""

    def __init__(self, function: str, status: int, call: str | None = None,
                 reason: str | None = None) -> None:
        self.function, self.status, self.call, self.reason = function, status, call, reason
        where = f"{function}: {call}" if call else function
        why = f": {reason}" if reason else ""
        super().__init__(f"cmsis-nn function {where} returned {status} "
                         f"({STATUS_NAMES.get(status, 'unknown status')}){why}")


class _ArgError(Exception):
    """Arguments the CMSIS-NN function refuses with ARM_CMSIS_NN_ARG_ERROR."""


def _require(condition: bool, reason: str) -> None:
    if not condition:
        raise _ArgError(reason)


# -- argument access -----------------------------------------------------------------------------
class _Args:
    """A lowered call's arguments, with its buffers resolved to arrays (constants) or
    parameter positions."""

    def __init__(self, lowered: LoweredCall) -> None:
        self.lowered = lowered
        self.api = lowered.api
        self.values = lowered.args
        self.positions = {id(b): k for k, b in enumerate(lowered.params)}

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def dims(self, name: str) -> tuple[int, ...]:
        """A ``cmsis_nn_dims`` argument, checked to be positive."""
        dims = self.values[name]
        _require(all(d > 0 for d in dims), f"{name} {list(dims)} are not all positive")
        return dims

    def tensor(self, name: str, size: int, optional: bool = False,
               ) -> Callable[[tuple[np.ndarray, ...]], np.ndarray] | None:
        """A getter of buffer argument ``name`` (flattened) from the call's arrays, checking
        that it holds ``size`` elements; None for an optional ``NULL``."""
        buf = self.values[name]
        if optional and is_null(buf):
            return None
        _require(not is_null(buf) and hasattr(buf, "shape"), f"{name} is not a buffer")
        _require(math.prod(buf.shape) == size, f"{name} holds {math.prod(buf.shape)} "
                 f"elements, its dims need {size}")
        data = self.lowered.constant(buf)
        if data is not None:
            flat = data.reshape(-1)
            return lambda arrays: flat
        _require(id(buf) in self.positions, f"{name} is neither a parameter nor a constant")
        k = self.positions[id(buf)]
        return lambda arrays: arrays[k].reshape(-1)

    def context(self, required: int) -> None:
        """Check that the context holds ``required`` bytes (and is what it claims)."""
        size = self.values["context_size"]
        null = is_null(self.values["context"])
        _require(size == (0 if null else self.lowered.context_size),
                 f"context_size {size} is not the size of the context buffer")
        _require(size >= required, f"the context holds {size} bytes, the kernel needs "
                 f"{required} on this processor")


def _pair(value: tuple[int, int]) -> tuple[int, int]:
    """A (w, h) tile argument as (h, w)."""
    return value[1], value[0]


def _window(args: _Args) -> tuple[tuple[int, int], tuple[int, int]]:
    stride, padding = _pair(args["stride"]), _pair(args["padding"])
    _require(min(stride) >= 1 and min(padding) >= 0, "stride or padding out of range")
    return stride, padding


def _far_padding(size: int, out: int, k: int, stride: int, dilation: int, near: int) -> int:
    """The bottom (right) padding that makes ``out`` windows from ``near`` at the top."""
    return max(0, (out - 1) * stride + (k - 1) * dilation + 1 - size - near)


def _finish(y: np.ndarray, offset: int, act: tuple[int, int], dtype: str) -> np.ndarray:
    """``clamp(y + offset)`` (int32 wrap-around first, as the C does) in ``dtype``."""
    lo, hi = act
    _require(lo <= hi, f"act_min {lo} exceeds act_max {hi}")
    return np.clip(fp.wrap_int32(np.asarray(y) + offset), lo, hi).astype(dtype)


def _shifts(shift: Any) -> None:
    arr = np.asarray(shift)
    _require(arr.size == 0 or (int(arr.min()) >= -31 and int(arr.max()) <= 31),
             "a shift is outside -31..31")


# -- the CMSIS-NN functions ---------------------------------------------------------------------
def _conv(args: _Args, features: Features) -> Run:
    depthwise = args.api == "arm_depthwise_conv_wrapper_s8"
    n, h, w, c = args.dims("input_dims")
    fn, kh, kw, fc = args.dims("filter_dims")
    on, oh, ow, oc = args.dims("output_dims")
    (sh, sw), (pt, pl) = _window(args)
    dh, dw = _pair(args["dilation"])
    _require(min(dh, dw) >= 1, "dilation out of range")
    _require(on == n, f"output batch {on} differs from input batch {n}")
    if depthwise:
        mult = args["ch_mult"]
        _require(fn == 1 and fc == oc and mult >= 1 and oc == c * mult,
                 f"depthwise dims: input channels {c} x ch_mult {mult}, filter {fn}x{kh}x{kw}"
                 f"x{fc}, output channels {oc}")
        required = buffer_size.depthwise_conv_wrapper_s8(
            input_dims=(n, h, w, c), filter_dims=(fn, kh, kw, fc), output_dims=(on, oh, ow, oc),
            dilation_hw=(dh, dw), has_dsp=features.has_dsp, has_mve=features.has_mve)
    else:
        _require(fc == c and oc == fn, f"conv dims: input channels {c}, filter {fn}x{kh}x{kw}x"
                 f"{fc}, output channels {oc}")
        required = buffer_size.convolve_wrapper_s8(
            input_dims=(n, h, w, c), filter_dims=(fn, kh, kw, fc), stride_hw=(sh, sw),
            padding_hw=(pt, pl), dilation_hw=(dh, dw), has_dsp=features.has_dsp,
            has_mve=features.has_mve)
    args.context(required)
    get_x = args.tensor("input", n * h * w * c)
    get_w = args.tensor("filter", fn * kh * kw * fc)
    get_b = args.tensor("bias", oc, optional=True)
    get_m, get_s = args.tensor("multiplier", oc), args.tensor("shift", oc)
    get_out = args.tensor("output", on * oh * ow * oc)
    pb = _far_padding(h, oh, kh, sh, dh, pt)
    pr = _far_padding(w, ow, kw, sw, dw, pl)
    attrs = Conv2DAttrs(strides=(sh, sw), padding=(pt, pl, pb, pr), dilation=(dh, dw),
                        groups=c if depthwise else 1, data_layout="NHWC",
                        kernel_layout="HWIO" if depthwise else "OHWI", out_dtype="int32")
    w_shape = (kh, kw, 1, oc) if depthwise else (fn, kh, kw, fc)
    in_zp = np.int32(-args["input_offset"])
    act = (args["act_min"], args["act_max"])
    conv, zero, one = get_op("qnn.conv2d"), np.int32(0), np.float32(1)

    def run(*arrays: np.ndarray) -> None:
        x = get_x(arrays).reshape(n, h, w, c)
        acc = conv.evaluate(attrs, x, get_w(arrays).reshape(w_shape), in_zp, zero, one, one)
        acc = acc[:, :oh, :ow, :].astype(np.int64)
        if get_b is not None:
            acc = acc + get_b(arrays)
        shift = get_s(arrays)
        _shifts(shift)
        y = fp.multiply_by_quantized_multiplier(fp.wrap_int32(acc), get_m(arrays), shift)
        get_out(arrays)[...] = _finish(y, args["output_offset"], act, "int8").reshape(-1)

    return run


def _fully_connected(args: _Args, features: Features) -> Run:
    n, h, w, c = args.dims("input_dims")
    depth, _, _, units = args.dims("filter_dims")
    on, _, _, oc = args.dims("output_dims")
    _require(h * w * c == depth and oc == units and on == n,
             f"fully connected dims: input {n}x{h * w * c}, filter depth {depth} units {units}, "
             f"output {on}x{oc}")
    _require(args["filter_offset"] == 0, "filter_offset is not 0")
    args.context(0)
    get_x, get_w = args.tensor("input", n * depth), args.tensor("filter", depth * units)
    get_b = args.tensor("bias", units, optional=True)
    get_out = args.tensor("output", n * units)
    _shifts(args["shift"])
    dense, attrs = get_op("qnn.dense"), DenseAttrs(units=units, out_dtype="int32")
    in_zp, zero, one = np.int32(-args["input_offset"]), np.int32(0), np.float32(1)
    act = (args["act_min"], args["act_max"])

    def run(*arrays: np.ndarray) -> None:
        x = get_x(arrays).reshape(n, depth)
        acc = dense.evaluate(attrs, x, get_w(arrays).reshape(units, depth), in_zp, zero, one,
                             one).astype(np.int64)
        if get_b is not None:
            acc = acc + get_b(arrays)
        y = fp.multiply_by_quantized_multiplier(fp.wrap_int32(acc), args["multiplier"],
                                                args["shift"])
        get_out(arrays)[...] = _finish(y, args["output_offset"], act, "int8").reshape(-1)

    return run


def _pool(args: _Args, features: Features) -> Run:
    average = args.api.startswith("arm_avgpool")
    dtype = "int8" if args.api.endswith("_s8") else "int16"
    n, h, w, c = args.dims("input_dims")
    _, kh, kw, _ = args.dims("filter_dims")
    on, oh, ow, oc = args.dims("output_dims")
    (sh, sw), (pt, pl) = _window(args)
    _require(on == n and oc == c, f"pool dims: input {n}x{h}x{w}x{c}, output {on}x{oh}x{ow}x{oc}")
    for size, k, s, lo, count in ((h, kh, sh, pt, oh), (w, kw, sw, pl, ow)):
        _require(k > lo and (count - 1) * s - lo < size, "a pooling window holds no element")
    rule = buffer_size.avgpool_s8 if dtype == "int8" else buffer_size.avgpool_s16
    args.context(rule(output_width=ow, channels=c, has_dsp=features.has_dsp,
                      has_mve=features.has_mve) if average else 0)
    get_x, get_out = args.tensor("input", n * h * w * c), args.tensor("output", n * oh * ow * c)
    padding = (pt, pl, _far_padding(h, oh, kh, sh, 1, pt), _far_padding(w, ow, kw, sw, 1, pl))
    common = dict(pool_size=(kh, kw), strides=(sh, sw), padding=padding, layout="NHWC")
    if average:
        op, attrs = get_op("nn.avg_pool2d"), AvgPool2DAttrs(**common, count_include_pad=False)
    else:
        op, attrs = get_op("nn.max_pool2d"), MaxPool2DAttrs(**common)
    act = (args["act_min"], args["act_max"])

    def run(*arrays: np.ndarray) -> None:
        x = get_x(arrays).reshape(n, h, w, c)
        y = op.evaluate(attrs, x.astype(np.int32) if average else x)[:, :oh, :ow, :]
        get_out(arrays)[...] = _finish(y, 0, act, dtype).reshape(-1)

    return run


def _elementwise(args: _Args, features: Features) -> Run:
    dtype = "int8" if args.api.endswith("_s8") else "int16"
    size = args["block_size"]
    _require(size > 0, f"block_size {size} is not positive")
    get_a, get_b = args.tensor("input_1", size), args.tensor("input_2", size)
    get_out = args.tensor("output", size)
    act = (args["act_min"], args["act_max"])
    if args.api.startswith("arm_elementwise_add"):
        params = fp.AddParams(args["left_shift"], args["input_1_mult"], args["input_1_shift"],
                              args["input_2_mult"], args["input_2_shift"], args["out_mult"],
                              args["out_shift"])
        _shifts([params.lhs_shift, params.rhs_shift, params.output_shift])
        _require(0 <= params.left_shift <= 31, "left_shift is outside 0..31")

        def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return fp.quantized_add(a, b, args["input_1_offset"], args["input_2_offset"],
                                    params, 0)
    else:
        _shifts(args["out_shift"])

        def combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            return fp.quantized_mul(a, b, args["input_1_offset"], args["input_2_offset"],
                                    args["out_mult"], args["out_shift"], 0)

    def run(*arrays: np.ndarray) -> None:
        y = combine(get_a(arrays), get_b(arrays))
        get_out(arrays)[...] = _finish(y, args["out_offset"], act, dtype)

    return run


def _softmax(args: _Args, features: Features) -> Run:
    rows, row_size = args["num_rows"], args["row_size"]
    _require(rows > 0 and row_size > 0, f"num_rows {rows} and row_size {row_size}")
    _require(0 <= args["shift"] <= 31, "shift is outside 0..31")
    get_x, get_out = args.tensor("input", rows * row_size), args.tensor("output", rows * row_size)
    params = fp.SoftmaxParams(args["mult"], args["shift"], args["diff_min"])

    def run(*arrays: np.ndarray) -> None:
        y = fp.softmax_int8(get_x(arrays).reshape(rows, row_size), params)
        get_out(arrays)[...] = y.reshape(-1)

    return run


_RUNNERS: dict[str, Callable[[_Args, Features], Run]] = {
    "arm_convolve_wrapper_s8": _conv, "arm_depthwise_conv_wrapper_s8": _conv,
    "arm_fully_connected_s8": _fully_connected,
    "arm_avgpool_s8": _pool, "arm_avgpool_s16": _pool,
    "arm_max_pool_s8": _pool, "arm_max_pool_s16": _pool,
    "arm_elementwise_add_s8": _elementwise, "arm_elementwise_add_s16": _elementwise,
    "arm_elementwise_mul_s8": _elementwise, "arm_elementwise_mul_s16": _elementwise,
    "arm_softmax_s8": _softmax,
}


def _failing(error: CmsisNNError) -> Run:
    def run(*arrays: np.ndarray) -> None:
        raise error

    return run


def compile_prim_func(name: str, lowered: LoweredCall, features: Features,
                      debug_last_error: bool = False) -> Run:
    """The NumPy function of the lowered call of PrimFunc ``name``: it takes one array per
    parameter (inputs, then the output, written in place) and raises :class:`CmsisNNError`
    where the CMSIS-NN function would return an error status."""
    try:
        return _RUNNERS[lowered.api](_Args(lowered), features)
    except _ArgError as err:
        if debug_last_error:
            return _failing(CmsisNNError(name, ARG_ERROR, lowered.api, str(err)))
        return _failing(CmsisNNError(name, ARG_ERROR))


def host_functions(mod: IRModule, features: Features, debug_last_error: bool = False,
                   ) -> Mapping[str, Run]:
    """The host function of every PrimFunc of ``mod``, by name."""
    return {name: compile_prim_func(name, read_prim_func(name, func), features,
                                    debug_last_error)
            for name, func in mod.items()}
