"""The metadata section of IR text: large constant arrays, stored once and referenced.

A module's text ends with an optional ``#[metadata]`` line followed by a JSON object
``{"constants": [{"dtype": ..., "shape": [...], "data": <base64 of little-endian bytes>}]}``.
Functions refer to entry ``i`` as ``meta[Constant][i]``.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np

from passhost.errors import ParseError
from passhost.ir.types import DTYPES

METADATA_DIRECTIVE = "#[metadata]"


class MetadataWriter:
    """Collects the arrays a printed module refers to (each distinct array object once)."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self._index: dict[int, int] = {}

    def add(self, array: np.ndarray) -> int:
        """The index of ``array`` in the table (added on first use)."""
        idx = self._index.get(id(array))
        if idx is None:
            idx = len(self.arrays)
            self._index[id(array)] = idx
            self.arrays.append(array)
        return idx

    def to_text(self) -> str:
        """The metadata section (directive line and JSON), or ``""`` when empty."""
        if not self.arrays:
            return ""
        entries = []
        for arr in self.arrays:
            data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
            entries.append({"dtype": arr.dtype.name, "shape": list(arr.shape),
                            "data": base64.b64encode(data.tobytes()).decode("ascii")})
        lines = ",\n".join("  " + json.dumps(e) for e in entries)
        return f'{METADATA_DIRECTIVE}\n{{"constants": [\n{lines}\n]}}\n'


class MetadataReader:
    """The arrays of a parsed metadata section, with errors that point into the text."""

    def __init__(self, arrays: list[np.ndarray] | None = None, present: bool = False) -> None:
        self.arrays = arrays or []
        self.present = present

    @classmethod
    def parse(cls, text: str, line: int, source_name: str = "<text>") -> MetadataReader:
        """Read the JSON that follows the ``#[metadata]`` directive on line ``line``."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise ParseError(f"malformed metadata JSON: {err.msg}", line + err.lineno,
                             err.colno, source_name) from None
        except (ValueError, RecursionError) as err:  # an integer of thousands of digits,
            # arrays or objects nested thousands deep
            raise ParseError(f"metadata JSON that passhost never writes: {err}", line + 1, 1,
                             source_name) from None
        entries = doc.get("constants") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            raise ParseError('metadata must be an object with a "constants" list', line + 1, 1,
                             source_name)
        arrays = []
        for i, entry in enumerate(entries):
            arrays.append(_decode(entry, i, line, source_name))
        return cls(arrays, present=True)

    def get(self, index: int, line: int, column: int, source_name: str = "<text>",
            ) -> np.ndarray:
        """Entry ``index``; an absent section or index is a ParseError at (line, column)."""
        if not self.present:
            raise ParseError(f"meta[Constant][{index}] refers to a metadata section, but the "
                             "text has none (print with show_meta_data=True)", line, column,
                             source_name)
        if not 0 <= index < len(self.arrays):
            raise ParseError(f"meta[Constant][{index}] is out of range: the metadata holds "
                             f"{len(self.arrays)} constants", line, column, source_name)
        return self.arrays[index]


def _decode(entry: object, i: int, line: int, source_name: str) -> np.ndarray:
    def bad(msg: str) -> ParseError:
        return ParseError(f"metadata constant {i}: {msg}", line + 1, 1, source_name)

    if not isinstance(entry, dict):
        raise bad("expected an object")
    dtype, shape, data = entry.get("dtype"), entry.get("shape"), entry.get("data")
    if dtype not in DTYPES:
        raise bad(f"unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise bad(f"bad shape {shape!r}")
    try:
        raw = base64.b64decode(data, validate=True)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        raise bad("data is not base64") from None
    np_dtype = np.dtype(dtype).newbyteorder("<")
    count = math.prod(shape)  # exact: no overflow on a crafted shape
    if len(raw) != count * np_dtype.itemsize:
        raise bad(f"data holds {len(raw)} bytes, shape {shape} of {dtype} needs "
                  f"{count * np_dtype.itemsize}")
    arr = np.frombuffer(raw, dtype=np_dtype).astype(np.dtype(dtype)).reshape(shape)
    arr.flags.writeable = False
    return arr
