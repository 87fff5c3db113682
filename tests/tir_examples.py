"""TIR functions and round-trip checks shared by the TIR tests: a function using every
statement and expression kind, a small elementwise one, and printing then parsing back."""

from __future__ import annotations

import math

import numpy as np

from passhost import tir
from passhost.ir import structural_equal, structural_hash
from passhost.text.metadata import MetadataReader, MetadataWriter
from passhost.text.tir_parser import parse_prim_func_text
from passhost.text.tir_printer import print_prim_func


def roundtrip(func: tir.PrimFunc, name: str = "main") -> tir.PrimFunc:
    """Print with a metadata table, parse back, compare; printing again gives the same text."""
    meta = MetadataWriter()
    text = print_prim_func(name, func, meta)
    got_name, back = parse_prim_func_text(text, MetadataReader(meta.arrays, present=True))
    assert got_name == name
    assert structural_equal(func, back), text
    assert structural_hash(func) == structural_hash(back)
    assert print_prim_func(name, back, MetadataWriter()) == text
    return back


def parse(text: str) -> tir.PrimFunc:
    """The PrimFunc of ``text`` (its name dropped)."""
    return parse_prim_func_text(text)[1]


def wrap(*stmts: tir.Stmt, params=()) -> tir.PrimFunc:
    """A PrimFunc of ``params`` whose body is the statements (a SeqStmt of several)."""
    body = stmts[0] if len(stmts) == 1 else tir.SeqStmt(stmts)
    return tir.PrimFunc(params, {}, body)


def make_add_func(names=("a", "b", "c", "A", "B", "C", "i"), extent=64, const=1.0):
    """A PrimFunc C[i] = A[i] + B[i] + const, with the given variable names."""
    a, b, c = (tir.Var(n, "handle") for n in names[:3])
    bufs = [tir.decl_buffer((extent,), "float32", n) for n in names[3:6]]
    i = tir.Var(names[6])
    store = bufs[2].store((i,), bufs[0][i] + bufs[1][i] + tir.const(const))
    loop = tir.For(i, 0, extent, "serial", store)
    return tir.PrimFunc([a, b, c], {a: bufs[0], b: bufs[1], c: bufs[2]}, loop,
                        attrs={"global_symbol": "add"})


