"""Epilogues: the elementwise kernel calls right after a producer (convolution, dense) that
a native kernel applies while it writes the producer's output, instead of passing over the
output once per call.

A fused function of the default lowering computes, for example::

    conv2d(T, data, weight); add(T, T, bias); add(T, T, residual); relu(T, T)

:func:`match_epilogue` reads the calls after the producer, in order, while each one works
in place on the producer's output ``T`` and is one of: an ``add`` (or ``nn.bias_add``) of
a per-channel bias, a ``multiply`` by a per-channel scale (for kernels that take one, after
the bias and before the residual), an ``add`` of a residual shaped like ``T``, then
``nn.relu`` or ``clip``, and, last, an activation: ``sigmoid`` or ``nn.silu`` (after a
clamp, or after the sums when there is none). A kernel that takes a gate (the matrix
product) also absorbs a ``multiply`` by an operand shaped like ``T`` right after the
activation: SwiGLU's ``silu(x W) * (x V)``. The native kernel then computes
``act(clamp((acc + bias) * scale + residual, lo, hi)) * gate``: bias before residual
whatever their order in the calls, which may round differently, as any reordering of a
float32 sum (the kernel's own sums are ordered differently from the reference kernels'
anyway); the activation rounds as the compiled loops' ``sigmoid`` and ``x * sigmoid(x)``
do, and the gate multiplies that rounded value, as the loops do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attrs import frozen

from passhost.runtime import KernelCall
from passhost.tir import Buffer
from passhost_cpu_target.selection import call_buffers

__all__ = ["ACTIVATIONS", "CLAMPS", "ChannelAxes", "Epilogue", "match_epilogue", "same_buffer"]

#: The calls that clamp the output.
CLAMPS = ("nn.relu", "clip")
#: The activations that may come last.
ACTIVATIONS = ("sigmoid", "nn.silu")


@frozen
class Epilogue:
    """What a native kernel applies to its output: ``activation(clamp((acc + bias) * scale
    + residual, lo, hi)) * gate``, the activation one of :data:`ACTIVATIONS` or None;
    ``calls`` is how many kernel calls after the producer it replaces."""

    bias: Buffer | None = None
    residual: Buffer | None = None
    lo: float = -math.inf
    hi: float = math.inf
    calls: int = 0
    scale: Buffer | None = None
    activation: str | None = None
    gate: Buffer | None = None


def same_buffer(a: Buffer, b: Buffer) -> bool:
    """Whether two buffers are the same array (same pointer, shape and dtype)."""
    return a is b or (a.data is b.data and a.shape == b.shape and a.dtype == b.dtype)


def _other_operand(call: KernelCall, out: Buffer) -> Buffer | None:
    """For a binary call writing ``out`` in place, the operand that is not ``out``."""
    if len(call.outputs) != 1 or not same_buffer(call.outputs[0], out) or len(call.inputs) != 2:
        return None
    a, b = call.inputs
    if not (isinstance(a, Buffer) and isinstance(b, Buffer)):
        return None
    if same_buffer(a, out) and not same_buffer(b, out):
        return b
    if same_buffer(b, out) and not same_buffer(a, out):
        return a
    return None


def _in_place(call: KernelCall, out: Buffer) -> bool:
    """Whether ``call`` maps ``out`` to itself (one input, one output, both ``out``)."""
    return (len(call.inputs) == 1 and len(call.outputs) == 1
            and isinstance(call.inputs[0], Buffer) and same_buffer(call.inputs[0], out)
            and same_buffer(call.outputs[0], out))


#: The axes of a producer's output that hold its channels: one axis, or the two of a
#: channel-blocked layout (``NCHW16c``: blocks on axis 1, channels within one on axis 4),
#: whose indices then run over the channels in order.
ChannelAxes = int | tuple[int, ...]


def _per_channel(operand: Buffer, out: Buffer, axes: ChannelAxes) -> bool:
    """Whether ``operand`` broadcasts against ``out`` as one value per channel (per index of
    the channel ``axes``), its values in channel order."""
    if operand.ndim > out.ndim:
        return False
    axes = (axes,) if isinstance(axes, int) else axes
    aligned = (1,) * (out.ndim - operand.ndim) + operand.shape
    return all(d == (out.shape[i] if i in axes else 1) for i, d in enumerate(aligned))


def _bias_add_operand(call: KernelCall, out: Buffer, axis: ChannelAxes) -> Buffer | None:
    """The bias of an in-place ``nn.bias_add`` on ``out`` along ``axis`` (a single axis)."""
    data, bias = call.inputs
    if not (isinstance(data, Buffer) and isinstance(bias, Buffer)) or len(call.outputs) != 1:
        return None
    if not (same_buffer(call.outputs[0], out) and same_buffer(data, out)) or same_buffer(bias, out):
        return None
    if not isinstance(axis, int) or call.attrs.axis % out.ndim != axis \
            or bias.shape != (out.shape[axis],):
        return None
    return bias


def _batch_broadcast(operand: Buffer, out: Buffer) -> bool:
    """Whether ``operand`` is shaped like one matrix of the batched ``out`` (its last two
    dimensions, ones before them), broadcast over the batch."""
    return (out.ndim >= 3 and operand.ndim >= 2 and operand.shape[-2:] == out.shape[-2:]
            and all(d == 1 for d in operand.shape[:-2]))


def _gate(following: Sequence[KernelCall], at: int, out: Buffer) -> Buffer | None:
    """The operand of ``following[at]`` when it is an in-place ``multiply`` of ``out`` by
    an operand of ``out``'s shape (and dtype float32); else None."""
    if at >= len(following) or following[at].name != "multiply":
        return None
    call = following[at]
    if any(b.dtype != "float32" for b in call_buffers(call)):
        return None
    operand = _other_operand(call, out)
    return operand if operand is not None and operand.shape == out.shape else None


