"""Converters of the ONNX transformer-block operators: Attention, FlexAttention,
RotaryEmbedding, TensorScatter (the KV-cache write) and SwiGLU (LinearAttention, a
recurrence, has a module of its own).

All become compositions of graph operators: Attention is ``matmul`` -> (softcap) -> ``add``
of the attention bias -> ``nn.softmax`` -> ``matmul``, with the heads split by ``reshape`` and
``transpose``, grouped key/value heads repeated by ``take`` and the KV cache joined by
``concatenate``; RotaryEmbedding is slices, products and ``concatenate``. The bias parts
known while compiling (the causal and sliding-window masks of a fixed offset) are folded
into one constant; masks and lengths given at run time become ``where``/``less_equal``
arithmetic on it. FlexAttention imports its score and probability modifier graphs in place
between the same steps; TensorScatter is ``scatter_elements`` and SwiGLU ``sigmoid`` and products.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from onnx import GraphProto, TensorProto, helper

from passhost import relay
from passhost.frontend.errors import OnnxImportError
from passhost.frontend.onnx import from_onnx
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Entry
from passhost.ir.types import ANY_FLOAT_DTYPES, TensorType
from passhost.relay import nn
from passhost.relay.expr import Expr, Var, const
from passhost.relay.visitor import ExprMutator

__all__ = ["CONVERTERS", "float_input"]

def float_input(ctx: NodeContext, index: int, name: str) -> str:
    """The dtype of input ``index`` (``name``), which must be a floating-point one."""
    dtype = ctx.dtype(index)
    if dtype not in ANY_FLOAT_DTYPES:
        raise ctx.error(f"expected {name} (input {index}) of type "
                        f"{', '.join(ANY_FLOAT_DTYPES)}, found {dtype}")
    return dtype


# -- Attention --------------------------------------------------------------------------------
class _Heads:
    """Q, K and V of an Attention node as (batch, heads, sequence, head size) tensors."""

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx
        self.dtype = float_input(ctx, 0, "Q")
        for index, name in ((1, "K"), (2, "V")):
            if ctx.dtype(index) != self.dtype:
                raise ctx.error(f"expected {name} (input {index}) of type {self.dtype} (Q's), "
                                f"found {ctx.dtype(index)}")
        shapes = [ctx.shape(i) for i in range(3)]
        ranks = {len(s) for s in shapes}
        if ranks not in ({3}, {4}):
            raise ctx.error(f"expected Q, K and V all 3-D or all 4-D, found shapes "
                            f"{[list(s) for s in shapes]}")
        self.rank = ranks.pop()
        q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
        if self.rank == 3:
            if q_heads is None or kv_heads is None:
                raise ctx.error("expected q_num_heads and kv_num_heads for 3-D inputs, found "
                                f"q_num_heads={q_heads}, kv_num_heads={kv_heads}")
            self.q = self._split_heads(0, "Q", int(q_heads))
            self.k = self._split_heads(1, "K", int(kv_heads))
            self.v = self._split_heads(2, "V", int(kv_heads))
            q_shape, k_shape, v_shape = (self._heads_shape(i, n) for i, n in
                                         ((0, int(q_heads)), (1, int(kv_heads)),
                                          (2, int(kv_heads))))
        else:
            self.q, self.k, self.v = (ctx.input(i) for i in range(3))
            q_shape, k_shape, v_shape = shapes
            for name, given, found in (("q_num_heads", q_heads, q_shape[1]),
                                       ("kv_num_heads", kv_heads, k_shape[1])):
                if given is not None and int(given) != found:
                    raise ctx.error(f"expected {name} to match the 4-D inputs' heads "
                                    f"({found}), found {given}")
        self.batch, self.q_heads, self.q_len, self.head_size = q_shape
        _, self.kv_heads, self.kv_len, _ = k_shape
        self.v_head_size = v_shape[3]
        if k_shape[0] != self.batch or k_shape[3] != self.head_size:
            raise ctx.error(f"expected K of shape [{self.batch}, kv_num_heads, kv_len, "
                            f"{self.head_size}], found {list(k_shape)} (as 4-D)")
        if tuple(v_shape[:3]) != tuple(k_shape[:3]):
            raise ctx.error(f"expected V's batch, heads and sequence {list(k_shape[:3])} (K's), "
                            f"found {list(v_shape[:3])} (as 4-D)")
        if self.q_heads % self.kv_heads:
            raise ctx.error(f"expected q_num_heads ({self.q_heads}) to be a multiple of "
                            f"kv_num_heads ({self.kv_heads})")

    def _heads_shape(self, index: int, heads: int) -> tuple[int, int, int, int]:
        batch, seq, hidden = self.ctx.shape(index)
        return batch, heads, seq, hidden // heads

    def _split_heads(self, index: int, name: str, heads: int) -> Expr:
        batch, seq, hidden = self.ctx.shape(index)
        if heads <= 0 or hidden % heads:
            raise self.ctx.error(f"expected {name}'s hidden size {hidden} (input {index}) to "
                                 f"be a multiple of the number of heads, found {heads} heads")
        split = relay.reshape(self.ctx.input(index), newshape=(batch, seq, heads, hidden // heads))
        return relay.transpose(split, axes=(0, 2, 1, 3))

    def join_cache(self) -> int:
        """Prepend past_key/past_value (inputs 4 and 5) to K and V; returns the past length."""
        ctx = self.ctx
        if ctx.has_input(4) != ctx.has_input(5):
            raise ctx.error("expected past_key and past_value together, found only one")
        if not ctx.has_input(4):
            return 0
        past_k, past_v = ctx.shape(4), ctx.shape(5)
        want_k = (self.batch, self.kv_heads, past_k[2] if len(past_k) == 4 else -1,
                  self.head_size)
        want_v = (self.batch, self.kv_heads, want_k[2], self.v_head_size)
        if len(past_k) != 4 or tuple(past_k) != want_k or tuple(past_v) != want_v:
            raise ctx.error(f"expected past_key of shape [{self.batch}, {self.kv_heads}, "
                            f"past, {self.head_size}] and past_value [{self.batch}, "
                            f"{self.kv_heads}, past, {self.v_head_size}], found "
                            f"{list(past_k)} and {list(past_v)}")
        self.k = relay.concatenate([ctx.input(4), self.k], axis=2)
        self.v = relay.concatenate([ctx.input(5), self.v], axis=2)
        self.kv_len += past_k[2]
        return past_k[2]

    def repeat_kv(self, x: Expr) -> Expr:
        """K or V with each of its heads repeated for the query heads that share it."""
        if self.q_heads == self.kv_heads:
            return x
        reps = self.q_heads // self.kv_heads
        heads = np.repeat(np.arange(self.kv_heads, dtype=np.int32), reps)
        return relay.take(x, const(heads), axis=1)

    def merge_heads(self, x: Expr) -> Expr:
        """The (batch, heads, q_len, v_head_size) output in the layout of the inputs."""
        if self.rank == 4:
            return x
        x = relay.transpose(x, axes=(0, 2, 1, 3))
        return relay.reshape(x, newshape=(self.batch, self.q_len,
                                          self.q_heads * self.v_head_size))


def _neg_inf_where_not(allowed: np.ndarray, dtype: str) -> np.ndarray:
    return np.where(allowed, 0.0, -np.inf).astype(dtype)


class _Bias:
    """The additive attention bias: a constant part and the parts computed at run time."""

    def __init__(self, heads: _Heads) -> None:
        self.heads = heads
        self.known = np.zeros((heads.q_len, heads.kv_len), heads.dtype)
        self.computed: list[Expr] = []

    def add_allowed(self, allowed: np.ndarray | Expr) -> None:
        """Mask out (-inf) what ``allowed`` (bool, known or computed) forbids."""
        dtype = self.heads.dtype
        if isinstance(allowed, np.ndarray):
            self.known = self.known + _neg_inf_where_not(allowed, dtype)
        else:
            self.computed.append(relay.where(allowed, const(0.0, dtype),
                                             const(-np.inf, dtype)))

    def expr(self) -> Expr | None:
        """The whole bias, or None when it is zero."""
        out: Expr | None = const(self.known, self.heads.dtype) if np.any(self.known) else None
        for part in self.computed:
            out = part if out is None else relay.add(out, part)
        return out

    def masked_rows(self, bias: Expr | None) -> Expr | None:
        """A bool tensor marking the query rows whose every key is masked, or None when no
        row can be."""
        if bias is None:
            return None
        if not self.computed:
            rows = np.isneginf(self.known.max(axis=-1, keepdims=True))
            return const(rows) if rows.any() else None
        row_max = relay.max(bias, axis=(-1,), keepdims=True)
        return relay.equal(row_max, const(-np.inf, self.heads.dtype))


def _positions(q_len: int, kv_len: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(q_len).reshape(q_len, 1), np.arange(kv_len).reshape(1, kv_len)


def _mask(ctx: NodeContext, heads: _Heads) -> Expr | None:
    """attn_mask (input 3) as an additive bias, its last axis padded to the keys' length."""
    if not ctx.has_input(3):
        return None
    shape = ctx.shape(3)
    dtype = ctx.dtype(3)
    if dtype not in ("bool", heads.dtype):
        raise ctx.error(f"expected attn_mask of type bool or {heads.dtype} (Q's), found {dtype}")
    full = (heads.batch, heads.q_heads, heads.q_len, heads.kv_len)
    if not 1 <= len(shape) <= 4 or shape[-1] > heads.kv_len:
        raise ctx.error(f"expected attn_mask of rank 1 to 4 broadcastable to {list(full)} "
                        f"(its last axis may be shorter), found shape {list(shape)}")
    padded = (*shape[:-1], heads.kv_len)
    try:
        np.broadcast_shapes(padded, full)
    except ValueError:
        raise ctx.error(f"expected attn_mask broadcastable to {list(full)}, found shape "
                        f"{list(shape)}") from None
    mask = ctx.input(3)
    if dtype == "bool":
        mask = relay.where(mask, const(0.0, heads.dtype), const(-np.inf, heads.dtype))
    if shape[-1] < heads.kv_len:
        fill = np.full((*shape[:-1], heads.kv_len - shape[-1]), -np.inf, heads.dtype)
        mask = relay.concatenate([mask, const(fill, heads.dtype)], axis=len(shape) - 1)
    return mask


