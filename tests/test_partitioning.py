"""MergeComposite, AnnotateTarget and PartitionGraph: structures, numbers and errors."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from passhost import relay, text
from passhost.errors import OptionError, UnknownNameError
from passhost.ir import IRModule, structural_equal
from passhost.plugins import PatternTableSpec, hookimpl
from passhost.relay import transform as T
from passhost.relay.dataflow_pattern import (
    is_constant,
    is_op,
    is_tuple_get_item,
    wildcard,
)
from passhost.relay.op.annotation import compiler_begin, compiler_end
from passhost.relay.transform.annotate_target import register_op_support
from passhost.relay.transform.partition_graph import PartitionError
from passhost.testing import registered, use_host
from passhost.transform import PassContext, Sequential
from passhost.transform.pipeline import build_pipeline
from passhost.transform.registry import get_pass
from passhost.workloads.zoo import get_model

# -- patterns and helpers ------------------------------------------------------------------------


def conv_bias_relu():
    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    bias = is_op("nn.bias_add")(conv, is_constant())
    return bias.optional(lambda x: is_op("nn.relu")(x))


def dense_add():
    return is_op("add")(is_op("nn.dense")(wildcard(), is_constant()), is_constant())


DEMO_TABLE = [("demo.conv2d_bias_relu", conv_bias_relu()), ("demo.dense_add", dense_add())]


class _DemoTable:
    """A plugin registering DEMO_TABLE as the pattern table ``test-partitioning.demo``."""

    @hookimpl
    def passhost_register_pattern_tables(self):
        return [PatternTableSpec("test-partitioning.demo", lambda target: DEMO_TABLE)]


@pytest.fixture
def demo_table():
    """DEMO_TABLE registered by name, for the block of a test."""
    with use_host(), registered(_DemoTable(), "demo-table"):
        yield


register_op_support("test-part-ops", "nn.max_pool2d", override=True)
register_op_support("test-part-ops", "concatenate", override=True)
register_op_support("test-part-ops", "add",
                    lambda call: call.checked_type.shape[-1] == 3, override=True)


def run(pass_, mod: IRModule) -> IRModule:
    """Run a pass the way the tests of every pass do: checking it leaves its input alone."""
    with PassContext(opt_level=3, config={"testing.immutable_module": True}):
        return pass_(mod)


def flow(table, kinds) -> Sequential:
    return Sequential([T.MergeComposite(table), T.AnnotateTarget(kinds), T.PartitionGraph()])


def parse(source: str) -> IRModule:
    return text.parse_module('#[version = "passhost.text/1"]\n' + source)


def assert_same_numbers(after, before) -> None:
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def const(values, shape=None):
    arr = np.asarray(values, dtype="float32")
    return relay.const(arr.reshape(shape) if shape is not None else arr)


def small_graph() -> IRModule:
    """conv2d+bias_add+relu, conv2d+bias_add, max_pool2d, dense+add on a 1x2x3x3 input."""
    x = relay.var("x", shape=(1, 2, 3, 3))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, const([1, 2, 3, 4], (2, 2, 1, 1))),
                                        const([0.5, -0.5])))
    y = relay.nn.bias_add(relay.nn.conv2d(y, const([1, -1, 0.5, 2], (2, 2, 1, 1))),
                          const([0.25, 1.0]))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2))
    y = relay.reshape(y, (1, 8))
    y = relay.add(relay.nn.dense(y, const(np.linspace(-1, 1, 24), (3, 8))), const([1, 2, 3]))
    return IRModule.from_expr(relay.Function([x], relay.nn.relu(y)))


def tiny_graph() -> IRModule:
    x = relay.var("x", shape=(1, 2, 3, 3))
    y = relay.nn.conv2d(x, const([1, 2, 3, 4], (2, 2, 1, 1)))
    y = relay.nn.relu(relay.nn.bias_add(y, const([0.5, -0.5])))
    return IRModule.from_expr(relay.Function([x], relay.add(y, relay.const(1.0))))


def random_input(mod: IRModule, seed: int = 0) -> np.ndarray:
    ty = mod["main"].params[0].checked_type
    return np.random.default_rng(seed).uniform(-1, 1, ty.shape).astype(ty.dtype)


# -- exact structures ----------------------------------------------------------------------------

TINY_COMPOSITE = """
  %0 = fn [Composite="demo.conv2d_bias_relu",
           PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_"]
      (%in0: Tensor[(1, 2, 3, 3), float32]) {
    %1 = nn.conv2d(%in0, const([1.0, 2.0, 3.0, 4.0], float32, shape=[2, 2, 1, 1]));
    %2 = nn.bias_add(%1, const([0.5, -0.5], float32));
    nn.relu(%2)
  };"""


def test_merge_composite_wraps_matches_in_composite_functions():
    out = run(T.MergeComposite(DEMO_TABLE), tiny_graph())
    expected = parse("def @main(%x: Tensor[(1, 2, 3, 3), float32]) {" + TINY_COMPOSITE + """
      %3 = %0(%x);
      add(%3, const(1.0, float32))
    }""")
    assert structural_equal(out, expected), out.astext()


def test_annotate_target_wraps_supported_calls():
    merged = run(T.MergeComposite(DEMO_TABLE), tiny_graph())
    out = run(T.AnnotateTarget("demo"), merged)
    expected = parse("def @main(%x: Tensor[(1, 2, 3, 3), float32]) {" + TINY_COMPOSITE + """
      %3 = annotation.compiler_begin(%x, compiler="demo");
      %4 = %0(%3);
      %5 = annotation.compiler_end(%4, compiler="demo");
      add(%5, const(1.0, float32))
    }""")
    assert structural_equal(out, expected), out.astext()


def test_partition_graph_makes_compiler_functions():
    out = run(flow(DEMO_TABLE, ["demo"]), tiny_graph())
    expected = parse("""
    def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
      %0 = @demo_main_0(%x);
      add(%0, const(1.0, float32))
    }
    def @demo_main_0 [Compiler="demo", global_symbol="demo_main_0", Primitive=1]
        (%demo_0_i0: Tensor[(1, 2, 3, 3), float32]) -> Tensor[(1, 2, 3, 3), float32] {"""
                     + TINY_COMPOSITE + """
      %0(%demo_0_i0)
    }""")
    assert structural_equal(out, expected), out.astext()
    assert [p.name_hint for p in out["demo_main_0"].params] == ["demo_0_i0"]


def test_partitioned_text_parses_back_equal():
    out = run(flow(DEMO_TABLE, ["demo", "test-part-ops"]), small_graph())
    printed = out.astext()
    again = text.parse_module(printed)
    assert structural_equal(again, out)
    assert again.astext() == printed


def test_kind_names_become_identifiers_and_symbols_stay_unique():
    table = [("cmsis-nn.relu", is_op("nn.relu")(wildcard()))]
    x = relay.var("x", shape=(2,))
    mod = IRModule.from_expr(relay.nn.relu(relay.exp(relay.nn.relu(x))))
    once = run(flow(table, "cmsis-nn"), mod)
    assert sorted(once) == ["cmsis_nn_main_0", "cmsis_nn_main_1", "main"]
    func = once["cmsis_nn_main_0"]
    assert func.attrs["Compiler"] == "cmsis-nn"
    assert func.attrs["global_symbol"] == "cmsis_nn_main_0"
    assert func.params[0].name_hint == "cmsis_nn_0_i0"
    # Another relu added later is partitioned under the next free name.
    main = once["main"]
    grown = once.with_function("main", relay.Function(main.params, relay.nn.relu(main.body)))
    twice = run(flow(table, "cmsis-nn"), grown)
    assert sorted(twice) == ["cmsis_nn_main_0", "cmsis_nn_main_1", "cmsis_nn_main_2", "main"]
    assert twice["cmsis_nn_main_0"] is once["cmsis_nn_main_0"]


# -- numbers -----------------------------------------------------------------------------------


def test_small_graph_numbers_survive_the_flow():
    mod = small_graph()
    data = random_input(mod)
    out = run(flow(DEMO_TABLE, ["demo", "test-part-ops"]), mod)
    composites = {f.body.op.attrs["Composite"] for name, f in out.items() if name != "main"
                  if isinstance(f.body.op, relay.Function)}
    assert composites == {"demo.conv2d_bias_relu", "demo.dense_add"}
    assert sum(f.attrs.get("Compiler") == "test-part-ops" for _, f in out.items()) == 1
    assert len(out) == 1 + 4  # two convolutions, the pool, the dense
    assert_same_numbers(relay.evaluate(out, data), relay.evaluate(mod, data))


@cache
def bound_resnet18() -> IRModule:
    mod, params = get_model("resnet-18")
    return mod.with_function("main", T.bind_params_by_name(mod["main"], params))


def conv_bn_table():
    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    # Four distinct constant patterns: one pattern node used twice must match one expression.
    bn = is_tuple_get_item(is_op("nn.batch_norm")(conv, *[is_constant() for _ in range(4)]), 0)
    return [("demo.conv2d_bn_relu", bn.optional(lambda x: is_op("nn.relu")(x))),
            ("demo.conv2d", conv)]


def test_resnet18_numbers_survive_the_flow():
    mod = bound_resnet18()
    data = random_input(mod)
    out = run(flow(conv_bn_table(), ["demo"]), mod)
    convs = [n for n in relay.post_order(mod["main"].body)
             if isinstance(n, relay.Call) and getattr(n.op, "name", "") == "nn.conv2d"]
    partitions = [f for name, f in out.items() if name != "main"]
    assert len(partitions) == len(convs) == 21
    names = {f.body.op.attrs["PartitionedFromPattern"] for f in partitions}
    assert names == {"nn.conv2d_nn.batch_norm_TupleGetItem0_nn.relu_", "nn.conv2d_"}
    assert all(f.attrs["Compiler"] == "demo" for f in partitions)
    assert_same_numbers(relay.evaluate(out, data), relay.evaluate(mod, data))


# -- MergeComposite rules ------------------------------------------------------------------------


def two_convs() -> IRModule:
    x = relay.var("x", shape=(1, 2, 5, 5))
    y = relay.nn.conv2d(x, const(np.ones(4), (2, 2, 1, 1)), strides=(2, 2))
    y = relay.nn.conv2d(relay.nn.relu(y), const(np.ones(4), (2, 2, 1, 1)))
    return IRModule.from_expr(relay.nn.relu(y))


def composites(mod: IRModule) -> list[str]:
    """The Composite names of the calls of composite functions in main, in post order."""
    return [n.op.attrs["Composite"] for n in relay.post_order(mod["main"].body)
            if isinstance(n, relay.Call) and isinstance(n.op, relay.Function)]


def test_check_rejects_matches():
    conv_relu = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), is_constant()))

    def unit_strides(call):
        return call.args[0].attrs.strides == (1, 1)

    out = run(T.MergeComposite([("demo.conv_relu", conv_relu, unit_strides)]), two_convs())
    assert composites(out) == ["demo.conv_relu"]
    assert out["main"].body.op.attrs["Composite"] == "demo.conv_relu"
    everything = run(T.MergeComposite([("demo.conv_relu", conv_relu)]), two_convs())
    assert composites(everything) == ["demo.conv_relu", "demo.conv_relu"]


def test_interior_nodes_used_outside_are_not_merged():
    x = relay.var("x", shape=(1, 2, 3, 3))
    conv = relay.nn.conv2d(x, const(np.ones(4), (2, 2, 1, 1)))
    relu = relay.nn.relu(conv)
    mod = IRModule.from_expr(relay.add(relu, conv))
    conv_p = is_op("nn.conv2d")(wildcard(), is_constant())
    table = [("demo.conv_relu", is_op("nn.relu")(conv_p)), ("demo.conv", conv_p)]
    out = run(T.MergeComposite(table), mod)
    assert composites(out) == ["demo.conv"]  # conv has a user outside conv+relu
    # The root itself may have many users.
    shared_root = IRModule.from_expr(relay.add(relu, relu))
    assert composites(run(T.MergeComposite(table), shared_root)) == ["demo.conv_relu"]


def test_earlier_table_entries_win():
    conv_p = is_op("nn.conv2d")(wildcard(), is_constant())
    conv_relu = ("demo.conv_relu", is_op("nn.relu")(conv_p))
    conv = ("demo.conv", conv_p)
    assert composites(run(T.MergeComposite([conv_relu, conv]), two_convs())) == \
        ["demo.conv_relu", "demo.conv_relu"]
    assert composites(run(T.MergeComposite([conv, conv_relu]), two_convs())) == \
        ["demo.conv", "demo.conv"]


def test_one_constant_may_serve_two_matches_and_stays_inside():
    x = relay.var("x", shape=(1, 2, 3, 3))
    w = const(np.ones(4), (2, 2, 1, 1))
    mod = IRModule.from_expr(relay.nn.conv2d(relay.nn.conv2d(x, w), w))
    out = run(T.MergeComposite([("demo.conv", is_op("nn.conv2d")(wildcard(), is_constant()))]),
              mod)
    assert composites(out) == ["demo.conv", "demo.conv"]
    assert all(len(n.op.params) == 1 for n in relay.post_order(out["main"].body)
               if isinstance(n, relay.Call) and isinstance(n.op, relay.Function))


def test_inputs_become_parameters_in_first_appearance_order():
    a, b = relay.var("a", shape=(2,)), relay.var("b", shape=(2,))
    mod = IRModule.from_expr(relay.subtract(relay.nn.relu(b), relay.nn.relu(a)))
    x, y = wildcard(), wildcard()
    pattern = is_op("subtract")(is_op("nn.relu")(x), is_op("nn.relu")(y))
    out = run(T.MergeComposite([("demo.sub", pattern)]), mod)
    call = out["main"].body
    assert call.args == (b, a)
    expected = parse("""def @main(%b: Tensor[(2), float32], %a: Tensor[(2), float32]) {
      %0 = fn [Composite="demo.sub", PartitionedFromPattern="nn.relu_nn.relu_subtract_"]
          (%p: Tensor[(2), float32], %q: Tensor[(2), float32]) {
        %1 = nn.relu(%p);
        %2 = nn.relu(%q);
        subtract(%1, %2)
      };
      %0(%b, %a)
    }""")
    assert structural_equal(out["main"], expected["main"]), out.astext()


def test_merge_composite_options(demo_table):
    mod = tiny_graph()
    assert run(T.MergeComposite(), mod) is mod
    assert run(T.MergeComposite(None), mod) is mod
    by_name = run(T.MergeComposite("test-partitioning.demo"), mod)
    assert structural_equal(by_name, run(T.MergeComposite(DEMO_TABLE), mod))
    with pytest.raises(UnknownNameError, match=r"test-partitioning\.demo"):
        T.MergeComposite("test-partitioning.dmeo")
    with pytest.raises(OptionError, match="MergeComposite option 'pattern_table'"):
        T.MergeComposite([("demo.x",)])


def test_nothing_matched_returns_the_module():
    mod = tiny_graph()
    table = [("demo.dense", is_op("nn.dense")(wildcard(), wildcard()))]
    assert run(T.MergeComposite(table), mod) is mod
    assert run(T.AnnotateTarget("nobody"), mod) is mod
    assert run(T.PartitionGraph(), mod) is mod


# -- AnnotateTarget ------------------------------------------------------------------------------


def test_the_first_kind_that_supports_a_call_wins():
    x = relay.var("x", shape=(1, 3))
    mod = IRModule.from_expr(relay.add(relay.nn.relu(x), relay.const(np.ones(3, "float32"))))
    register_op_support("test-part-first", "add", override=True)
    first = run(T.AnnotateTarget(["test-part-first", "test-part-ops"]), mod)
    second = run(T.AnnotateTarget(["test-part-ops", "test-part-first"]), mod)
    assert first["main"].body.attrs.compiler == "test-part-first"
    assert second["main"].body.attrs.compiler == "test-part-ops"


def test_annotation_wraps_non_constant_arguments_once_each():
    x = relay.var("x", shape=(1, 3))
    c = relay.const(np.ones(3, "float32"))
    mod = IRModule.from_expr(relay.Tuple([relay.add(x, x), relay.add(x, c),
                                          relay.add(relay.nn.relu(x), x)]))
    out = run(T.AnnotateTarget("test-part-ops"), mod)
    expected = parse("""def @main(%x: Tensor[(1, 3), float32]) {
      %0 = annotation.compiler_begin(%x, compiler="test-part-ops");
      %1 = add(%0, %0);
      %2 = annotation.compiler_end(%1, compiler="test-part-ops");
      %3 = annotation.compiler_begin(%x, compiler="test-part-ops");
      %4 = add(%3, const([1.0, 1.0, 1.0], float32));
      %5 = annotation.compiler_end(%4, compiler="test-part-ops");
      %6 = nn.relu(%x);
      %7 = annotation.compiler_begin(%6, compiler="test-part-ops");
      %8 = annotation.compiler_begin(%x, compiler="test-part-ops");
      %9 = add(%7, %8);
      %10 = annotation.compiler_end(%9, compiler="test-part-ops");
      (%2, %5, %10)
    }""")
    assert structural_equal(out, expected), out.astext()
    partitioned = run(T.PartitionGraph(), out)
    assert [len(partitioned[f"test_part_ops_main_{n}"].params) for n in range(3)] == [1, 1, 2]


def test_op_support_predicates_decide():
    x = relay.var("x", shape=(1, 4))
    mod = IRModule.from_expr(relay.add(x, x))  # the predicate wants a last axis of 3
    assert run(T.AnnotateTarget("test-part-ops"), mod) is mod


def test_tuple_arguments_are_annotated_and_partitioned():
    x = relay.var("x", shape=(1, 2))
    mod = IRModule.from_expr(relay.concatenate(relay.Tuple([x, relay.exp(x)]), axis=1))
    out = run(Sequential([T.AnnotateTarget("test-part-ops"), T.PartitionGraph()]), mod)
    func = out["test_part_ops_main_0"]
    assert isinstance(func.params[0].checked_type, relay.TupleType)
    data = np.array([[0.5, -1.0]], dtype="float32")
    assert_same_numbers(relay.evaluate(out, data), relay.evaluate(mod, data))


def test_annotate_target_option_errors():
    with pytest.raises(OptionError, match="AnnotateTarget: option 'kinds' is empty"):
        T.AnnotateTarget()
    with pytest.raises(OptionError, match=r"AnnotateTarget: option 'kinds'.*found 3"):
        T.AnnotateTarget(["demo", 3])
    with pytest.raises(UnknownNameError, match=r"nn\.relu"):
        register_op_support("test-part-ops", "nn.rleu")


# -- PartitionGraph errors and edge cases --------------------------------------------------------


def annotated(body_of):
    x = relay.var("x", shape=(2,))
    return IRModule.from_expr(relay.Function([x], body_of(x)))


@pytest.mark.parametrize(("build", "message"), [
    (lambda x: relay.nn.relu(compiler_begin(x, compiler="a")),
     r"compiler_begin\(a\) on variable %x has no compiler_end"),
    (lambda x: compiler_end(relay.nn.relu(compiler_begin(x, compiler="b")), compiler="a"),
     r"starts at compiler_begin\(b\); the kinds must match"),
    (lambda x: compiler_end(relay.nn.relu(x), compiler="a"),
     r"reaches variable %x without passing a compiler_begin"),
    (lambda x: compiler_end(relay.exp(compiler_end(relay.nn.relu(compiler_begin(
        x, compiler="a")), compiler="a")), compiler="a"),
     r"reaches a call of annotation.compiler_end without passing a compiler_begin"),
    (lambda x: (lambda r: relay.Tuple([compiler_end(relay.exp(r), compiler="a"),
                                       compiler_end(relay.abs(r), compiler="a")]))(
        relay.nn.relu(compiler_begin(x, compiler="a"))),
     r"a call of nn.relu is reachable from two different compiler_end\(a\)"),
])
def test_malformed_regions_are_errors(build, message):
    with pytest.raises(PartitionError, match=message):
        run(T.PartitionGraph(), annotated(build))


def test_a_region_without_calls_only_loses_its_annotations():
    mod = annotated(lambda x: relay.nn.relu(compiler_end(compiler_begin(x, compiler="a"),
                                                         compiler="a")))
    out = run(T.PartitionGraph(), mod)
    assert list(out) == ["main"]
    assert structural_equal(out["main"], annotated(relay.nn.relu)["main"])


# -- registration, pipelines, long graphs --------------------------------------------------------


@pytest.mark.parametrize(("name", "options", "required"), [
    ("MergeComposite", None, ()), ("AnnotateTarget", {"kinds": ("demo",)}, ("InferType",)),
    ("PartitionGraph", None, ())])
def test_registered_passes(name, options, required):
    created = get_pass(name, options)
    assert (created.info.name, created.info.opt_level, created.info.required) == \
        (name, 0, required)


def test_textual_pipeline(demo_table):
    mod = small_graph()
    pipeline = build_pipeline("MergeComposite{pattern_table=test-partitioning.demo},"
                              'AnnotateTarget{kinds="demo;test-part-ops"},PartitionGraph')
    out = run(pipeline, mod)
    assert structural_equal(out, run(flow(DEMO_TABLE, ["demo", "test-part-ops"]), mod))


def test_a_long_chain_is_handled_without_recursion():
    x = relay.var("x", shape=(2,))
    body = x
    for _ in range(5000):
        body = relay.nn.relu(body)
    mod = IRModule.from_expr(relay.Function([x], body))
    table = [("long.relu2", is_op("nn.relu")(is_op("nn.relu")(wildcard())))]
    out = run(flow(table, "long"), mod)
    assert len(out) == 1 + 2500
    data = np.array([-1.0, 2.0], dtype="float32")
    assert_same_numbers(relay.evaluate(out, data), data.clip(0))
