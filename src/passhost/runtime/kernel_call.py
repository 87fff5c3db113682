"""The kernel-call convention of lowered PrimFuncs: one ``call_kernel`` per operator call.

The default lowering turns each operator call of a fused function into::

    call_kernel("<op name>", "<signature JSON>", <output buffers>..., <input buffers>...)

The signature is JSON ``{"attrs": {...}, "inputs": [n, ...], "outputs": n}``: the
operator's attributes, how many buffers each operator input takes (1, or the length of a
tuple input such as ``concatenate``'s) and how many output buffers come first. The kernel
name ``copy`` (one output, one input) copies a buffer. Code generators read calls back
with :func:`decode_kernel_call`, so the convention lives in this one module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from attrs import frozen

from passhost.errors import PasshostError
from passhost.ir.attrs import Attrs
from passhost.tir.expr import Call, StringImm, call_kernel
from passhost.tir.function import Buffer
from passhost.tir.stmt import Evaluate

__all__ = ["COPY", "KernelCall", "KernelCallError", "decode_kernel_call", "kernel_call"]

#: The kernel that copies its one input buffer into its one output buffer.
COPY = "copy"


class KernelCallError(PasshostError):
    """A ``call_kernel`` does not follow the kernel-call convention."""


@frozen
class KernelCall:
    """One decoded kernel call: the operator name, its attributes (None for ``copy`` and
    operators without attributes), output buffers, and the inputs (a Buffer, or a tuple of
    Buffers for a tuple input)."""

    name: str
    attrs: Attrs | None
    outputs: tuple[Buffer, ...]
    inputs: tuple[Buffer | tuple[Buffer, ...], ...]

    @property
    def op(self) -> Any:
        """The registered operator (raises for ``copy``)."""
        from passhost.relay.op.registry import get_op

        return get_op(self.name)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def kernel_call(name: str, attrs: Attrs | None, outputs: Sequence[Buffer],
                inputs: Sequence[Buffer | Sequence[Buffer]]) -> Evaluate:
    """The statement calling kernel ``name`` on ``inputs``, writing ``outputs``."""
    counts = [len(i) if isinstance(i, (tuple, list)) else 1 for i in inputs]
    flat: list[Buffer] = []
    for item in inputs:
        flat.extend(item if isinstance(item, (tuple, list)) else (item,))
    fields = {} if attrs is None else {k: _jsonable(v) for k, v in attrs.fields_dict().items()}
    signature = json.dumps({"attrs": fields, "inputs": counts, "outputs": len(outputs)},
                           sort_keys=True, separators=(",", ":"))
    return Evaluate(call_kernel(name, signature, *outputs, *flat))


def decode_kernel_call(call: Call) -> KernelCall:
    """Read a ``call_kernel`` written by :func:`kernel_call` back (attrs rebuilt and
    checked by the operator)."""
    args = call.args
    if call.op != "call_kernel" or len(args) < 2 or not all(
            isinstance(a, StringImm) for a in args[:2]):
        raise KernelCallError(f"not a kernel call: {call}")
    name = args[0].value
    try:
        sig = json.loads(args[1].value)
        counts = [int(c) for c in sig["inputs"]]
        n_out = int(sig["outputs"])
        fields = dict(sig["attrs"])
    except (ValueError, KeyError, TypeError) as err:
        raise KernelCallError(f"kernel call of {name!r}: bad signature "
                              f"{args[1].value!r} ({err})") from None
    buffers = args[2:]
    if not all(isinstance(b, Buffer) for b in buffers) or len(buffers) != n_out + sum(counts):
        raise KernelCallError(f"kernel call of {name!r}: expected {n_out} output and "
                              f"{sum(counts)} input buffers, found {list(map(str, buffers))}")
    tuple_inputs: frozenset[int] = frozenset()
    attrs = None
    if name != COPY:
        from passhost.relay.op.registry import get_op

        op = get_op(name)
        if len(counts) != len(op.inputs):
            raise KernelCallError(f"kernel call of {name!r}: {len(counts)} inputs, the "
                                  f"operator takes {len(op.inputs)}")
        attrs = op.make_attrs(fields)
        tuple_inputs = frozenset(i for i, n in enumerate(op.inputs) if n in op.tuple_inputs)
    outputs = tuple(buffers[:n_out])
    inputs: list[Buffer | tuple[Buffer, ...]] = []
    pos = n_out
    for i, count in enumerate(counts):
        group = tuple(buffers[pos:pos + count])
        inputs.append(group if i in tuple_inputs else group[0])
        pos += count
    return KernelCall(name, attrs, outputs, tuple(inputs))