def _nonpad_lengths(ctx: NodeContext, heads: _Heads, past: int) -> Expr | None:
    """nonpad_kv_seqlen (input 6) as a (batch, 1, 1, 1) int64 tensor, or None."""
    if not ctx.has_input(6):
        return None
    if past:
        raise ctx.error("expected nonpad_kv_seqlen without past_key and past_value, found "
                        "both")
    if tuple(ctx.shape(6)) != (heads.batch,):
        raise ctx.error(f"expected nonpad_kv_seqlen of shape [{heads.batch}], found "
                        f"{list(ctx.shape(6))}")
    value = ctx.input(6)
    if ctx.dtype(6) != "int64":
        value = relay.cast(value, dtype="int64")
    return relay.reshape(value, newshape=(heads.batch, 1, 1, 1))


def _window(ctx: NodeContext) -> tuple[int, int]:
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    for name, size in (("left_window_size", left), ("right_window_size", right)):
        if size < -1:
            raise ctx.error(f"expected {name} -1 (unbounded) or at least 0, found {size}")
    return left, right


def _attention_bias(ctx: NodeContext, heads: _Heads, past: int) -> _Bias:
    """The causal, sliding-window, attn_mask and padding parts of the bias."""
    bias = _Bias(heads)
    mask = _mask(ctx, heads)
    if mask is not None:
        bias.computed.append(mask)
    lengths = _nonpad_lengths(ctx, heads, past)
    left, right = _window(ctx)
    i, j = _positions(heads.q_len, heads.kv_len)
    # A query's absolute position is i + offset: offset = past (internal cache) or, with an
    # external cache, nonpad_kv_seqlen - q_len per batch entry.
    if lengths is None:
        rel = i + past - j  # how far key j lies behind the query
        if ctx.attr("is_causal", 0):
            bias.add_allowed(rel >= 0)
        if left >= 0:
            bias.add_allowed(rel <= left)
        if right >= 0:
            bias.add_allowed(-rel <= right)
    else:
        # rel = (i - j - q_len) + length: compare the length with a known bound.
        base = (j - i + heads.q_len).reshape(1, 1, heads.q_len, heads.kv_len)
        if ctx.attr("is_causal", 0):
            bias.add_allowed(relay.less_equal(const(base.astype(np.int64)), lengths))
        if left >= 0:
            bias.add_allowed(relay.less_equal(lengths, const((base + left).astype(np.int64))))
        if right >= 0:
            bias.add_allowed(relay.greater_equal(lengths,
                                                 const((base - right).astype(np.int64))))
        keys = np.arange(heads.kv_len, dtype=np.int64).reshape(1, 1, 1, heads.kv_len)
        bias.add_allowed(relay.less(const(keys), lengths))
    return bias


