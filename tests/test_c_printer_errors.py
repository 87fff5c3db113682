"""What the TIR -> C printer (passhost.backend.c) cannot print is a clear CCodegenError:
unknown intrinsics, ill-typed calls, undefined variables and buffers, stores into constant
data, names that are not C identifiers, unit-level mistakes."""

from __future__ import annotations

import numpy as np
import pytest

from c_printer_harness import (
    buffers,
    func,
    store,
)
from passhost.backend.c import (
    CCodegenError,
    CPrinter,
    print_unit,
)
from passhost.errors import IRTypeError, UnknownNameError
from passhost.tir import (
    AllocateConst,
    BufferStore,
    Call,
    Cast,
    Evaluate,
    For,
    IntImm,
    Var,
    call_extern,
    const,
    decl_buffer,
    intrinsic_call,
)


# -- what cannot be printed: clear errors ----------------------------------------------------
@pytest.mark.parametrize(("build", "message"), [
    (lambda: store(Call("float32", "tir.mystery", [const(1.0)])),
     r"PrimFunc 'f': unknown intrinsic 'tir\.mystery'"),
    (lambda: store(Call("float32", "tir.exp", [const(1)])),
     r"tir\.exp: arguments of dtype int32 are not allowed"),
    (lambda: store(Call("float32", "tir.pow", [const(1.0)])), r"tir\.pow takes 2 argument"),
    (lambda: store(Var("ghost", "float32")), r"variable %ghost is used where nothing"),
    (lambda: store(Cast("int64", Var("p", "handle")), "int64"),
     r"cannot convert a handle to a int64"),
    (lambda: store(call_extern("not a name", dtype="float32")),
     r"call_extern of 'not a name': not a C identifier"),
    (lambda: store(call_extern("ph_secret", dtype="float32")), r"belong to the printer"),
    (lambda: func([], For(Var("u", "uint8"), IntImm("uint8", 1), IntImm("uint8", 255),
                          "serial", Evaluate(0))),
     r"loop %u runs to 255, the largest uint8; .*wider loop variable"),
])
def test_what_cannot_be_printed_is_a_ccodegen_error(build, message):
    fn = build()
    with pytest.raises(CCodegenError, match=message):
        print_unit({"f": fn})


def test_constant_data_cannot_be_stored_into():
    c = decl_buffer((2,), "float32", "c")
    body = AllocateConst(c.data, "float32", (2,), np.zeros(2, np.float32),
                         BufferStore(c, const(1.0), [0]))
    with pytest.raises(CCodegenError, match=r"buffer c is constant data"):
        print_unit({"f": func([], body)})


def test_a_buffer_over_an_undefined_pointer_is_an_error():
    (out,) = buffers("float32", ("out", (1,)))
    stray = decl_buffer((1,), "float32", "stray")
    with pytest.raises(CCodegenError, match=r"buffer stray points at %stray_data, which no"):
        print_unit({"f": func([out], BufferStore(out, stray[0], [0]))})


def test_unit_level_mistakes_are_errors():
    with pytest.raises(CCodegenError, match=r"prefix must be a C identifier"):
        CPrinter(prefix="my-unit")
    printer = CPrinter()
    printer.print_function(store(const(1.0)), "free")  # a reserved name: renamed
    assert printer.functions["free"].symbol == "free_1"
    with pytest.raises(CCodegenError, match=r"'free' is already in the unit"):
        printer.print_function(store(const(2.0)), "free")
    with pytest.raises(CCodegenError, match=r"call_extern of 'free_1', which the unit"):
        printer.print_function(store(call_extern("free_1", dtype="float32")), "g")
    with pytest.raises(CCodegenError, match=r"prints PrimFuncs, found"):
        printer.print_function("not a function", "h")  # type: ignore[arg-type]


def test_intrinsic_call_checks_arity_and_dtypes():
    x = Var("x", "float32")
    assert intrinsic_call("tir.isnan", x).dtype == "bool"
    assert intrinsic_call("tir.pow", x, 2.0).args[1].dtype == "float32"
    assert intrinsic_call("tir.fabs", Var("i", "int8")).dtype == "int8"
    with pytest.raises(IRTypeError, match=r"tir\.exp takes 1 argument\(s\), found 2"):
        intrinsic_call("tir.exp", x, x)
    with pytest.raises(IRTypeError, match=r"tir\.sqrt: arguments of dtype int32"):
        intrinsic_call("tir.sqrt", Var("i"))
    with pytest.raises(IRTypeError, match=r"argument 1 is float64, argument 0 is float32"):
        intrinsic_call("tir.atan2", x, Var("y", "float64"))
    with pytest.raises(UnknownNameError, match=r"unknown intrinsic 'tir\.expp'.*'tir\.exp'"):
        intrinsic_call("tir.expp", x)
