"""The in-tree plugin distributions (``plugins/*``, ``examples/*``) use passhost's exported
API only: every ``from passhost... import`` names a package (whose ``__init__`` and
``__all__`` are the API) or ``passhost.errors``, never a module inside a package. A plugin
built this way keeps working when passhost reorganises its modules."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Public modules that are not packages.
PUBLIC_MODULES = {"passhost.errors", "passhost.relay.dataflow_pattern"}
#: Build scripts: they load what they need by path, before passhost is installed.
BUILD_SCRIPTS = {"setup.py"}


def plugin_sources() -> list[Path]:
    """The Python files of the in-tree plugins and examples, tests and build output aside."""
    return sorted(path for folder in ("plugins", "examples")
                  for path in (ROOT / folder).rglob("*.py")
                  if not {"tests", "build"} & set(path.relative_to(ROOT).parts)
                  and not any(part.endswith(".egg-info") for part in path.parts)
                  and path.name not in BUILD_SCRIPTS)


def _is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


def internal_imports(path: Path) -> list[str]:
    """``line: module`` of each import of a passhost module that is not exported API."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.startswith("passhost.") and name not in PUBLIC_MODULES \
                    and not _is_package(name):
                found.append(f"{node.lineno}: {name}")
    return found


def test_there_are_plugin_sources_to_check():
    names = {path.relative_to(ROOT).as_posix() for path in plugin_sources()}
    assert "plugins/cpu_target/src/passhost_cpu_target/plugin.py" in names
    assert "plugins/cmsis_nn/src/passhost_cmsis_nn/lowering.py" in names


@pytest.mark.parametrize("path", plugin_sources(),
                         ids=lambda path: path.relative_to(ROOT).as_posix())
def test_plugins_import_only_exported_api(path):
    assert internal_imports(path) == [], (
        "import from the package instead (export the name from its __init__ if needed)")


def test_an_internal_import_is_found(tmp_path):
    source = tmp_path / "plugin.py"
    source.write_text("from passhost.ir.module import IRModule\nfrom passhost.ir import IRModule\n"
                      "import passhost.tir.function\n")
    assert internal_imports(source) == ["1: passhost.ir.module", "3: passhost.tir.function"]
