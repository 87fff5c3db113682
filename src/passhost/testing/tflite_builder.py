"""Build TFLite flatbuffers (``.tflite`` bytes) without TensorFlow, for tests.

:class:`TfliteBuilder` collects one subgraph: tensors (float32, int8, int32, ... with
per-tensor or per-channel quantisation), their buffers, operators with builtin options,
and the graph's inputs and outputs; :meth:`TfliteBuilder.to_bytes` serialises it with the
``tflite`` schema bindings and ``flatbuffers`` (both imported on first use, so
``passhost.testing`` loads without them)::

    b = TfliteBuilder()
    x = b.input((1, 8, 8, 3), "int8", name="x", scale=0.05, zero_point=-3)
    w = b.constant(weights, name="w", scale=w_scales, zero_point=0, quantized_dimension=0)
    bias = b.constant(bias_i32, name="b")
    y = b.conv2d(x, w, bias, stride=2, padding="SAME", activation="RELU",
                 scale=0.1, zero_point=-128)
    b.outputs(y)
    model_bytes = b.to_bytes()

Layer helpers (:meth:`~TfliteBuilder.conv2d`, :meth:`~TfliteBuilder.depthwise_conv2d`,
:meth:`~TfliteBuilder.fully_connected`, the pools, :meth:`~TfliteBuilder.add`,
:meth:`~TfliteBuilder.mul`, :meth:`~TfliteBuilder.softmax`, :meth:`~TfliteBuilder.reshape`,
:meth:`~TfliteBuilder.quantize`, :meth:`~TfliteBuilder.dequantize`,
:meth:`~TfliteBuilder.pad`) create the output tensor with its shape, as TFLite computes it,
and return its index. An output without ``scale`` takes its input's quantisation. The raw
:meth:`~TfliteBuilder.tensor` and :meth:`~TfliteBuilder.operator` accept anything,
including malformed models for error tests (unknown buffers, custom operators, ...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["TfliteBuilder"]

_PAIR = int | tuple[int, int]


@dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    dtype: str
    name: str
    buffer: int
    scale: tuple[float, ...] | None
    zero_point: tuple[int, ...] | None
    quantized_dimension: int


@dataclass(frozen=True)
class _Operator:
    op: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: str | None
    fields: dict[str, Any]
    custom_code: str | None


def _pair(value: _PAIR) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


def _window_size(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    """TFLite's output size along one axis: ceil(in / stride) for SAME, ceil((in - dilated
    kernel + 1) / stride) for VALID."""
    if padding == "SAME":
        return math.ceil(size / stride)
    return math.ceil((size - (kernel - 1) * dilation) / stride)


def _weights(x: int, weight: int, bias: int | None) -> list[int]:
    # A missing bias is left out of the list (TFLite Micro's depthwise kernel crashes on a
    # -1 entry); the frontend accepts both forms.
    return [x, weight] if bias is None else [x, weight, bias]


def _as_tuple(values: Any, kind: type) -> tuple[Any, ...] | None:
    if values is None:
        return None
    return tuple(kind(v) for v in np.atleast_1d(np.asarray(values)).reshape(-1))


class TfliteBuilder:
    """One subgraph of a TFLite model under construction; :meth:`to_bytes` serialises it."""

    def __init__(self, description: str = "passhost test model") -> None:
        self.description = description
        self._tensors: list[_Tensor] = []
        self._buffers: list[bytes] = [b""]  # buffer 0 is the empty buffer by convention
        self._operators: list[_Operator] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []

    # -- tensors -----------------------------------------------------------------------------
    def buffer(self, data: bytes) -> int:
        """Add a buffer holding ``data``; returns its index."""
        self._buffers.append(bytes(data))
        return len(self._buffers) - 1

    def tensor(self, shape: Sequence[int], dtype: str = "float32", *, name: str | None = None,
               data: np.ndarray | None = None, buffer: int | None = None,
               scale: float | Sequence[float] | None = None,
               zero_point: int | Sequence[int] | None = None,
               quantized_dimension: int = 0) -> int:
        """Add a tensor; returns its index. ``data`` (cast to ``dtype``) goes into a new
        buffer; ``buffer`` names an existing (or, for error tests, any) buffer index instead.
        ``scale``/``zero_point`` (scalars or per-channel sequences along
        ``quantized_dimension``) make it quantised; a missing zero point is 0 and a single
        zero point is repeated for every scale."""
        if data is not None:
            buffer = self.buffer(np.ascontiguousarray(data, dtype=dtype).tobytes())
        if scale is not None:
            # One zero point per scale; a single (or missing) one is repeated.
            zps = np.atleast_1d(0 if zero_point is None else zero_point)
            count = np.atleast_1d(scale).size
            zero_point = np.repeat(zps, count) if zps.size == 1 and count > 1 else zps
        index = len(self._tensors)
        self._tensors.append(_Tensor(
            tuple(int(d) for d in shape), dtype, f"t{index}" if name is None else name,
            0 if buffer is None else int(buffer), _as_tuple(scale, float),
            _as_tuple(zero_point, int), int(quantized_dimension)))
        return index

    def input(self, shape: Sequence[int], dtype: str = "float32", **kwargs: Any) -> int:
        """Add a tensor (see :meth:`tensor`) and make it the next graph input."""
        index = self.tensor(shape, dtype, **kwargs)
        self._inputs.append(index)
        return index

    def constant(self, array: Any, dtype: str | None = None, **kwargs: Any) -> int:
        """Add a tensor holding ``array`` (in ``dtype``, default the array's own)."""
        arr = np.asarray(array)
        return self.tensor(arr.shape, dtype or arr.dtype.name, data=arr, **kwargs)

    def outputs(self, *tensors: int) -> None:
        """Make ``tensors`` graph outputs, in order."""
        self._outputs.extend(int(t) for t in tensors)

    @property
    def graph_inputs(self) -> tuple[int, ...]:
        """The tensor indices of the graph inputs, in order."""
        return tuple(self._inputs)

    @property
    def graph_outputs(self) -> tuple[int, ...]:
        """The tensor indices of the graph outputs, in order."""
        return tuple(self._outputs)

    def shape(self, tensor: int) -> tuple[int, ...]:
        """The shape of tensor ``tensor``."""
        return self._tensors[tensor].shape

    def dtype(self, tensor: int) -> str:
        """The dtype name of tensor ``tensor``."""
        return self._tensors[tensor].dtype

    # -- operators ---------------------------------------------------------------------------
    def operator(self, op: str, inputs: Sequence[int], outputs: Sequence[int],
                 options: str | None = None, *, custom_code: str | None = None,
                 **fields: Any) -> int:
        """Add operator ``op`` (a ``tflite.BuiltinOperator`` name such as ``"CONV_2D"``, or
        ``"CUSTOM"`` with ``custom_code``) reading ``inputs`` (-1: an omitted optional
        input) and writing ``outputs``. ``options`` names its builtin options table
        (``"Conv2DOptions"``) and ``fields`` its fields by schema name (``StrideW=2``;
        a list is written as an int32 vector). Returns the operator's index."""
        self._operators.append(_Operator(op, tuple(int(i) for i in inputs),
                                         tuple(int(o) for o in outputs), options,
                                         dict(fields), custom_code))
        return len(self._operators) - 1

    def _output(self, like: int, shape: Sequence[int], scale: Any, zero_point: Any,
                dtype: str | None = None, name: str | None = None) -> int:
        """A new tensor of ``shape``; without ``scale`` it takes ``like``'s quantisation."""
        src = self._tensors[like]
        dtype = dtype or src.dtype
        if scale is None and dtype == src.dtype and src.scale is not None:
            scale, zero_point = src.scale, src.zero_point
        return self.tensor(shape, dtype, name=name, scale=scale, zero_point=zero_point)

    def _window_op(self, op: str, options: str, x: int, out_channels: int,
                   kernel: tuple[int, int], stride: _PAIR, padding: str, dilation: _PAIR,
                   inputs: Sequence[int], scale: Any, zero_point: Any, name: str | None,
                   **fields: Any) -> int:
        n, h, w, _ = self.shape(x)
        (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
        oh = _window_size(h, kernel[0], sh, dh, padding)
        ow = _window_size(w, kernel[1], sw, dw, padding)
        out = self._output(x, (n, oh, ow, out_channels), scale, zero_point, name=name)
        self.operator(op, inputs, [out], options, Padding=_enum("Padding", padding),
                      StrideH=sh, StrideW=sw, **fields)
        return out

    def conv2d(self, x: int, weight: int, bias: int | None = None, *, stride: _PAIR = 1,
               padding: str = "SAME", dilation: _PAIR = 1, activation: str = "NONE",
               scale: Any = None, zero_point: Any = None, name: str | None = None) -> int:
        """CONV_2D of NHWC ``x`` with an OHWI ``weight`` (and optional bias)."""
        o, kh, kw, _ = self.shape(weight)
        dh, dw = _pair(dilation)
        return self._window_op(
            "CONV_2D", "Conv2DOptions", x, o, (kh, kw), stride, padding, dilation,
            _weights(x, weight, bias), scale, zero_point, name,
            DilationHFactor=dh, DilationWFactor=dw,
            FusedActivationFunction=_enum("ActivationFunctionType", activation))

    def depthwise_conv2d(self, x: int, weight: int, bias: int | None = None, *,
                         stride: _PAIR = 1, padding: str = "SAME", dilation: _PAIR = 1,
                         depth_multiplier: int | None = None, activation: str = "NONE",
                         scale: Any = None, zero_point: Any = None,
                         name: str | None = None) -> int:
        """DEPTHWISE_CONV_2D of NHWC ``x`` with a ``(1, KH, KW, C*M)`` ``weight``; the
        depth multiplier option defaults to ``C*M / C``."""
        _, kh, kw, o = self.shape(weight)
        dh, dw = _pair(dilation)
        multiplier = o // self.shape(x)[3] if depth_multiplier is None else depth_multiplier
        return self._window_op(
            "DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions", x, o, (kh, kw), stride, padding,
            dilation, _weights(x, weight, bias), scale, zero_point, name,
            DilationHFactor=dh, DilationWFactor=dw, DepthMultiplier=multiplier,
            FusedActivationFunction=_enum("ActivationFunctionType", activation))

    def _pool(self, op: str, x: int, pool_size: _PAIR, stride: _PAIR | None, padding: str,
              activation: str, scale: Any, zero_point: Any, name: str | None) -> int:
        kh, kw = _pair(pool_size)
        stride = (kh, kw) if stride is None else stride
        return self._window_op(
            op, "Pool2DOptions", x, self.shape(x)[3], (kh, kw), stride, padding, 1, [x],
            scale, zero_point, name, FilterHeight=kh, FilterWidth=kw,
            FusedActivationFunction=_enum("ActivationFunctionType", activation))

    def average_pool2d(self, x: int, pool_size: _PAIR, *, stride: _PAIR | None = None,
                       padding: str = "VALID", activation: str = "NONE", scale: Any = None,
                       zero_point: Any = None, name: str | None = None) -> int:
        """AVERAGE_POOL_2D of NHWC ``x`` (stride defaults to the pool size)."""
        return self._pool("AVERAGE_POOL_2D", x, pool_size, stride, padding, activation,
                          scale, zero_point, name)

    def max_pool2d(self, x: int, pool_size: _PAIR, *, stride: _PAIR | None = None,
                   padding: str = "VALID", activation: str = "NONE", scale: Any = None,
                   zero_point: Any = None, name: str | None = None) -> int:
        """MAX_POOL_2D of NHWC ``x`` (stride defaults to the pool size)."""
        return self._pool("MAX_POOL_2D", x, pool_size, stride, padding, activation,
                          scale, zero_point, name)

    def fully_connected(self, x: int, weight: int, bias: int | None = None, *,
                        keep_num_dims: bool = False, activation: str = "NONE",
                        scale: Any = None, zero_point: Any = None,
                        name: str | None = None) -> int:
        """FULLY_CONNECTED with a ``(units, in)`` ``weight``: the output is ``(size / in,
        units)``, or ``x``'s leading dims and ``units`` with ``keep_num_dims``."""
        units, depth = self.shape(weight)
        shape = self.shape(x)
        out_shape = ((*shape[:-1], units) if keep_num_dims
                     else (math.prod(shape) // depth, units))
        out = self._output(x, out_shape, scale, zero_point, name=name)
        self.operator("FULLY_CONNECTED", _weights(x, weight, bias), [out],
                      "FullyConnectedOptions", KeepNumDims=bool(keep_num_dims),
                      FusedActivationFunction=_enum("ActivationFunctionType", activation))
        return out

    def _binary(self, op: str, options: str, a: int, b: int, activation: str, scale: Any,
                zero_point: Any, name: str | None) -> int:
        shape = np.broadcast_shapes(self.shape(a), self.shape(b))
        out = self._output(a, shape, scale, zero_point, name=name)
        self.operator(op, [a, b], [out], options,
                      FusedActivationFunction=_enum("ActivationFunctionType", activation))
        return out

    def add(self, a: int, b: int, *, activation: str = "NONE", scale: Any = None,
            zero_point: Any = None, name: str | None = None) -> int:
        """ADD (broadcasting)."""
        return self._binary("ADD", "AddOptions", a, b, activation, scale, zero_point, name)

    def mul(self, a: int, b: int, *, activation: str = "NONE", scale: Any = None,
            zero_point: Any = None, name: str | None = None) -> int:
        """MUL (broadcasting)."""
        return self._binary("MUL", "MulOptions", a, b, activation, scale, zero_point, name)

    def softmax(self, x: int, *, beta: float = 1.0, scale: Any = None, zero_point: Any = None,
                name: str | None = None) -> int:
        """SOFTMAX over the last axis; an int8 output defaults to scale 1/256, zp -128."""
        if scale is None and self.dtype(x) == "int8":
            scale, zero_point = 1.0 / 256, -128
        out = self._output(x, self.shape(x), scale, zero_point, name=name)
        self.operator("SOFTMAX", [x], [out], "SoftmaxOptions", Beta=float(beta))
        return out

    def reshape(self, x: int, new_shape: Sequence[int], *, as_tensor: bool = False,
                name: str | None = None) -> int:
        """RESHAPE to ``new_shape`` (one -1 allowed): given as the ``new_shape`` option,
        or with ``as_tensor`` as an int32 shape tensor (input 1)."""
        dims = [int(d) for d in new_shape]
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = math.prod(self.shape(x)) // known
        out = self._output(x, dims, None, None, name=name)
        if as_tensor:
            shape_tensor = self.constant(np.asarray(new_shape, "int32"))
            self.operator("RESHAPE", [x, shape_tensor], [out])
        else:
            self.operator("RESHAPE", [x], [out], "ReshapeOptions", NewShape=list(new_shape))
        return out

    def quantize(self, x: int, *, scale: Any, zero_point: Any = 0, dtype: str = "int8",
                 quantized_dimension: int = 0, name: str | None = None) -> int:
        """QUANTIZE ``x`` (float32, or int8 to requantise) to ``dtype`` with the given
        quantisation (per channel along ``quantized_dimension`` when ``scale`` is a
        sequence of several scales)."""
        out = self.tensor(self.shape(x), dtype, name=name, scale=scale, zero_point=zero_point,
                          quantized_dimension=quantized_dimension)
        self.operator("QUANTIZE", [x], [out], "QuantizeOptions")
        return out

    def dequantize(self, x: int, *, name: str | None = None) -> int:
        """DEQUANTIZE ``x`` to float32."""
        out = self.tensor(self.shape(x), "float32", name=name)
        self.operator("DEQUANTIZE", [x], [out], "DequantizeOptions")
        return out

    def pad(self, x: int, paddings: Sequence[Sequence[int]], *,
            name: str | None = None) -> int:
        """PAD ``x`` by ``paddings`` ((before, after) per axis, an int32 constant)."""
        widths = np.asarray(paddings, dtype="int32").reshape(-1, 2)
        shape = [d + int(lo) + int(hi) for d, (lo, hi) in zip(self.shape(x), widths)]
        out = self._output(x, shape, None, None, name=name)
        self.operator("PAD", [x, self.constant(widths)], [out], "PadOptions")
        return out

    # -- serialisation -----------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The model as ``.tflite`` bytes (file identifier ``TFL3``, schema version 3)."""
        flatbuffers, tflite = _schema()
        b = flatbuffers.Builder(1024)
        buffers = [_write_buffer(b, tflite, data) for data in self._buffers]
        tensors = [_write_tensor(b, tflite, t) for t in self._tensors]
        codes: list[tuple[str, str | None]] = []
        for op in self._operators:
            if (op.op, op.custom_code) not in codes:
                codes.append((op.op, op.custom_code))
        operators = [_write_operator(b, tflite, op, codes.index((op.op, op.custom_code)))
                     for op in self._operators]
        opcodes = [_write_opcode(b, tflite, name, custom) for name, custom in codes]

        tensors_vec = _offsets(b, tensors)
        inputs_vec = _ints(b, self._inputs)
        outputs_vec = _ints(b, self._outputs)
        operators_vec = _offsets(b, operators)
        sub_name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, inputs_vec)
        tflite.SubGraphAddOutputs(b, outputs_vec)
        tflite.SubGraphAddOperators(b, operators_vec)
        tflite.SubGraphAddName(b, sub_name)
        subgraph = tflite.SubGraphEnd(b)

        codes_vec = _offsets(b, opcodes)
        subgraphs_vec = _offsets(b, [subgraph])
        buffers_vec = _offsets(b, buffers)
        description = b.CreateString(self.description)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, subgraphs_vec)
        tflite.ModelAddDescription(b, description)
        tflite.ModelAddBuffers(b, buffers_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


# -- flatbuffer writing helpers ------------------------------------------------------------------
def _schema() -> tuple[Any, Any]:
    """The ``flatbuffers`` and ``tflite`` modules, or an ImportError saying how to get them."""
    try:
        import flatbuffers
        import tflite
    except ImportError as exc:
        raise ImportError(f"TfliteBuilder needs the 'tflite' and 'flatbuffers' packages, "
                          f"found missing ({exc}); install with: pip install "
                          f"'passhost[tflite]'") from exc
    return flatbuffers, tflite


def _enum(kind: str, name: str) -> int:
    enum = getattr(_schema()[1], kind)
    if not hasattr(enum, name):
        choices = sorted(k for k in vars(enum) if not k.startswith("_"))
        raise ValueError(f"{kind}: expected one of {choices}, found {name!r}")
    return int(getattr(enum, name))


def _vector(b: Any, values: Sequence[Any], size: int, prepend: str) -> int:
    b.StartVector(size, len(values), size)
    for value in reversed(values):
        getattr(b, prepend)(value)
    return b.EndVector()


def _ints(b: Any, values: Sequence[int]) -> int:
    return _vector(b, [int(v) for v in values], 4, "PrependInt32")


def _offsets(b: Any, offsets: Sequence[int]) -> int:
    return _vector(b, offsets, 4, "PrependUOffsetTRelative")


def _write_buffer(b: Any, tflite: Any, data: bytes) -> int:
    vec = None
    if data:
        b.StartVector(1, len(data), 16)  # 16-byte aligned data, as TFLite's writer does
        b.head -= len(data)
        b.Bytes[b.head:b.head + len(data)] = data
        vec = b.EndVector()
    tflite.BufferStart(b)
    if vec is not None:
        tflite.BufferAddData(b, vec)
    return tflite.BufferEnd(b)


def _write_tensor(b: Any, tflite: Any, t: _Tensor) -> int:
    quant = None
    if t.scale is not None:
        scales = _vector(b, t.scale, 4, "PrependFloat32")
        zps = _vector(b, t.zero_point or (), 8, "PrependInt64")
        tflite.QuantizationParametersStart(b)
        tflite.QuantizationParametersAddScale(b, scales)
        tflite.QuantizationParametersAddZeroPoint(b, zps)
        tflite.QuantizationParametersAddQuantizedDimension(b, t.quantized_dimension)
        quant = tflite.QuantizationParametersEnd(b)
    name = b.CreateString(t.name)
    shape = _ints(b, t.shape)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, _enum("TensorType", t.dtype.upper()))
    tflite.TensorAddBuffer(b, t.buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    return tflite.TensorEnd(b)


def _write_options(b: Any, tflite: Any, options: str, fields: dict[str, Any]) -> int:
    vectors = {k: _ints(b, v) for k, v in fields.items() if isinstance(v, (list, tuple))}
    getattr(tflite, f"{options}Start")(b)
    for key, value in fields.items():
        getattr(tflite, f"{options}Add{key}")(b, vectors.get(key, value))
    return getattr(tflite, f"{options}End")(b)


def _write_operator(b: Any, tflite: Any, op: _Operator, opcode_index: int) -> int:
    options = None if op.options is None else _write_options(b, tflite, op.options, op.fields)
    inputs, outputs = _ints(b, op.inputs), _ints(b, op.outputs)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, opcode_index)
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, _enum("BuiltinOptions", op.options))
        tflite.OperatorAddBuiltinOptions(b, options)
    return tflite.OperatorEnd(b)


def _write_opcode(b: Any, tflite: Any, name: str, custom: str | None) -> int:
    code = _enum("BuiltinOperator", name)
    custom_str = None if custom is None else b.CreateString(custom)
    tflite.OperatorCodeStart(b)
    # Codes above 127 live in builtin_code; deprecated_builtin_code keeps the placeholder.
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, 1)
    if custom_str is not None:
        tflite.OperatorCodeAddCustomCode(b, custom_str)
    return tflite.OperatorCodeEnd(b)
