"""The README's "Installing as a user" commands, run as written in a fresh virtual
environment on a copy of the repository: wheels of the host and the three plugins are
built and installed, the plugins are listed active, and a zoo model compiles for the cpu
target (with the kernels its wheel compiled) and runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fresh_env import clean_env, copy_source

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Installing as a user"
TIMEOUT = 900


def readme_commands() -> str:
    """The shell block of the README's section on installing as a user."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    return block


def test_the_readme_block_is_the_one_this_test_expects():
    lines = readme_commands().splitlines()
    assert lines[0].startswith("python -m pip wheel") and lines[1].startswith(
        "python -m pip install")
    assert lines[-1] == "passhost run mlp.tar"


def test_the_readme_installs_and_runs_from_wheels(tmp_path):
    work = copy_source(ROOT, tmp_path / "passhost", only_top_files_and=["src", "plugins"])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean_env(),
                   timeout=TIMEOUT)
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    env = clean_env({"PASSHOST_CACHE_DIR": str(tmp_path / "cache")}, bin_dir)
    done = subprocess.run(["bash", "-e", "-x", "-c", readme_commands()], cwd=work, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    listed = {line.split()[0]: line.split() for line in done.stdout.splitlines()
              if line.split() and line.split()[0] in ("cpu", "cmsis-nn", "timing")}
    assert set(listed) == {"cpu", "cmsis-nn", "timing"}
    assert all("active" in row for row in listed.values()), listed
    assert "TIRToRuntime.cpu" in done.stderr  # the timing tree of the build
    assert "output 0: float32[1, 10]" in done.stdout
    installed = list(venv.glob("lib/python*/site-packages/passhost_cpu_target/native/"
                               "prebuilt/kernels-*.so"))
    assert len(installed) == 1
    # the kernels came with the wheel: the compile cache holds only the model's loops
    assert not list((tmp_path / "cache").glob("kernels-*"))
