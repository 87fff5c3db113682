"""The listings shown in docs/cli.md are what the command prints.

Every example in the file whose command line is ``$ PASSHOST_LOAD_PLUGINS=timing passhost
...`` (the installed plugins narrowed to the timing plugin, so that the output depends on
this repository and the development environment ``dev.sh`` installs) is run, and its
output must be the lines the file shows under it, up to the next command or the end of the
block. To refresh the file after a change: ``python tests/test_docs_cli.py --update``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
PREFIX = "$ PASSHOST_LOAD_PLUGINS=timing passhost "
BLOCK = re.compile(r"^```\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def examples(text: str) -> list[tuple[str, str, tuple[int, int]]]:
    """(command arguments, the output shown, the output's span in ``text``) of every
    checked example."""
    found = []
    for block in BLOCK.finditer(text):
        start = block.start(1)
        lines = block.group(1).splitlines(keepends=True)
        offsets = [start + sum(len(line) for line in lines[:i]) for i in range(len(lines) + 1)]
        for i, line in enumerate(lines):
            if not line.startswith(PREFIX):
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("$ ")),
                       len(lines))
            shown = "".join(lines[i + 1:end]).rstrip("\n")
            found.append((line[len(PREFIX):].strip(), shown, (offsets[i + 1], offsets[end])))
    return found


def printed(args: str) -> str:
    """What ``passhost ARGS`` prints with only the timing plugin loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PASSHOST_")}
    env["PASSHOST_LOAD_PLUGINS"] = "timing"
    done = subprocess.run([sys.executable, "-m", "passhost", *shlex.split(args)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n")


EXAMPLES = examples(DOC.read_text(encoding="utf-8"))


def test_the_listings_are_shown_in_the_doc():
    commands = {args for args, _, _ in EXAMPLES}
    assert {"plugins list", "passes list", "instruments list", "config list",
            "targets list", "pipelines list", "pattern-tables list"} <= commands


@pytest.mark.parametrize(("args", "shown"), [(a, s) for a, s, _ in EXAMPLES],
                         ids=[a for a, _, _ in EXAMPLES])
def test_the_doc_shows_what_the_command_prints(args, shown):
    assert printed(args) == shown, "docs/cli.md is stale: python tests/test_docs_cli.py --update"


def update() -> None:
    """Rewrite the outputs shown in docs/cli.md with what the commands print now."""
    text = DOC.read_text(encoding="utf-8")
    for args, _, (start, end) in reversed(examples(text)):
        following = text[end:end + 2]
        gap = "\n" if following.startswith("$ ") else ""
        text = text[:start] + printed(args) + "\n" + gap + text[end:]
    DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    update()
