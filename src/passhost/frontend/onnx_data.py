"""ONNX tensors (initializers, Constant values) as NumPy arrays, checked for consistency.

A tensor whose data lives in an external file is read from the model's own directory only:
its ``location`` must be a relative path inside that directory (no absolute paths, no
``..``, no symbolic link leading out of it).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.checker import ValidationError

from passhost.frontend.errors import OnnxImportError
from passhost.ir.types import DTYPES

__all__ = ["dtype_name", "element_type_name", "passhost_dtype", "tensor_array",
           "uses_external_data"]

#: Element types that ONNX packs several to a byte (their data size is checked on decoding).
_PACKED = frozenset(getattr(TensorProto, name) for name in
                    ("INT4", "UINT4", "INT2", "UINT2", "FLOAT4E2M1") if hasattr(TensorProto, name))


def element_type_name(elem_type: int) -> str:
    """ONNX's name of tensor element type ``elem_type`` (``FLOAT``, ``BFLOAT16``...)."""
    try:
        return TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"<unknown element type {elem_type}>"


#: Element types whose raw_data is the little-endian bytes of the NumPy array of that dtype.
_PLAIN_RAW = frozenset(("float16", "float32", "float64", "int8", "uint8", "int16", "uint16",
                        "int32", "uint32", "int64", "uint64", "bool"))


def dtype_name(elem_type: int) -> str | None:
    """The NumPy dtype name of ONNX element type ``elem_type`` (possibly one passhost has
    no tensors of, such as ``float8_e4m3fn``), or None for strings and unknown types."""
    if elem_type in (TensorProto.UNDEFINED, TensorProto.STRING):
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return None


def passhost_dtype(elem_type: int, what: str) -> str:
    """The passhost dtype of ONNX element type ``elem_type``, or an error about ``what``."""
    name = dtype_name(elem_type)
    if name in DTYPES:
        return name
    if elem_type == TensorProto.STRING:
        raise OnnxImportError(f"{what}: passhost has no string tensors (ONNX type STRING)")
    raise OnnxImportError(f"{what}: passhost has no tensors of ONNX type "
                          f"{element_type_name(elem_type)}; it has {', '.join(DTYPES)}")


def uses_external_data(tensor: TensorProto) -> bool:
    """Whether ``tensor`` keeps its data in an external file."""
    return tensor.data_location == TensorProto.EXTERNAL


def _inside(base_dir: Path, location: str, what: str) -> Path:
    """``location`` resolved inside ``base_dir``, refusing every way out of it."""
    parts = location.replace("\\", "/").split("/")
    if not location or os.path.isabs(location) or location.startswith(("/", "\\")) \
            or ".." in parts or ":" in parts[0]:
        raise OnnxImportError(f"{what}: expected an external data location relative to the "
                              f"model's directory and inside it, found {location!r}")
    try:
        base = base_dir.resolve()
        path = (base / location).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symbolic link loop, a NUL byte
        raise OnnxImportError(f"{what}: cannot resolve external data location "
                              f"{location!r}: {exc}") from exc
    if path != base and base not in path.parents:
        raise OnnxImportError(f"{what}: external data {location!r} leads out of the model's "
                              f"directory {str(base)!r} (a symbolic link?)")
    if not path.is_file():
        raise OnnxImportError(f"{what}: external data file {location!r} not found in "
                              f"{str(base)!r}")
    return path


def _external_bytes(tensor: TensorProto, what: str, base_dir: Path | None) -> bytes:
    info = {entry.key: entry.value for entry in tensor.external_data}
    if base_dir is None:
        raise OnnxImportError(f"{what}: its data is in an external file "
                              f"({info.get('location', '?')!r}) and the model was given "
                              f"without a directory to read it from; pass the model's path, "
                              f"or from_onnx(model, base_dir=...)")
    path = _inside(base_dir, info.get("location", ""), what)
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError as exc:
        raise OnnxImportError(f"{what}: expected integer external data offset and length, "
                              f"found {info}") from exc
    if offset < 0 or (length is not None and length < 0):
        raise OnnxImportError(f"{what}: expected a non-negative external data offset and "
                              f"length, found {info}")
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read() if length is None else f.read(length)
    except OSError as exc:
        raise OnnxImportError(f"{what}: cannot read external data {str(path)!r}: {exc}") \
            from exc
    if length is not None and len(data) != length:
        raise OnnxImportError(f"{what}: external data {info['location']!r} holds {len(data)} "
                              f"bytes from offset {offset}, expected {length}")
    return data


def _check_size(tensor: TensorProto, dims: tuple[int, ...], dtype: str, raw: bytes | None,
                what: str) -> None:
    """Raise unless the data holds exactly the elements ``dims`` declares."""
    count = math.prod(dims)
    if raw is not None:
        need = count * np.dtype(dtype).itemsize
        if len(raw) != need:
            raise OnnxImportError(f"{what}: raw_data holds {len(raw)} bytes, dims "
                                  f"{list(dims)} of {dtype} need {need}")
        return
    field = helper.tensor_dtype_to_field(tensor.data_type)
    found = len(getattr(tensor, field))
    if np.dtype(dtype).kind == "c":  # a real and an imaginary value per element
        count *= 2
    if found != count:
        raise OnnxImportError(f"{what}: {field} holds {found} values, dims {list(dims)} "
                              f"need {count}")


def tensor_array(tensor: TensorProto, what: str, base_dir: Path | None = None) -> np.ndarray:
    """The data of ``tensor`` as an array; ``what`` names it in errors and ``base_dir`` is
    the model's directory (for external data)."""
    dims = tuple(int(d) for d in tensor.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"{what}: expected non-negative dims, found {list(dims)}")
    if tensor.HasField("segment"):
        raise OnnxImportError(f"{what}: segmented tensors are not supported")
    dtype = dtype_name(tensor.data_type)
    if dtype is None:
        if tensor.data_type == TensorProto.STRING:
            raise OnnxImportError(f"{what}: passhost has no string tensors (ONNX type STRING)")
        raise OnnxImportError(f"{what}: expected a tensor element type, found data_type "
                              f"{tensor.data_type} ({element_type_name(tensor.data_type)})")
    raw = None
    if uses_external_data(tensor):
        raw = _external_bytes(tensor, what, base_dir)
    elif tensor.HasField("raw_data"):
        raw = tensor.raw_data
    if tensor.data_type not in _PACKED:
        _check_size(tensor, dims, dtype, raw, what)
    if raw is not None and dtype in _PLAIN_RAW and sys.byteorder == "little":
        # The bytes are the array's, little-endian as ONNX stores them: use them as they are
        # (read-only) rather than copying them twice more through numpy_helper.
        return np.frombuffer(raw, dtype).reshape(dims)
    if raw is not None and uses_external_data(tensor):
        local = TensorProto()
        local.CopyFrom(tensor)
        del local.external_data[:]
        local.data_location = TensorProto.DEFAULT
        local.raw_data = raw
        tensor = local
    try:
        array = numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError, IndexError, ValidationError) as exc:
        raise OnnxImportError(f"{what}: malformed tensor data: {exc}") from exc
    if array.shape != dims:
        raise OnnxImportError(f"{what}: data of shape {list(array.shape)}, expected dims "
                              f"{list(dims)}")
    return array
