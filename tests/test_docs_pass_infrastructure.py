"""The Python examples of docs/pass-infrastructure.md run, in order, in one namespace and
in a fresh plugin host (they register passes and pipelines of their own)."""

from __future__ import annotations

import re
from pathlib import Path

from passhost.testing import fresh_host, use_host

DOC = Path(__file__).resolve().parents[1] / "docs" / "pass-infrastructure.md"


def test_every_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 10
    namespace: dict[str, object] = {}
    with use_host(fresh_host()):
        for index, code in enumerate(blocks):
            exec(compile(code, f"docs/pass-infrastructure.md (block {index})", "exec"),
                 namespace)
        assert namespace["get_pass"]("Unroll").factor == 4  # declared once, on the class
