"""docs/debugging.md: every worked example runs, in order, in one directory, and prints
what the page shows (up to timings, dates and the Python version).

Blocks are found by an HTML comment right before them: ``<!-- file: NAME -->`` (the block
is written to NAME), ``<!-- example -->`` (a console session: ``$ passhost ...``,
``$ cat FILE`` or ``$ head -N FILE`` lines, each followed by its output, stderr then
stdout) and ``<!-- python -->`` (run; its stdout is the ``text`` block after it).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

from passhost.cli import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "debugging.md"
BLOCK = re.compile(r"<!-- (?P<kind>file: (?P<name>\S+)|example|python) -->\n```[a-z]*\n"
                   r"(?P<body>.*?)```(?:\s*```text\n(?P<out>.*?)```)?", re.DOTALL)


def normal(text: str) -> str:
    """``text`` with what changes from run to run replaced by placeholders."""
    text = re.sub(r"^ *\d+us ", "Nus ", text, flags=re.MULTILINE)
    text = re.sub(r"\b\d+us\b", "Nus", text)
    text = re.sub(r"\d+\.\d\d%", "N%", text)
    text = re.sub(r"in \d+ ms", "in N ms", text)
    text = re.sub(r'"ts": \d+', '"ts": N', text)
    return re.sub(r'"(created|started|python)": "[^"]*"', r'"\1": "X"', text)


def sessions(body: str) -> list[tuple[str, str]]:
    """The (command, expected output) pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            pairs[-1][1].append(line + "\n")
    return [(command, "".join(lines)) for command, lines in pairs]


def run(command: str, capsys) -> str:
    argv = shlex.split(command)
    if argv[0] == "cat":
        return Path(argv[1]).read_text()
    if argv[0] == "head":
        return "".join(Path(argv[2]).read_text().splitlines(True)[:int(argv[1][1:])])
    assert argv[0] == "passhost", command
    main(argv[1:])
    out, err = capsys.readouterr()
    return err + out


def test_every_tool_has_a_worked_example():
    text = DOC.read_text()
    for needle in ("$ passhost bisect", "--reproducer repro", "--reproduce", "--local",
                   "--instrument validate-numerics", "show_skipped=true", "--trace-events",
                   "passhost trace trace.jsonl --chrome"):
        assert needle in text, needle


def test_the_worked_examples(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = list(BLOCK.finditer(DOC.read_text()))
    assert len(blocks) >= 12
    for block in blocks:
        kind, body = block["kind"], block["body"]
        if kind.startswith("file:"):
            Path(block["name"]).write_text(body)
        elif kind == "example":
            for command, expected in sessions(body):
                assert normal(run(command, capsys)) == normal(expected), command
        else:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, f"{DOC}:python", "exec"), {"__name__": "doc"})
            assert out.getvalue() == block["out"]
