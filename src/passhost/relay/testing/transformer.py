"""One transformer encoder block, post-layer-norm as in BERT.

Input ``data`` is (batch, seq_len, d_model); the output has the same shape. Projections
run as 2-D ``nn.dense`` + ``nn.bias_add`` on (batch * seq_len, d_model); attention uses
``nn.batch_matmul`` over (batch * num_heads) with the scores scaled by 1/sqrt(d_head);
the feed-forward network uses the exact GELU ``x * 0.5 * (1 + erf(x / sqrt(2)))``.

Parameters: ``attn_{q,k,v,out}_{weight,bias}``, ``ln1_{gamma,beta}``,
``ffn1_{weight,bias}``, ``ffn2_{weight,bias}``, ``ln2_{gamma,beta}``.
"""

from __future__ import annotations

import math

import numpy as np

from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.analysis import free_vars
from passhost.relay.expr import Expr, Function, const, var
from passhost.relay.testing import layers
from passhost.relay.testing.init import create_workload

__all__ = ["encoder_block", "gelu", "get_net", "get_workload"]

_LN_EPS = 1e-5


def gelu(x: Expr, dtype: str = "float32") -> Expr:
    """Exact GELU: ``x * 0.5 * (1 + erf(x / sqrt(2)))``."""
    erf = relay.erf(relay.multiply(x, const(1.0 / math.sqrt(2.0), dtype)))
    return relay.multiply(relay.multiply(x, const(0.5, dtype)),
                          relay.add(const(1.0, dtype), erf))


def encoder_block(data: Expr, num_heads: int, d_ff: int, name: str = "",
                  dtype: str = "float32") -> Expr:
    """A post-LN encoder block on ``data`` of shape (batch, seq_len, d_model)."""
    batch, seq_len, d_model = layers.tensor_type(data).shape
    if d_model % num_heads:
        raise ValueError(f"d_model {d_model} is not a multiple of num_heads {num_heads}")
    d_head = d_model // num_heads
    bh = batch * num_heads
    prefix = f"{name}_" if name else ""

    x = relay.reshape(data, newshape=(batch * seq_len, d_model))

    def heads(t: Expr, axes: tuple[int, ...], shape: tuple[int, int, int]) -> Expr:
        t = relay.reshape(t, newshape=(batch, seq_len, num_heads, d_head))
        return relay.reshape(relay.transpose(t, axes=axes), newshape=shape)

    q = layers.dense_add_bias(x, units=d_model, name=f"{prefix}attn_q")
    k = layers.dense_add_bias(x, units=d_model, name=f"{prefix}attn_k")
    v = layers.dense_add_bias(x, units=d_model, name=f"{prefix}attn_v")
    q = heads(q, (0, 2, 1, 3), (bh, seq_len, d_head))
    k = heads(k, (0, 2, 1, 3), (bh, seq_len, d_head))
    # V transposed to (bh, d_head, seq_len) so both products use batch_matmul's y^T form.
    v_t = heads(v, (0, 2, 3, 1), (bh, d_head, seq_len))

    scores = nn.batch_matmul(q, k, transpose_b=True)
    scores = relay.multiply(scores, const(1.0 / math.sqrt(d_head), dtype))
    probs = nn.softmax(scores, axis=-1)
    context = nn.batch_matmul(probs, v_t, transpose_b=True)  # (bh, seq_len, d_head)
    context = relay.reshape(context, newshape=(batch, num_heads, seq_len, d_head))
    context = relay.transpose(context, axes=(0, 2, 1, 3))
    context = relay.reshape(context, newshape=(batch * seq_len, d_model))

    attn = layers.dense_add_bias(context, units=d_model, name=f"{prefix}attn_out")
    h = layers.layer_norm(relay.add(attn, x), name=f"{prefix}ln1", epsilon=_LN_EPS)

    ff = gelu(layers.dense_add_bias(h, units=d_ff, name=f"{prefix}ffn1"), dtype)
    ff = layers.dense_add_bias(ff, units=d_model, name=f"{prefix}ffn2")
    out = layers.layer_norm(relay.add(ff, h), name=f"{prefix}ln2", epsilon=_LN_EPS)
    return relay.reshape(out, newshape=(batch, seq_len, d_model))


def get_net(batch_size: int = 1, seq_len: int = 16, d_model: int = 64, num_heads: int = 4,
            d_ff: int = 256, dtype: str = "float32") -> Function:
    """The encoder-block graph function of input ``data`` (batch_size, seq_len, d_model)."""
    data = var("data", shape=(batch_size, seq_len, d_model), dtype=dtype)
    net = encoder_block(data, num_heads, d_ff, dtype=dtype)
    return Function(free_vars(net), net)


def get_workload(batch_size: int = 1, seq_len: int = 16, d_model: int = 64,
                 num_heads: int = 4, d_ff: int = 256, dtype: str = "float32",
                 ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """A transformer-encoder-block module and its deterministic parameters."""
    return create_workload(get_net(batch_size, seq_len, d_model, num_heads, d_ff, dtype))
