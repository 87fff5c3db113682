#!/usr/bin/env bash
# The developer entry point (the README's quick start):
#   bash dev.sh demo   - set up, then compile ResNet-18 for the cpu target with the timing
#                        instrument on, and run the artifact (the main job)
#   bash dev.sh test   - set up, then lint, check the layers and types, build the docs and
#                        run the tests
# Setup creates a virtual environment (.venv, or $PASSHOST_VENV) and installs passhost,
# its plugins, the example plugin distributions, the test tools and the exported-model
# tests' torch, transformers and onnxscript (the extras test and exports) into it; it needs
# only Python 3.10+ and pip.
set -euo pipefail
cd "$(dirname "$0")"
venv=${PASSHOST_VENV:-.venv}

setup() {
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  local plugins=()
  shopt -s nullglob
  for dir in plugins/*/ examples/*/; do
    plugins+=(-e "$dir")
  done
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[test,exports]" \
    "${plugins[@]}"
}

case "${1:-}" in
  demo)
    setup
    mkdir -p build
    "$venv/bin/passhost" compile resnet18 --target cpu --instrument timing -o build/resnet18.tar
    "$venv/bin/passhost" run build/resnet18.tar --repeat 10
    ;;
  test)
    shift
    setup
    "$venv/bin/ruff" check .
    "$venv/bin/lint-imports" --no-cache   # the layers of CONTRIBUTING.md (pyproject.toml)
    "$venv/bin/python" tools/check_types.py   # mypy: clean packages clean, the rest in its baseline
    "$venv/bin/mkdocs" build --quiet   # the docs and API reference; warnings are errors
    set +e
    "$venv/bin/python" -m pytest "$@"
    status=$?
    set -e
    if [ "$status" -eq 5 ]; then
      echo "dev.sh: pytest collected no tests; that is a failure" >&2
      exit 1
    fi
    exit "$status"
    ;;
  *)
    echo "usage: bash dev.sh demo|test [pytest args...]" >&2
    exit 2
    ;;
esac
