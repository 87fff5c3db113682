"""Helpers of the tests that install passhost into a fresh virtual environment: a clean
process environment, and a copy of a project without build leftovers."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path


def clean_env(extra: Mapping[str, str] | None = None, bin_dir: Path | None = None,
              ) -> dict[str, str]:
    """os.environ without PASSHOST_* and what could make the fresh environment import
    another passhost, plus ``extra``."""
    drop = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONPROFILEIMPORTTIME",
            "VIRTUAL_ENV", "__PYVENV_LAUNCHER__")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PASSHOST_") and k not in drop}
    env["PYTHONNOUSERSITE"] = "1"
    if bin_dir is not None:
        env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env.update(extra or {})
    return env


def copy_source(src: Path, dst: Path, *, only_top_files_and: Sequence[str] | None = None,
                ) -> Path:
    """Copy a project to ``dst`` without build leftovers (the cpu plugin's compiled kernels
    included), so building it writes nothing in the work tree (``only_top_files_and``: copy
    the top-level files and these folders)."""
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__", "build", "dist", ".*",
                                    "prebuilt")
    if only_top_files_and is None:
        shutil.copytree(src, dst, ignore=ignore)
        return dst
    dst.mkdir(parents=True)
    for item in src.iterdir():
        if item.is_file() and not item.name.startswith("."):
            shutil.copy2(item, dst / item.name)
    for folder in only_top_files_and:
        shutil.copytree(src / folder, dst / folder, ignore=ignore)
    return dst
