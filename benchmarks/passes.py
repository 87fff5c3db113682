"""The standard graph passes: ms per pass on zoo models, and time against graph size.

Run: python benchmarks/passes.py [--quick]

Part 1 times each pass on ResNet-18, ResNet-50 and MobileNet v1 (parameters bound), each on
the input it gets in a real pipeline: InferType on a fresh copy with no types cached, the
others on typed modules (FoldConstant after ConvertLayout, where it folds the 21 weight
layout transforms; EliminateCommonSubexpr and FuseOps after FoldScaleAxis).
FoldScaleAxis is timed twice: on the seed tutorial's input (batch
norms still in place) and after SimplifyInference + FoldConstant, where it has scales to
fold. The peers cannot run in this process (TVM 0.27 no longer has Relay), so their figures
from benchmarks/README.md are printed beside ResNet-18's, with the ratio.

Part 2 times the same passes on generated graphs of 1k, 10k and 100k calls
(passhost.relay.testing.synthetic) and prints the growth per 10x nodes (linear is 10x).
Each figure is the median of several runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from timing import median_ms

from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import transform as T
from passhost.relay.dataflow_pattern import is_constant, is_op, wildcard
from passhost.relay.testing.synthetic import graph_of_size
from passhost.transform import PassContext, Sequential
from passhost.workloads.zoo import get_model

#: Peers' ResNet-18 figures (ms), benchmarks/README.md: the seed's Relay (InferType,
#: FoldScaleAxis) and TVM 0.27 on the imported model (the others).
PEER_MS = {"InferType": ("seed Relay", 8.0), "FoldScaleAxis (seed input)": ("seed Relay", 7.5),
           "ConvertLayout": ("TVM 0.27", 39.0), "EliminateCommonSubexpr": ("TVM 0.27", 62.0),
           "FuseOps": ("TVM 0.27", 8.0), "FoldConstant": ("TVM 0.27", 1500.0)}

CONV_BIAS_RELU = [("demo.conv2d_bias_relu",
                   is_op("nn.relu")(is_op("add")(is_op("nn.conv2d")(wildcard(), is_constant()),
                                                 is_constant())))]


def bound_model(name: str) -> IRModule:
    """Zoo model ``name`` with its parameters bound as constants, typed."""
    mod, params = get_model(name)
    mod = mod.with_function("main", T.bind_params_by_name(mod["main"], params))
    return T.InferType()(mod)


def run(pass_: Callable[[IRModule], IRModule], mod: IRModule) -> IRModule:
    """``pass_`` applied to ``mod`` at opt level 3."""
    with PassContext(opt_level=3):
        return pass_(mod)


def untyped_copy(mod: IRModule) -> IRModule:
    """``mod`` with every node of ``main`` rebuilt, so no type is cached yet."""
    main = mod["main"]
    new: dict[int, Any] = {}
    for node in relay.post_order(main):
        if isinstance(node, relay.Var):
            copy = relay.Var(node.name_hint, node.type_annotation)
        elif isinstance(node, relay.Call):
            op = new.get(id(node.op), node.op)
            copy = relay.Call(op, [new[id(a)] for a in node.args], node.attrs)
        elif isinstance(node, relay.Tuple):
            copy = relay.Tuple([new[id(f)] for f in node.fields])
        elif isinstance(node, relay.TupleGetItem):
            copy = relay.TupleGetItem(new[id(node.tuple_value)], node.index)
        elif isinstance(node, relay.Function):
            copy = relay.Function([new[id(p)] for p in node.params], new[id(node.body)],
                                  node.ret_type, node.attrs)
        else:
            copy = node
        new[id(node)] = copy
    return mod.with_function("main", new[id(main)])


def cases(mod: IRModule, repeat: int) -> dict[str, tuple[Callable[[], object], IRModule]]:
    """(run, input) of each measured pass on ``mod``, inputs prepared as a pipeline would."""
    simplified = run(Sequential([T.SimplifyInference(), T.FoldConstant()]), mod)
    canonical = run(T.CanonicalizeOps(), mod)
    nhwc = {"nn.conv2d": ["NHWC", "default"]}
    converted = run(T.ConvertLayout(nhwc), canonical)
    fold_scale_input = run(T.FoldScaleAxis(), simplified)
    composite = run(T.MergeComposite(CONV_BIAS_RELU), canonical)
    annotated = run(T.AnnotateTarget(["demo"]), composite)
    passes: dict[str, tuple[Callable[[IRModule], IRModule], IRModule]] = {
        "FoldConstant": (T.FoldConstant(), converted),
        "SimplifyInference": (T.SimplifyInference(), mod),
        "FoldScaleAxis (seed input)": (T.FoldScaleAxis(), mod),
        "FoldScaleAxis": (T.FoldScaleAxis(), simplified),
        "CanonicalizeOps": (T.CanonicalizeOps(), mod),
        "ConvertLayout": (T.ConvertLayout(nhwc), canonical),
        "EliminateCommonSubexpr": (T.EliminateCommonSubexpr(), fold_scale_input),
        "DeadCodeElimination": (T.DeadCodeElimination(), mod),
        "FuseOps": (T.FuseOps(), fold_scale_input),
        "MergeComposite": (T.MergeComposite(CONV_BIAS_RELU), canonical),
        "AnnotateTarget": (T.AnnotateTarget(["demo"]), composite),
        "PartitionGraph": (T.PartitionGraph(), annotated),
    }
    out = {name: (lambda p=pass_, m=given: run(p, m), given)
           for name, (pass_, given) in passes.items()}
    # InferType: each run gets a fresh, untyped copy (types are cached on the nodes)
    copies = [untyped_copy(mod) for _ in range(repeat)]
    return {"InferType": (lambda: run(T.InferType(), copies.pop()), mod), **out}


def models_table(repeat: int) -> None:
    """Part 1: ms per pass on the zoo models."""
    names = ["resnet-18", "resnet-50", "mobilenet-v1"]
    rows: dict[str, list[float]] = {}
    for model in names:
        mod = bound_model(model)
        for case, (call, _) in cases(mod, repeat).items():
            ms = median_ms(call, repeat)
            rows.setdefault(case, []).append(ms)
    print(f"{'pass':28}" + "".join(f"{n:>14}" for n in names) + "   ResNet-18 peer (ratio)")
    for case, values in rows.items():
        peer = PEER_MS.get(case)
        ratio = f"   {peer[0]} {peer[1]:g} ms ({values[0] / peer[1]:.3f}x)" if peer else ""
        print(f"{case:28}" + "".join(f"{v:>11.2f} ms" for v in values) + ratio)


def scaling_table(sizes: list[int], repeat: int) -> None:
    """Part 2: time against generated graph size."""
    print(f"\n{'pass':28}" + "".join(f"{n:>12,} calls" for n in sizes) + "   growth per 10x")
    results: dict[str, list[float]] = {}
    for size in sizes:
        mod = T.InferType()(graph_of_size(size))
        reps = repeat if size <= 10_000 else 3
        for case, (call, _) in cases(mod, reps).items():
            ms = median_ms(call, reps)
            results.setdefault(case, []).append(ms)
    for case, values in results.items():
        growth = [b / a if a > 0 else float("nan") for a, b in pairwise(values)]
        print(f"{case:28}" + "".join(f"{v:>15.1f} ms" for v in values)
              + "   " + ", ".join(f"{g:.1f}x" for g in growth))


def main() -> None:
    """Print both tables."""
    quick = "--quick" in sys.argv
    sys.setrecursionlimit(1000)  # nothing may recurse over graph depth
    models_table(repeat=3 if quick else 9)
    scaling_table([1_000, 10_000] if quick else [1_000, 10_000, 100_000], repeat=3 if quick else 5)


if __name__ == "__main__":
    main()
