"""Real exported models on the cpu target: how far each gets and how fast it runs beside
onnxruntime.

Run: python benchmarks/onnx_exports.py [--quick] [MODEL ...]

The models are the export tests' (``passhost.testing.torch_exports``: BERT, GPT-2, a T5
encoder, LLaMA, ViT, a Whisper encoder, MobileNetV3, EfficientNet, ConvNeXt, SegFormer; small
random-weight configurations exported by ``torch.onnx.export``); they need the ``exports``
extra (``pip install -e ".[test,exports]"``). For each model the script prints whether
passhost imports it (``from_onnx``) and builds it (``cpu`` target, opt_level 3), the largest
difference of its output from onnxruntime's on the same file, relative to the output's
largest magnitude, and for 1 and 2 threads the latency ratio passhost / onnxruntime: the two
run in turns, in rounds (``timing.interleaved_medians_ms``, as in the race of ``race.py``),
and the ratio is the median of the ratios within a round. A model that does not import or build
shows the error instead.
"""

from __future__ import annotations

import argparse
import tempfile

import numpy as np
import onnx
from runtimes import one_line, ort_session, passhost_executor
from timing import interleaved_medians_ms, median_of

from passhost.frontend import from_onnx
from passhost.testing import torch_exports


def _report(case: torch_exports.ExportedModel, repeat: int) -> None:
    """Import, build, check and race one exported model; print what happened."""
    model = onnx.load(case.path)
    name = case.name
    print(f"{name}: ops {', '.join(torch_exports.op_types(model))}")
    try:
        mod, params = from_onnx(model)
    except Exception as err:  # reported: the point is how far each model gets
        print(f"{name}: import FAILED: {one_line(err)}")
        return
    for threads in (1, 2):
        session = ort_session(model, threads)
        want = session.run(None, case.inputs)
        try:
            executor = passhost_executor(mod, params, threads, case.inputs)
        except Exception as err:  # reported, as above
            print(f"{name}: import OK, build FAILED: {one_line(err)}")
            return
        executor.run()
        got = [executor.get_output(i) for i in range(len(want))]
        if threads == 1:
            errors = [float(np.max(np.abs(g - w))) for g, w in zip(got, want)]
            relative = max(e / max(float(np.max(np.abs(w))), 1e-30)
                           for e, w in zip(errors, want))
            matches = all(g.shape == w.shape and e <= torch_exports.error_bound(w)
                          for g, w, e in zip(got, want, errors))
            print(f"{name}: import OK, build OK, max|passhost - ort| / max|ort| "
                  f"{relative:.2g} ({'matches' if matches else 'MISMATCH'})")
        runners = {"passhost": executor.run,
                   "onnxruntime": lambda s=session: s.run(None, case.inputs)}
        rounds = interleaved_medians_ms(runners, repeat)
        print(f"{name}: {threads} thr  passhost {median_of(rounds, 'passhost'):8.3f} ms   "
              f"onnxruntime {median_of(rounds, 'onnxruntime'):8.3f} ms   ratio "
              f"{median_of(rounds, 'passhost', 'onnxruntime'):5.2f}")


def main() -> None:
    """Export the models, then report each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", metavar="MODEL", help="models to run "
                        f"(default: all of {', '.join(torch_exports.MODEL_NAMES)})")
    parser.add_argument("--quick", action="store_true",
                        help="5 rounds per measurement instead of 20")
    args = parser.parse_args()
    unknown = sorted(set(args.models) - set(torch_exports.MODEL_NAMES))
    if unknown:
        parser.error(f"unknown models {unknown}; expected some of "
                     f"{', '.join(torch_exports.MODEL_NAMES)}")
    repeat = 5 if args.quick else 20
    with tempfile.TemporaryDirectory() as directory:
        for name in args.models or torch_exports.MODEL_NAMES:
            _report(torch_exports.export(name, directory), repeat)


if __name__ == "__main__":
    main()
