"""Helpers of the folding-pass tests (test_pass_folding.py, test_pass_fold_scale_axis.py):
op counts and calls of a module, zoo models with bound and randomised parameters, numbers
checked with the reference interpreter, and the tree of nested passes a run produces."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np

import passhost.relay as relay
from passhost.instrument import PassInstrument
from passhost.ir.module import IRModule
from passhost.relay.op.registry import Op
from passhost.relay.transform import bind_params_by_name
from passhost.text import parse_module
from passhost.transform import PassContext
from passhost.workloads.zoo import get_model

IMMUTABLE = {"testing.immutable_module": True}


def op_counts(mod: IRModule) -> Counter:
    """How many calls of each operator ``main`` makes."""
    return Counter(n.op.name for n in relay.post_order(mod["main"])
                   if isinstance(n, relay.Call) and isinstance(n.op, Op))


def calls(mod: IRModule, name: str) -> list[relay.Call]:
    """The calls of operator ``name`` in ``main``."""
    op = relay.get_op(name)
    return [n for n in relay.post_order(mod["main"]) if isinstance(n, relay.Call) and n.op is op]


def randomised(params: dict[str, np.ndarray], negative_gamma: bool = False,
               ) -> dict[str, np.ndarray]:
    """``params`` with random batch-norm statistics (gamma > 0 unless ``negative_gamma``,
    which flips every third channel)."""
    rng = np.random.default_rng(0)
    out = {}
    for name, value in params.items():
        if name.endswith("_gamma"):
            value = rng.uniform(0.5, 1.5, value.shape)
            if negative_gamma:
                value[::3] *= -1
        elif name.endswith(("_beta", "_moving_mean")):
            value = rng.normal(0.0, 0.2, value.shape)
        elif name.endswith("_moving_var"):
            value = rng.uniform(0.5, 2.0, value.shape)
        out[name] = np.asarray(value, dtype="float32")
    return out


@functools.cache
def bound_model(name: str, negative_gamma: bool = False) -> IRModule:
    """Zoo model ``name`` with randomised bound parameters and without its final softmax."""
    mod, params = get_model(name)
    func = bind_params_by_name(mod["main"], randomised(params, negative_gamma))
    body = func.body
    if isinstance(body, relay.Call) and body.op is relay.nn.softmax:
        body = body.args[0]
    return IRModule.from_expr(relay.Function(func.params, body))


def sample_inputs(mod: IRModule) -> list[np.ndarray]:
    """Random inputs for the parameters of ``main``."""
    rng = np.random.default_rng(1)
    return [rng.standard_normal(p.checked_type.shape).astype(p.checked_type.dtype)
            for p in mod["main"].params]


_REFERENCE: dict[int, tuple[IRModule, list[np.ndarray], np.ndarray]] = {}


def reference(mod: IRModule) -> tuple[list[np.ndarray], np.ndarray]:
    """Sample inputs of ``mod`` and its output on them (computed once per module)."""
    entry = _REFERENCE.get(id(mod))
    if entry is None or entry[0] is not mod:
        inputs = sample_inputs(mod)
        entry = _REFERENCE[id(mod)] = (mod, inputs, relay.evaluate(mod, *inputs))
    return entry[1], entry[2]


def assert_same_numbers(before: IRModule, after: IRModule) -> None:
    """``after`` computes what ``before`` does (tolerance relative to the output scale)."""
    inputs, want = reference(before)
    got = relay.evaluate(after, *inputs)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)


def run(pass_: object, mod: IRModule) -> IRModule:
    """Run a pass under the immutable-module check."""
    with PassContext(opt_level=3, config=IMMUTABLE):
        return pass_(mod)  # type: ignore[operator]


def parse_main(body: str, params: str) -> IRModule:
    """A module whose main has these parameters and body text."""
    return parse_module(f'#[version = "passhost.text/1"]\ndef @main({params}) {{\n{body}\n}}\n')


class Nesting(PassInstrument):
    """Records ``"  " * depth + name`` of every pass run."""

    def __init__(self) -> None:
        self.depth = 0
        self.log: list[str] = []

    def run_before_pass(self, mod: IRModule, info: object) -> None:
        """Log the pass at the current depth and go one level down."""
        self.log.append("  " * self.depth + info.name)  # type: ignore[attr-defined]
        self.depth += 1

    def run_after_pass(self, mod: IRModule, info: object) -> None:
        """Come back up one level."""
        self.depth -= 1


def nesting_of(pass_: object, mod: IRModule) -> list[str]:
    """The pass tree that running ``pass_`` on ``mod`` produces."""
    nest = Nesting()
    with PassContext(opt_level=3, instruments=[nest]):
        pass_(mod)  # type: ignore[operator]
    return nest.log
