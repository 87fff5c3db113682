"""passhost-opdiff: the plugin meets the passhost plugin contract, and ``OpCountDiffer``
records what each pass changed, checked against operator counts this module takes itself."""

from __future__ import annotations

import contextlib
import io
import re
from collections import Counter
from pathlib import Path

import importlib_metadata
import passhost.relay as relay
import pytest
from passhost import hookimpl, text
from passhost.instrument import PassInstrument
from passhost.plugins import LoadSettings, create_host
from passhost.relay import Call, ExprMutator, ExprVisitor
from passhost.relay.transform import function_pass
from passhost.testing import check_plugin, imported_modules, registered
from passhost.transform import PassContext, Sequential, module_pass

import passhost_opdiff
import passhost_opdiff.instrument
import passhost_opdiff.plugin
from passhost_opdiff import OpCountDiffer

# Works both as the distribution's own test suite and inside passhost's (a conftest.py
# deeper than the top of the test tree may not declare pytest_plugins).
pytest_plugins = ["passhost.testing.pytest_plugin"]

SOURCE = """
def @main(%x: Tensor[(1, 4), float32]) {
  %0 = nn.relu(%x);
  %1 = add(%0, const(1.0, float32));
  %2 = @helper(%1);
  %3 = fn (%p: Tensor[(1, 4), float32]) {
    nn.relu(%p)
  };
  negative(%3(%2))
}

def @helper(%y: Tensor[(1, 4), float32]) {
  abs(abs(%y))
}

prim_func @scale(%a: handle) {
  buffer %A: float32[4] = match(%a);
  for %i: int32 in serial(0, 4) {
    %A[%i] = %A[%i] * 2.0;
  }
}
"""


@pytest.fixture
def mod():
    """Two graph functions (one holding a nested function) and a PrimFunc."""
    return text.parse(SOURCE)


# -- an independent count: the test's own visitor -----------------------------------------

class _OpCounter(ExprVisitor):
    def __init__(self):
        self.counts = Counter()

    def visit_call(self, call):
        if not isinstance(call.op, (relay.Function, relay.GlobalVar)):
            self.counts[call.op.name] += 1


def ops(module):
    """Operator call counts over the module's graph functions."""
    counter = _OpCounter()
    for _, func in module.items():
        if isinstance(func, relay.Function):
            counter.visit(func)
    return counter.counts


def delta(before, after):
    return {op: after[op] - before[op] for op in set(before) | set(after)
            if after[op] != before[op]}


# -- small passes ---------------------------------------------------------------------------

class _ReluToMax(ExprMutator):
    """relu(e) -> maximum(e, e - e): one operator replaced by two."""

    def visit_call(self, call, op, args):
        if getattr(op, "name", None) == "nn.relu":
            (e,) = args
            return relay.maximum(e, relay.subtract(e, e))
        return super().visit_call(call, op, args)


class _FoldDoubleAbs(ExprMutator):
    """abs(abs(e)) -> abs(e): one operator removed."""

    def visit_call(self, call, op, args):
        inner = args[0] if args else None
        if (getattr(op, "name", None) == "abs" and isinstance(inner, Call)
                and getattr(inner.op, "name", None) == "abs"):
            return inner
        return super().visit_call(call, op, args)


@function_pass(name="ReluToMax")
def relu_to_max(func, mod, ctx):
    return _ReluToMax().visit(func)


@function_pass(name="FoldDoubleAbs")
def fold_double_abs(func, mod, ctx):
    return _FoldDoubleAbs().visit(func)


@module_pass(name="Noop")
def noop(mod, ctx):
    return mod


@module_pass(name="Canonicalize")
def canonicalize(mod, ctx):
    """Runs two passes inside its own body: they are nested one level deeper."""
    return fold_double_abs(relu_to_max(mod))


@module_pass(name="TouchPrimFunc")
def touch_prim_func(mod, ctx):
    return mod.with_function("scale", mod["scale"].with_attr("tir.noalias", True))


class Boom(Exception):
    pass


