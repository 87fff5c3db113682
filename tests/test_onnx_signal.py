"""ONNX signal processing (DFT, STFT, window functions, MelWeightMatrix) and Det against
onnxruntime (ONNX's reference implementation where onnxruntime has no kernel)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto  # noqa: E402

from passhost.frontend import OnnxImportError, from_onnx  # noqa: E402
from passhost.frontend.errors import OnnxUnknownOperandError  # noqa: E402
from test_frontend_onnx import compare as compare_with  # noqa: E402
from test_frontend_onnx import (  # noqa: E402
    make_model,
    node,
    run_onnxruntime,
    run_passhost,
    run_reference,
)

RNG = np.random.default_rng(20261125)

#: Transforms sum many terms: outputs are compared with an absolute tolerance of 1e-4.
compare = functools.partial(compare_with, atol=1e-4)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def model_of(op, names, inputs, known=None, opset=17, **attrs):
    """One ``op`` node of output ``y``: data ``inputs`` and ``known`` initializers."""
    model = make_model([node(op, names, ["y"], **attrs)], inputs, known, ("y",), opset)
    model.ir_version = 10
    return model





# -- window functions ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("size, size_dtype", [(1, "int64"), (2, "int32"), (10, "int64")])
@pytest.mark.parametrize("out_type", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_windows(op, periodic, size, size_dtype, out_type):
    model = model_of(op, ["size"], {}, {"size": np.array(size, size_dtype)}, periodic=periodic,
                     output_datatype=out_type)
    want = compare(model, {}, rtol=1e-6, atol=1e-6)
    assert np.isnan(want[0]).all() == (size == 1 and not periodic)


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_window_of_integer_and_half_types(op):
    for out_type in (TensorProto.INT32, TensorProto.FLOAT16, TensorProto.UINT8):
        model = model_of(op, ["size"], {}, {"size": np.array(7, "int64")},
                         output_datatype=out_type)
        compare(model, {}, rtol=1e-3, atol=1e-3)


def test_window_size_must_be_known_while_compiling():
    model = model_of("HannWindow", ["size"], {"size": np.array(4, "int64")})
    with pytest.raises(OnnxUnknownOperandError, match=r"HannWindow node .*size \(input 0"):
        from_onnx(model)


@pytest.mark.parametrize("size, attrs, message", [
    (0, {}, r"size of at least 1, found 0"),
    (np.array([3, 4]), {}, r"size \(input 0\) to be one integer, found int64 of shape \[2\]"),
    (4, {"periodic": 2}, r"attribute 'periodic' 0 or 1, found 2"),
])
def test_malformed_windows_name_the_node(size, attrs, message):
    model = model_of("BlackmanWindow", ["size"], {}, {"size": np.asarray(size, "int64")},
                     **attrs)
    with pytest.raises(OnnxImportError, match=r"BlackmanWindow node .*" + message):
        from_onnx(model)


# -- MelWeightMatrix -------------------------------------------------------------------------
def mel_model(bins, length, rate, low, high, edge_dtype="float32", **attrs):
    known = {"bins": np.array(bins, "int64"), "length": np.array(length, "int64"),
             "rate": np.array(rate, "int32" if edge_dtype == "float64" else "int64"),
             "low": np.array(low, edge_dtype), "high": np.array(high, edge_dtype)}
    return model_of("MelWeightMatrix", list(known), {}, known, **attrs)


@settings(max_examples=40, deadline=None)
@given(bins=st.integers(1, 24), length=st.integers(8, 512), rate=st.integers(2000, 48000),
       low=st.floats(0.0, 0.25), width=st.floats(0.01, 0.25),
       edge_dtype=st.sampled_from(["float32", "float64"]))
# an upper edge at Nyquist whose corner falls on a bin: log10 and 10 ** x put it one bin low
@example(bins=1, length=27, rate=3330, low=0.25, width=0.25, edge_dtype="float64")
def test_mel_weight_matrix(bins, length, rate, low, width, edge_dtype):
    model = mel_model(bins, length, rate, low * rate, (low + width) * rate, edge_dtype)
    want = compare(model, {}, rtol=1e-6, atol=1e-6, oracle=run_reference)
    assert want[0].shape == (length // 2 + 1, bins)


def test_mel_weight_matrix_output_datatype():
    model = mel_model(8, 64, 8000, 20.0, 3000.0, output_datatype=TensorProto.DOUBLE)
    compare(model, {}, rtol=1e-6, atol=1e-6, oracle=run_reference)


def test_malformed_mel_weight_matrix_names_the_node():
    with pytest.raises(OnnxImportError, match=r"MelWeightMatrix node .*num_mel_bins, "
                                              r"dft_length and sample_rate of at least 1"):
        from_onnx(mel_model(0, 64, 8000, 20.0, 3000.0))
    with pytest.raises(OnnxImportError, match=r"MelWeightMatrix node .*lower_edge_hertz "
                                              r"\(input 3\) to be one floating-point number"):
        from_onnx(mel_model(4, 64, 8000, 20, 3000, edge_dtype="int64"))
    with pytest.raises(OnnxImportError, match=r"MelWeightMatrix node .*0 <= lower_edge_hertz "
                                              r"<= upper_edge_hertz \(finite\), found 300"):
        from_onnx(mel_model(4, 64, 8000, 300.0, 200.0))


# -- DFT -------------------------------------------------------------------------------------
def dft_model(x, opset, length=None, axis=None, **attrs):
    names, known = ["x", "", ""], {}
    if length is not None:
        names[1], known["n"] = "n", np.array(length, "int64")
    if opset >= 20 and axis is not None:
        names[2], known["axis"] = "axis", np.array(axis, "int64")
    elif axis is not None:
        attrs["axis"] = axis
    while names[-1] == "":
        names.pop()
    return model_of("DFT", names, {"x": x}, known, opset, **attrs)


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -2, -3])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_axes_real_and_complex(opset, axis, channels, inverse):
    x = rand(3, 5, 6, channels)
    compare(dft_model(x, opset, axis=axis, inverse=inverse), {"x": x})


@pytest.mark.parametrize("opset", [17, 20])
@pytest.mark.parametrize("length", [None, 4, 6, 9, 12])
@pytest.mark.parametrize("inverse, onesided, channels", [(0, 1, 1), (1, 1, 2), (0, 0, 2),
                                                         (1, 0, 1)])
def test_dft_lengths_and_one_sided_transforms(opset, length, inverse, onesided, channels):
    x = rand(2, 6, 3, channels)
    compare(dft_model(x, opset, length=length, axis=1, inverse=inverse, onesided=onesided),
            {"x": x}, oracle=dft_oracle(inverse, onesided))


def dft_oracle(inverse, onesided):
    """onnxruntime, but ONNX's reference for an IRFFT: onnxruntime's is wrong when the
    length is not 2 * (bins - 1)."""
    return run_reference if inverse and onesided else run_onnxruntime


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data(),
       channels=st.sampled_from([1, 2]), inverse=st.sampled_from([0, 1]),
       onesided=st.sampled_from([0, 1]), dtype=st.sampled_from(["float32", "float64"]))
def test_dft_random_shapes(shape, data, channels, inverse, onesided, dtype):
    if onesided:
        channels = 2 if inverse else 1
    x = rand(*shape, channels, dtype=dtype)
    axis = data.draw(st.integers(-len(shape) - 1, len(shape) - 1).filter(lambda a: a != -1))
    length = data.draw(st.one_of(st.none(), st.integers(2, 9)))
    if inverse and onesided and length is None and x.shape[axis] < 2:
        length = 2
    compare(dft_model(x, 20, length=length, axis=axis, inverse=inverse, onesided=onesided),
            {"x": x}, oracle=dft_oracle(inverse, onesided))


def test_dft_of_float16_is_computed_in_float32():
    x = rand(2, 8, 2)
    want = run_onnxruntime(dft_model(x, 20), {"x": x})[0]
    got = run_passhost(dft_model(x.astype("float16"), 20), {"x": x.astype("float16")})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("shape, opset, axis, known, message", [
    ((2, 5, 3), 17, 1, {}, r"last axis holds \[real\] or \[real, imag\]"),
    ((5,), 17, 0, {}, r"rank 2 or more"),
    ((2, 5, 2), 17, 2, {}, r"axis in \[-3, -2\] or \[0, 1\] .* found 2"),
    ((2, 5, 2), 20, -1, {}, r"axis in \[-3, -2\] or \[0, 1\] .* found -1"),
    ((2, 5, 2), 17, 1, {"n": np.array(0, "int64")}, r"dft_length of at least 1, found 0"),
    ((2, 5, 2), 17, 1, {"onesided": 1}, r"real input \(a last axis of 1\) for a one-sided "
                                        r"DFT"),
    ((2, 5, 1), 20, 1, {"onesided": 1, "inverse": 1}, r"complex input \(a last axis of 2\) "
                                                      r"for a one-sided inverse DFT"),
    ((2, 5, 2), 17, 1, {"n": np.array([4, 4], "int64")}, r"dft_length \(input 1\) to be one "
                                                          r"integer"),
])
def test_malformed_dft_names_the_node(shape, opset, axis, known, message):
    x = rand(*shape)
    attrs = {k: known.pop(k) for k in ("onesided", "inverse") if k in known}
    model = dft_model(x, opset, axis=axis, **attrs)
    if known:
        model = model_of("DFT", ["x", "n"], {"x": x}, known, opset, axis=axis)
    with pytest.raises(OnnxImportError, match=r"DFT node .*" + message):
        from_onnx(model)


def test_dft_length_must_be_known_while_compiling():
    x = rand(2, 5, 1)
    model = model_of("DFT", ["x", "n"], {"x": x, "n": np.array(4, "int64")})
    with pytest.raises(OnnxUnknownOperandError, match=r"DFT node .*dft_length \(input 1"):
        from_onnx(model)


# -- STFT ------------------------------------------------------------------------------------
def stft_model(signal, step, window=None, length=None, window_known=True, **attrs):
    names, inputs, known = ["signal", "step"], {"signal": signal}, {"step": np.array(step)}
    if window is not None:
        names.append("window")
        (known if window_known else inputs)["window"] = window
    if length is not None:
        names += [""] * (3 - len(names)) + ["length"]
        known["length"] = np.array(length, "int64")
    return model_of("STFT", names, inputs, known, 17, **attrs)


@pytest.mark.parametrize("step, length, window", [
    (4, 16, None), (3, None, "hann"), (8, 16, "hann"), (5, None, None), (1, 7, "random"),
])
@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("channels", [1, 2])
def test_stft(step, length, window, onesided, channels):
    signal = rand(2, 40, channels)
    size = length or 12
    w = None
    if window == "hann":
        w = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(size) / size)).astype("float32")
    elif window == "random":
        w = rand(size)
    # onnxruntime has no default frame_length (the signal's length) without a window
    oracle = run_reference if length is None and w is None else run_onnxruntime
    compare(stft_model(signal, step, w, length, onesided=onesided), {"signal": signal},
            oracle=oracle)


def test_stft_with_a_window_computed_at_run_time():
    signal, window = rand(1, 32, 1), rand(8)
    model = stft_model(signal, 4, window, window_known=False)
    compare(model, {"signal": signal, "window": window})


def test_stft_in_float64():
    signal, window = rand(1, 30, 1, dtype="float64"), rand(10, dtype="float64")
    compare(stft_model(signal, np.int32(5), window), {"signal": signal})


@pytest.mark.parametrize("shape, step, window, length, message", [
    ((1, 20), 4, None, 8, r"signal \(input 0\) of rank 3 whose last axis"),
    ((1, 20, 1), 4, np.ones(6, "float32"), 8, r"window of frame_length 8 points, found 6"),
    ((1, 20, 1), 4, np.ones((2, 3), "float32"), None, r"1-D window, found shape \[2, 3\]"),
    ((1, 20, 1), 0, None, 8, r"frame_step >= 1 and frame_length in \[1, 20\]"),
    ((1, 20, 1), 2, None, 21, r"frame_step >= 1 and frame_length in \[1, 20\]"),
    ((1, 20, 1), 2, np.ones(8, "float64"), None, r"window of type float32 \(the signal's\)"),
])
def test_malformed_stft_names_the_node(shape, step, window, length, message):
    with pytest.raises(OnnxImportError, match=r"STFT node .*" + message):
        from_onnx(stft_model(rand(*shape), step, window, length))


def test_stft_frame_step_must_be_known_while_compiling():
    model = model_of("STFT", ["s", "step"], {"s": rand(1, 20, 1), "step": np.array(4)})
    with pytest.raises(OnnxUnknownOperandError, match=r"STFT node .*frame_step \(input 1"):
        from_onnx(model)


# -- Det -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 3, 1, 1), (5, 2, 2)])
@pytest.mark.parametrize("opset", [11, 22])
def test_det(shape, opset):
    x = rand(*shape)
    compare(model_of("Det", ["x"], {"x": x}, opset=opset), {"x": x})


def test_det_of_float64_and_float16():
    x = rand(3, 5, 5, dtype="float64")
    compare(model_of("Det", ["x"], {"x": x}, opset=22), {"x": x}, rtol=1e-10, atol=1e-10,
            oracle=run_reference)  # onnxruntime's Det is float32 only
    h = rand(2, 3, 3, dtype="float16")
    got = run_passhost(model_of("Det", ["x"], {"x": h}, opset=22), {"x": h})[0]
    assert got.dtype == np.float16 and got.shape == (2,)
    np.testing.assert_allclose(got, np.linalg.det(h.astype("float32")), rtol=1e-2, atol=1e-2)


def test_det_of_singular_matrices_is_zero():
    x = np.array([[[1, 2], [2, 4]], [[0, 0], [0, 0]]], "float32")
    np.testing.assert_array_equal(compare(model_of("Det", ["x"], {"x": x}), {"x": x})[0], 0)


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 4, 3)])
def test_det_of_non_square_matrices_names_the_node(shape):
    with pytest.raises(OnnxImportError, match=r"Det node .*square matrices in the last two "
                                              r"axes, found shape"):
        from_onnx(model_of("Det", ["x"], {"x": rand(*shape)}))
