"""Start-up cost of the ``passhost`` command, cold, in fresh processes.

Run: python benchmarks/cli_start.py
- ``passhost --version`` must load no plugins: compared with a bare ``python -c pass``.
- ``passhost plugins list`` should be dominated by the entry-point scan: compared with a
  process that only imports importlib_metadata and scans the ``passhost.plugins`` group.
Medians of several runs of each command, in milliseconds.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time

RUNS = 7


def median_ms(command: list[str]) -> float:
    """Median wall time of running ``command`` to completion, in milliseconds."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    """Measure the commands and their baselines and print the figures and ratios."""
    passhost = shutil.which("passhost") or sys.exit("the passhost command is not installed")
    python = sys.executable
    scan = ("import importlib_metadata as m; "
            "list(m.entry_points(group='passhost.plugins'))")
    rows = [
        ("python -c pass", median_ms([python, "-c", "pass"])),
        ("entry-point scan", median_ms([python, "-c", scan])),
        ("passhost --version", median_ms([passhost, "--version"])),
        ("passhost plugins list", median_ms([passhost, "plugins", "list"])),
    ]
    for name, ms in rows:
        print(f"{name:<24} {ms:8.1f} ms")
    base, scan_ms, version, listing = (ms for _, ms in rows)
    print(f"--version / bare interpreter:      {version / base:5.2f}")
    print(f"plugins list / entry-point scan:   {listing / scan_ms:5.2f}")
    print(f"plugins list beyond the scan:      {listing - scan_ms:6.1f} ms")


if __name__ == "__main__":
    main()
