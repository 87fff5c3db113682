"""The native NHWC convolution (``conv2d_nhwc``) agrees with the reference kernel over
strides, padding, dilation, kernel layouts, channel counts around its vectors and output
channels around its panels, at 1, 2 and all threads; its epilogue (bias along the last
axis, residual, clamp, then the activation) on each way it reads its input (positions
along the plane or along output rows, a padded copy, a stem's few channels, several chunks
of output channels); grouped NHWC convolutions still take the NumPy kernels."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cpu_helpers import assert_same, run_op, uses_fast_kernel, uses_native_kernel
from hypothesis import given
from hypothesis import strategies as st
from test_cpu_native_fusion import _body, _epilogue_steps, _fused, _uniform
from test_cpu_native_kernels import (
    KERNEL_LAYOUTS,
    SETTINGS,
    THREADS,
    _data,
    _size,
    _weight,
    window_attrs,
)

from passhost_cpu_target.native.build import EXTRA_FLAGS_VAR, find_compiler


@st.composite
def nhwc_conv_case(draw):
    """An ungrouped NHWC convolution: channels on both sides of a vector (16), output
    channels on both sides of a panel (32)."""
    kh, kw, attrs = draw(window_attrs())
    c, o = draw(st.integers(1, 40)), draw(st.integers(1, 70))
    (dh, dw), pad = attrs["dilation"], attrs["padding"]
    h, w = _size(draw, kh, dh, pad[0], pad[2], 12), _size(draw, kw, dw, pad[1], pad[3], 12)
    layout = draw(st.sampled_from(KERNEL_LAYOUTS))
    attrs.update(data_layout="NHWC", kernel_layout=layout)
    return attrs, _data((draw(st.integers(1, 2)), h, w, c)), _weight(o, c, kh, kw, layout)


@SETTINGS
@given(case=nhwc_conv_case(), threads=THREADS)
def test_nhwc_conv2d(case, threads):
    attrs, data, weight = case
    got, expected, source = run_op("nn.conv2d", attrs, [data, weight], num_threads=threads)
    assert "native_kernels.conv2d_nhwc" in source and uses_fast_kernel(source)
    assert_same(got, expected, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("k", "stride", "padding"), [
    (1, 2, (0, 1, 0, 0)), (1, 2, (1, 0, 0, 0)), (3, 2, (0, 2, 0, 0)), (3, 1, (0, 0, 1, 1)),
    (2, 3, (1, 0, 0, 2)),
])
def test_nhwc_conv2d_with_padding_on_some_sides(k, stride, padding, threads):
    """Padding on one side only, where the windows need the padded copy although they end
    inside the data (or start inside it and end past it)."""
    attrs = {"data_layout": "NHWC", "kernel_layout": "HWIO", "strides": (stride, stride),
             "padding": padding}
    got, expected, source = run_op("nn.conv2d", attrs, [_data((2, 9, 11, 18)),
                                                        _data((k, k, 18, 40))],
                                   num_threads=threads)
    assert "native_kernels.conv2d_nhwc" in source
    assert_same(got, expected, atol=1e-5)


def test_grouped_nhwc_convolutions_take_the_numpy_kernels():
    attrs = {"data_layout": "NHWC", "kernel_layout": "HWIO", "groups": 2}
    got, expected, source = run_op("nn.conv2d", attrs, [_data((1, 5, 5, 4)),
                                                        _data((3, 3, 2, 6))])
    assert not uses_native_kernel(source) and uses_fast_kernel(source)
    assert_same(got, expected, atol=1e-5)


#: NHWC convolutions reading their input each way (n, c, o, hw, k, stride, pad, dilation):
#: positions along the plane (1x1, unpadded), along output rows (read in place, or from the
#: padded copy), a stem's few channels, a 1x1 layer over more than one chunk of output
#: channels (its weights too large to stay in L2 together), 7-wide rows of a strided 1x1.
NHWC_PATHS = {
    "plane": (2, 40, 70, 7, 1, 1, 0, 1),
    "rows": (1, 20, 33, 9, 3, 1, 0, 1),
    "rows-padded": (2, 17, 48, 10, 3, 1, 1, 1),
    "rows-strided-dilated": (1, 24, 40, 15, 3, 2, 2, 2),
    "stem": (1, 3, 20, 30, 7, 2, 3, 1),
    "chunks": (1, 2048, 200, 3, 1, 1, 0, 1),
    "strided-1x1": (1, 36, 64, 14, 1, 2, 0, 1),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("activation", [None, "sigmoid", "nn.silu"])
@pytest.mark.parametrize("extras", ["none", "bias", "bias-residual-clip"])
@pytest.mark.parametrize("path", NHWC_PATHS)
def test_nhwc_conv_applies_its_epilogue_on_every_path(path, extras, activation, threads):
    n, c, o, hw, k, stride, pad, dilation = NHWC_PATHS[path]
    out = (hw + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    attrs = {"padding": (pad,) * 4, "strides": (stride, stride),
             "dilation": (dilation, dilation), "data_layout": "NHWC", "kernel_layout": "HWIO"}
    data, weight = _uniform((n, hw, hw, c), 2.0), _uniform((k, k, c, o), 0.5)
    steps = _epilogue_steps(extras, o, (n, out, out, o), channel_axis=3)
    got, expected, source = _fused("nn.conv2d", attrs, [data, weight], steps, threads,
                                   activation)
    assert _body(source).count("\n    ") == 1 and "_conv2d_nhwc(" in source
    assert_same([got], [expected], atol=2e-4 if c * k * k > 100 else 1e-5)


AVX2_SCRIPT = """
import warnings

import numpy as np

import passhost
from passhost import relay
from passhost.relay.interpreter import evaluate
from passhost.transform import PassContext

warnings.simplefilter("error")  # a library that fails to build is an error
rng = np.random.default_rng(3)
x = relay.var("x", shape=(1, 40, 40, 3), dtype="float32")
w = relay.var("w", shape=(7, 7, 3, 24), dtype="float32")
y = relay.nn.conv2d(x, w, strides=(2, 2), padding=(3, 3, 3, 3), data_layout="NHWC",
                    kernel_layout="HWIO")
mod = relay.IRModule.from_expr(relay.Function([x, w], y))
data = rng.uniform(-1, 1, (1, 40, 40, 3)).astype("float32")
weight = rng.uniform(-1, 1, (7, 7, 3, 24)).astype("float32")
with PassContext(opt_level=3):
    compiled = passhost.build(mod, "cpu -num-threads=2", {"w": weight})
assert "_conv2d_nhwc(" in compiled.get_source()
np.testing.assert_allclose(compiled.executor()(x=data)[0], evaluate(mod, x=data, w=weight),
                           rtol=1e-4, atol=1e-4)
print("ok")
"""


def test_packed_tiles_fit_the_vector_of_an_avx2_build(tmp_path):
    """Built without AVX-512 (8 lanes), a strided 7x7 layer's output rows of 20 go in packed
    tiles of at most 8 positions, not transposed_rows' 10: the tile's columns hold a vector
    of positions (with 10, two of each tile's were read past them, wrong numbers)."""
    compiler = find_compiler()
    if compiler is None:
        pytest.skip("no C compiler")
    env = {**os.environ, "PASSHOST_CACHE_DIR": str(tmp_path / "cache"),
           EXTRA_FLAGS_VAR: "-mno-avx512f"}
    result = subprocess.run([sys.executable, "-c", AVX2_SCRIPT], capture_output=True,
                            text=True, env=env, check=False, timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-4000:]