def _softmax_dtype(ctx: NodeContext, dtype: str) -> str:
    code = ctx.attr("softmax_precision")
    if code is None:
        return dtype
    try:
        found = np.dtype(helper.tensor_dtype_to_np_dtype(int(code))).name
    except (KeyError, TypeError, ValueError):
        found = str(code)
    if found not in ANY_FLOAT_DTYPES:
        raise ctx.error(f"expected softmax_precision of a type among "
                        f"{', '.join(ANY_FLOAT_DTYPES)}, found {found}")
    return found


def _softmax(x: Expr, dtype: str) -> Expr:
    """Softmax over the last axis computed in ``dtype``: ``nn.softmax`` widens float16 to
    float32, so float16 (ONNX's precision when softmax_precision is unset) is composed of
    float16 steps."""
    if dtype != "float16":
        return nn.softmax(x, axis=-1)
    e = relay.exp(relay.subtract(x, relay.max(x, axis=(-1,), keepdims=True)))
    return relay.divide(e, relay.sum(e, axis=(-1,), keepdims=True))


@computed_in_float32
def _attention(ctx: NodeContext) -> Sequence[Value]:
    """ONNX Attention becomes ``matmul`` -> softcap -> ``add`` of the attention bias ->
    ``nn.softmax`` -> ``matmul`` over (batch, heads, sequence, head size) tensors: 3-D or
    4-D inputs, grouped and multi-query heads, bool or float attn_mask, is_causal, scale,
    softcap, the KV cache (past and present key/value), nonpad_kv_seqlen, sliding windows,
    softmax_precision and every qk_matmul_output_mode. A query row with every key masked
    gives zeros."""
    heads = _Heads(ctx)
    dtype = heads.dtype
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise ctx.error(f"expected qk_matmul_output_mode 0, 1, 2 or 3, found {mode}")
    past = heads.join_cache()
    present_k, present_v = heads.k, heads.v
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(heads.head_size) if scale is None else float(scale)
    root = const(math.sqrt(scale), dtype)
    k_t = relay.transpose(relay.multiply(heads.repeat_kv(heads.k), root), axes=(0, 1, 3, 2))
    scores = relay.matmul(relay.multiply(heads.q, root), k_t)
    raw = scores
    softcap = float(ctx.attr("softcap", 0.0))
    if softcap > 0:
        cap = const(softcap, dtype)
        scores = relay.multiply(relay.tanh(relay.divide(scores, cap)), cap)
    capped = scores
    bias = _attention_bias(ctx, heads, past)
    bias_expr = bias.expr()
    rows = bias.masked_rows(bias_expr)
    if bias_expr is not None:
        scores = relay.add(scores, bias_expr)
    with_bias = scores
    if rows is not None:  # keep fully masked rows finite; they are zeroed below
        scores = relay.where(rows, const(0.0, dtype), scores)
    soft_dtype = _softmax_dtype(ctx, dtype)
    if soft_dtype != dtype:
        scores = relay.cast(scores, dtype=soft_dtype)
    probs = _softmax(scores, soft_dtype)
    if soft_dtype != dtype:
        probs = relay.cast(probs, dtype=dtype)
    if rows is not None:
        probs = relay.where(rows, const(0.0, dtype), probs)
    y = heads.merge_heads(relay.matmul(probs, heads.repeat_kv(heads.v)))
    qk = (raw, capped, with_bias, probs)[mode]
    return [y, present_k, present_v, qk]


