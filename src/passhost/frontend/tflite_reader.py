"""Read a TFLite flatbuffer into plain Python data, checking its structure.

Every access to the flatbuffer happens here, inside one guard: a truncated, foreign or
corrupt file becomes a :class:`TfliteImportError` naming what was being read, never a raw
``IndexError`` or ``struct.error``. The rest of the importer works on the frozen
dataclasses this module returns.
"""

from __future__ import annotations

import inspect
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

from passhost.frontend.errors import TfliteImportError

__all__ = ["ModelInfo", "OperatorInfo", "Quantization", "TensorInfo", "read_model"]

_IDENTIFIER = b"TFL3"
_OP_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
_OPTION_NAMES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
_TYPE_NAMES = {v: k.lower() for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
_NUMPY_DTYPES = ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
# What a corrupt flatbuffer raises while being read.
_READ_ERRORS = (IndexError, struct.error, ValueError, TypeError, OverflowError,
                UnicodeDecodeError, AttributeError)


@dataclass(frozen=True)
class Quantization:
    """A tensor's affine quantisation: ``real = scale * (q - zero_point)``, per channel
    along ``axis`` when there is more than one scale."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int

    @property
    def per_channel(self) -> bool:
        """Whether there is one scale per channel (more than one scale)."""
        return self.scale.size > 1


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the subgraph: its static shape, dtype name (lower-case TFLite type
    name, a NumPy dtype name where one exists), quantisation and constant data bytes."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    quantization: Quantization | None
    buffer: int
    data: bytes | None

    @property
    def where(self) -> str:
        """The tensor's description for messages."""
        return f"tensor {self.index} ({self.name!r})"

    def array(self) -> np.ndarray:
        """The constant data as an array of the tensor's shape and dtype."""
        if self.data is None:
            raise TfliteImportError(f"{self.where}: expected constant data in buffer "
                                    f"{self.buffer}, found none")
        if self.dtype not in _NUMPY_DTYPES:
            raise TfliteImportError(f"{self.where}: unsupported constant type {self.dtype}")
        dtype = np.dtype(self.dtype).newbyteorder("<")
        count = int(np.prod(self.shape, dtype=np.int64))
        if len(self.data) != count * dtype.itemsize:
            raise TfliteImportError(
                f"{self.where}: buffer {self.buffer} holds {len(self.data)} bytes, expected "
                f"{count * dtype.itemsize} ({count} x {self.dtype}, shape {list(self.shape)})")
        return np.frombuffer(self.data, dtype=dtype).astype(self.dtype).reshape(self.shape)


@dataclass(frozen=True)
class OperatorInfo:
    """One operator: its builtin name (``"CONV_2D"``; ``"CUSTOM"`` with ``custom_code``),
    tensor indices (-1 for an omitted optional input) and builtin options by schema field
    name (``{"StrideW": 2, ...}``; ``options_type`` names the options table)."""

    index: int
    op: str
    custom_code: str | None
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_type: str | None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The operator type for reports: the builtin name, or ``CUSTOM(code)``."""
        return self.op if self.custom_code is None else f"CUSTOM({self.custom_code})"


@dataclass(frozen=True)
class ModelInfo:
    """Subgraph 0 of a model: tensors, operators in execution order, inputs, outputs."""

    tensors: tuple[TensorInfo, ...]
    operators: tuple[OperatorInfo, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


def read_model(model: str | os.PathLike[str] | bytes) -> ModelInfo:
    """Read subgraph 0 of the model in ``model`` (bytes, or a path to a ``.tflite`` file)."""
    source, buf = _load(model)
    if len(buf) < 8:
        raise TfliteImportError(f"{source}: expected a TFLite flatbuffer, found only "
                                f"{len(buf)} bytes (truncated?)")
    if buf[4:8] != _IDENTIFIER:
        raise TfliteImportError(f"{source}: expected the TFLite file identifier "
                                f"{_IDENTIFIER!r} at bytes 4..8, found {bytes(buf[4:8])!r}")
    reader = _Reader(buf)
    try:
        return reader.model()
    except TfliteImportError as exc:
        raise TfliteImportError(f"{source}: {exc}") from exc
    except _READ_ERRORS as exc:
        raise TfliteImportError(f"{source}: malformed or truncated flatbuffer while reading "
                                f"{reader.reading}: {type(exc).__name__}: {exc}") from exc


def _load(model: str | os.PathLike[str] | bytes) -> tuple[str, bytes]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "TFLite model", bytes(model)
    path = os.fspath(model)
    try:
        with open(path, "rb") as f:
            return path, f.read()
    except OSError as exc:
        raise TfliteImportError(f"{path}: could not read the TFLite file: {exc}") from exc


class _Reader:
    """Reads one flatbuffer; ``reading`` says what it was reading (for error messages)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.reading = "the model header"

    def _count(self, n: int, what: str) -> int:
        # Each vector element takes at least one byte: a larger count is corruption (and
        # would otherwise make the loops below spin over garbage).
        if not 0 <= n <= len(self.buf):
            raise TfliteImportError(f"malformed flatbuffer: {what} claims {n} entries in a "
                                    f"{len(self.buf)}-byte file")
        return n

    def model(self) -> ModelInfo:
        m = tflite.Model.GetRootAs(self.buf, 0)
        if self._count(m.SubgraphsLength(), "the subgraph list") == 0:
            raise TfliteImportError("expected at least one subgraph, found none")
        self.reading = "the buffer table"
        buffers = [m.Buffers(i) for i in range(self._count(m.BuffersLength(), "buffers"))]
        self.reading = "the operator codes"
        codes = [self._opcode(m.OperatorCodes(i))
                 for i in range(self._count(m.OperatorCodesLength(), "operator codes"))]
        g = m.Subgraphs(0)
        tensors = []
        for i in range(self._count(g.TensorsLength(), "tensors")):
            self.reading = f"tensor {i}"
            tensors.append(self._tensor(i, g.Tensors(i), buffers))
        operators = []
        for i in range(self._count(g.OperatorsLength(), "operators")):
            self.reading = f"operator {i}"
            operators.append(self._operator(i, g.Operators(i), codes, len(tensors)))
        self.reading = "the subgraph inputs and outputs"
        inputs = _indices(g.InputsAsNumpy())
        outputs = _indices(g.OutputsAsNumpy())
        for kind, indices in (("input", inputs), ("output", outputs)):
            _check_tensor_indices(f"graph {kind}", indices, len(tensors))
        return ModelInfo(tuple(tensors), tuple(operators), inputs, outputs)

    def _opcode(self, code: Any) -> tuple[str, str | None]:
        number = int(code.BuiltinCode())
        name = _OP_NAMES.get(number, f"BUILTIN_{number}")
        custom = code.CustomCode()
        if name == "CUSTOM":
            return name, (custom or b"").decode("utf-8", "replace")
        return name, None

    def _buffer_data(self, buffer: Any, index: int) -> bytes | None:
        offset, size = int(buffer.Offset()), int(buffer.Size())
        if offset > 1:  # data stored after the flatbuffer (models over 2 GB)
            if offset + size > len(self.buf):
                raise TfliteImportError(f"buffer {index}: expected {size} bytes at offset "
                                        f"{offset}, the file ends at {len(self.buf)} "
                                        f"(truncated?)")
            return self.buf[offset:offset + size]
        data = buffer.DataAsNumpy()
        if not isinstance(data, np.ndarray) or data.size == 0:
            return None
        return data.tobytes()

    def _tensor(self, index: int, t: Any, buffers: list[Any]) -> TensorInfo:
        name = (t.Name() or b"").decode("utf-8", "replace")
        shape = tuple(int(d) for d in _indices(t.ShapeAsNumpy()))
        type_number = int(t.Type())
        dtype = _TYPE_NAMES.get(type_number, f"type {type_number}")
        buffer = int(t.Buffer())
        if not 0 <= buffer < len(buffers):
            raise TfliteImportError(f"tensor {index} ({name!r}) refers to buffer {buffer}, "
                                    f"the model has {len(buffers)} buffers")
        data = self._buffer_data(buffers[buffer], buffer) if buffer else None
        return TensorInfo(index, name, shape, dtype, _quantization(t.Quantization()), buffer,
                          data)

    def _operator(self, index: int, op: Any, codes: list[tuple[str, str | None]],
                  num_tensors: int) -> OperatorInfo:
        code = int(op.OpcodeIndex())
        if not 0 <= code < len(codes):
            raise TfliteImportError(f"operator {index} uses operator code {code}, the model "
                                    f"has {len(codes)}")
        name, custom = codes[code]
        inputs, outputs = _indices(op.InputsAsNumpy()), _indices(op.OutputsAsNumpy())
        where = f"operator {index} ({name})"
        _check_tensor_indices(f"{where} input", inputs, num_tensors, optional=True)
        _check_tensor_indices(f"{where} output", outputs, num_tensors)
        options_type = _OPTION_NAMES.get(int(op.BuiltinOptionsType()))
        table = op.BuiltinOptions()
        options = {} if table is None or options_type in (None, "NONE") else \
            _read_options(options_type, table)
        return OperatorInfo(index, name, custom, inputs, outputs,
                            None if table is None else options_type, options)


def _indices(values: Any) -> tuple[int, ...]:
    # The AsNumpy accessors return 0 for an absent vector.
    if not isinstance(values, np.ndarray):
        return ()
    return tuple(int(v) for v in values)


def _check_tensor_indices(what: str, indices: tuple[int, ...], count: int,
                          optional: bool = False) -> None:
    low = -1 if optional else 0
    bad = [i for i in indices if not low <= i < count]
    if bad:
        raise TfliteImportError(f"{what}: tensor indices {bad} out of range (the subgraph "
                                f"has {count} tensors)")


def _quantization(q: Any) -> Quantization | None:
    if q is None:
        return None
    scale = q.ScaleAsNumpy()
    if not isinstance(scale, np.ndarray) or scale.size == 0:
        return None
    zero_point = q.ZeroPointAsNumpy()
    zero_point = zero_point if isinstance(zero_point, np.ndarray) else np.zeros(0, "int64")
    return Quantization(scale.astype("float32"), zero_point.astype("int64"),
                        int(q.QuantizedDimension()))


def _read_options(options_type: str, table: Any) -> dict[str, Any]:
    """Every scalar and integer-vector field of a builtin options table, by schema name."""
    cls = getattr(tflite, options_type, None)
    if not isinstance(cls, type):
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    values: dict[str, Any] = {}
    for name, method in vars(cls).items():
        if not callable(method) or name.startswith(("_", "Init", "GetRootAs")) \
                or name.endswith(("Length", "IsNone", "AsNumpy", "BufferHasIdentifier")):
            continue
        params = len(inspect.signature(method).parameters)
        if params == 1:
            value = method(obj)
            if isinstance(value, (bool, int, float)):
                values[name] = value
        elif params == 2 and hasattr(cls, f"{name}AsNumpy"):
            values[name] = np.asarray(_indices(getattr(obj, f"{name}AsNumpy")()), "int64")
    return values
