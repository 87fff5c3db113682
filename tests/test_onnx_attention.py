"""ONNX Attention (opsets 23 to 25) and RotaryEmbedding against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from test_frontend_onnx import make_model, node, run_onnxruntime, run_passhost  # noqa: E402

RNG = np.random.default_rng(20261202)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def model_of(op, names, outputs, inputs, opset, **attrs):
    model = make_model([node(op, names, outputs, **attrs)], inputs, None,
                       tuple(o for o in outputs if o), opset)
    model.ir_version = 10
    return model


def run_reference(model, inputs):
    """ONNX's reference implementation, for what onnxruntime rejects."""
    return ReferenceEvaluator(model).run(None, inputs)


def compare(model, inputs, rtol=1e-4, atol=1e-5, oracle=run_onnxruntime):
    want = oracle(model, inputs)
    got = run_passhost(model, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return want


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
