"""The parameters' ``.npz`` (``passhost.runtime.npz``): what ``write_npz`` writes in pieces
is a ZIP NumPy and Python's ``zipfile`` read, and ``read_npz`` gives back the same arrays,
for every dtype, shape (0-d and empty included) and memory order."""

from __future__ import annotations

import io
import zipfile

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from passhost.runtime.npz import read_npz, write_npz

DTYPES = ["float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64",
          "uint64", "bool"]


def _arrays():
    one = st.sampled_from(DTYPES).flatmap(lambda dtype: hnp.arrays(
        dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)))
    return st.dictionaries(st.from_regex(r"[a-z][a-z0-9_.]{0,12}", fullmatch=True), one,
                           max_size=5)


@settings(max_examples=60, deadline=None)
@given(arrays=_arrays(), transpose=st.booleans())
def test_written_npz_reads_back_the_same_arrays(arrays, transpose):
    if transpose:  # Fortran-ordered inputs are written in C order
        arrays = {name: value.T for name, value in arrays.items()}
    data = b"".join(bytes(piece) for piece in write_npz(arrays))
    assert zipfile.ZipFile(io.BytesIO(data)).testzip() is None
    for back in (read_npz(data), dict(np.load(io.BytesIO(data)))):
        assert list(back) == list(arrays)
        for name, value in arrays.items():
            assert back[name].dtype == value.dtype and back[name].shape == value.shape
            assert back[name].tobytes() == np.ascontiguousarray(value).tobytes()


def test_the_same_arrays_give_the_same_bytes():
    arrays = {"w": np.arange(6, dtype="float32").reshape(2, 3), "b": np.array(1.5)}
    assert b"".join(map(bytes, write_npz(arrays))) == b"".join(map(bytes, write_npz(arrays)))
