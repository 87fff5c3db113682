"""Type-check passhost and its in-tree plugins with mypy, holding the clean packages clean
and the rest to a baseline that only shrinks.

Run: python tools/check_types.py [--update]

The packages of :data:`CLEAN` must have no error at all. Every other file may have at most
the number of errors ``tools/mypy_baseline.json`` records for it (files not listed: none;
the first run writes the file). When a file has fewer errors than its record, ``--update``
lowers the record; it never raises one. The mypy settings are ``[tool.mypy]`` in ``pyproject.toml``.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tools" / "mypy_baseline.json"
#: Packages that must type-check without a single error.
CLEAN = ("src/passhost/plugins/", "src/passhost/transform/", "src/passhost/instrument/",
         "src/passhost/target/", "src/passhost/cli/", "plugins/timing/")
ERROR = re.compile(r"^(?P<file>[^:\n]+):\d+: error: ", re.MULTILINE)


def errors_by_file() -> tuple[Counter[str], str]:
    """The number of mypy errors in each file, and mypy's whole report."""
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml")])
    if status not in (0, 1) or err:
        raise SystemExit(f"mypy did not run: {err or out}")
    return Counter(match["file"] for match in ERROR.finditer(out)), out


def problems(found: Counter[str], baseline: dict[str, int]) -> list[str]:
    """What breaks the rules: errors in a clean package, or more than the baseline."""
    bad = [f"{name}: {count} error(s) in a package that must be clean"
           for name, count in sorted(found.items()) if name.startswith(CLEAN)]
    bad += [f"{name}: {count} error(s), the baseline allows {baseline.get(name, 0)}"
            for name, count in sorted(found.items())
            if not name.startswith(CLEAN) and count > baseline.get(name, 0)]
    return bad


def main() -> int:
    """Check (or with ``--update``, lower the baseline); the exit status."""
    found, report = errors_by_file()
    if not BASELINE.exists():  # the first baseline: what there is now, clean packages aside
        start = {name: n for name, n in sorted(found.items()) if not name.startswith(CLEAN)}
        BASELINE.write_text(json.dumps(start, indent=1) + "\n", encoding="utf-8")
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    bad = problems(found, baseline)
    if bad:
        print(report, end="")
        print("check_types: " + "\n check_types: ".join(bad), file=sys.stderr)
        return 1
    lowered = {name: found[name] for name in baseline if found[name] < baseline[name]}
    if "--update" in sys.argv[1:]:
        kept = {name: count for name in sorted(baseline) if (count := found[name])}
        BASELINE.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
        print(f"check_types: baseline rewritten ({sum(kept.values())} errors in "
              f"{len(kept)} files)")
    elif lowered:
        print(f"check_types: {len(lowered)} file(s) now have fewer errors than the baseline; "
              f"lower it: python tools/check_types.py --update")
    print(f"check_types: {sum(found.values())} errors, none new; the clean packages are clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
