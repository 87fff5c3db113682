"""Pass-manager overhead: microseconds per call of a trivial module pass, passhost vs TVM.

Run: python benchmarks/pass_overhead.py
Cases: no instruments, one Python instrument with empty run_before_pass/run_after_pass,
three such instruments, and each system's timing instrument when available. TVM is measured
in the same process when ``apache-tvm`` is installed (``pip install -e ".[bench]"``);
otherwise its figures from benchmarks/README.md are shown for reference. Each figure is the
best of several repeats of many calls (the minimum is the least noisy estimate of a fixed
per-call cost on a shared machine).
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

#: TVM 0.27 on this kind of machine (benchmarks/README.md), used when TVM is not installed.
TVM_REFERENCE_US = {"0 instruments": 1.42, "1 Python instrument": 2.42, "timing instrument": 3.28}

CALLS = 100_000
REPEAT = 7


def per_call_us(call: Callable[[], object]) -> float:
    """Best-of-``REPEAT`` microseconds per call of ``call``."""
    return min(timeit.repeat(call, number=CALLS, repeat=REPEAT)) / CALLS * 1e6


def measure_passhost() -> dict[str, float]:
    """passhost's per-call overhead for each case."""
    import passhost.relay as relay
    from passhost.instrument import pass_instrument
    from passhost.ir.module import IRModule
    from passhost.transform import PassContext, module_pass

    x = relay.var("x", shape=(1, 4), dtype="float32")
    mod = IRModule.from_expr(relay.Function([x], x))

    @module_pass(opt_level=0)
    def trivial(mod: IRModule, ctx: PassContext) -> IRModule:
        return mod

    @pass_instrument
    class Empty:
        def run_before_pass(self, mod: IRModule, info: object) -> None:
            pass

        def run_after_pass(self, mod: IRModule, info: object) -> None:
            pass

    cases: dict[str, list[object]] = {
        "0 instruments": [], "1 Python instrument": [Empty()],
        "3 Python instruments": [Empty(), Empty(), Empty()],
    }
    try:
        from passhost_timing import PassTimingInstrument
    except ImportError:
        pass
    else:
        cases["timing instrument"] = [PassTimingInstrument()]
    results = {}
    for case, instruments in cases.items():
        with PassContext(instruments=instruments):
            results[case] = per_call_us(lambda: trivial(mod))
    return results


def measure_tvm() -> dict[str, float] | None:
    """TVM's per-call overhead for the same cases, or None when TVM is not installed."""
    try:
        import tvm
    except ImportError:
        return None

    mod = tvm.IRModule()

    @tvm.transform.module_pass(opt_level=0)
    def trivial(mod: object, ctx: object) -> object:
        return mod

    @tvm.instrument.pass_instrument
    class Empty:
        def run_before_pass(self, mod: object, info: object) -> None:
            pass

        def run_after_pass(self, mod: object, info: object) -> None:
            pass

    cases = {"0 instruments": [], "1 Python instrument": [Empty()],
             "3 Python instruments": [Empty(), Empty(), Empty()],
             "timing instrument": [tvm.ir.instrument.PassTimingInstrument()]}
    results = {}
    for case, instruments in cases.items():
        with tvm.transform.PassContext(instruments=instruments):
            results[case] = per_call_us(lambda: trivial(mod))
    return results


def main() -> None:
    """Measure both systems and print the figures and ratios."""
    ours = measure_passhost()
    tvm = measure_tvm()
    peer, source = (tvm, "TVM (this run)") if tvm else (TVM_REFERENCE_US, "TVM (BENCHMARKS.md)")
    print(f"{'case':<22} {'passhost us':>12} {source:>20} {'ratio':>7}")
    for case, ours_us in ours.items():
        theirs = peer.get(case)
        if theirs is None:
            print(f"{case:<22} {ours_us:>12.3f} {'-':>20} {'-':>7}")
        else:
            print(f"{case:<22} {ours_us:>12.3f} {theirs:>20.3f} {ours_us / theirs:>7.2f}")
    print("ratio = passhost / TVM; below 1 is faster (target: below 0.5)")


if __name__ == "__main__":
    main()
