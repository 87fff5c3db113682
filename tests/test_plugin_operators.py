"""Operators are registered through the plugin host like every named extension: a plugin's
``passhost_register_operators`` makes an operator known to the builder, the text format,
type inference, the interpreter and the build; a name two plugins register is a conflict;
``plugins list`` and ``operators list`` show them."""

from __future__ import annotations

import numpy as np
import pytest

from passhost import te
from passhost.backend import build
from passhost.errors import ConflictError, PluginError, UnknownNameError
from passhost.ir import IRModule
from passhost.plugins import OperatorSpec, get_host, hookimpl
from passhost.relay import evaluate, var
from passhost.relay.op import OpPattern, define_op, get_op, list_ops
from passhost.testing import check_plugin, registered, use_host
from passhost.text import parse_module


def _cube_type(args, _attrs):
    return args.tensor(0, dtypes=("float32",))


def _cube_te(_attrs, inputs, _out):
    (x,) = inputs
    return te.elementwise(lambda v: v * v * v, x, "cube")


CUBE = define_op("test.cube", inputs=("data",), type_rel=_cube_type,
                 compute=lambda _attrs, x: x * x * x, pattern=OpPattern.ELEMWISE,
                 description="Elementwise x * x * x (a plugin's operator).", te_compute=_cube_te)


class CubePlugin:
    """Provides ``test.cube``."""

    def __init__(self, op=CUBE, name="test.cube"):
        self.op, self.name = op, name

    @hookimpl
    def passhost_register_operators(self):
        return [OperatorSpec(self.name, lambda: self.op, "x * x * x")]


def test_a_plugin_operator_is_known_while_its_plugin_is_registered():
    with use_host():
        with pytest.raises(UnknownNameError, match=r"unknown operator 'test\.cube'"):
            get_op("test.cube")
        with registered(CubePlugin(), "cube"):
            assert get_op("test.cube") is CUBE
            assert CUBE in list_ops()
            entry = get_host().registries.operators.entry("test.cube")
            assert (entry.provider, entry.spec.summary) == ("cube", "x * x * x")
        with pytest.raises(UnknownNameError):
            get_op("test.cube")


def test_a_plugin_operator_parses_infers_evaluates_and_builds():
    x = np.array([[-2.0, 0.5, 3.0]], "float32")
    with registered(CubePlugin(), "cube"):  # into the installed plugins' host (cpu for build)
        mod = parse_module('#[version = "passhost.text/1"]\n'
                           "def @main(%x: Tensor[(1, 3), float32]) {\n"
                           "  test.cube(%x)\n"
                           "}\n")
        assert mod["main"].body.op is CUBE
        np.testing.assert_array_equal(evaluate(mod["main"], x), x ** 3)
        compiled = build(IRModule.from_expr(CUBE(var("x", shape=(1, 3), dtype="float32"))),
                         "cpu")
        np.testing.assert_allclose(compiled.executor()(x)[0], x ** 3, rtol=1e-6)
        assert [step.func for step in compiled.plan.steps] == ["fused_test_cube"]


def test_a_plugin_redefining_a_builtin_operator_conflicts():
    impostor = define_op("add", inputs=("lhs", "rhs"), type_rel=_cube_type,
                         compute=lambda _attrs, a, b: a, pattern=OpPattern.BROADCAST)
    with use_host(), registered(CubePlugin(impostor, "add"), "impostor"), \
            pytest.raises(ConflictError, match="'add'"):
        get_op("add")
    with pytest.raises(PluginError, match="operator 'add' clashes with the built-in operator"):
        check_plugin(CubePlugin(impostor, "add"), "impostor")


def test_a_factory_returning_another_operator_is_refused():
    with use_host(), registered(CubePlugin(CUBE, "test.cubed"), "liar"), \
            pytest.raises(PluginError, match=r"its factory returned .* not the Op named"):
        get_op("test.cubed")