# -- RotaryEmbedding --------------------------------------------------------------------------
@computed_in_float32
def _rotary_embedding(ctx: NodeContext) -> Value:
    """ONNX RotaryEmbedding becomes slices, products and ``concatenate`` over the rotated part
    of each head: 3-D (with num_heads) or 4-D input, halves or interleaved pairs,
    rotary_embedding_dim, and caches indexed by position_ids (``take``) or given per
    position."""
    dtype = float_input(ctx, 0, "X")
    shape = ctx.shape(0)
    if len(shape) == 4:
        batch, heads, seq, head_size = shape
        x = ctx.input(0)
        cache_shape = (batch, 1, seq)  # the caches broadcast over the heads axis
    elif len(shape) == 3:
        batch, seq, hidden = shape
        heads = int(ctx.attr("num_heads", 0))
        if heads <= 0 or hidden % heads:
            raise ctx.error(f"expected num_heads dividing the hidden size {hidden} of a 3-D "
                            f"input, found {ctx.attr('num_heads')}")
        head_size = hidden // heads
        x = relay.reshape(ctx.input(0), newshape=(batch, seq, heads, head_size))
        cache_shape = (batch, seq, 1)
    else:
        raise ctx.error(f"expected a 3-D or 4-D input, found shape {list(shape)}")
    rot = int(ctx.attr("rotary_embedding_dim", 0)) or head_size
    if rot % 2 or not 0 < rot <= head_size:
        raise ctx.error(f"expected an even rotary_embedding_dim of at most the head size "
                        f"{head_size}, found {rot}")
    half = rot // 2
    cos, sin = (_cache(ctx, i, name, (batch, seq, half), dtype)
                for i, name in ((1, "cos_cache"), (2, "sin_cache")))
    cos, sin = (relay.reshape(c, newshape=(*cache_shape, half)) for c in (cos, sin))
    axis = 3
    part = relay.strided_slice(x, begin=(0,), end=(rot,), axes=(axis,)) \
        if rot < head_size else x
    if ctx.attr("interleaved", 0):
        x1 = relay.strided_slice(part, begin=(0,), end=(rot,), strides=(2,), axes=(axis,))
        x2 = relay.strided_slice(part, begin=(1,), end=(rot,), strides=(2,), axes=(axis,))
    else:
        x1 = relay.strided_slice(part, begin=(0,), end=(half,), axes=(axis,))
        x2 = relay.strided_slice(part, begin=(half,), end=(rot,), axes=(axis,))
    real = relay.subtract(relay.multiply(cos, x1), relay.multiply(sin, x2))
    imag = relay.add(relay.multiply(sin, x1), relay.multiply(cos, x2))
    if ctx.attr("interleaved", 0):
        lead = (batch, heads, seq) if len(shape) == 4 else (batch, seq, heads)
        pairs = relay.concatenate([relay.reshape(real, newshape=(*lead, half, 1)),
                                   relay.reshape(imag, newshape=(*lead, half, 1))], axis=4)
        rotated = relay.reshape(pairs, newshape=(*lead, rot))
    else:
        rotated = relay.concatenate([real, imag], axis=axis)
    if rot < head_size:
        rest = relay.strided_slice(x, begin=(rot,), end=(head_size,), axes=(axis,))
        rotated = relay.concatenate([rotated, rest], axis=axis)
    return rotated if len(shape) == 4 else relay.reshape(rotated, newshape=shape)


