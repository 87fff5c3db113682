"""The parameters of an artifact as a NumPy ``.npz``, written and read back safely.

``np.load`` allocates each array by the shape its ``.npy`` header declares before reading
its data, and inflates compressed members to whatever size they claim, so a small crafted
``.npz`` can ask for gigabytes. :func:`read_npz` takes only what :func:`write_npz` writes:
uncompressed, unencrypted members ``<name>.npy`` of numeric arrays, each header declaring
exactly the bytes its member holds. An array is allocated only after that check, so the
arrays take at most as many bytes as the ``.npz`` itself (whose size the artifact's tar
reader has bounded by the file's).
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Mapping

import numpy as np

from passhost.errors import PasshostError

__all__ = ["NpzError", "read_npy", "read_npz", "write_npz"]

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}


class NpzError(PasshostError):
    """An ``.npz`` that is malformed, or not one :func:`write_npz` would write."""


def write_npz(arrays: Mapping[str, np.ndarray]) -> bytes:
    """``arrays`` (name -> numeric array) as the bytes of an uncompressed ``.npz``."""
    for name, arr in arrays.items():
        if np.asarray(arr).dtype.hasobject:
            raise NpzError(f"parameter {name!r} holds Python objects; only numeric arrays "
                           f"can be stored")
    buf = io.BytesIO()
    np.savez(buf, **{name: np.asarray(arr) for name, arr in arrays.items()})
    return buf.getvalue()


def read_npy(raw: bytes, name: str) -> np.ndarray:
    """The array of the ``.npy`` bytes ``raw`` (``name`` in errors), its header checked
    against its size before anything is allocated."""
    fp = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(fp)
        if version not in _HEADER_READERS:
            raise NpzError(f"array {name!r}: .npy format version {version} is not taken "
                           f"(1.0 and 2.0 are)")
        shape, _, dtype = _HEADER_READERS[version](fp)
    except ValueError as err:
        raise NpzError(f"array {name!r}: bad .npy header ({err})") from None
    if dtype.hasobject:
        raise NpzError(f"array {name!r} holds Python objects; only numeric arrays are read")
    if any(d < 0 for d in shape):
        raise NpzError(f"array {name!r}: negative dimension in its shape {list(shape)}")
    declared = math.prod(shape) * dtype.itemsize
    if fp.tell() + declared != len(raw):
        raise NpzError(f"array {name!r}: its header declares {dtype}{list(shape)} "
                       f"({declared} bytes) but it holds {len(raw) - fp.tell()} "
                       f"bytes of data")
    fp.seek(0)
    return np.lib.format.read_array(fp, allow_pickle=False)


def read_npz(data: bytes) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` ``data`` (name -> array), in member order."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
            stored = sum(info.file_size for info in infos)
            if stored > len(data):
                raise NpzError(f"its members declare {stored} bytes, more than the "
                               f"{len(data)} it holds")
            arrays: dict[str, np.ndarray] = {}
            for info in infos:
                name = info.filename.removesuffix(".npy")
                if name == info.filename or name in arrays:
                    raise NpzError(f"member {info.filename!r} is not a .npy of its own")
                if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1 \
                        or info.compress_size != info.file_size:
                    raise NpzError(f"member {info.filename!r} is compressed or encrypted; "
                                   f"parameters are stored uncompressed")
                arrays[name] = read_npy(zf.read(info), name)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        raise NpzError(f"not a readable .npz ({type(err).__name__}: {err})") from None
    return arrays