@module_pass(name="Explode")
def explode(mod, ctx):
    relu_to_max(mod)
    raise Boom("explode")


# -- the plugin -----------------------------------------------------------------------------

def test_the_plugin_meets_the_contract():
    record = check_plugin(passhost_opdiff.plugin, "opdiff")
    assert record.hooks == ["passhost_register_instruments"]
    assert record.provides == {"instruments": ["op-diff"]}


def test_the_instrument_is_registered_as_op_diff(plugin_host):
    assert "op-diff" not in plugin_host.registries.instruments  # no entry point loaded
    with registered(passhost_opdiff.plugin, "opdiff") as record:
        assert record.provides == {"instruments": ["op-diff"]}
        spec = plugin_host.registries.instruments.get("op-diff")
        assert isinstance(spec.create(), OpCountDiffer)
        assert spec.create() is not spec.create()
    assert "op-diff" not in plugin_host.registries.instruments


def test_the_entry_point_is_installed():
    (ep,) = [ep for ep in importlib_metadata.entry_points(group="passhost.plugins")
             if ep.name == "opdiff"]
    assert ep.dist.name == "passhost-opdiff"
    assert ep.value == "passhost_opdiff.plugin"
    assert ep.load() is passhost_opdiff.plugin
    host = create_host(LoadSettings())
    assert host.records["opdiff"].status == "active"
    assert host.registries.instruments.entry("op-diff").distribution == "passhost-opdiff"


def test_loading_the_plugin_imports_nothing_heavy():
    _, modules = imported_modules("import passhost_opdiff.plugin",
                                  ("passhost_opdiff", "passhost.relay", "passhost.instrument"))
    assert modules == ["passhost_opdiff", "passhost_opdiff.plugin"]


# -- what the instrument records ------------------------------------------------------------

def test_a_sequential_of_small_passes(mod):
    differ = OpCountDiffer()
    with PassContext(instruments=[differ]):
        out = Sequential([relu_to_max, noop, fold_double_abs])(mod)
    # the same passes without instruments, counted by the test
    mid = relu_to_max(mod)
    assert ops(out) == ops(fold_double_abs(mid))
    expected = [
        (1, "ReluToMax", delta(ops(mod), ops(mid))),
        (1, "FoldDoubleAbs", delta(ops(mid), ops(out))),
        (0, "sequential", delta(ops(mod), ops(out))),
    ]
    assert differ.get_pass_to_op_diff() == expected
    # both relus (one in a nested function) and one abs of @helper
    assert expected == [
        (1, "ReluToMax", {"nn.relu": -2, "maximum": 2, "subtract": 2}),
        (1, "FoldDoubleAbs", {"abs": -1}),
        (0, "sequential", {"nn.relu": -2, "maximum": 2, "subtract": 2, "abs": -1}),
    ]


def test_passes_called_inside_a_pass_are_one_level_deeper(mod):
    differ = OpCountDiffer()
    with PassContext(instruments=[differ]):
        out = Sequential([canonicalize])(mod)
    mid = relu_to_max(mod)
    assert differ.get_pass_to_op_diff() == [
        (2, "ReluToMax", delta(ops(mod), ops(mid))),
        (2, "FoldDoubleAbs", delta(ops(mid), ops(out))),
        (1, "Canonicalize", delta(ops(mod), ops(out))),
        (0, "sequential", delta(ops(mod), ops(out))),
    ]
    assert differ.report() == (
        "sequential: abs -1, maximum +2, nn.relu -2, subtract +2\n"
        "  Canonicalize: abs -1, maximum +2, nn.relu -2, subtract +2\n"
        "    ReluToMax: maximum +2, nn.relu -2, subtract +2\n"
        "    FoldDoubleAbs: abs -1\n")


def test_passes_that_change_no_operator_count_are_not_recorded(mod):
    differ = OpCountDiffer()
    with PassContext(instruments=[differ]):
        Sequential([noop, touch_prim_func])(mod)
    assert differ.get_pass_to_op_diff() == []
    assert differ.report() == "no pass changed the operator counts\n"


