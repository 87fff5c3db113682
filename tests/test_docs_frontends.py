"""docs/frontends.md: the generated tables (ONNX operators, conformance counts) are what the
code says. Run ``python tests/test_docs_frontends.py --write`` to regenerate them."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("onnx")

from onnx_conformance import SUITES, conformance_tests, expected_failures
from passhost.frontend.onnx_registry import converter_table, operator_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "frontends.md"
_BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+)[^>]*-->\n)(?P<body>.*?)"
                    r"(<!-- end generated -->)", re.DOTALL)


def conformance_table() -> str:
    """The counts per suite, then the expected failures by reason."""
    listed = expected_failures()
    rows = ["| suite | tests | pass | expected failures |", "|---|---|---|---|"]
    for suite in SUITES.values():
        names = [n for n in conformance_tests() if n.startswith(f"{suite}/")]
        failing = len([n for n in names if n in listed])
        rows.append(f"| {suite} | {len(names):,} | {len(names) - failing:,} | {failing:,} |")
    rows += ["", "| why the expected failures fail | tests |", "|---|---|"]
    for reason, count in sorted(Counter(listed.values()).items(), key=lambda kv: -kv[1]):
        rows.append(f"| {reason} | {count} |")
    return "\n".join(rows) + "\n"


GENERATORS = {"onnx-operators": operator_table, "onnx-conformance": conformance_table}


def generated_blocks(text: str) -> dict[str, str]:
    """The body of each generated block of ``text``, by name."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def test_the_generated_blocks_are_fresh() -> None:
    blocks = generated_blocks(DOC.read_text())
    assert set(blocks) == set(GENERATORS)
    for name, make in GENERATORS.items():
        assert blocks[name] == make(), f"{name} is stale: python tests/test_docs_frontends.py " \
                                       f"--write"


def test_every_converter_documents_what_it_becomes() -> None:
    for key, versions in converter_table().items():
        for version, convert in versions.items():
            assert (convert.__doc__ or "").strip(), f"{key} (from version {version})"


def _write() -> None:
    text = DOC.read_text()
    text = _BLOCK.sub(lambda m: m.group(1) + GENERATORS[m["name"]]() + m.group(4), text)
    DOC.write_text(text)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_docs_frontends.py --write")
    _write()
