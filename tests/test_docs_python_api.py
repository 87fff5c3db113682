"""The examples of docs/python-api.md run for real, in order, in one namespace (each
builds on the ones before it), and their assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"
EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```python\n(.*?)```", re.DOTALL)


def test_every_example_runs():
    examples = EXAMPLE.findall(DOC.read_text(encoding="utf-8"))
    assert [name for name, _ in examples] == ["build", "visit", "mutate", "primfunc", "render"]
    namespace: dict[str, object] = {}
    for name, code in examples:
        exec(compile(code, f"docs/python-api.md ({name})", "exec"), namespace)
