"""docs/passes.md: every before/after example is what the pass really does.

Each example is a ```passhost block (the input module), a line ``After `PIPELINE`:`` and a
second block (the expected output). The pipeline runs at opt level 3 under
``testing.immutable_module``; its result must be structurally equal to the expected text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from passhost import text
from passhost.ir.structural import structural_equal
from passhost.transform import PassContext
from passhost.transform.pipeline import build_pipeline

DOC = Path(__file__).resolve().parent.parent / "docs" / "passes.md"
_EXAMPLE = re.compile(r"```passhost\n(?P<before>.*?)```\s*After `(?P<pipeline>[^`]+)`:\s*"
                      r"```passhost\n(?P<after>.*?)```", re.DOTALL)
EXAMPLES = [m.groupdict() for m in _EXAMPLE.finditer(DOC.read_text())]


def test_every_registered_graph_pass_has_a_section_with_an_example():
    doc = DOC.read_text()
    for name in ("InferType", "FoldConstant", "SimplifyInference", "FoldScaleAxis",
                 "CanonicalizeOps", "ConvertLayout", "EliminateCommonSubexpr",
                 "DeadCodeElimination", "FuseOps", "MergeComposite", "AnnotateTarget",
                 "PartitionGraph"):
        assert f"\n## {name}\n" in doc, name
    tested = {re.match(r"\w+", e["pipeline"]).group() for e in EXAMPLES}
    assert {"FoldConstant", "SimplifyInference", "FoldScaleAxis", "CanonicalizeOps",
            "ConvertLayout", "EliminateCommonSubexpr", "DeadCodeElimination",
            "FuseOps", "AnnotateTarget", "PartitionGraph"} <= tested


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["pipeline"] for e in EXAMPLES])
def test_the_example_is_what_the_pass_produces(example):
    before = text.parse_module(example["before"])
    expected = text.parse_module(example["after"])
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        out = build_pipeline(example["pipeline"])(before)
    assert structural_equal(out, expected), out.astext()
