"""passhost-broken-passes: the plugin meets the plugin contract, it is discovered through
its entry point, and each pass is broken exactly as documented (checked against NumPy and
against operator counts the test takes itself)."""

from __future__ import annotations

import contextlib
import io
import re
from collections import Counter
from pathlib import Path

import numpy as np
import passhost.relay as relay
import pytest
from passhost.ir.module import IRModule
from passhost.plugins import get_host
from passhost.relay import ExprVisitor
from passhost.testing import check_plugin
from passhost.transform import PassContext, build_pipeline, get_pass

import passhost_broken_passes.plugin
from passhost_broken_passes import BrokenPassError, CountOperators, RoundConstants

C1 = np.array([0.1234, -0.5678, 0.9101, 0.3141], "float32")
C2 = np.array([1.2345, 0.5, 2.25, -1.5], "float32")


def model(softmax: bool = True) -> IRModule:
    """``softmax(relu((x + C1) * C2))`` (or without the softmax)."""
    x = relay.var("x", shape=(2, 4), dtype="float32")
    body = relay.nn.relu(relay.multiply(relay.add(x, relay.const(C1)), relay.const(C2)))
    return IRModule.from_expr(relay.Function([x], relay.nn.softmax(body) if softmax
                                             else body))


def numpy_model(x: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
    y = np.maximum((x + c1) * c2, 0)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _Ops(ExprVisitor):
    def __init__(self):
        self.counts = Counter()

    def visit_call(self, call):
        if not isinstance(call.op, (relay.Function, relay.GlobalVar)):
            self.counts[call.op.name] += 1


def test_the_plugin_meets_the_contract():
    record = check_plugin(passhost_broken_passes.plugin, "broken")
    assert record.provides["passes"] == ["ExpandSoftmax", "RoundConstants", "CountOperators"]


def test_the_installed_distribution_is_discovered():
    host = get_host()
    record = host.records["broken"]
    assert (record.status, record.distribution) == ("active", "passhost-broken-passes")
    for name in ("ExpandSoftmax", "RoundConstants", "CountOperators"):
        assert host.registries.passes.entry(name).provider == "broken"


def test_expand_softmax_raises_on_softmax_only():
    with pytest.raises(BrokenPassError, match=r"nn.softmax over axis -1 in @main"):
        get_pass("ExpandSoftmax")(model())
    plain = model(softmax=False)
    assert get_pass("ExpandSoftmax")(plain) is plain


def test_round_constants_rounds_like_numpy_and_changes_the_numbers():
    out = build_pipeline("RoundConstants{decimals=2}")(model())
    call = out["main"].body.args[0].args[0]  # multiply(add(x, C1), C2)
    np.testing.assert_array_equal(call.args[1].data, np.round(C2, 2))
    np.testing.assert_array_equal(call.args[0].args[1].data, np.round(C1, 2))
    x = np.random.default_rng(0).uniform(-2, 2, (2, 4)).astype("float32")
    before = relay.evaluate(model(), x)
    after = relay.evaluate(out, x)
    np.testing.assert_allclose(before, numpy_model(x, C1, C2), rtol=1e-5)
    np.testing.assert_allclose(after, numpy_model(x, np.round(C1, 2), np.round(C2, 2)),
                               rtol=1e-5)
    assert not np.allclose(before, after, rtol=1e-5, atol=1e-5)


def test_count_operators_counts_until_fuse_ops_ran():
    counter = CountOperators()
    mod = model()
    assert counter(mod) is mod
    visitor = _Ops()
    visitor.visit(mod["main"])
    assert counter.counts == dict(visitor.counts) == {"add": 1, "multiply": 1, "nn.relu": 1,
                                                       "nn.softmax": 1}
    with PassContext(opt_level=2):
        fused = build_pipeline("InferType,FuseOps")(mod)
    with pytest.raises(AttributeError, match="'Function' object has no attribute 'name'"):
        CountOperators()(fused)


def test_round_constants_leaves_integer_constants_alone():
    x = relay.var("x", shape=(3,), dtype="int32")
    mod = IRModule.from_expr(relay.Function([x], relay.add(x, relay.const(
        np.array([1, 2, 3], "int32")))))
    assert RoundConstants()(mod) is mod


def test_the_readme_example():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    (code, expected), = re.findall(r"```python\n(.*?)```\s*```text\n(.*?)```", readme,
                                   re.DOTALL)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {"__name__": "readme"})
    assert out.getvalue() == expected
