"""The C types of TIR dtypes, and C literals of their values.

Every dtype has a *storage* type (what an array element is) and a *value* type (what an
expression of the dtype is in C). They differ for the narrow floats: a float16 element is a
``_Float16`` and a bfloat16 element a ``uint16_t`` (its bits), while expressions of both are
``float`` holding a value the narrow type represents exactly.
"""

from __future__ import annotations

import math

import numpy as np

from passhost.backend.c.errors import CCodegenError

__all__ = ["STORAGE_TYPES", "VALUE_TYPES", "array_elements", "c_string", "float_literal",
           "int_literal", "storage_type", "suffix", "value_type"]

#: The C type of an array element of each dtype.
STORAGE_TYPES = {
    "bool": "bool", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
    "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t",
    "uint64": "uint64_t", "float16": "_Float16", "float32": "float", "float64": "double",
    "bfloat16": "uint16_t",
}
#: The C type of an expression of each dtype (``handle``: an untyped pointer).
VALUE_TYPES = {**STORAGE_TYPES, "float16": "float", "bfloat16": "float", "handle": "void *"}

_SUFFIXES = {"int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32",
             "uint32": "u32", "int64": "i64", "uint64": "u64", "float16": "f32",
             "float32": "f32", "float64": "f64", "bfloat16": "f32"}


def storage_type(dtype: str) -> str:
    """The C element type of a ``dtype`` array."""
    try:
        return STORAGE_TYPES[dtype]
    except KeyError:
        raise CCodegenError(f"no C array of dtype {dtype!r}; expected one of "
                            f"{', '.join(STORAGE_TYPES)}") from None


def value_type(dtype: str) -> str:
    """The C type of a ``dtype`` expression."""
    try:
        return VALUE_TYPES[dtype]
    except KeyError:
        raise CCodegenError(f"no C value of dtype {dtype!r}; expected one of "
                            f"{', '.join(VALUE_TYPES)}") from None


def suffix(dtype: str) -> str:
    """The part of a helper's name naming the C value type of ``dtype`` (``i32``, ``f32``;
    float16 and bfloat16 compute as ``f32``)."""
    return _SUFFIXES[dtype]


_INT_MIN = {"int32": "INT32_MIN", "int64": "INT64_MIN"}


def int_literal(value: int, dtype: str) -> str:
    """A C literal of integer (or bool) ``value`` with the C type of ``dtype``'s value (narrow
    integers are plain ``int`` literals)."""
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in _INT_MIN and value == -(1 << (int(dtype[3:]) - 1)):
        return _INT_MIN[dtype]
    if dtype == "int64":
        return f"INT64_C({value})"
    if dtype == "uint64":
        return f"UINT64_C({value})"
    if dtype == "uint32":
        return f"{value}U"
    return str(value)


def _finite(value: float, dtype: str) -> str:
    if dtype == "float64":
        return repr(value)
    text = str(np.float32(value))  # the shortest text that reads back as this float32
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def float_literal(value: float, dtype: str) -> str:
    """A C literal of ``value`` rounded to ``dtype`` (float16 values as float literals, which
    hold them exactly); infinities and NaN as ``INFINITY`` and ``NAN`` with their sign."""
    with np.errstate(over="ignore"):
        value = float(np.dtype(dtype).type(value)) if dtype != "float64" else float(value)
    if math.isnan(value):
        return "-NAN" if math.copysign(1.0, value) < 0 else "NAN"
    if math.isinf(value):
        return "-INFINITY" if value < 0 else "INFINITY"
    return _finite(value, dtype)


#: (bit width, mantissa bits, the ``__builtin_nan`` suffix) of each IEEE float dtype.
_IEEE = {"float16": (16, 10, "f16"), "float32": (32, 23, "f"), "float64": (64, 52, "")}


def _nan(bits: int, dtype: str) -> str:
    """A C constant of the NaN with IEEE ``bits``: ``NAN`` for the default quiet NaN, else a
    ``__builtin_nan``/``__builtin_nans`` constant keeping the payload."""
    width, mant, tail = _IEEE[dtype]
    sign = "-" if bits >> (width - 1) else ""
    payload = bits & ((1 << mant) - 1)
    quiet = 1 << (mant - 1)
    if payload == quiet:
        return f"{sign}NAN"
    kind = "nan" if payload & quiet else "nans"
    return f'{sign}__builtin_{kind}{tail}("{payload & (quiet - 1):#x}")'


_UINT_VIEW = {"float16": np.uint16, "float32": np.uint32, "float64": np.uint64}


def array_elements(data: np.ndarray) -> list[str]:
    """C initialiser elements reproducing ``data`` (flattened) bit for bit: integers in
    decimal, finite floats as round-trip literals, NaN with its sign and payload, bfloat16 as
    its bits."""
    flat = np.ascontiguousarray(data).reshape(-1)
    dtype = flat.dtype.name
    if dtype == "bool":
        return ["1" if v else "0" for v in flat.tolist()]
    if dtype == "bfloat16":
        return [f"{v:#06x}" for v in flat.view(np.uint16).tolist()]
    if dtype in _IEEE:
        out = []
        bits = flat.view(_UINT_VIEW[dtype]).tolist()
        with np.errstate(invalid="ignore"):  # signalling NaNs
            values = flat.astype(np.float64).tolist()
        for value, raw in zip(values, bits):
            if math.isnan(value):
                out.append(_nan(raw, dtype))
            elif math.isinf(value):
                out.append("-INFINITY" if value < 0 else "INFINITY")
            else:
                out.append(_finite(value, "float64" if dtype == "float64" else "float32"))
        return out
    if dtype == "uint64":
        return [f"{v}U" for v in flat.tolist()]
    return [int_literal(v, dtype) if dtype in _INT_MIN else str(v) for v in flat.tolist()]


def c_string(text: str) -> str:
    """``text`` as a C string literal (UTF-8; everything but printable ASCII escaped in
    octal, so no escape can run into the next character)."""
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)

