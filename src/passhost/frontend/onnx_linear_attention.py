"""Converters of ONNX LinearAttention: its recurrence (linear, gated, delta or gated-delta
state updates) unrolled over the time steps, which are known while compiling, in float32."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from passhost import relay
from passhost.frontend.onnx_attention import float_input
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Entry
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS"]

# -- LinearAttention --------------------------------------------------------------------------
_UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


class _Recurrence:
    """The inputs of a LinearAttention node cut into time steps, in float32."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self.dtype = float_input(ctx, 0, "query")
        for index, name in ((1, "key"), (2, "value")):
            if ctx.dtype(index) != self.dtype:
                raise ctx.error(f"expected {name} (input {index}) of type {self.dtype} "
                                f"(query's), found {ctx.dtype(index)}")
        q_heads, kv_heads = (int(ctx.required_attr(n)) for n in ("q_num_heads",
                                                                   "kv_num_heads"))
        if q_heads <= 0 or kv_heads <= 0 or q_heads % kv_heads:
            raise ctx.error(f"expected q_num_heads a positive multiple of kv_num_heads, found "
                            f"{q_heads} and {kv_heads}")
        shapes = [ctx.shape(i) for i in range(3)]
        if any(len(s) != 3 for s in shapes) or len({s[:2] for s in shapes}) != 1:
            raise ctx.error(f"expected query, key and value of shape [batch, steps, heads * "
                            f"size] with one batch and steps, found {[list(s) for s in shapes]}")
        self.batch, self.steps, q_hidden = shapes[0]
        self.key_size = q_hidden // q_heads
        self.value_size = shapes[2][2] // kv_heads
        if (self.steps < 1 or q_hidden % q_heads or shapes[1][2] != kv_heads * self.key_size
                or shapes[2][2] % kv_heads or min(self.key_size, self.value_size) < 1):
            raise ctx.error(f"expected at least one step, query's last axis a multiple of "
                            f"q_num_heads ({q_heads}) and key's and value's of kv_num_heads "
                            f"({kv_heads}) with key's head size query's (at least 1), found "
                            f"shapes {[list(s) for s in shapes]}")
        self.q_heads, self.kv_heads = q_heads, kv_heads

    def wide(self, x: Expr) -> Expr:
        """``x`` in float32 (the precision of the recurrence)."""
        return x if self.dtype == "float32" else relay.cast(x, dtype="float32")

    def by_step(self, x: Expr, shape: tuple[int, ...]) -> list[Expr]:
        """(batch, steps, ...) ``x`` as one ``shape`` tensor per step."""
        parts = [x] if self.steps == 1 else \
            [relay.split(x, indices_or_sections=self.steps, axis=1)[t]
             for t in range(self.steps)]
        return [relay.reshape(p, newshape=shape) for p in parts]

    def input_by_step(self, index: int, shape: tuple[int, ...]) -> list[Expr]:
        """Input ``index`` (batch, steps, ...) in float32, one ``shape`` tensor per step."""
        return self.by_step(self.wide(self.ctx.input(index)), shape)

    def gate_by_step(self, index: int, name: str, sizes: dict[int, tuple[int, ...]],
                     ) -> list[Expr]:
        """decay or beta (input ``index``): its last axis's size picks the per-step shape
        among ``sizes``."""
        ctx = self.ctx
        shape = ctx.shape(index)
        if ctx.dtype(index) != self.dtype:
            raise ctx.error(f"expected {name} (input {index}) of type {self.dtype} (query's), "
                            f"found {ctx.dtype(index)}")
        if len(shape) != 3 or shape[:2] != (self.batch, self.steps) or shape[2] not in sizes:
            raise ctx.error(f"expected {name} of shape [{self.batch}, {self.steps}, n] with n "
                            f"in {sorted(sizes)}, found {list(shape)}")
        x = self.wide(ctx.input(index))
        return self.by_step(relay.exp(x) if name == "decay" else x, sizes[shape[2]])

    def initial_state(self) -> Expr:
        """past_state (input 3) in float32, or zeros."""
        ctx = self.ctx
        want = (self.batch, self.kv_heads, self.key_size, self.value_size)
        if not ctx.has_input(3):
            return const(np.zeros(want, np.float32))
        float_input(ctx, 3, "past_state")
        if tuple(ctx.shape(3)) != want:
            raise ctx.error(f"expected past_state of shape {list(want)}, found "
                            f"{list(ctx.shape(3))}")
        state = ctx.input(3)
        return state if ctx.dtype(3) == "float32" else relay.cast(state, dtype="float32")


@computed_in_float32
def _linear_attention(ctx: NodeContext) -> Sequence[Value]:
    """ONNX LinearAttention becomes its recurrence unrolled over the steps (known while
    compiling): per step ``exp`` decay products (gated), the delta correction (``matmul``
    of the key with the state), the outer-product update and a ``matmul`` of the query with
    the state, in float32; every update_rule, per-head or per-key decay, per-head or shared
    beta, grouped heads, scale and past_state. chunk_size (a tuning hint) is ignored."""
    rule = ctx.attr("update_rule", "gated_delta")
    if rule not in _UPDATE_RULES:
        raise ctx.error(f"expected update_rule among {', '.join(_UPDATE_RULES)}, found "
                        f"{rule!r}")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    for index, name, needed in ((4, "decay", gating), (5, "beta", delta)):
        if ctx.has_input(index) != needed:
            raise ctx.error(f"expected {'a' if needed else 'no'} {name} (input {index}) with "
                            f"update_rule {rule!r}, found {'none' if needed else 'one'}")
    rec = _Recurrence(ctx)
    batch, kv, dk, dv = rec.batch, rec.kv_heads, rec.key_size, rec.value_size
    group = rec.q_heads // kv
    queries = rec.input_by_step(0, (batch, kv, group, dk))
    keys = rec.input_by_step(1, (batch, kv, dk, 1))
    values = rec.input_by_step(2, (batch, kv, 1, dv))
    decays = rec.gate_by_step(4, "decay", {kv: (batch, kv, 1, 1),
                                           kv * dk: (batch, kv, dk, 1)}) if gating else []
    betas = rec.gate_by_step(5, "beta", {kv: (batch, kv, 1, 1),
                                         1: (batch, 1, 1, 1)}) if delta else []
    state = rec.initial_state()
    outs = []
    for t in range(rec.steps):
        if gating:
            state = relay.multiply(state, decays[t])
        value = values[t]
        if delta:
            key_row = relay.reshape(keys[t], newshape=(batch, kv, 1, dk))
            value = relay.multiply(betas[t],
                                   relay.subtract(value, relay.matmul(key_row, state)))
        state = relay.add(state, relay.multiply(keys[t], value))
        read = relay.matmul(queries[t], state)  # (batch, kv heads, group, dv)
        outs.append(relay.reshape(read, newshape=(batch, 1, rec.q_heads * dv)))
    out = outs[0] if len(outs) == 1 else relay.concatenate(outs, axis=1)
    scale = float(ctx.attr("scale", 0.0)) or 1.0 / math.sqrt(dk)
    out = relay.multiply(out, const(scale, "float32"))
    state_dtype = ctx.dtype(3) if ctx.has_input(3) else rec.dtype
    return [out if rec.dtype == "float32" else relay.cast(out, dtype=rec.dtype),
            state if state_dtype == "float32" else relay.cast(state, dtype=state_dtype)]


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "LinearAttention": _linear_attention,
}
