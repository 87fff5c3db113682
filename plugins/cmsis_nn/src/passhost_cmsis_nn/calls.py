"""The ``call_extern`` argument layouts of the CMSIS-NN calls a ``cmsis-nn`` PrimFunc makes.

Each lowered partition is one ``call_extern("arm_...", args...)``. The arguments are flat:
buffers, the context pointer (an ``allocate``'s handle, or the literal ``"NULL"``), and
integers; a ``cmsis_nn_dims`` is four integers ``n, h, w, c`` and a ``cmsis_nn_tile`` two,
``w`` then ``h`` as in the struct. :func:`make_call` writes a call from named values and
:func:`read_call` reads one back, so the lowering, the C emitter and the host path share one
definition of every layout:

conv (``arm_convolve_wrapper_s8``, ``arm_depthwise_conv_wrapper_s8``)
    input, filter, multiplier, bias, shift, output, context, context_size, input_offset,
    output_offset, stride (w, h), padding (w, h), dilation (w, h), act_min, act_max, ch_mult,
    input_dims, filter_dims, bias_dims, output_dims
fully connected (``arm_fully_connected_s8``)
    input, filter, bias, output, context, context_size, input_offset, filter_offset,
    output_offset, multiplier, shift, act_min, act_max, input_dims, filter_dims, bias_dims,
    output_dims
pool (``arm_avgpool_s8/_s16``, ``arm_max_pool_s8/_s16``)
    input, output, context, context_size, stride (w, h), padding (w, h), act_min, act_max,
    input_dims, filter_dims, output_dims
add, mul, softmax
    exactly the C function's arguments (``arm_elementwise_add_s8(input_1, input_2, ...)``).

``bias`` is a buffer or ``"NULL"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from attrs import frozen

from passhost.tir import (
    Allocate,
    AllocateConst,
    Buffer,
    Call,
    DeclBuffer,
    IntImm,
    PrimFunc,
    StringImm,
    Var,
    call_extern,
    post_order,
)

__all__ = [
    "ADD", "CONV", "FULLY_CONNECTED", "LAYOUTS", "MUL", "NULL", "POOL", "SOFTMAX",
    "CallError", "LoweredCall", "is_null", "layout_of", "make_call", "read_call",
    "read_prim_func",
]

#: The literal passed for an absent pointer (no bias, no context buffer).
NULL = "NULL"

# (name, width): width 1 is one argument, 2 a cmsis_nn_tile (w, h), 4 a cmsis_nn_dims.
Layout = tuple[tuple[str, int], ...]

CONV: Layout = (
    ("input", 1), ("filter", 1), ("multiplier", 1), ("bias", 1), ("shift", 1), ("output", 1),
    ("context", 1), ("context_size", 1), ("input_offset", 1), ("output_offset", 1),
    ("stride", 2), ("padding", 2), ("dilation", 2), ("act_min", 1), ("act_max", 1),
    ("ch_mult", 1), ("input_dims", 4), ("filter_dims", 4), ("bias_dims", 4),
    ("output_dims", 4))
FULLY_CONNECTED: Layout = (
    ("input", 1), ("filter", 1), ("bias", 1), ("output", 1), ("context", 1),
    ("context_size", 1), ("input_offset", 1), ("filter_offset", 1), ("output_offset", 1),
    ("multiplier", 1), ("shift", 1), ("act_min", 1), ("act_max", 1), ("input_dims", 4),
    ("filter_dims", 4), ("bias_dims", 4), ("output_dims", 4))
POOL: Layout = (
    ("input", 1), ("output", 1), ("context", 1), ("context_size", 1), ("stride", 2),
    ("padding", 2), ("act_min", 1), ("act_max", 1), ("input_dims", 4), ("filter_dims", 4),
    ("output_dims", 4))
ADD: Layout = (
    ("input_1", 1), ("input_2", 1), ("input_1_offset", 1), ("input_1_mult", 1),
    ("input_1_shift", 1), ("input_2_offset", 1), ("input_2_mult", 1), ("input_2_shift", 1),
    ("left_shift", 1), ("output", 1), ("out_offset", 1), ("out_mult", 1), ("out_shift", 1),
    ("act_min", 1), ("act_max", 1), ("block_size", 1))
MUL: Layout = (
    ("input_1", 1), ("input_2", 1), ("input_1_offset", 1), ("input_2_offset", 1),
    ("output", 1), ("out_offset", 1), ("out_mult", 1), ("out_shift", 1), ("act_min", 1),
    ("act_max", 1), ("block_size", 1))
SOFTMAX: Layout = (
    ("input", 1), ("num_rows", 1), ("row_size", 1), ("mult", 1), ("shift", 1),
    ("diff_min", 1), ("output", 1))

#: The layout of each CMSIS-NN function the target calls.
LAYOUTS: dict[str, Layout] = {
    "arm_convolve_wrapper_s8": CONV,
    "arm_depthwise_conv_wrapper_s8": CONV,
    "arm_fully_connected_s8": FULLY_CONNECTED,
    "arm_avgpool_s8": POOL, "arm_avgpool_s16": POOL,
    "arm_max_pool_s8": POOL, "arm_max_pool_s16": POOL,
    "arm_elementwise_add_s8": ADD, "arm_elementwise_add_s16": ADD,
    "arm_elementwise_mul_s8": MUL, "arm_elementwise_mul_s16": MUL,
    "arm_softmax_s8": SOFTMAX,
}


class CallError(ValueError):
    """A ``call_extern`` that is not a CMSIS-NN call of a known layout."""


def layout_of(api: str) -> Layout:
    """The argument layout of CMSIS-NN function ``api``."""
    try:
        return LAYOUTS[api]
    except KeyError:
        raise CallError(f"cmsis-nn: unknown CMSIS-NN function {api!r}; the target calls "
                        f"{', '.join(LAYOUTS)}") from None


def _flat(api: str, name: str, width: int, value: Any) -> list[Any]:
    if width == 1:
        if isinstance(value, str):
            return [StringImm(value)]
        if isinstance(value, (Buffer, Var)):
            return [value]
        return [IntImm("int32", int(value))]
    values = tuple(value)
    if len(values) != width:
        raise CallError(f"{api}: argument {name!r} takes {width} integers, found {value!r}")
    return [IntImm("int32", int(v)) for v in values]


def make_call(api: str, values: Mapping[str, Any]) -> Call:
    """``call_extern(api, ...)`` with the arguments of ``api``'s layout taken from
    ``values`` by name (buffers, handles, ``"NULL"``, ints, and int tuples for tiles (w, h)
    and dims (n, h, w, c))."""
    layout = layout_of(api)
    missing = [name for name, _ in layout if name not in values]
    extra = sorted(set(values) - {name for name, _ in layout})
    if missing or extra:
        raise CallError(f"{api}: expected the arguments {[n for n, _ in layout]}, missing "
                        f"{missing}, unknown {extra}")
    args = [arg for name, width in layout for arg in _flat(api, name, width, values[name])]
    return call_extern(api, *args)


def _value(arg: Any) -> Any:
    if isinstance(arg, IntImm):
        return arg.value
    if isinstance(arg, StringImm):
        return arg.value
    return arg


def read_call(call: Any) -> tuple[str, dict[str, Any]]:
    """The CMSIS-NN function a ``call_extern`` calls and its arguments by name: buffers and
    handles as they are, ``"NULL"`` as a str, integers as ints, tiles and dims as tuples."""
    if not isinstance(call, Call) or call.op != "call_extern":
        raise CallError(f"cmsis-nn: expected a call_extern of a CMSIS-NN function, found "
                        f"{call!r}")
    api = call.args[0].value
    layout = layout_of(api)
    args = call.args[1:]
    expected = sum(width for _, width in layout)
    if len(args) != expected:
        raise CallError(f"{api}: expected {expected} call_extern arguments, found {len(args)}")
    out: dict[str, Any] = {}
    pos = 0
    for name, width in layout:
        chunk = [_value(a) for a in args[pos:pos + width]]
        if width > 1 and not all(isinstance(v, int) for v in chunk):
            raise CallError(f"{api}: argument {name!r} takes {width} integers, found {chunk}")
        out[name] = chunk[0] if width == 1 else tuple(chunk)
        pos += width
    return api, out


def is_null(value: Any) -> bool:
    """Whether a pointer argument is the literal ``NULL``."""
    return isinstance(value, str) and value == NULL


@frozen
class LoweredCall:
    """What a ``cmsis-nn`` PrimFunc does: its CMSIS-NN function ``api`` and arguments
    (:func:`read_call`), its parameter buffers in order (inputs, then the output), the data
    of its constant buffers (by buffer identity) and the size of its context allocation."""

    api: str
    args: Mapping[str, Any]
    params: tuple[Buffer, ...]
    constants: Mapping[int, np.ndarray]
    context_size: int

    def constant(self, buffer: Buffer) -> np.ndarray | None:
        """The data of constant buffer ``buffer``, or None when it is not one."""
        return self.constants.get(id(buffer))


def read_prim_func(name: str, func: PrimFunc) -> LoweredCall:
    """Read a PrimFunc the ``cmsis-nn`` lowering made (or parsed back from its text)."""
    nodes = post_order(func.body)
    calls = [n for n in nodes if isinstance(n, Call) and n.op == "call_extern"]
    if len(calls) != 1:
        raise CallError(f"cmsis-nn: @{name} must make exactly one call_extern, found "
                        f"{len(calls)}")
    api, args = read_call(calls[0])
    data = {id(n.buffer_var): n.data for n in nodes if isinstance(n, AllocateConst)}
    constants = {id(n.buffer): data[id(n.buffer.data)] for n in nodes
                 if isinstance(n, DeclBuffer) and id(n.buffer.data) in data}
    allocations = {id(n.buffer_var): n for n in nodes if isinstance(n, Allocate)}
    context = args.get("context")
    size = 0
    if isinstance(context, Var):
        alloc = allocations.get(id(context))
        if alloc is None:
            raise CallError(f"cmsis-nn: @{name}: the context %{context.name_hint} is not an "
                            f"allocate of the function")
        size = int(np.prod(alloc.extents)) * np.dtype(alloc.dtype).itemsize
    params = []
    for p in func.params:
        if p not in func.buffer_map:
            raise CallError(f"cmsis-nn: @{name}: parameter %{p.name_hint} is not a buffer")
        params.append(func.buffer_map[p])
    return LoweredCall(api, args, tuple(params), constants, size)
