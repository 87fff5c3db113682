"""ONNX Attention (opsets 23 to 25), RotaryEmbedding and TensorScatter against onnxruntime;
SwiGLU, LinearAttention and FlexAttention (which onnxruntime lacks) against ONNX's
reference implementation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    compare,
    make_model,
    node,
    run_onnxruntime,
    run_passhost,
    run_reference,
)

RNG = np.random.default_rng(20261202)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def model_of(op, names, outputs, inputs, opset, **attrs):
    model = make_model([node(op, names, outputs, **attrs)], inputs, None,
                       tuple(o for o in outputs if o), opset)
    model.ir_version = 10
    return model





def qkv(batch=2, q_heads=4, kv_heads=4, q_len=3, kv_len=5, head=8, v_head=8, rank=4,
        dtype="float32"):
    """Q, K, V inputs and the head attributes 3-D inputs need."""
    if rank == 4:
        inputs = {"Q": rand(batch, q_heads, q_len, head, dtype=dtype),
                  "K": rand(batch, kv_heads, kv_len, head, dtype=dtype),
                  "V": rand(batch, kv_heads, kv_len, v_head, dtype=dtype)}
        return inputs, {}
    inputs = {"Q": rand(batch, q_len, q_heads * head, dtype=dtype),
              "K": rand(batch, kv_len, kv_heads * head, dtype=dtype),
              "V": rand(batch, kv_len, kv_heads * v_head, dtype=dtype)}
    return inputs, {"q_num_heads": q_heads, "kv_num_heads": kv_heads}


def attention(inputs, names=("Q", "K", "V"), outputs=("Y",), opset=23, **attrs):
    return model_of("Attention", list(names), list(outputs), inputs, opset, **attrs)


# -- Attention ------------------------------------------------------------------------------
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("q_heads, kv_heads", [(4, 4), (4, 2), (3, 1)])
@pytest.mark.parametrize("v_head", [8, 6])
def test_heads_grouped_query_and_value_head_sizes(rank, q_heads, kv_heads, v_head):
    inputs, heads = qkv(q_heads=q_heads, kv_heads=kv_heads, v_head=v_head, rank=rank)
    compare(attention(inputs, **heads), inputs)


@pytest.mark.parametrize("attrs", [
    {"is_causal": 1}, {"scale": 0.05}, {"softcap": 1.5}, {"is_causal": 1, "softcap": 0.7},
])
@pytest.mark.parametrize("rank", [3, 4])
def test_causal_scale_and_softcap(attrs, rank):
    inputs, heads = qkv(rank=rank, q_heads=2, kv_heads=2)
    compare(attention(inputs, **heads, **attrs), inputs)


@pytest.mark.parametrize("mask_shape", [(3, 5), (1, 3, 5), (2, 1, 3, 5), (2, 4, 3, 5),
                                        (5,), (3, 4)])
@pytest.mark.parametrize("dtype", ["bool", "float32"])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_masks(mask_shape, dtype, causal):
    """Bool masks let True through, float masks add; a last axis shorter than the keys is
    padded with masked positions (onnxruntime takes neither a rank-1 mask nor a short one:
    those compare with ONNX's reference)."""
    inputs, _ = qkv()
    if dtype == "bool":
        mask = RNG.random(mask_shape) < 0.7
        mask[..., 0] = True  # no fully masked rows: onnxruntime gives NaN for them
    else:
        mask = rand(*mask_shape)
    inputs["M"] = mask
    model = attention(inputs, ("Q", "K", "V", "M"), is_causal=causal)
    if mask_shape == (5,):  # the reference's causal path wants a mask of rank 2 or more
        model2d = attention({**inputs, "M": np.broadcast_to(mask, (3, 5))},
                            ("Q", "K", "V", "M"), is_causal=causal)
        want = run_reference(model2d, {**inputs, "M": np.broadcast_to(mask, (3, 5))})
        np.testing.assert_allclose(run_passhost(model, inputs)[0], want[0], rtol=1e-4,
                                   atol=1e-5)
        return
    oracle = run_reference if mask_shape == (3, 4) else run_onnxruntime
    compare(model, inputs, oracle=oracle)


def test_fully_masked_rows_are_zero():
    inputs, _ = qkv(q_len=3, kv_len=4)
    mask = np.ones((3, 4), bool)
    mask[1] = False
    inputs["M"] = mask
    model = attention(inputs, ("Q", "K", "V", "M"), ("Y", "", "", "QK"),
                      qk_matmul_output_mode=3, opset=24)
    y, qk = run_passhost(model, inputs)
    assert np.all(y[:, :, 1] == 0) and np.all(qk[:, :, 1] == 0)
    assert np.all(np.isfinite(y)) and np.all(np.abs(y[:, :, 0]) > 0)
    np.testing.assert_allclose(qk[:, :, [0, 2]].sum(-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("q_heads, kv_heads", [(4, 4), (4, 2)])
def test_past_and_present_key_value(rank, causal, q_heads, kv_heads):
    inputs, heads = qkv(rank=rank, q_heads=q_heads, kv_heads=kv_heads, v_head=6)
    inputs["PK"] = rand(2, kv_heads, 4, 8)
    inputs["PV"] = rand(2, kv_heads, 4, 6)
    inputs["M"] = rand(3, 9)
    model = attention(inputs, ("Q", "K", "V", "M", "PK", "PV"), ("Y", "PKo", "PVo"),
                      is_causal=causal, **heads)
    compare(model, inputs)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_qk_matmul_output_modes(mode):
    inputs, _ = qkv()
    inputs["M"] = rand(3, 5)
    model = attention(inputs, ("Q", "K", "V", "M"), ("Y", "", "", "QK"),
                      qk_matmul_output_mode=mode, softcap=1.2, opset=24)
    compare(model, inputs)


@pytest.mark.parametrize("lengths, causal", [([5, 3], 1), ([2, 5], 0), ([4, 4], 1)])
def test_nonpad_kv_seqlen(lengths, causal):
    """An external cache: keys past each entry's length are padding, and the causal mask is
    aligned to the entry's last valid key."""
    inputs, _ = qkv(q_heads=4, kv_heads=2)
    inputs["L"] = np.array(lengths, "int64")
    model = attention(inputs, ("Q", "K", "V", "", "", "", "L"), is_causal=causal, opset=24)
    compare(model, inputs)


@pytest.mark.parametrize("attrs", [
    {"left_window_size": 1}, {"left_window_size": 2, "is_causal": 1},
    {"left_window_size": 0, "right_window_size": 1}, {"right_window_size": 0},
])
@pytest.mark.parametrize("cache", ["none", "past", "nonpad"])
def test_sliding_windows(attrs, cache):
    inputs, _ = qkv(q_len=4, kv_len=4)
    names = ["Q", "K", "V"]
    outputs = ["Y"]
    if cache == "past":
        inputs["PK"], inputs["PV"] = rand(2, 4, 2, 8), rand(2, 4, 2, 8)
        names += ["", "PK", "PV"]
        outputs += ["PKo", "PVo"]
    elif cache == "nonpad":
        inputs["L"] = np.array([4, 3], "int64")
        names += ["", "", "", "L"]
    compare(attention(inputs, names, outputs, opset=25, **attrs), inputs)


def test_float64_with_a_short_mask_and_causal_bias():
    """Float64 constants (the folded bias, the mask's padding, the scale) keep float64."""
    inputs, _ = qkv(dtype="float64")
    inputs["M"] = rand(3, 4, dtype="float64")
    compare(attention(inputs, ("Q", "K", "V", "M"), is_causal=1), inputs,
            rtol=1e-10, atol=1e-10, oracle=run_reference)


@pytest.mark.parametrize("precision", [None, TensorProto.FLOAT])
def test_float16_with_softmax_precision(precision):
    inputs, _ = qkv(dtype="float16")
    inputs["M"] = rand(3, 5, dtype="float16")
    attrs = {} if precision is None else {"softmax_precision": precision}
    model = attention(inputs, ("Q", "K", "V", "M"), ("Y", "", "", "QK"),
                      qk_matmul_output_mode=3, is_causal=1, **attrs)
    compare(model, inputs, rtol=5e-3, atol=2e-3)


@settings(max_examples=15, deadline=None)
@given(rank=st.sampled_from([3, 4]), batch=st.integers(1, 2), kv_heads=st.integers(1, 3),
       group=st.integers(1, 3), q_len=st.integers(1, 4), kv_len=st.integers(1, 5),
       head=st.sampled_from([2, 4, 8]), causal=st.sampled_from([0, 1]))
def test_random_shapes(rank, batch, kv_heads, group, q_len, kv_len, head, causal):
    inputs, heads = qkv(batch=batch, q_heads=kv_heads * group, kv_heads=kv_heads,
                        q_len=q_len, kv_len=max(kv_len, q_len), head=head, v_head=head,
                        rank=rank)
    compare(attention(inputs, is_causal=causal, **heads), inputs)


# -- RotaryEmbedding -----------------------------------------------------------------------
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("position_ids", ["input", "constant", None])
def test_rotary_embedding(rank, interleaved, rotary_dim, position_ids):
    batch, heads, seq, head = 2, 3, 4, 8
    x = rand(batch, heads, seq, head) if rank == 4 else rand(batch, seq, heads * head)
    half = (rotary_dim or head) // 2
    inputs = {"X": x}
    names = ["X", "C", "S"]
    attrs = {"interleaved": interleaved}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    if rank == 3:
        attrs["num_heads"] = heads
    if position_ids is None:
        inputs["C"], inputs["S"] = rand(batch, seq, half), rand(batch, seq, half)
        model = model_of("RotaryEmbedding", names, ["Y"], inputs, 23, **attrs)
        compare(model, inputs)
        return
    inputs["C"], inputs["S"] = rand(10, half), rand(10, half)
    ids = RNG.integers(0, 10, size=(batch, seq)).astype("int64")
    names.append("P")
    if position_ids == "input":
        inputs["P"] = ids
        model = model_of("RotaryEmbedding", names, ["Y"], inputs, 23, **attrs)
    else:
        graph_inputs = dict(inputs)
        model = make_model([node("RotaryEmbedding", names, ["Y"], **attrs)], graph_inputs,
                           {"P": ids}, ("Y",), 23)
        model.ir_version = 10
    compare(model, inputs)


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("rank, names, attrs, extra, message", [
    (3, ("Q", "K", "V"), {"q_num_heads": 4}, {},
     r"Attention node .*q_num_heads and kv_num_heads for 3-D"),
    (3, ("Q", "K", "V"), {"q_num_heads": 5, "kv_num_heads": 4}, {},
     r"Attention node .*hidden size 32 \(input 0\) to be a multiple"),
    (4, ("Q", "K", "V"), {"kv_num_heads": 3}, {},
     r"Attention node .*kv_num_heads to match the 4-D inputs' heads \(4\), found 3"),
    (4, ("Q", "K", "V", "M"), {}, {"M": np.zeros((3, 7), "float32")},
     r"Attention node .*attn_mask of rank 1 to 4 broadcastable"),
    (4, ("Q", "K", "V", "M"), {}, {"M": np.zeros((4, 5), "float32")},
     r"Attention node .*attn_mask broadcastable to \[2, 4, 3, 5\]"),
    (4, ("Q", "K", "V", "M"), {}, {"M": np.zeros((3, 5), "int32")},
     r"Attention node .*attn_mask of type bool or float32"),
    (4, ("Q", "K", "V", "", "PK"), {}, {"PK": np.zeros((2, 4, 1, 8), "float32")},
     r"Attention node .*past_key and past_value together"),
    (4, ("Q", "K", "V"), {"qk_matmul_output_mode": 4}, {},
     r"Attention node .*qk_matmul_output_mode 0, 1, 2 or 3, found 4"),
    (4, ("Q", "K", "V"), {"softmax_precision": TensorProto.INT32}, {},
     r"Attention node .*softmax_precision of a type among .* found int32"),
    (4, ("Q", "K", "V"), {"left_window_size": -2}, {},
     r"Attention node .*left_window_size -1 \(unbounded\) or at least 0, found -2"),
])
def test_malformed_attention_names_the_node(rank, names, attrs, extra, message):
    inputs, _ = qkv(rank=rank)
    inputs.update(extra)
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(attention(inputs, names, opset=25, **attrs))


def test_grouped_heads_must_divide_the_query_heads():
    inputs, _ = qkv(q_heads=4, kv_heads=3)
    with pytest.raises(OnnxImportError, match=r"Attention node .*q_num_heads \(4\) to be a "
                                              r"multiple of kv_num_heads \(3\)"):
        from_onnx(attention(inputs))


@pytest.mark.parametrize("attrs, cache_shape, message", [
    ({"rotary_embedding_dim": 5}, (2, 4, 4), r"even rotary_embedding_dim of at most the head"),
    ({"rotary_embedding_dim": 10}, (2, 4, 4), r"even rotary_embedding_dim of at most the head"),
    ({}, (2, 3, 4), r"cos_cache of shape \[2, 4, 4\] without position_ids"),
])
def test_malformed_rotary_embedding_names_the_node(attrs, cache_shape, message):
    inputs = {"X": rand(2, 3, 4, 8), "C": rand(*cache_shape), "S": rand(*cache_shape)}
    model = model_of("RotaryEmbedding", ["X", "C", "S"], ["Y"], inputs, 23, **attrs)
    with pytest.raises(OnnxImportError, match=r"RotaryEmbedding node .*" + message):
        from_onnx(model)


def test_rotary_embedding_of_3d_input_needs_num_heads():
    inputs = {"X": rand(2, 4, 24), "C": rand(2, 4, 4), "S": rand(2, 4, 4)}
    model = model_of("RotaryEmbedding", ["X", "C", "S"], ["Y"], inputs, 23)
    with pytest.raises(OnnxImportError, match=r"RotaryEmbedding node .*num_heads dividing"):
        from_onnx(model)


def test_constant_position_ids_out_of_range_name_the_node():
    inputs = {"X": rand(2, 3, 4, 8), "C": rand(6, 4), "S": rand(6, 4)}
    model = make_model([node("RotaryEmbedding", ["X", "C", "S", "P"], ["Y"])], inputs,
                       {"P": np.full((2, 4), 6, "int64")}, ("Y",), 23)
    with pytest.raises(OnnxImportError, match=r"RotaryEmbedding node .*position_ids in "
                                              r"\[0, 6\)"):
        from_onnx(model)


# -- SwiGLU ----------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [None, 1.702, -0.5])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_swiglu(alpha, dtype):
    inputs = {"A": rand(3, 4, 6, dtype=dtype), "B": rand(3, 4, 6, dtype=dtype)}
    attrs = {} if alpha is None else {"alpha": alpha}
    model = model_of("SwiGLU", ["A", "B"], ["Y"], inputs, 28, **attrs)
    tol = 2e-3 if dtype == "float16" else 1e-5
    compare(model, inputs, rtol=tol, atol=tol, oracle=run_reference)


def test_swiglu_needs_inputs_of_one_shape():
    inputs = {"A": rand(3, 4), "B": rand(1, 4)}
    with pytest.raises(OnnxImportError, match=r"SwiGLU node .*B of A's shape \[3, 4\] and type "
                                              r"float32, found \[1, 4\]"):
        from_onnx(model_of("SwiGLU", ["A", "B"], ["Y"], inputs, 28))


# -- TensorScatter ---------------------------------------------------------------------------
def tensor_scatter(inputs, known=None, **attrs):
    names = ["past", "update", "write" if "write" in {**inputs, **(known or {})} else ""]
    model = make_model([node("TensorScatter", [n for n in names if n], ["Y"], **attrs)],
                       inputs, known, ("Y",), 24)
    model.ir_version = 10
    return model


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("where", ["input", "known", "absent"])
@pytest.mark.parametrize("past_shape, update_len, axis", [
    ((2, 3, 6, 4), 2, None), ((3, 5, 4), 3, 1), ((2, 4, 7), 7, -1), ((2, 5, 2, 3), 1, 1),
])
def test_tensor_scatter(mode, where, past_shape, update_len, axis):
    rank = len(past_shape)
    ax = (-2 if axis is None else axis) % rank
    update_shape = tuple(update_len if a == ax else d for a, d in enumerate(past_shape))
    inputs = {"past": rand(*past_shape), "update": rand(*update_shape)}
    size, batch = past_shape[ax], past_shape[0]
    if mode == "linear":
        write = RNG.integers(0, size - update_len + 1, batch)
    else:
        write = RNG.integers(0, size, batch)
    known = {}
    if where == "input":
        inputs["write"] = write.astype("int64")
    elif where == "known":
        known["write"] = write.astype("int64")
    attrs = {"mode": mode} | ({} if axis is None else {"axis": axis})
    compare(tensor_scatter(inputs, known, **attrs), inputs)


@pytest.mark.parametrize("attrs, update_shape, write, message", [
    ({"axis": 0}, (2, 2, 4), None, r"axis in \[-2, 3\) other than the batch axis"),
    ({"mode": "ring"}, (2, 2, 4), None, r"mode 'linear' or 'circular', found 'ring'"),
    ({}, (2, 7, 4), None, r"update of past_cache's shape \[2, 6, 4\] but at most as long"),
    ({}, (2, 2, 3), None, r"update of past_cache's shape"),
    ({}, (2, 2, 4), [5, 0], r"write_indices in \[0, 4\] \(linear mode\), found \[5, 0\]"),
    ({}, (2, 2, 4), [0, 0, 0], r"write_indices of shape \[2\], found \[3\]"),
])
def test_malformed_tensor_scatter_names_the_node(attrs, update_shape, write, message):
    inputs = {"past": rand(2, 6, 4), "update": rand(*update_shape)}
    known = {} if write is None else {"write": np.array(write, "int64")}
    with pytest.raises(OnnxImportError, match=r"TensorScatter node .*" + message):
        from_onnx(tensor_scatter(inputs, known, **attrs))


# -- LinearAttention -------------------------------------------------------------------------
def linear_attention_inputs(rule, batch=2, steps=4, q_heads=4, kv_heads=4, dk=8, dv=8,
                            per_head_decay=False, shared_beta=False, past=False,
                            dtype="float32"):
    keys = rand(batch, steps, kv_heads, dk)
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)  # as delta rules expect
    inputs = {"q": rand(batch, steps, q_heads * dk), "k": keys.reshape(batch, steps, -1),
              "v": rand(batch, steps, kv_heads * dv)}
    names = ["q", "k", "v", "", "", ""]
    if past:
        names[3], inputs["s"] = "s", rand(batch, kv_heads, dk, dv)
    if rule in ("gated", "gated_delta"):
        width = kv_heads if per_head_decay else kv_heads * dk
        names[4], inputs["g"] = "g", -np.abs(rand(batch, steps, width)) * 0.3
    if rule in ("delta", "gated_delta"):
        width = 1 if shared_beta else kv_heads
        names[5], inputs["b"] = "b", 1 / (1 + np.exp(-rand(batch, steps, width)))
    while not names[-1]:
        names.pop()
    return {k: v.astype(dtype) for k, v in inputs.items()}, names


def linear_attention(inputs, names, q_heads=4, kv_heads=4, **attrs):
    return model_of("LinearAttention", names, ["Y", "S"], inputs, 27, q_num_heads=q_heads,
                    kv_num_heads=kv_heads, **attrs)


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("past", [False, True])
@pytest.mark.parametrize("steps", [1, 5])
def test_linear_attention_update_rules(rule, past, steps):
    inputs, names = linear_attention_inputs(rule, steps=steps, past=past)
    attrs = {} if rule == "gated_delta" else {"update_rule": rule}
    compare(linear_attention(inputs, names, **attrs), inputs, oracle=run_reference)


@pytest.mark.parametrize("q_heads, kv_heads, dk, dv", [(4, 2, 8, 6), (6, 1, 4, 4),
                                                       (2, 2, 3, 5)])
@pytest.mark.parametrize("per_head_decay, shared_beta", [(False, False), (True, True)])
def test_linear_attention_grouped_heads_and_gate_shapes(q_heads, kv_heads, dk, dv,
                                                        per_head_decay, shared_beta):
    inputs, names = linear_attention_inputs("gated_delta", q_heads=q_heads, kv_heads=kv_heads,
                                            dk=dk, dv=dv, per_head_decay=per_head_decay,
                                            shared_beta=shared_beta, past=True)
    compare(linear_attention(inputs, names, q_heads, kv_heads, scale=0.3, chunk_size=2),
            inputs, oracle=run_reference)


def test_linear_attention_in_float16_recurs_in_float32():
    inputs, names = linear_attention_inputs("gated_delta", past=True, dtype="float16")
    got = compare(linear_attention(inputs, names), inputs, rtol=2e-3, atol=2e-3,
                  oracle=run_reference)
    assert [g.dtype for g in got] == [np.float16, np.float16]


@settings(max_examples=20, deadline=None)
@given(rule=st.sampled_from(["linear", "gated", "delta", "gated_delta"]),
       batch=st.integers(1, 2), steps=st.integers(1, 6), kv_heads=st.integers(1, 3),
       group=st.integers(1, 2), dk=st.integers(1, 5), dv=st.integers(1, 5),
       past=st.booleans())
def test_linear_attention_random_shapes(rule, batch, steps, kv_heads, group, dk, dv, past):
    inputs, names = linear_attention_inputs(rule, batch, steps, kv_heads * group, kv_heads, dk,
                                            dv, past=past)
    compare(linear_attention(inputs, names, kv_heads * group, kv_heads, update_rule=rule),
            inputs, oracle=run_reference)


@pytest.mark.parametrize("rule, drop, attrs, message", [
    ("gated", "g", {"update_rule": "gated"}, r"a decay \(input 4\) with update_rule 'gated', "
                                             r"found none"),
    ("linear", None, {"update_rule": "delta"}, r"a beta \(input 5\) with update_rule 'delta'"),
    ("delta", None, {"update_rule": "linear"}, r"no beta \(input 5\) with update_rule "
                                               r"'linear', found one"),
    ("linear", None, {"update_rule": "fast"}, r"update_rule among linear, gated, delta, "
                                              r"gated_delta, found 'fast'"),
    ("linear", None, {"update_rule": "linear", "kv_num_heads": 3}, r"q_num_heads a positive "
                                                                   r"multiple of kv_num_heads"),
])
def test_malformed_linear_attention_names_the_node(rule, drop, attrs, message):
    inputs, names = linear_attention_inputs(rule)
    if drop:
        names = [n if n != drop else "" for n in names]
        del inputs[drop]
    attrs = {"q_num_heads": 4, "kv_num_heads": 4} | attrs
    model = model_of("LinearAttention", names, ["Y", "S"], inputs, 27, **attrs)
    with pytest.raises(OnnxImportError, match=r"LinearAttention node .*" + message):
        from_onnx(model)


def test_linear_attention_gates_and_state_of_the_wrong_shape_name_the_node():
    inputs, names = linear_attention_inputs("gated_delta", past=True)
    inputs["g"] = inputs["g"][..., :5]
    with pytest.raises(OnnxImportError, match=r"LinearAttention node .*decay of shape \[2, 4, "
                                              r"n\] with n in \[4, 32\], found \[2, 4, 5\]"):
        from_onnx(linear_attention(inputs, names))
    inputs, names = linear_attention_inputs("linear", past=True)
    inputs["s"] = inputs["s"][..., :4]
    with pytest.raises(OnnxImportError, match=r"LinearAttention node .*past_state of shape "
                                              r"\[2, 4, 8, 8\]"):
        from_onnx(linear_attention(inputs, names, update_rule="linear"))


# -- FlexAttention ---------------------------------------------------------------------------
def flex_attention(inputs, known=None, **attrs):
    """A FlexAttention node (domain ai.onnx.preview) over Q, K and V."""
    flex = helper.make_node("FlexAttention", ["Q", "K", "V"], ["Y"], name="flex",
                            domain="ai.onnx.preview", **attrs)
    model = make_model([flex], inputs, known, ("Y",), 26)
    model.opset_import.append(helper.make_opsetid("ai.onnx.preview", 1))
    model.ir_version = 10
    return model


def modifier(nodes, initializers=(), name="s", out="s_out"):
    """A one-input, one-output graph for score_mod or prob_mod."""
    return helper.make_graph(nodes, "mod", [helper.make_tensor_value_info(
        name, TensorProto.FLOAT, None)], [helper.make_empty_tensor_value_info(out)],
        list(initializers))


def causal_score_mod():
    """Masks keys after the query (-inf), from the scores' shape (Shape, Range, Where)."""
    ints = {n: numpy_helper.from_array(np.array(v, "int64"), n)
            for n, v in (("zero", 0), ("one", 1), ("i2", 2), ("i3", 3))}
    inits = [*ints.values(), numpy_helper.from_array(np.array([-1, 1], "int64"), "qs"),
             numpy_helper.from_array(np.array([1, -1], "int64"), "ks"),
             numpy_helper.from_array(np.array(-np.inf, "float32"), "ninf")]
    nodes = [helper.make_node("Shape", ["s"], ["shape"]),
             helper.make_node("Gather", ["shape", "i2"], ["L"], axis=0),
             helper.make_node("Gather", ["shape", "i3"], ["S"], axis=0),
             helper.make_node("Range", ["zero", "L", "one"], ["qr"]),
             helper.make_node("Reshape", ["qr", "qs"], ["qi"]),
             helper.make_node("Range", ["zero", "S", "one"], ["kr"]),
             helper.make_node("Reshape", ["kr", "ks"], ["ki"]),
             helper.make_node("GreaterOrEqual", ["qi", "ki"], ["keep"]),
             helper.make_node("Where", ["keep", "s", "ninf"], ["s_out"])]
    return modifier(nodes, inits)


def bias_mod(bias, name="s", out="s_out"):
    return modifier([helper.make_node("Add", [name, "bias"], [out])],
                    [numpy_helper.from_array(bias, "bias")], name, out)


@pytest.mark.parametrize("q_heads, kv_heads, v_head", [(4, 4, 8), (4, 2, 8), (3, 1, 5)])
@pytest.mark.parametrize("scale", [None, 0.2])
def test_flex_attention_heads_and_scale(q_heads, kv_heads, v_head, scale):
    inputs, _ = qkv(q_heads=q_heads, kv_heads=kv_heads, v_head=v_head)
    attrs = {} if scale is None else {"scale": scale}
    compare(flex_attention(inputs, **attrs), inputs, oracle=run_reference)


@pytest.mark.parametrize("mods", ["score", "prob", "both", "causal", "softcap"])
def test_flex_attention_modifier_graphs(mods):
    inputs, _ = qkv(q_len=5, kv_len=5)
    attrs = {}
    if mods in ("score", "both"):
        attrs["score_mod"] = bias_mod(rand(1, 4, 5, 5))
    if mods in ("prob", "both"):
        attrs["prob_mod"] = modifier(
            [helper.make_node("Mul", ["p", "two"], ["p_out"])],
            [numpy_helper.from_array(np.array(2.0, "float32"), "two")], "p", "p_out")
    if mods == "causal":
        attrs["score_mod"] = causal_score_mod()
    if mods == "softcap":
        attrs["score_mod"] = modifier(
            [helper.make_node("Div", ["s", "cap"], ["d"]), helper.make_node("Tanh", ["d"], ["t"]),
             helper.make_node("Mul", ["t", "cap"], ["s_out"])],
            [numpy_helper.from_array(np.array(1.5, "float32"), "cap")])
    want = compare(flex_attention(inputs, **attrs), inputs, oracle=run_reference)
    if mods == "causal":  # the first query sees the first key only
        np.testing.assert_allclose(want[0][:, :, 0], inputs["V"][:, :, 0], rtol=1e-5)


@pytest.mark.parametrize("dtype, precision", [("float16", None), ("float64", None),
                                              ("float16", TensorProto.FLOAT16),
                                              ("float32", TensorProto.DOUBLE)])
def test_flex_attention_softmax_precision(dtype, precision):
    inputs, _ = qkv(dtype=dtype)
    attrs = {} if precision is None else {"softmax_precision": precision}
    tol = 3e-3 if dtype == "float16" else 1e-5
    got = compare(flex_attention(inputs, **attrs), inputs, rtol=tol, atol=tol,
                  oracle=run_reference)
    assert got[0].dtype == np.dtype(dtype)


def test_flex_attention_score_mod_in_float64():
    inputs, _ = qkv(dtype="float64")
    mod = bias_mod(rand(1, 1, 3, 5, dtype="float64"))
    mod.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    compare(flex_attention(inputs, score_mod=mod), inputs, oracle=run_reference)


def test_flex_attention_modifier_errors_name_the_node_and_attribute():
    inputs, _ = qkv()
    two_out = bias_mod(rand(1))
    two_out.output.append(helper.make_empty_tensor_value_info("s"))
    outer = modifier([helper.make_node("Add", ["s", "Q"], ["s_out"])])
    wrong_type = bias_mod(rand(1))
    wrong_type.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    reshaped = modifier([helper.make_node("ReduceSum", ["s"], ["s_out"], keepdims=0)])
    for mod, message in (
            (two_out, r"expected a graph of one input and one output, found 1 input\(s\) and 2"),
            (outer, r"attribute 'score_mod': .*found values of the enclosing graph \['Q'\]"),
            (wrong_type, r"expected its input of type float32, found float64"),
            (reshaped, r"expected its output of type Tensor\[\(2, 4, 3, 5\), float32\]")):
        with pytest.raises(OnnxImportError, match=r"FlexAttention node 'flex'.*" + message):
            from_onnx(flex_attention(inputs, score_mod=mod))


def test_flex_attention_needs_4d_inputs():
    inputs, _ = qkv(rank=3)
    with pytest.raises(OnnxImportError, match=r"FlexAttention node 'flex': expected a 4-D Q "
                                              r"\(input 0\)"):
        from_onnx(flex_attention(inputs))