def test_a_failing_pass_is_popped_and_later_passes_pair_up(mod):
    differ = OpCountDiffer()
    with PassContext(instruments=[differ]):
        with pytest.raises(Boom):
            Sequential([explode])(mod)
        fold_double_abs(mod)
    assert differ.get_pass_to_op_diff() == [
        (2, "ReluToMax", delta(ops(mod), ops(relu_to_max(mod)))),
        (0, "FoldDoubleAbs", {"abs": -1}),
    ]


def test_a_pass_another_instrument_stopped_does_not_shift_depths(mod):
    class Veto(PassInstrument):
        def run_before_pass(self, mod, info):
            if info.name == "FoldDoubleAbs":
                raise Boom("veto")

    differ = OpCountDiffer()
    with PassContext(instruments=[differ, Veto()]):
        with pytest.raises(Boom):
            Sequential([relu_to_max, fold_double_abs])(mod)
        out = Sequential([relu_to_max])(mod)
    assert [(d, name) for d, name, _ in differ.get_pass_to_op_diff()] == [
        (1, "ReluToMax"), (1, "ReluToMax"), (0, "sequential")]
    assert differ.get_pass_to_op_diff()[-1][2] == delta(ops(mod), ops(out))


def test_records_are_cleared_on_enter_and_kept_after_exit(mod):
    differ = OpCountDiffer()
    with PassContext(instruments=[differ]):
        relu_to_max(mod)
    assert [name for _, name, _ in differ.get_pass_to_op_diff()] == ["ReluToMax"]
    with PassContext(instruments=[differ]):
        fold_double_abs(mod)
    assert differ.get_pass_to_op_diff() == [(0, "FoldDoubleAbs", {"abs": -1})]


def test_only_the_functions_a_pass_replaced_are_counted_again(mod, monkeypatch):
    counted = []
    original = passhost_opdiff.instrument._function_counts

    def spy(func):
        counted.append(func)
        return original(func)

    monkeypatch.setattr(passhost_opdiff.instrument, "_function_counts", spy)
    differ = OpCountDiffer()
    with PassContext(instruments=[differ]):
        out = fold_double_abs(mod)  # changes @helper only
    assert len(counted) == 3 + 1  # main, helper, scale before; the new helper after
    assert counted[-1] is out["helper"]
    assert differ.get_pass_to_op_diff() == [(0, "FoldDoubleAbs", {"abs": -1})]


def test_passhost_opt_prints_the_report(plugin_host, tmp_path, capsys):
    from passhost.cli import main
    from passhost.plugins import PassSpec

    class TestPasses:
        @staticmethod
        @hookimpl
        def passhost_register_passes():
            return [PassSpec("ReluToMax", lambda: relu_to_max)]

    source = tmp_path / "model.txt"
    source.write_text(SOURCE)
    with registered(passhost_opdiff.plugin, "opdiff"), registered(TestPasses, "test-passes"):
        status = main(["opt", str(source), "--passes", "ReluToMax", "--instrument", "op-diff"])
    assert status == 0
    assert capsys.readouterr().err == (
        "sequential: maximum +2, nn.relu -2, subtract +2\n"
        "  ReluToMax: maximum +2, nn.relu -2, subtract +2\n")


def test_count_ops_counts_every_graph_function(mod):
    assert passhost_opdiff.count_ops(mod) == ops(mod) == {
        "nn.relu": 2, "add": 1, "negative": 1, "abs": 2}


def test_the_readme_examples(plugin_host):
    """The README's Python blocks run in order and print the text block after each."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```(?:\s*```text\n(.*?)```)?", readme, re.DOTALL)
    assert len(blocks) == 2
    namespace = {"__name__": "readme"}
    with registered(passhost_opdiff.plugin, "opdiff"):
        for code, expected in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(code, namespace)
            assert out.getvalue() == expected
    assert isinstance(namespace["differ"], OpCountDiffer)