def match_epilogue(out: Buffer, following: Sequence[KernelCall], channel_axis: ChannelAxes,
                   residual: bool = True, scale: bool = False,
                   batch_residual: bool = False, gate: bool = False) -> Epilogue:
    """The longest epilogue made of the first calls of ``following`` on the float32
    producer output ``out`` with channels along ``channel_axis`` (or the channel axes of
    a channel-blocked layout; ``residual=False`` when the kernel takes no residual,
    ``scale=True`` when it takes a per-channel scale, ``batch_residual=True`` when its
    residual may be one matrix broadcast over a batch of them, ``gate=True`` when it
    multiplies the result by a gate last); an empty Epilogue when the first call does not
    fit. A scale must come after the bias and before the
    residual, the order the kernel applies them in; after a clamp only an activation may
    come, and an activation ends the epilogue but for a gate after it."""
    bias = res = mul = None
    lo, hi, clamped = -math.inf, math.inf, False
    for count, call in enumerate(following):
        if any(b.dtype != "float32" for b in call_buffers(call)):
            break
        if call.name in ACTIVATIONS:
            if not _in_place(call, out):
                break
            product = _gate(following, count + 1, out) if gate else None
            return Epilogue(bias, res, lo, hi, count + 1 + (product is not None), mul,
                            call.name, product)
        if clamped:
            break
        if call.name in CLAMPS:
            if not _in_place(call, out):
                break
            bounds = (0.0, math.inf) if call.name == "nn.relu" else (call.attrs.a_min,
                                                                     call.attrs.a_max)
            lo, hi, clamped = float(bounds[0]), float(bounds[1]), True
        elif call.name == "nn.bias_add":
            operand = _bias_add_operand(call, out, channel_axis)
            if operand is None or bias is not None:
                break
            bias = operand
        elif call.name == "add" and (operand := _other_operand(call, out)) is not None:
            if bias is None and mul is None and _per_channel(operand, out, channel_axis):
                bias = operand
            elif residual and res is None and (
                    operand.shape == out.shape
                    or (batch_residual and _batch_broadcast(operand, out))):
                res = operand
            else:
                break
        elif (call.name == "multiply" and scale and mul is None and res is None
              and (operand := _other_operand(call, out)) is not None
              and _per_channel(operand, out, channel_axis)):
            mul = operand
        else:
            break
    else:
        count = len(following)
    return Epilogue(bias, res, lo, hi, count, mul)

