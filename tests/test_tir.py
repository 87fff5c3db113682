"""TIR: construction checks, visitors and mutators (iterative, memoising), and structural
equality up to renaming (the text format is tested in test_tir_text)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from passhost import tir
from passhost.errors import IRTypeError
from passhost.ir import IRModule, structural_equal, structural_hash
from tir_examples import every_kind_func, make_add_func, wrap


# -- construction ------------------------------------------------------------------------
def test_python_operators_build_typed_expressions():
    x = tir.Var("x")
    e = x + 1
    assert isinstance(e, tir.Add) and e.dtype == "int32"
    assert isinstance(e.b, tir.IntImm) and e.b.value == 1 and e.b.dtype == "int32"
    assert isinstance(2 * x, tir.Mul) and isinstance((2 * x).a, tir.IntImm)
    assert (x < 3).dtype == "bool"
    assert isinstance(x // 2, tir.FloorDiv) and isinstance(x % 2, tir.FloorMod)
    assert isinstance((x < 1) & (x > 0), tir.And) and isinstance(~(x < 1), tir.Not)
    f = tir.Var("f", "float32")
    assert (f * 0.5).b.dtype == "float32"
    assert (f + 1).b.dtype == "float32"  # an int adopts the float operand's dtype
    assert tir.const(5, "int8").dtype == "int8" and tir.const(0.5).dtype == "float32"
    assert tir.const(True).dtype == "bool"
    assert (-tir.const(3)).value == -3


@pytest.mark.parametrize("build,message", [
    (lambda: tir.Var("x") + tir.Var("f", "float32"), "different dtypes int32 and float32"),
    (lambda: tir.Var("x") + 1.5, "cannot make a int32 constant"),
    (lambda: tir.Var("p", "handle") + tir.Var("q", "handle"), "not allowed"),
    (lambda: tir.And(tir.Var("x"), tir.Var("y")), "not allowed"),
    (lambda: tir.Not(tir.Var("x")), "must be bool"),
    (lambda: tir.Var("x", "int31"), "unknown dtype 'int31'"),
    (lambda: tir.IntImm("int8", 128), "out of range for int8"),
    (lambda: tir.IntImm("uint8", -1), "out of range for uint8"),
    (lambda: tir.IntImm("bool", 2), "a bool IntImm is 0 or 1"),
    (lambda: tir.IntImm("float32", 1), "IntImm needs an integer dtype"),
    (lambda: tir.FloatImm("int32", 1.0), "FloatImm needs a float dtype"),
    (lambda: tir.FloatImm("float16", 1e6), "out of range for float16"),
    (lambda: tir.decl_buffer((2, 3))[1], "has 2 dimension(s), found 1 index"),
    (lambda: tir.decl_buffer((2,))[tir.const(1.0)], "an index must be an integer"),
    (lambda: tir.Buffer(tir.Var("p"), "float32", (2,), "B"), "data must be a Var of dtype"),
    (lambda: tir.decl_buffer((2, -1)), "non-negative ints"),
    (lambda: tir.Select(tir.Var("x"), 1, 2), "condition must be bool"),
    (lambda: tir.Call("int32", "select", []), "reserved word"),
    (lambda: tir.Call("int32", "bad name", []), "must be an identifier"),
    (lambda: tir.Call("int32", "call_extern", [1]), "first argument must be a StringImm"),
    (lambda: tir.Call("int32", "f", [object()]), "must be a TIR expression"),
    (lambda: tir.For(tir.Var("i"), 0, 4, "sideways", tir.Evaluate(0)), "unknown loop kind"),
    (lambda: tir.For(tir.Var("f", "float32"), 0, 4, "serial", tir.Evaluate(0)),
     "integer Var"),
    (lambda: tir.For(tir.Var("i"), tir.const(0, "int64"), 4, "serial", tir.Evaluate(0)),
     "For.min must be int32"),
    (lambda: tir.IfThenElse(tir.Var("x"), tir.Evaluate(0)), "condition must be bool"),
    (lambda: tir.IfThenElse(tir.const(True), tir.const(1)), "must be a Stmt"),
    (lambda: tir.LetStmt(tir.Var("x"), tir.const(1.0), tir.Evaluate(0)), "the value is float32"),
    (lambda: tir.decl_buffer((2,), "int8").store((0,), tir.const(1)), "the value is int32"),
    (lambda: tir.Allocate(tir.Var("p"), "int8", (4,), tir.Evaluate(0)), "dtype handle"),
    (lambda: tir.AllocateConst(tir.Var("p", "handle"), "int8", (4,),
                               np.zeros(4, "int16"), tir.Evaluate(0)), "the data is int16"),
    (lambda: tir.AllocateConst(tir.Var("p", "handle"), "int8", (4,),
                               np.zeros(5, "int8"), tir.Evaluate(0)), "5 elements"),
    (lambda: tir.AssertStmt(tir.const(True), 3, tir.Evaluate(0)), "must be a StringImm"),
    (lambda: tir.SeqStmt([tir.Evaluate(0), tir.const(1)]), "must be a Stmt"),
])
def test_construction_errors(build, message):
    with pytest.raises(IRTypeError, match=None) as info:
        build()
    assert message in str(info.value)


def test_prim_func_checks_and_has_no_graph_type():
    a = tir.Var("a", "handle")
    n = tir.Var("n")
    buf = tir.decl_buffer((4,))
    with pytest.raises(IRTypeError, match="not a parameter"):
        tir.PrimFunc([n], {a: buf}, tir.Evaluate(0))
    with pytest.raises(IRTypeError, match="must be a handle"):
        tir.PrimFunc([n], {n: buf}, tir.Evaluate(0))
    with pytest.raises(IRTypeError, match="appears twice"):
        tir.PrimFunc([a, a], {}, tir.Evaluate(0))
    with pytest.raises(IRTypeError, match="must be a Stmt"):
        tir.PrimFunc([a], {}, tir.const(0))
    func = tir.PrimFunc([a], {a: buf}, tir.Evaluate(0), attrs={"global_symbol": "f"})
    with pytest.raises(IRTypeError, match="no graph-level type"):
        func.checked_type  # noqa: B018
    assert func.with_attr("x", 1).attrs == {"global_symbol": "f", "x": 1}
    assert func.func_attrs is func.attrs
    assert str(func).startswith('prim_func @f [global_symbol="f"] (%a: handle) {')
    # a module holds PrimFuncs next to graph functions
    mod = IRModule({"f": func})
    assert mod["f"] is func


def test_allocate_const_data_is_read_only_and_shaped():
    data = np.arange(6, dtype="int8")
    stmt = tir.AllocateConst(tir.Var("p", "handle"), "int8", (2, 3), data, tir.Evaluate(0))
    assert stmt.data.shape == (2, 3) and not stmt.data.flags.writeable
    data[0] = 100
    assert stmt.data[0, 0] == 0  # the caller's array is not shared
    listed = tir.AllocateConst(tir.Var("p", "handle"), "int16", (2,), [1, 2], tir.Evaluate(0))
    assert listed.data.dtype == np.int16


# -- visitors and mutators --------------------------------------------------------------------
class _Counter(tir.StmtExprVisitor):
    def __init__(self):
        self.counts: dict[str, int] = {}

    def visit_node(self, node):
        name = type(node).__name__
        self.counts[name] = self.counts.get(name, 0) + 1


def test_visitor_visits_each_node_once_children_first():
    x = tir.Var("x")
    shared = x + 1
    buf = tir.decl_buffer((4,), "int32", "B")
    body = tir.SeqStmt([buf.store((0,), shared * shared), tir.Evaluate(shared)])
    counter = _Counter()
    counter.visit(body)
    assert counter.counts == {"Var": 2, "IntImm": 2, "Add": 1, "Mul": 1, "Buffer": 1,
                              "BufferStore": 1, "Evaluate": 1, "SeqStmt": 1}
    order = tir.post_order(body)
    assert order[-1] is body
    assert order.index(shared) < order.index(body.seq[0].value)

    class Specific(tir.StmtExprVisitor):
        def __init__(self):
            self.seen = []

        def visit_binary_op(self, node):  # falls back by class: Add and Mul
            self.seen.append(type(node).__name__)

        def visit_buffer_store(self, node):
            self.seen.append("store")

    spec = Specific()
    spec.visit(body)
    assert spec.seen == ["Add", "Mul", "store"]


class _FoldAdd(tir.StmtExprMutator):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def visit_add(self, node):
        self.calls += 1
        if isinstance(node.a, tir.IntImm) and isinstance(node.b, tir.IntImm):
            return tir.IntImm(node.dtype, node.a.value + node.b.value)
        return node


def test_mutator_keeps_unchanged_trees_and_memoises():
    func = every_kind_func()
    mutator = _FoldAdd()
    assert mutator.visit(func) is func  # nothing to fold: the very same object
    x = tir.Var("x")
    shared = tir.const(1) + tir.const(2)
    untouched = tir.Evaluate(x * 2)
    body = tir.SeqStmt([tir.Evaluate(shared + x), untouched, tir.Evaluate(shared)])
    mutator = _FoldAdd()
    new = mutator.visit(body)
    assert new is not body
    assert new.seq[1] is untouched  # an unchanged subtree is the same object
    assert isinstance(new.seq[2].value, tir.IntImm) and new.seq[2].value.value == 3
    assert new.seq[0].value.a is new.seq[2].value  # sharing kept
    assert mutator.calls == 2  # the shared Add is rewritten once
    assert mutator.visit(body) is new  # memo persists


def test_substitute_replaces_uses_not_bindings():
    i, n = tir.Var("i"), tir.Var("n")
    buf = tir.decl_buffer((8,), "int32", "B")
    loop = tir.For(i, 0, n, "serial", buf.store((i,), i + n))
    new = tir.substitute(loop, {n: tir.const(8)})
    assert isinstance(new.extent, tir.IntImm) and new.extent.value == 8
    assert new.loop_var is i and new.body.indices[0] is i
    assert isinstance(new.body.value.b, tir.IntImm)
    # replacing a bound variable by an expression keeps the binding
    kept = tir.substitute(loop, {i: tir.const(0)})
    assert kept.loop_var is i and isinstance(kept.body.indices[0], tir.IntImm)
    # a var -> var substitution renames bindings too
    j = tir.Var("j")
    renamed = tir.substitute(loop, {i: j})
    assert renamed.loop_var is j and renamed.body.indices[0] is j


def test_visitors_are_iterative():
    x = tir.Var("x")
    deep = x
    for _ in range(10_000):
        deep = deep + 1
    seq = tir.SeqStmt([tir.Evaluate(x + k) for k in range(100_000)])
    assert len(tir.post_order(deep)) == 20_001  # x, 10 000 Adds and 10 000 IntImms
    counter = _Counter()
    counter.visit(tir.SeqStmt([tir.Evaluate(deep), seq]))
    assert counter.counts["Add"] == 10_000 + 100_000
    assert counter.counts["Evaluate"] == 100_001
    folded = _FoldAdd().visit(deep)
    assert folded is deep


def test_post_order_counts_distinct_nodes():
    x = tir.Var("x")
    one = tir.const(1)
    deep = x
    for _ in range(100):
        deep = deep + one
    assert len(tir.post_order(deep)) == 102  # x, the shared 1, 100 Adds


# -- structural equality ------------------------------------------------------------------------
def test_equal_up_to_renaming():
    f1 = make_add_func()
    f2 = make_add_func(("p", "q", "r", "X", "Y", "Z", "k"))
    assert f1 is not f2
    assert structural_equal(f1, f2)
    assert structural_hash(f1) == structural_hash(f2)
    assert not structural_equal(f1, make_add_func(const=2.0))
    assert not structural_equal(f1, make_add_func(extent=32))
    assert structural_hash(f1) != structural_hash(make_add_func(extent=32))


def test_bound_variables_must_correspond():
    i, j = tir.Var("i"), tir.Var("j")
    buf = tir.decl_buffer((4, 4), "int32", "B")

    def nest(outer, inner, first, second):
        return wrap(tir.For(outer, 0, 4, "serial", tir.For(
            inner, 0, 4, "serial", buf.store((first, second), 0))))

    assert structural_equal(nest(i, j, i, j), nest(j, i, j, i))
    assert not structural_equal(nest(i, j, i, j), nest(i, j, j, i))
    # a free variable is equal only to itself
    k = tir.Var("k")
    assert not structural_equal(tir.Evaluate(k + 1), tir.Evaluate(tir.Var("k") + 1))
    assert structural_equal(tir.Evaluate(k + 1), tir.Evaluate(tir.Var("m") + 1),
                            map_free_vars=True)


def test_float_immediates_compare_by_bits():
    def fimm(v):
        return tir.FloatImm("float32", v)

    assert structural_equal(fimm(math.nan), fimm(float(np.float32("nan"))))
    assert structural_hash(fimm(math.nan)) == structural_hash(fimm(math.nan))
    assert not structural_equal(fimm(0.0), fimm(-0.0))
    assert not structural_equal(fimm(1.0), tir.FloatImm("float64", 1.0))
    assert not structural_equal(tir.const(1), tir.const(1, "int64"))


def test_var_dtype_and_buffer_fields_count():
    assert not structural_equal(wrap(tir.Evaluate(0), params=[tir.Var("x")]),
                                wrap(tir.Evaluate(0), params=[tir.Var("x", "int64")]))
    a1, a2 = tir.Var("a", "handle"), tir.Var("a", "handle")
    f1 = tir.PrimFunc([a1], {a1: tir.decl_buffer((4,), "int8", "A")}, tir.Evaluate(0))
    f2 = tir.PrimFunc([a2], {a2: tir.decl_buffer((4,), "int8", "A", scope="shared")},
                      tir.Evaluate(0))
    assert not structural_equal(f1, f2)


def test_allocate_const_data_is_compared():
    def func(values):
        p = tir.Var("p", "handle")
        return wrap(tir.AllocateConst(p, "int8", (3,), np.array(values, "int8"),
                                      tir.Evaluate(0)))

    assert structural_equal(func([1, 2, 3]), func([1, 2, 3]))
    assert not structural_equal(func([1, 2, 3]), func([1, 2, 4]))
