"""What code generation takes on trust in a PrimFunc, checked for PrimFuncs read from text
nobody vouches for (an artifact's TIR).

Code generators take a buffer's shape and dtype as the truth about the memory behind it,
and native kernels index their arguments by the shapes of the buffers a kernel call hands
them. So a PrimFunc is refused unless:

- each parameter with a buffer is that buffer's ``data`` pointer;
- every buffer it uses (in a ``DeclBuffer``, a kernel call, a load or a store) views the
  memory of a parameter, an ``Allocate`` or an ``AllocateConst``, and takes no more bytes
  than that memory has;
- every ``call_kernel`` follows the kernel-call convention and is well typed: the
  operator's type relation, given the input buffers' types (and the constant ones' data),
  gives exactly the output buffers' shapes and dtypes; ``copy`` copies between buffers of
  one dtype and one number of elements.

- every load and store provably indexes inside its buffer (:mod:`passhost.tir.bounds`).
"""

from __future__ import annotations

import math

import numpy as np

from passhost.errors import PasshostError
from passhost.ir.types import TensorType, TupleType, Type, tensor_types
from passhost.runtime.kernel_call import COPY, KernelCall, decode_kernel_call
from passhost.tir.bounds import IndexBoundsError, check_index_bounds
from passhost.tir.expr import Call
from passhost.tir.function import Buffer, PrimFunc
from passhost.tir.stmt import Allocate, AllocateConst
from passhost.tir.visitor import post_order

__all__ = ["PrimFuncCheckError", "check_prim_func"]

#: What type relations and attribute constructors may raise on buffers and attributes no
#: lowering would write (they are written for well-formed calls).
_REFUSALS = (PasshostError, ArithmeticError, LookupError, TypeError, ValueError)


class PrimFuncCheckError(PasshostError):
    """A PrimFunc whose buffers or kernel calls code generation cannot trust."""


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return math.prod(shape) * np.dtype(dtype).itemsize


def _describe(buf: Buffer) -> str:
    return f"buffer %{buf.name} ({buf.dtype}{list(buf.shape)})"


def _memory(func: PrimFunc, nodes: list, where: str) -> dict[int, int]:
    """The bytes behind each pointer (by the id of its Var) the PrimFunc may view."""
    memory: dict[int, int] = {}
    for param in func.params:
        buf = func.buffer_map.get(param)
        if buf is None:
            continue
        if buf.data is not param:
            raise PrimFuncCheckError(f"{where}: parameter %{param.name_hint} is matched to "
                                     f"{_describe(buf)} over another pointer "
                                     f"(%{buf.data.name_hint})")
        memory[id(param)] = _nbytes(buf.shape, buf.dtype)
    for node in nodes:
        if isinstance(node, (Allocate, AllocateConst)):
            memory[id(node.buffer_var)] = _nbytes(node.extents, node.dtype)
    return memory


def _tensor_type(value: Buffer | tuple[Buffer, ...]) -> Type:
    if isinstance(value, tuple):
        return TupleType([TensorType(b.shape, b.dtype) for b in value])
    return TensorType(value.shape, value.dtype)


def _check_kernel_call(call: KernelCall, constants: dict[int, np.ndarray], where: str) -> None:
    what = f"{where}: kernel call of {call.name!r}"
    if call.name == COPY:
        (out,), (src,) = call.outputs, call.inputs
        if isinstance(src, tuple) or out.dtype != src.dtype \
                or math.prod(out.shape) != math.prod(src.shape):
            raise PrimFuncCheckError(f"{what}: copies {_describe(src)} into {_describe(out)}")
        return
    types = [_tensor_type(i) for i in call.inputs]
    values = [constants.get(id(i.data)) if isinstance(i, Buffer) else None
              for i in call.inputs]
    try:
        result = tensor_types(call.op.infer_type(types, call.attrs, arg_values=values))
    except _REFUSALS as err:
        raise PrimFuncCheckError(f"{what}: its buffers are ill-typed: {err}") from None
    outs = [(b.shape, b.dtype) for b in call.outputs]
    want = [(t.shape, t.dtype) for t in result]
    if outs != want:
        raise PrimFuncCheckError(
            f"{what}: the operator gives {[f'{d}{list(s)}' for s, d in want]} for these "
            f"inputs, the outputs are {[_describe(b) for b in call.outputs]}")


def check_prim_func(func: PrimFunc, name: str) -> None:
    """Raise :class:`PrimFuncCheckError` unless ``func`` (called ``name``) has the
    properties the module docstring lists."""
    where = f"PrimFunc @{name}"
    nodes = post_order(func.body)
    memory = _memory(func, nodes, where)
    constants = {id(n.buffer_var): n.data for n in nodes if isinstance(n, AllocateConst)}
    for node in nodes:
        if isinstance(node, Buffer):
            size = memory.get(id(node.data))
            if size is None:
                raise PrimFuncCheckError(f"{where}: {_describe(node)} views %"
                                         f"{node.data.name_hint}, which is no parameter or "
                                         f"allocation")
            if _nbytes(node.shape, node.dtype) > size:
                raise PrimFuncCheckError(f"{where}: {_describe(node)} is larger than the "
                                         f"{size} bytes of %{node.data.name_hint}")
        elif isinstance(node, Call) and node.op == "call_kernel":
            try:
                call = decode_kernel_call(node)
            except _REFUSALS as err:
                raise PrimFuncCheckError(f"{where}: {err}") from None
            _check_kernel_call(call, constants, where)
    try:
        check_index_bounds(func, name)
    except IndexBoundsError as err:
        raise PrimFuncCheckError(str(err)) from None