def every_kind_func() -> tir.PrimFunc:
    """One function using every statement and expression kind."""
    a, b, c = (tir.Var(n, "handle") for n in "abc")
    n = tir.Var("n", "int32")
    big = tir.Var("big", "int64")
    flag = tir.Var("flag", "bool")
    A = tir.decl_buffer((4, 16), "float32", "A")
    B = tir.Buffer(tir.Var("bdata", "handle"), "int8", (16,), "B", "global.shared")
    C = tir.decl_buffer((), "float64", "C")
    i, j = tir.Var("i"), tir.Var("j")
    ctx = tir.Var("ctx", "handle")
    W = tir.Buffer(ctx, "int8", (1024,), "W", "global.workspace")
    W2 = tir.Buffer(ctx, "int16", (512,), "W2")  # aliases W's memory, declared nowhere
    lut = tir.Var("lut", "handle")
    L = tir.Buffer(lut, "int16", (4,), "L")
    big_const = tir.Var("table", "handle")
    T = tir.Buffer(big_const, "float32", (8, 8), "T")
    m = tir.Var("m")
    u = tir.Var("u", "uint8")
    f = tir.Var("f", "float32")
    fresh = tir.decl_buffer((3,), "int32", "Fresh")  # data bound by nothing else
    P = tir.Buffer(a, "int8", (4,), "P")
    h = tir.Var("h", "handle")
    H = tir.Buffer(h, "float32", (2,), "H")
    exprs = [
        tir.call_extern("arm_fn", A.data, W, W2, m, -3, 1.5, tir.const(2, "int64"), "NULL"),
        tir.call_kernel("conv2d_nchw", A, W, C, 1, 1),
        tir.Call("float32", "tir.exp", [f]),
        tir.Call("handle", "tir.noargs", []),
        tir.Min(m, n) + tir.Max(m, n) * tir.FloorDiv(m, n) - tir.FloorMod(m, n) / tir.Mod(m, n),
        tir.Select(flag & (m < n) | ~(m >= 3), m, n),
        (m <= n).equal(m > n),
        tir.Cast("float16", f) + tir.FloatImm("float16", -0.5),
        tir.FloatImm("float64", 1e300) * tir.FloatImm("float64", 2.5e-300),
        tir.FloatImm("float32", math.inf) - tir.FloatImm("float32", -math.inf),
        tir.FloatImm("float32", math.nan) + tir.FloatImm("float32", -0.0),
        tir.IntImm("uint8", 255) - u,
        big + tir.IntImm("int64", -(2 ** 63)),
        tir.const(True).not_equal(tir.const(False)),
        tir.StringImm('quote " backslash \\ newline \n tab \t unicode é'),
        -(m - (n - 1)) * (m + n),
        fresh[2] + 1,
    ]
    inner = tir.SeqStmt([
        *(tir.Evaluate(e) for e in exprs),
        tir.IfThenElse(m < 10, tir.Evaluate(0),
                       tir.IfThenElse(m > 20, tir.Evaluate(1),
                                      tir.IfThenElse(m.equal(15), tir.Evaluate(2),
                                                     tir.Evaluate(3)))),
        tir.IfThenElse(flag, tir.SeqStmt([tir.Evaluate(4), tir.Evaluate(5)])),
        L.store((0,), L[1] + tir.const(1, "int16")),
        T.store((1, 2), T[3, 4]),
        tir.SeqStmt([tir.Evaluate(6)]),          # a SeqStmt of one statement
        tir.SeqStmt([]),                          # an empty SeqStmt
        tir.SeqStmt([tir.Evaluate(7), tir.SeqStmt([tir.Evaluate(8), tir.Evaluate(9)])]),
        tir.SeqStmt([tir.SeqStmt([tir.Evaluate(10), tir.LetStmt(tir.Var("z"), 1,
                                                                 tir.Evaluate(11))]),
                     tir.Evaluate(12)]),
        tir.Evaluate(tir.call_extern("g", P, P[3])),  # a view of the parameter %a itself
        tir.LetStmt(h, tir.Call("handle", "tir.make_ptr", [1]),
                    tir.Evaluate(H[0] + H[1])),  # a view of a let-bound pointer
    ])
    nested_binders = tir.LetStmt(
        m, n * 2,
        tir.AllocateConst(
            lut, "int16", (4,), np.array([1, -2, 3, 32767], dtype="int16"),
            tir.AllocateConst(big_const, "float32", (8, 8),
                              np.linspace(-1, 1, 64, dtype="float32"),
                              tir.LetStmt(u, tir.IntImm("uint8", 7),
                                          tir.LetStmt(f, tir.const(0.1), inner)))))
    body = tir.SeqStmt([
        tir.For(i, 0, 4, "serial",
                tir.For(j, 0, 16, "vectorized",
                        A.store((i, j), A[i, j] * tir.const(2.0)))),
        tir.For(i, 0, 16, "parallel", B.store((i,), tir.Cast("int8", i))),  # %i reused
        tir.For(j, 1, n - 1, "unrolled", C.store((), tir.Cast("float64", j))),
        tir.LetStmt(tir.Var("early"), 5, tir.Evaluate(1)),  # a binder not last: braces
        tir.Allocate(
            ctx, "int8", (1024,),
            tir.DeclBuffer(W, tir.AssertStmt(n > 0, "n must be positive", nested_binders)),
            "global.workspace"),
    ])
    return tir.PrimFunc([a, b, c, n, big, flag], {a: A, b: B, c: C}, body, ret_type="int32",
                        attrs={"global_symbol": "every_kind", "tir.noalias": True,
                               "target": "cmsis-nn", "sizes": (1, 2, 3)})