def _cache(ctx: NodeContext, index: int, name: str, want: tuple[int, int, int],
           dtype: str) -> Expr:
    """cos_cache or sin_cache as (batch, seq, rotary_dim / 2): indexed by position_ids
    (input 3) when given."""
    found_dtype = ctx.dtype(index)
    if found_dtype != dtype:
        raise ctx.error(f"expected {name} (input {index}) of type {dtype} (X's), found "
                        f"{found_dtype}")
    shape = tuple(ctx.shape(index))
    if ctx.has_input(3):
        if tuple(ctx.shape(3)) != want[:2]:
            raise ctx.error(f"expected position_ids of shape {list(want[:2])}, found "
                            f"{list(ctx.shape(3))}")
        if len(shape) != 2 or shape[1] != want[2]:
            raise ctx.error(f"expected {name} of shape [max_position, {want[2]}] with "
                            f"position_ids, found {list(shape)}")
        if ctx.is_known(3):
            ids = ctx.known(3).astype(np.int64)
            if np.any(ids < 0) or np.any(ids >= shape[0]):
                raise ctx.error(f"expected position_ids in [0, {shape[0]}), found "
                                f"{ids.tolist()}")
            return relay.take(ctx.input(index), const(ids.astype(np.int32)), axis=0)
        return relay.take(ctx.input(index), ctx.input(3), axis=0)
    if shape != want:
        raise ctx.error(f"expected {name} of shape {list(want)} without position_ids, found "
                        f"{list(shape)}")
    return ctx.input(index)


