"""The low-level IR (TIR): ``PrimFunc``\\ s over explicit buffers, statements and scalar
expressions, with iterative visitors and mutators.

Math intrinsics (``tir.exp``...) are declared in :mod:`passhost.tir.intrinsics`.
Text: :func:`passhost.text.tir_printer.print_prim_func` and
:func:`passhost.text.tir_parser.parse_prim_func` (see docs/ir-text-format.md ("PrimFuncs")).
"""

from passhost.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    TIR_DTYPES,
    Add,
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    StringImm,
    Sub,
    Var,
    call_extern,
    call_kernel,
    const,
    convert,
)
from passhost.tir.function import Buffer, PrimFunc, decl_buffer
from passhost.tir.intrinsics import INTRINSICS, Intrinsic, check_intrinsic_call, intrinsic_call
from passhost.tir.stmt import (
    FOR_KINDS,
    Allocate,
    AllocateConst,
    AssertStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from passhost.tir.visitor import (
    StmtExprMutator,
    StmtExprVisitor,
    post_order,
    post_order_visit,
    substitute,
)

__all__ = [
    "EQ", "FOR_KINDS", "GE", "GT", "INTRINSICS", "LE", "LT", "NE", "TIR_DTYPES", "Add",
    "Allocate", "AllocateConst", "And", "AssertStmt", "BinaryOp", "Buffer", "BufferLoad",
    "BufferStore", "Call", "Cast", "CmpOp", "DeclBuffer", "Div", "Evaluate", "FloatImm",
    "FloorDiv", "FloorMod", "For", "IfThenElse", "IntImm", "Intrinsic", "LetStmt", "Max", "Min",
    "Mod", "Mul", "Not", "Or", "PrimExpr", "PrimFunc", "Select", "SeqStmt", "Stmt",
    "StmtExprMutator", "StmtExprVisitor", "StringImm", "Sub", "Var", "call_extern",
    "call_kernel", "check_intrinsic_call", "const", "convert", "decl_buffer",
    "intrinsic_call", "post_order", "post_order_visit", "substitute",
]
