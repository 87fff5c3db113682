"""One PassContext config option, A/B, on a race model: passhost built with the option at one
value against built with another, beside onnxruntime, in one process, on the same ONNX file
and inputs, timed in turns, in rounds (``timing.interleaved_medians_ms``). A shared
machine's load falls on both builds alike, so the ratio of the two builds is the firmest
measure of what the option (the rule or the kernel behind it) is worth here.

    python benchmarks/option_ab.py efficientnet-b0 relay.FuseOps.scale_pointwise \\
        --threads 1,2 --rounds 16 --cache ~/.cache/passhost-bench
    python benchmarks/option_ab.py mobilenet-v2 relay.FuseOps.chain_depthwise --on true \\
        --off false --threads 2

Both builds' outputs are checked against onnxruntime's first. Each row gives the medians of
each runtime's times and the medians of the per-round ratios: on / off, on / onnxruntime,
off / onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import race_models
from runtimes import check, ort_session, passhost_executor
from timing import interleaved_medians_ms, median_of

from passhost.errors import PasshostError
from passhost.frontend import from_onnx
from passhost.transform import PassContext


def _value(text: str) -> Any:
    """A config value from the command line: JSON (``true``, ``3``, ``"x"``), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def ab_row(name: str, path: Path, option: str, on: Any, off: Any, threads: int,
           rounds: int) -> str:
    """The table row of model ``name`` (ONNX file ``path``) at ``threads`` threads."""
    inputs = race_models.example_inputs(name)
    session = ort_session(path, threads)
    expected = session.run(None, inputs)
    runners = {"onnxruntime": lambda: session.run(None, inputs)}
    for label, value in (("on", on), ("off", off)):
        mod, params = from_onnx(str(path))
        executor = passhost_executor(mod, params, threads, inputs, config={option: value})
        executor.run()
        for i, want in enumerate(expected):
            check(f"passhost ({option}={value})", name, executor.get_output(i), want)
        runners[label] = executor.run
    timed = interleaved_medians_ms(runners, rounds)
    ms = "  ".join(f"{median_of(timed, r):9.3f}" for r in ("on", "off", "onnxruntime"))
    ratios = "  ".join(f"{median_of(timed, a, b):7.3f}"
                       for a, b in (("on", "off"), ("on", "onnxruntime"), ("off", "onnxruntime")))
    return f"{name:<18}{threads:>3}  {ms}  {ratios}"


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(race_models.MODELS))
    parser.add_argument("option", help="a PassContext config option, e.g. "
                                       "relay.FuseOps.scale_pointwise")
    parser.add_argument("--on", type=_value, default=True, help="the value tried (true)")
    parser.add_argument("--off", type=_value, default=False,
                        help="the value it is raced against (false)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--cache", type=Path, help="folder of the exported ONNX files, "
                                                   "reused across runs (default: temporary)")
    args = parser.parse_args(argv)
    for value in (args.on, args.off):  # an unknown option or a wrong type, before any export
        try:
            PassContext(config={args.option: value})
        except (PasshostError, TypeError, ValueError) as err:
            parser.error(str(err))
    print(f"{args.option}: on = {args.on!r}, off = {args.off!r}")
    print(f"{'model':<18}{'thr':>3}  {'on ms':>9}  {'off ms':>9}  {'ort ms':>9}  "
          f"{'on/off':>7}  {'on/ort':>7}  {'off/ort':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        path = race_models.onnx_file(args.model, args.cache or Path(tmp))
        for threads in (int(t) for t in args.threads.split(",")):
            print(ab_row(args.model, path, args.option, args.on, args.off, threads,
                         args.rounds), flush=True)


if __name__ == "__main__":
    main()