# -- FlexAttention ----------------------------------------------------------------------------
class _Substitute(ExprMutator):
    """Rebuilds an expression with some variables replaced by expressions."""

    def __init__(self, values: dict[Var, Expr]) -> None:
        super().__init__()
        self.values = values

    def visit_var(self, var: Var) -> Expr:
        """The expression that replaces ``var`` (itself when none does)."""
        return self.values.get(var, var)


def _modifier(ctx: NodeContext, name: str, x: Expr, ty: TensorType) -> Expr:
    """``x`` (of type ``ty``) through the graph of attribute ``name``, which takes one tensor
    and gives one of the same type; ``x`` itself without the attribute."""
    graph = ctx.attr(name)
    if graph is None:
        return x
    if not isinstance(graph, GraphProto) or len(graph.input) != 1 or len(graph.output) != 1:
        found = (f"{len(graph.input)} input(s) and {len(graph.output)} output(s)"
                 if isinstance(graph, GraphProto) else type(graph).__name__)
        raise ctx.error(f"attribute {name!r}: expected a graph of one input and one output, "
                        f"found {found}")
    defined = {graph.input[0].name, *(t.name for t in graph.initializer),
               *(o for n in graph.node for o in n.output)}
    outer = sorted({i for n in graph.node for i in n.input if i and i not in defined})
    if outer:
        raise ctx.error(f"attribute {name!r}: expected a graph using only its input, "
                        f"initializers and constants, found values of the enclosing graph "
                        f"{outer}")
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(ty.dtype))
    declared = graph.input[0].type.tensor_type.elem_type
    if declared not in (TensorProto.UNDEFINED, elem):
        raise ctx.error(f"attribute {name!r}: expected its input of type {ty.dtype}, found "
                        f"{helper.tensor_dtype_to_np_dtype(declared).name}")
    body = GraphProto()
    body.CopyFrom(graph)
    body.input[0].CopyFrom(helper.make_tensor_value_info(graph.input[0].name, elem, ty.shape))
    model = helper.make_model(body, opset_imports=[helper.make_opsetid("", ctx.opset)])
    try:
        mod, params = from_onnx(model)
    except OnnxImportError as exc:
        raise ctx.error(f"attribute {name!r}: {exc}") from exc
    func = mod["main"]
    if func.body.checked_type != ty:
        raise ctx.error(f"attribute {name!r}: expected its output of type {ty}, found "
                        f"{func.body.checked_type}")
    values: dict[Var, Expr] = {}
    for p in func.params:
        value = params.get(p.name_hint)
        values[p] = x if value is None else const(value, value.dtype.name)
    return _Substitute(values).visit(func.body)


def _flex_softmax_dtype(ctx: NodeContext, dtype: str) -> str:
    """softmax_precision, by default float32 (float64 for float64 inputs)."""
    if ctx.attr("softmax_precision") is not None:
        return _softmax_dtype(ctx, dtype)
    return "float64" if dtype == "float64" else "float32"


def _flex_attention(ctx: NodeContext) -> Value:
    """ONNX FlexAttention (domain ai.onnx.preview) becomes ``matmul`` -> the score_mod graph
    -> ``nn.softmax`` -> the prob_mod graph -> ``matmul``, the modifier graphs imported in
    place; grouped query heads, scale and softmax_precision (float32 by default). The
    modifier graphs may use their input, initializers and constants, not values of the
    enclosing graph."""
    for index, name in enumerate("QKV"):
        if len(ctx.shape(index)) != 4:
            raise ctx.error(f"expected a 4-D {name} (input {index}), found shape "
                            f"{list(ctx.shape(index))}")
    heads = _Heads(ctx)
    dtype = heads.dtype
    scale = ctx.attr("scale")
    if scale is None and heads.head_size < 1:
        raise ctx.error("expected a head size of at least 1 (or the attribute scale), found 0")
    scale = 1.0 / math.sqrt(heads.head_size) if scale is None else float(scale)
    root = const(np.sqrt(np.float32(scale)), dtype)
    k_t = relay.transpose(relay.multiply(heads.repeat_kv(heads.k), root), axes=(0, 1, 3, 2))
    scores = relay.matmul(relay.multiply(heads.q, root), k_t)
    work = _flex_softmax_dtype(ctx, dtype)
    v = heads.repeat_kv(heads.v)
    if work != dtype:
        scores, v = relay.cast(scores, dtype=work), relay.cast(v, dtype=work)
    ty = TensorType((heads.batch, heads.q_heads, heads.q_len, heads.kv_len), work)
    probs = _softmax(_modifier(ctx, "score_mod", scores, ty), work)
    out = relay.matmul(_modifier(ctx, "prob_mod", probs, ty), v)
    return relay.cast(out, dtype=dtype) if work != dtype else out


