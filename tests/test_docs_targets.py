"""The examples of docs/targets.md run for real: the complete target plugin (built against
the reference host, checked against the interpreter), the lowered PrimFuncs shown, and the
steps of the build profile.

A code block is found by the HTML comment ``<!-- example: NAME -->`` right before it.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from passhost import relay
from passhost.backend import build
from passhost.instrument import PassInstrument
from passhost.ir.module import IRModule
from passhost.ir.structural import structural_equal
from passhost.relay.expr import Function
from passhost.relay.interpreter import evaluate
from passhost.runtime import load_artifact
from passhost.testing import check_plugin, registered
from passhost.text import parse_module
from passhost.tir import PrimFunc
from passhost.transform import PassContext
from passhost_timing import PassTimingInstrument
from toy_targets import RefHostPlugin

DOC = Path(__file__).resolve().parents[1] / "docs" / "targets.md"
HOST = "ref-host"


class DocExampleError(LookupError):
    """A marked example is missing from docs/targets.md, or marked twice."""


def doc_block(name: str) -> str:
    """The code block right after ``<!-- example: name -->`` in docs/targets.md."""
    pattern = re.compile(rf"<!-- example: {re.escape(name)} -->\n```[a-z]*\n(.*?)\n```",
                         re.DOTALL)
    found = pattern.findall(DOC.read_text(encoding="utf-8"))
    if len(found) != 1:
        raise DocExampleError(f"{DOC}: expected one code block marked 'example: {name}', "
                              f"found {len(found)}")
    return found[0]


def plugin_module() -> types.ModuleType:
    """The plugin example of the docs, run as a module of its own."""
    module = types.ModuleType("passhost_adder_doc_example")
    exec(compile(doc_block("plugin"), f"{DOC}:plugin", "exec"), module.__dict__)
    return module


class AfterPass(PassInstrument):
    """Keeps the module a named pass returned."""

    def __init__(self, name: str) -> None:
        self.pass_name = name
        self.module: IRModule | None = None

    def run_after_pass(self, mod: IRModule, info: Any) -> None:
        """Keep ``mod`` when it comes from the pass this instrument waits for."""
        if info.name == self.pass_name:
            self.module = mod


def retarget(mod: IRModule, kind: str) -> IRModule:
    """``mod`` with every PrimFunc's ``target`` attribute set to ``kind``."""
    return mod.with_functions({name: f.with_attr("target", kind) for name, f in mod.items()
                               if isinstance(f, PrimFunc)})


@pytest.fixture
def adder(plugin_host) -> Iterator[types.ModuleType]:
    """The docs' plugin and the reference host, registered in a fresh plugin host."""
    module = plugin_module()
    with registered(RefHostPlugin(), HOST), registered(module):
        yield module


def _adds_model() -> IRModule:
    """Adds of every shape the adder meets: of two tensors, of one tensor twice, with
    broadcasting, and one of a constant (which stays on the host)."""
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(2, 3))
    z = relay.var("z", shape=(3,))
    s = relay.add(relay.nn.relu(x), y)
    t = relay.add(s, s)
    u = relay.add(t, z)
    v = relay.add(u, relay.const(np.array([0.5, -1.0, 2.0], "float32")))
    return IRModule.from_expr(Function([x, y, z], relay.sigmoid(v)))


def test_the_plugin_example_meets_the_contract():
    assert check_plugin(plugin_module(), "adder").provides == {"targets": ["adder"]}


def test_the_plugin_example_computes_like_the_interpreter(adder, tmp_path):
    mod = _adds_model()
    with PassContext(opt_level=3):
        compiled = build(mod, f"adder, {HOST}")
    assert sorted(compiled.tir["adder"]) == ["adder_main_0", "adder_main_1", "adder_main_2"]
    assert [m.type_key for m in compiled.module.imported_modules] == ["adder"]
    compiled.save(tmp_path / "adds.tar")
    executors = [compiled.executor(), load_artifact(tmp_path / "adds.tar").executor()]
    finite = st.floats(-100, 100, width=32)

    @settings(max_examples=25, deadline=None)
    @given(arrays("float32", (2, 3), elements=finite), arrays("float32", (2, 3), elements=finite),
           arrays("float32", (3,), elements=finite))
    def same_numbers(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        want = evaluate(mod, x=x, y=y, z=z)
        for executor in executors:
            np.testing.assert_allclose(executor(x, y, z)[0], want, rtol=1e-6, atol=1e-7)

    same_numbers()


def test_a_hand_computed_add_on_the_adder(adder):
    mod = parse_module(doc_block("adder-model"))
    with PassContext(opt_level=3):
        compiled = build(mod, f"adder, {HOST}")
    x = np.array([[-2, -1, 0], [1, 2, 3]], "float32")
    y = np.array([[1, 1, 1], [-1, -2, -3]], "float32")
    relu_plus_y = np.array([[1, 1, 1], [0, 0, 0]], "float32")
    np.testing.assert_allclose(compiled.executor()(x, y)[0], 1 / (1 + np.exp(-relu_plus_y)),
                               rtol=1e-6)


def test_the_partition_primfunc_shown_is_what_relay_to_tir_makes(adder):
    mod = parse_module(doc_block("adder-model"))
    after = AfterPass("RelayToTIR.adder")
    with PassContext(opt_level=3, instruments=[after]):
        build(mod, f"adder, {HOST}")
    shown = parse_module(doc_block("adder-lowered"))
    assert list(shown) == ["adder_main_0"]
    assert structural_equal(after.module["adder_main_0"], shown["adder_main_0"])


def test_the_lowered_example_is_what_lower_te_makes(register_plugin):
    register_plugin(RefHostPlugin(), HOST)
    mod = parse_module(doc_block("lowering-input"))
    after = AfterPass("LowerTE")
    with PassContext(opt_level=3, instruments=[after]):
        compiled = build(mod, HOST)
    shown = retarget(parse_module(doc_block("lowered")), HOST)
    assert structural_equal(after.module, shown)
    # the numbers, by hand: ((relu(x + [1, 2, 3]))^2 - 1
    x = np.array([[-2, -1, 0], [1, 2, 3]], "float32")
    want = np.array([[-1, 0, 8], [3, 15, 35]], "float32")
    np.testing.assert_array_equal(compiled.executor()(x)[0], want)
    assert list(compiled.params) == ["p0"]


def test_the_profile_shows_the_steps_of_the_build(adder):
    shown = [line.split(":")[0].strip() for line in doc_block("build-profile").splitlines()
             if re.match(r"\t[^\t]", line)]
    timing = PassTimingInstrument()
    with PassContext(opt_level=3, instruments=[timing]):
        build(parse_module(doc_block("adder-model")), f"adder, {HOST}")
        (top,) = timing.profile()
    assert [p.name for p in top.children] == [n.replace(".cpu", f".{HOST}") for n in shown]
