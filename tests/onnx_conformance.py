"""ONNX's backend conformance suite, run through passhost's ONNX backend.

The suite is ONNX's own (``onnx.backend.test``): the node tests are generated in memory by
onnx's test-case generators (the same ones ``backend-test-tools generate-data`` writes to
disk), the simple, pytorch-converted and pytorch-operator models ship with the onnx wheel.
``real`` models need downloads and are never run.

Run as a script to see where the suite stands against the expected-failure list
(``onnx_expected_failures.json``: reason -> the tests failing for it):

    python tests/onnx_conformance.py [REGEX]            # report, change nothing
    python tests/onnx_conformance.py --update [REGEX]   # also rewrite the list

The report gives the counts per suite and every test whose outcome differs from the list
(new passes; new failures with their errors). ``--update`` drops the tests that now pass
and adds new failures under the reason "unclassified" with their error, to be given a real
reason by hand.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import numpy as np

#: The suites run, by the runner's category name -> the name used in reports.
SUITES = {
    "NodeModel": "node",
    "SimpleModel": "simple",
    "PyTorchConvertedModel": "pytorch-converted",
    "PyTorchOperatorModel": "pytorch-operator",
}


#: The expected failures: reason -> sorted names of the tests failing for it.
EXPECTED_FAILURES_FILE = Path(__file__).with_name("onnx_expected_failures.json")


@cache
def expected_failures() -> dict[str, str]:
    """Test name -> the reason passhost is expected to fail it."""
    by_reason = json.loads(EXPECTED_FAILURES_FILE.read_text())
    out: dict[str, str] = {}
    for reason, names in by_reason.items():
        for name in names:
            if name in out:
                raise ValueError(f"{name} is listed twice: {out[name]!r} and {reason!r}")
            out[name] = reason
    return out


def write_expected_failures(failures: dict[str, str]) -> None:
    """Rewrite the list from test name -> reason (grouped by reason, sorted)."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in failures.items():
        by_reason.setdefault(reason, []).append(name)
    ordered = {reason: sorted(by_reason[reason]) for reason in sorted(by_reason)}
    EXPECTED_FAILURES_FILE.write_text(json.dumps(ordered, indent=1) + "\n")


@cache
def conformance_tests() -> dict[str, Callable[[], None]]:
    """Every CPU test of the suites, as ``"suite/test_name"`` -> a call that runs it."""
    from onnx.backend.test.runner import Runner

    from passhost.frontend.onnx_backend import PasshostBackend

    with warnings.catch_warnings():
        # The node-test generators compute expected outputs with NumPy and warn on purpose.
        warnings.simplefilter("ignore")
        runner = Runner(PasshostBackend)
    tests: dict[str, Callable[[], None]] = {}
    for category, suite in SUITES.items():
        for name, item in sorted(runner._test_items[category].items()):
            if name.endswith("_cpu"):
                tests[f"{suite}/{name.removesuffix('_cpu')}"] = _runner_of(item.func)
    return tests


def _runner_of(func: Callable[..., None]) -> Callable[[], None]:
    def run() -> None:
        with np.errstate(all="ignore"):
            func(None)
    return run


def outcomes(pattern: str = "") -> Iterator[tuple[str, str | None]]:
    """Run the tests matching ``pattern``: (name, None when it passed, else the error)."""
    for name, run in conformance_tests().items():
        if pattern and not re.search(pattern, name):
            continue
        try:
            run()
        except Exception as exc:  # every failure is reported, none hidden
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            yield name, f"{type(exc).__name__}: {first}"[:300]
        else:
            yield name, None


def main(argv: list[str]) -> int:
    """Report counts and every difference from the expected-failure list."""
    update = "--update" in argv
    args = [a for a in argv if a != "--update"]
    pattern = args[0] if args else ""
    expected = expected_failures()
    new = dict(expected)
    totals: dict[str, list[int]] = {}
    for name, error in outcomes(pattern):
        suite = name.split("/")[0]
        counts = totals.setdefault(suite, [0, 0])
        counts[1] += 1
        if error is None:
            counts[0] += 1
            if name in expected:
                print(f"now passes: {name}   (listed: {expected[name]})")
                del new[name]
        elif name not in expected:
            print(f"now fails:  {name}   {error}")
            new[name] = f"unclassified: {error}"
    for suite, (passed, total) in totals.items():
        print(f"{suite}: {passed} of {total} pass")
    if update and new != expected:
        write_expected_failures(new)
        print(f"rewrote the list: {len(new)} expected failures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