# -- TensorScatter, SwiGLU --------------------------------------------------------------------
def _tensor_scatter(ctx: NodeContext) -> Value:
    """ONNX TensorScatter (a KV-cache write) becomes ``scatter_elements`` along the sequence
    axis with the positions write_indices + step (modulo the cache length in circular mode):
    constant when write_indices is known or absent, else ``add`` (and ``floor_mod``) at run
    time."""
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.error(f"expected mode 'linear' or 'circular', found {mode!r}")
    past, update = ctx.shape(0), ctx.shape(1)
    rank = len(past)
    axis = int(ctx.attr("axis", -2))
    if rank < 2 or not -rank <= axis < rank or axis % rank == 0:
        raise ctx.error(f"expected an axis in [{1 - rank}, {rank}) other than the batch axis "
                        f"(0) of the {rank}-D cache, found {axis}")
    axis %= rank
    if ctx.dtype(1) != ctx.dtype(0):
        raise ctx.error(f"expected update of type {ctx.dtype(0)} (past_cache's), "
                        f"found {ctx.dtype(1)}")
    if len(update) != rank or update[axis] > past[axis] or any(
            u != p for a, (u, p) in enumerate(zip(update, past)) if a != axis):
        raise ctx.error(f"expected update of past_cache's shape {list(past)} but at most as "
                        f"long along axis {axis}, found {list(update)}")
    size, batch = past[axis], past[0]
    steps = np.arange(update[axis], dtype=np.int64).reshape(
        [update[axis] if a == axis else 1 for a in range(rank)])
    row = (batch, *[1] * (rank - 1))
    if not ctx.has_input(2) or ctx.is_known(2):
        if ctx.has_input(2) and ctx.known(2).shape != (batch,):
            raise ctx.error(f"expected write_indices of shape [{batch}], found "
                            f"{list(ctx.known(2).shape)}")
        start = ctx.known(2).astype(np.int64) if ctx.has_input(2) else np.zeros(batch, np.int64)
        index = start.reshape(row) + steps
        if mode == "circular":
            index %= size
        elif np.any(start < 0) or np.any(index >= size):
            raise ctx.error(f"expected write_indices in [0, {size - update[axis]}] (linear "
                            f"mode), found {start.tolist()}")
        indices: Expr = const(np.ascontiguousarray(np.broadcast_to(index, update)))
    else:
        if tuple(ctx.shape(2)) != (batch,) or ctx.dtype(2) != "int64":
            raise ctx.error(f"expected write_indices of shape [{batch}] and type int64, found "
                            f"{list(ctx.shape(2))} of type {ctx.dtype(2)}")
        indices = relay.add(relay.reshape(ctx.input(2), newshape=row), const(steps))
        if mode == "circular":
            indices = relay.floor_mod(indices, const(np.asarray(size, np.int64)))
        indices = relay.broadcast_to(indices, shape=update)
    return relay.scatter_elements(ctx.input(0), indices, ctx.input(1), axis=axis)


@computed_in_float32
def _swiglu(ctx: NodeContext) -> Value:
    """ONNX SwiGLU becomes A * ``sigmoid``(alpha * A) * B (``multiply``); A and B of one
    shape and type."""
    dtype = float_input(ctx, 0, "A")
    if ctx.dtype(1) != dtype or ctx.shape(1) != ctx.shape(0):
        raise ctx.error(f"expected B of A's shape {list(ctx.shape(0))} and type {dtype}, "
                        f"found {list(ctx.shape(1))} of type {ctx.dtype(1)}")
    a = ctx.input(0)
    alpha = float(ctx.attr("alpha", 1.0))
    gate = a if alpha == 1.0 else relay.multiply(a, const(alpha, dtype))
    return relay.multiply(relay.multiply(a, relay.sigmoid(gate)), ctx.input(1))


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Attention": _attention,
    "RotaryEmbedding": _rotary_embedding,
    "ai.onnx.preview.FlexAttention": _flex_attention,
    "TensorScatter": _tensor_scatter,
    "SwiGLU": _swiglu,
}
