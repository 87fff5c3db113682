"""Translation of one PrimFunc into the source of one Python function over NumPy arrays.

Kernel calls become calls of native or NumPy kernels (:mod:`.planning`; a native kernel
may also do the work of the elementwise calls after it) or of the operator's reference
kernel; allocations and constants move to the module level (allocated once); the other
statements and expressions become the Python they mean.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from passhost.errors import PasshostError
from passhost.runtime import KernelCall, decode_kernel_call
from passhost.tir import INTRINSICS, Buffer, PrimFunc
from passhost.tir import expr as te
from passhost.tir import stmt as ts
from passhost_cpu_target import scalars
from passhost_cpu_target.errors import CodegenError, TIRAssertionError
from passhost_cpu_target.literals import literal
from passhost_cpu_target.module_scope import ModuleScope
from passhost_cpu_target.naming import Namer
from passhost_cpu_target.native_kernels import NativeKernel, bound_arguments
from passhost_cpu_target.planning import PlanConfig, plan_call
from passhost_cpu_target.selection import BLAS_KERNELS, Constant, KernelPlan

__all__ = ["emit_function"]

_INDENT = "    "

_BINARY = {te.Add: "+", te.Sub: "-", te.Mul: "*", te.FloorDiv: "//", te.FloorMod: "%",
           te.LT: "<", te.LE: "<=", te.GT: ">", te.GE: ">=", te.EQ: "==", te.NE: "!=",
           te.And: "and", te.Or: "or"}

#: Python integers stand for these dtypes (indices and counters); others are NumPy scalars.
_PYTHON_INTS = ("int32", "int64")


class _Array:
    """What a pointer variable points at: an array name, with its shape and dtype when
    known (None for a handle parameter that no buffer_map entry describes)."""

    __slots__ = ("dtype", "name", "shape")

    def __init__(self, name: str, shape: tuple[int, ...] | None, dtype: str | None) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype


class _FunctionEmitter:
    """Emits the Python source of one PrimFunc into ``scope``'s module."""

    def __init__(self, scope: ModuleScope, name: str, func: PrimFunc,
                 config: PlanConfig) -> None:
        self.scope = scope
        self.name = name
        self.func = func
        self.config = config
        self.locals = Namer()
        self.lines: list[str] = []
        self.depth = 1
        self.arrays: dict[int, _Array] = {}
        self.buffers: dict[int, str] = {}
        self.scalars: dict[int, str] = {}
        #: The native kernel calls emitted: (kernel, argument source).
        self.native_calls: list[tuple[NativeKernel, str]] = []

    def fail(self, problem: str) -> CodegenError:
        """A CodegenError about this function."""
        return CodegenError(f"PrimFunc {self.name!r}: {problem}")

    # -- names ------------------------------------------------------------------------------
    def helper(self, function: Callable[..., Any]) -> str:
        """The module-level name of a helper or kernel function."""
        return self.scope.bind_function(function)

    def buffer(self, buf: Buffer) -> str:
        """An expression for the array of ``buf``."""
        known = self.buffers.get(id(buf))
        if known is not None:
            return known
        arr = self.arrays.get(id(buf.data))
        if arr is None:
            raise self.fail(f"buffer {buf.name} points at %{buf.data.name_hint}, which no "
                            f"parameter, allocation or let statement defines")
        if arr.shape == buf.shape and arr.dtype == buf.dtype:
            return arr.name
        return (f"{self.helper(scalars.buffer_view)}({arr.name}, {literal(buf.shape)}, "
                f"{buf.dtype!r})")

    # -- the function -----------------------------------------------------------------------
    def emit(self, py_name: str) -> tuple[str, NativeKernel | None]:
        """The ``def`` of the function, named ``py_name``, and the native kernel it is one
        call of (None when it is not). Such a function also gets a companion,
        ``<py_name>__bind``, giving the kernel's bound C arguments for the same arrays
        (:func:`.native_kernels.bound_arguments`)."""
        params = []
        for var in self.func.params:
            buf = self.func.buffer_map.get(var)
            if buf is not None:
                local = self.locals.fresh(buf.name)
                self.arrays[id(var)] = _Array(local, buf.shape, buf.dtype)
                self.buffers[id(buf)] = local
            elif var.dtype == "handle":
                local = self.locals.fresh(var.name_hint)
                self.arrays[id(var)] = _Array(local, None, None)
            else:
                local = self.locals.fresh(var.name_hint)
                self.scalars[id(var)] = local
            params.append(local)
        self.stmt(self.func.body)
        body = self.lines or [_INDENT + "pass"]
        source = "\n".join([f"def {py_name}({', '.join(params)}):", *body])
        if len(self.lines) != 1 or len(self.native_calls) != 1:
            return source, None
        kernel, args = self.native_calls[0]
        bind = self.helper(bound_arguments)
        companion = (f"def {py_name}__bind({', '.join(params)}):\n"
                     f"{_INDENT}return {bind}({self.helper(kernel)}, {args})")
        return f"{source}\n\n\n{companion}", kernel

    def line(self, text: str) -> None:
        """Append one line at the current depth."""
        self.lines.append(_INDENT * self.depth + text)

    def block(self, stmt: ts.Stmt) -> None:
        """Emit ``stmt`` one level deeper (``pass`` when it emits nothing)."""
        self.depth += 1
        before = len(self.lines)
        self.stmt(stmt)
        if len(self.lines) == before:
            self.line("pass")
        self.depth -= 1

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: ts.Stmt) -> None:
        """Emit statement ``s``."""
        handler = getattr(self, f"_stmt_{type(s).__name__}", None)
        if handler is None:
            raise self.fail(f"cannot generate code for a {type(s).__name__} statement")
        handler(s)

    def _stmt_SeqStmt(self, s: ts.SeqStmt) -> None:
        calls = [self.decode(item) for item in s.seq]
        i = 0
        while i < len(s.seq):
            call = calls[i]
            if call is None:
                self.stmt(s.seq[i])
                i += 1
                continue
            following = []
            for later in calls[i + 1:]:
                if later is None:
                    break
                following.append(later)
            i += 1 + self.kernel_call(call, following)

    def _stmt_Allocate(self, s: ts.Allocate) -> None:
        name = self.scope.allocate(s.buffer_var.name_hint.removesuffix("_data"),
                                   s.extents, s.dtype)
        self.arrays[id(s.buffer_var)] = _Array(name, s.extents, s.dtype)
        self.stmt(s.body)

    def _stmt_AllocateConst(self, s: ts.AllocateConst) -> None:
        name = self.scope.constant(s.buffer_var.name_hint.removesuffix("_data"), s.data)
        self.arrays[id(s.buffer_var)] = _Array(name, s.extents, s.dtype)
        self.stmt(s.body)

    def _stmt_DeclBuffer(self, s: ts.DeclBuffer) -> None:
        view = self.buffer(s.buffer)
        if not view.isidentifier():
            local = self.locals.fresh(s.buffer.name)
            self.line(f"{local} = {view}")
            view = local
        self.buffers[id(s.buffer)] = view
        self.stmt(s.body)

    def _stmt_LetStmt(self, s: ts.LetStmt) -> None:
        value = s.value
        if s.var.dtype == "handle" and isinstance(value, te.Var) and id(value) in self.arrays:
            self.arrays[id(s.var)] = self.arrays[id(value)]
        else:
            local = self.locals.fresh(s.var.name_hint)
            self.line(f"{local} = {self.expr(value)}")
            self.scalars[id(s.var)] = local
        self.stmt(s.body)

    def _stmt_For(self, s: ts.For) -> None:
        local = self.locals.fresh(s.loop_var.name_hint)
        self.scalars[id(s.loop_var)] = local
        lo, extent = self.expr(s.min), self.expr(s.extent)
        bounds = extent if lo == "0" else f"{lo}, {lo} + {extent}"
        self.line(f"for {local} in range({bounds}):")
        self.block(s.body)

    def _stmt_IfThenElse(self, s: ts.IfThenElse) -> None:
        self.line(f"if {self.expr(s.condition)}:")
        self.block(s.then_case)
        if s.else_case is not None:
            self.line("else:")
            self.block(s.else_case)

    def _stmt_AssertStmt(self, s: ts.AssertStmt) -> None:
        error = self.scope.bind("TIRAssertionError", TIRAssertionError,
                                "passhost_cpu_target.errors.TIRAssertionError")
        message = f"PrimFunc {self.name!r}: assertion {s.condition} failed: {s.message.value}"
        self.line(f"if not {self.expr(s.condition)}:")
        self.depth += 1
        self.line(f"raise {error}({message!r})")
        self.depth -= 1
        self.stmt(s.body)

    def _stmt_BufferStore(self, s: ts.BufferStore) -> None:
        self.line(f"{self.buffer(s.buffer)}[{self.indices(s.indices)}] = {self.expr(s.value)}")

    def _stmt_Evaluate(self, s: ts.Evaluate) -> None:
        call = self.decode(s)
        if call is not None:
            self.kernel_call(call, [])
        elif isinstance(s.value, te.Call):
            self.line(self.expr(s.value))

    # -- kernel calls -----------------------------------------------------------------------
    def decode(self, s: ts.Stmt) -> KernelCall | None:
        """The kernel call ``s`` evaluates, or None when it is another statement."""
        if not (isinstance(s, ts.Evaluate) and isinstance(s.value, te.Call)
                and s.value.op == "call_kernel"):
            return None
        try:
            return decode_kernel_call(s.value)
        except PasshostError as err:
            raise self.fail(str(err)) from None

    def kernel_call(self, kc: KernelCall, following: list[KernelCall]) -> int:
        """Emit the call of a native or NumPy kernel, or of the operator's reference
        kernel; returns how many of the ``following`` calls the kernel also does."""
        outputs = [self.buffer(b) for b in kc.outputs]
        inputs = [self.tuple_of(i) if isinstance(i, tuple) else self.buffer(i)
                  for i in kc.inputs]
        plan = plan_call(kc, following, self.config)
        if plan is None:
            self.reference_call(kc, outputs, inputs)
            return 0
        self.fast_call(plan, outputs, inputs)
        return plan.absorbs

    def tuple_of(self, buffers: tuple[Buffer, ...]) -> str:
        """A tuple expression of the arrays of ``buffers``."""
        return _tuple_source([self.buffer(b) for b in buffers])

    def fast_call(self, plan: KernelPlan, outputs: list[str], inputs: list[str]) -> None:
        """Emit ``kernel(outputs, inputs, operands, extras, options)``."""
        if plan.kernel in BLAS_KERNELS:
            self.scope.uses_blas = True
        operands = ["None" if b is None else self.buffer(b) for b in plan.operands]
        extras = []
        for extra in plan.extras:
            if extra is None:
                extras.append("None")
            elif isinstance(extra, Constant):
                extras.append(self.scope.constant(f"{plan.kernel.__name__}_const",
                                                  extra.value))
            else:
                extras.append(self.scope.scratch(f"{plan.kernel.__name__}_scratch", extra))
        options = [f"{k}={literal(v)}" for k, v in plan.options.items()]
        args = ", ".join([*outputs, *inputs, *operands, *extras, *options])
        self.line(f"{self.helper(plan.kernel)}({args})")
        if isinstance(plan.kernel, NativeKernel):
            self.native_calls.append((plan.kernel, args))

    def reference_call(self, kc: KernelCall, outputs: list[str], inputs: list[str]) -> None:
        """Emit ``out[...] = OP.evaluate(ATTRS, inputs)`` (one line per output)."""
        self.scope.uses_blas = True  # reference kernels may call BLAS
        op = self.scope.bind(f"op_{kc.name}", kc.op, f"operator {kc.name} (reference kernel)")
        attrs = "None"
        if kc.attrs is not None:
            attrs = self.scope.bind(f"attrs_{kc.name}", kc.attrs, f"attributes {kc.attrs}",
                                    share=False)
        value = f"{op}.evaluate({', '.join([attrs, *inputs])})"
        if len(outputs) == 1:
            self.line(f"{outputs[0]}[...] = {value}")
            return
        result = self.locals.fresh("result")
        self.line(f"{result} = {value}")
        for i, out in enumerate(outputs):
            self.line(f"{out}[...] = {result}[{i}]")

    # -- expressions ------------------------------------------------------------------------
    def indices(self, indices: tuple[te.PrimExpr, ...]) -> str:
        """The subscript selecting one element."""
        return ", ".join(self.expr(i) for i in indices) if indices else "()"

    def expr(self, e: Any) -> str:
        """Python source evaluating ``e``."""
        handler = getattr(self, f"_expr_{type(e).__name__}", None)
        if handler is not None:
            return handler(e)
        op = _BINARY.get(type(e))
        if op is not None:
            return f"({self.expr(e.a)} {op} {self.expr(e.b)})"
        raise self.fail(f"cannot generate code for a {type(e).__name__} expression")

    def _expr_IntImm(self, e: te.IntImm) -> str:
        if e.dtype == "bool":
            return repr(bool(e.value))
        if e.dtype in _PYTHON_INTS:
            return repr(e.value)
        return f"np.{e.dtype}({e.value})"

    def _expr_FloatImm(self, e: te.FloatImm) -> str:
        text = literal(e.value)
        return text if e.dtype == "float64" else f"np.{e.dtype}({text})"

    def _expr_StringImm(self, e: te.StringImm) -> str:
        return repr(e.value)

    def _expr_Var(self, e: te.Var) -> str:
        name = self.scalars.get(id(e))
        if name is None:
            arr = self.arrays.get(id(e))
            if arr is None:
                raise self.fail(f"variable %{e.name_hint} is used where nothing defines it")
            name = arr.name
        return name

    def _expr_BufferLoad(self, e: te.BufferLoad) -> str:
        return f"{self.buffer(e.buffer)}[{self.indices(e.indices)}]"

    def _expr_Div(self, e: te.Div) -> str:
        if e.dtype.startswith("float"):
            return f"({self.expr(e.a)} / {self.expr(e.b)})"
        return f"{self.helper(scalars.truncdiv)}({self.expr(e.a)}, {self.expr(e.b)})"

    def _expr_Mod(self, e: te.Mod) -> str:
        return f"{self.helper(scalars.truncmod)}({self.expr(e.a)}, {self.expr(e.b)})"

    def _expr_Min(self, e: te.Min) -> str:
        return f"min({self.expr(e.a)}, {self.expr(e.b)})"

    def _expr_Max(self, e: te.Max) -> str:
        return f"max({self.expr(e.a)}, {self.expr(e.b)})"

    def _expr_Not(self, e: te.Not) -> str:
        return f"(not {self.expr(e.a)})"

    def _expr_Select(self, e: te.Select) -> str:
        return (f"({self.expr(e.true_value)} if {self.expr(e.condition)} "
                f"else {self.expr(e.false_value)})")

    def _expr_Cast(self, e: te.Cast) -> str:
        if e.dtype == "handle":
            raise self.fail(f"cannot cast {e.value} to a handle")
        return f"{self.helper(scalars.convert)}({self.expr(e.value)}, {e.dtype!r})"

    def _expr_Call(self, e: te.Call) -> str:
        if e.op == "call_extern":
            raise self.fail(f"call_extern of {e.args[0].value!r}: the cpu target runs "
                            f"generated Python and cannot call external C functions")
        if e.op == "call_kernel":
            raise self.fail(f"call_kernel of {e.args[0].value!r} inside an expression; a "
                            f"kernel call is a statement of its own")
        intrinsic = INTRINSICS.get(e.op)
        if intrinsic is None:
            raise self.fail(f"unknown intrinsic {e.op!r}; the cpu target knows "
                            f"{', '.join(INTRINSICS)}")
        function = self.scope.bind(e.op.replace(".", "_"), intrinsic.numpy,
                                   f"intrinsic {e.op} (NumPy reference)")
        return f"{function}({', '.join(self.expr(a) for a in e.args)})"


def _tuple_source(items: list[str]) -> str:
    """Source of a tuple of the expressions ``items``."""
    if len(items) == 1:
        return f"({items[0]},)"
    return f"({', '.join(items)})"


def emit_function(scope: ModuleScope, name: str, py_name: str, func: PrimFunc,
                  config: PlanConfig) -> tuple[str, NativeKernel | None]:
    """The source of ``def py_name(...)`` computing PrimFunc ``func`` (module key ``name``)
    with the kernels ``config`` allows, and the native kernel it is one call of, if it is
    (see ``_FunctionEmitter.emit``); module-level names it needs are added to ``scope``."""
    return _FunctionEmitter(scope, name, func, config).emit(py_name)
