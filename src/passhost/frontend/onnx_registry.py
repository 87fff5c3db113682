"""Which converter handles each ONNX operator, at which of its versions.

Each converter module keeps a table ``CONVERTERS`` from the operator type (``"Conv"``, or
``"domain.Type"`` outside the default domain) to an :data:`Entry`: one converter for every
version of the operator, or a mapping from the operator version a converter starts at
(ONNX's ``since_version``) to that converter. The importer merges the modules' tables once
and, for each node, picks the converter of the operator version in force at the model's
opset.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from functools import cache

from onnx import defs

from passhost.frontend.onnx_context import NodeContext, Value

__all__ = ["CONVERTER_MODULES", "OPSET_RANGE", "Converter", "Entry", "converter_table",
           "find_converter", "is_default_domain", "operator_table", "operator_version"]

#: A converter: one node in, one value per node output (or a single value) out.
Converter = Callable[[NodeContext], Value | Sequence[Value]]
#: A table entry: one converter for every version, or converters by the version they start at.
Entry = Converter | Mapping[int, Converter]

#: The default-domain opsets passhost imports (both ends included).
OPSET_RANGE = (6, 28)

#: The modules whose ``CONVERTERS`` tables make up the importer, each one group of operators.
CONVERTER_MODULES = (
    "passhost.frontend.onnx_ops",
    "passhost.frontend.onnx_tensor",
    "passhost.frontend.onnx_qops",
    "passhost.frontend.onnx_elemwise",
    "passhost.frontend.onnx_reduce",
    "passhost.frontend.onnx_movement",
    "passhost.frontend.onnx_gather",
    "passhost.frontend.onnx_windows",
    "passhost.frontend.onnx_norm",
    "passhost.frontend.onnx_resize",
    "passhost.frontend.onnx_recurrent",
    "passhost.frontend.onnx_attention",
    "passhost.frontend.onnx_linear_attention",
    "passhost.frontend.onnx_vision",
    "passhost.frontend.onnx_signal",
)

_DEFAULT_DOMAINS = ("", "ai.onnx")


@cache
def converter_table() -> dict[str, dict[int, Converter]]:
    """Every module's table merged: op key -> {first operator version -> converter}."""
    table: dict[str, dict[int, Converter]] = {}
    owner: dict[str, str] = {}
    for name in CONVERTER_MODULES:
        module_table: Mapping[str, Entry] = importlib.import_module(name).CONVERTERS
        for key, entry in module_table.items():
            if key in table:
                raise RuntimeError(f"ONNX operator {key} has converters in {owner[key]} and "
                                   f"{name}")
            owner[key] = name
            table[key] = dict(entry) if isinstance(entry, Mapping) else {1: entry}
    return table


def operator_version(op_type: str, domain: str, opset: int) -> int | None:
    """The version of ``op_type`` in force at ``opset`` of ``domain`` (its schema's
    since_version), or None when ONNX defines no such operator there."""
    try:
        return int(defs.get_schema(op_type, opset, domain).since_version)
    except defs.SchemaError:
        return None


def find_converter(op_key: str, version: int | None) -> Converter | None:
    """The converter of ``op_key`` for operator ``version`` (None: the newest one), or None
    when passhost has none for that version."""
    versions = converter_table().get(op_key)
    if not versions:
        return None
    usable = [v for v in versions if version is None or v <= version]
    return versions[max(usable)] if usable else None


def is_default_domain(domain: str) -> bool:
    """Whether ``domain`` names ONNX's default operator set."""
    return domain in _DEFAULT_DOMAINS


def _summary(convert: Converter) -> str:
    """The first paragraph of a converter's docstring, on one line."""
    doc = (convert.__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split())


def operator_table() -> str:
    """The Markdown table of every ONNX operator passhost converts: the operator versions
    its converters start at ("all", or "1, 13+": one converter from 1, another from 13 on),
    and what each becomes (the converters' docstrings)."""
    rows = ["| ONNX operator | versions | in passhost |", "|---|---|---|"]
    for key, versions in sorted(converter_table().items(), key=lambda kv: kv[0].lower()):
        starts = sorted(versions)
        since = "all" if starts == [1] else ", ".join(str(v) for v in starts) + "+"
        docs = [_summary(versions[v]) for v in starts]
        if len(set(docs)) == 1:
            text = docs[-1]
        else:
            text = " ".join(f"(from {v}) {d}" for v, d in zip(starts, docs))
        cell = text.replace("|", r"\|")
        rows.append(f"| {key} | {since} | {cell} |")
    return "\n".join(rows) + "\n"
