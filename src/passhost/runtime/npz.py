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
import struct
import zipfile
import zlib
from collections.abc import Mapping

import numpy as np

from passhost.errors import PasshostError
from passhost.runtime.tar_reader import Piece

__all__ = ["NpzError", "read_npy", "read_npz", "write_npz"]

#: ZIP records (little-endian): local header, central directory entry, their ZIP64 extra
#: fields, ZIP64 end of directory and its locator, end of directory.
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_ZIP64_SIZES = struct.Struct("<HHQQ")
_ZIP64_ENTRY = struct.Struct("<HHQQQ")
_ZIP64_END = struct.Struct("<IQHHIIQQQQ")
_ZIP64_LOCATOR = struct.Struct("<IIQI")
_END = struct.Struct("<IHHHHIIH")
#: 1980-01-01, the first date ZIP can hold (MS-DOS form); 0xFFFFFFFF: "see the ZIP64 field".
_DOS_DATE, _FULL = (0 << 9) | (1 << 5) | 1, 0xFFFFFFFF

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}


class NpzError(PasshostError):
    """An ``.npz`` that is malformed, or not one :func:`write_npz` would write."""


def write_npz(arrays: Mapping[str, np.ndarray]) -> list[Piece]:
    """``arrays`` (name -> numeric array) as an uncompressed ``.npz``, in pieces whose
    concatenation is the file: the arrays' own memory is among them, not copied (a model's
    parameters are most of an artifact). Members are ZIP64 entries ``<name>.npy``, as
    ``np.savez`` writes them, dated 1980-01-01 so the same arrays give the same bytes."""
    pieces: list[Piece] = []
    central: list[bytes] = []
    offset = 0
    for name, value in arrays.items():
        array = np.asarray(value, order="C")
        if array.dtype.hasobject:
            raise NpzError(f"parameter {name!r} holds Python objects; only numeric arrays "
                           f"can be stored")
        header_bytes = _npy_header(array)
        data = memoryview(array.reshape(-1).view(np.uint8))
        crc = zlib.crc32(data, zlib.crc32(header_bytes))
        size = len(header_bytes) + data.nbytes
        entry = f"{name}.npy".encode()
        pieces += [_LOCAL.pack(0x04034B50, 45, 0, 0, 0, _DOS_DATE, crc, _FULL, _FULL,
                               len(entry), 20) + entry + _ZIP64_SIZES.pack(1, 16, size, size),
                   header_bytes, data]
        central.append(_CENTRAL.pack(0x02014B50, 45, 45, 0, 0, 0, _DOS_DATE, crc, _FULL, _FULL,
                                     len(entry), 28, 0, 0, 0, 0o600 << 16, _FULL)
                       + entry + _ZIP64_ENTRY.pack(1, 24, size, size, offset))
        offset += len(pieces[-3]) + size
    directory = b"".join(central)
    count = len(central)
    if not count:  # an empty archive: its end record alone, as np.savez writes it
        return [_END.pack(0x06054B50, 0, 0, 0, 0, 0, 0, 0)]
    pieces.append(directory
                  + _ZIP64_END.pack(0x06064B50, 44, 45, 45, 0, 0, count, count, len(directory),
                                    offset)
                  + _ZIP64_LOCATOR.pack(0x07064B50, 0, offset + len(directory), 1)
                  + _END.pack(0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF), _FULL,
                              _FULL, 0))
    return pieces


def _npy_header(array: np.ndarray) -> bytes:
    """The ``.npy`` header of ``array`` (format 1.0, or 2.0 when 1.0 cannot hold it)."""
    out = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    try:
        np.lib.format.write_array_header_1_0(out, header)
    except ValueError:
        out = io.BytesIO()
        np.lib.format.write_array_header_2_0(out, header)
    return out.getvalue()


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
