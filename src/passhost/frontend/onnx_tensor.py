"""Converters of the ONNX operators that make, convert or pass on whole tensors (Constant,
Cast, CastLike, Identity, Dropout), and of those whose output shape depends on the data
(NonZero, Unique, Compress): passhost compiles static shapes, so these are folded when
their inputs are known while importing and are otherwise an error saying why.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost import relay
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_data import passhost_dtype
from passhost.frontend.onnx_registry import Entry
from passhost.ir.types import DTYPES
from passhost.relay.expr import const

__all__ = ["CONVERTERS"]

def _data_dependent(ctx: NodeContext, index: int) -> Exception:
    """The error for a node whose output shape would depend on the values of input
    ``index``, which is computed."""
    return ctx.unknown_operand(index, why="the node's output shape depends on its values "
                                          "(passhost compiles static shapes)")


# -- Constant ------------------------------------------------------------------------------------
def _constant(ctx: NodeContext) -> Value:
    """Constant: a value known while importing (folded into what uses it); string and
    sparse values are not supported."""
    for name in ("value_string", "value_strings"):
        if ctx.attr(name) is not None:
            raise ctx.error(f"attribute {name!r}: passhost has no string tensors")
    if ctx.attr("sparse_value") is not None:
        raise ctx.error("attribute 'sparse_value': sparse tensors are not supported")
    for name, dtype in (("value", None), ("value_float", "float32"),
                        ("value_floats", "float32"), ("value_int", "int64"),
                        ("value_ints", "int64")):
        value = ctx.attr(name)
        if value is not None:
            return np.asarray(value, dtype=dtype)
    raise ctx.error("expected a value, value_float(s) or value_int(s) attribute, found "
                    f"{sorted(a.name for a in ctx.node.attribute)}")


# -- Cast, CastLike ------------------------------------------------------------------------------
def _cast_to(ctx: NodeContext, dtype: str) -> Value:
    """Input 0 converted to ``dtype`` (NumPy's conversion, which is ONNX's for these types:
    floats to integers truncate toward zero, out-of-range floats overflow to infinities,
    integers wrap around, zero is false and everything else true)."""
    if ctx.dtype(0) == dtype:
        return ctx.input(0)
    return relay.cast(ctx.input(0), dtype=dtype)


def _cast(ctx: NodeContext) -> Value:
    """Cast: ``cast`` to the dtype ``to``; bool, the integer types, float16, bfloat16,
    float32 and float64. Strings, 8-bit and 4-bit floats and 2- and 4-bit integers are not
    supported."""
    to = int(ctx.required_attr("to"))
    return _cast_to(ctx, passhost_dtype(to, f"{ctx.where}: attribute 'to'"))


def _cast_like(ctx: NodeContext) -> Value:
    """CastLike: ``cast`` to the dtype of input 1 (as Cast)."""
    dtype = ctx.dtype(1)
    if dtype not in DTYPES:
        raise ctx.error(f"input 1 is of dtype {dtype}, which passhost has no tensors of")
    return _cast_to(ctx, dtype)


def _bit_cast(ctx: NodeContext) -> Value:
    """BitCast: ``bitcast`` to the dtype ``to`` of the same width (the bytes read little
    endian, as ONNX says)."""
    to = int(ctx.required_attr("to"))
    dtype = passhost_dtype(to, f"{ctx.where}: attribute 'to'")
    return relay.bitcast(ctx.input(0), dtype=dtype)


# -- Identity, Dropout ---------------------------------------------------------------------------
def _identity(ctx: NodeContext) -> Value:
    """Identity: the input itself (tensors; sequences and optionals are not supported)."""
    return ctx.input(0)


def _mask_wanted(ctx: NodeContext) -> bool:
    return len(ctx.node.output) > 1 and bool(ctx.node.output[1])


def _training_error(ctx: NodeContext, how: str) -> Exception:
    return ctx.error(f"{how}: in training mode Dropout zeroes random elements; passhost "
                     f"imports inference graphs (training mode off, or a ratio of 0)")


def _old_dropout(ctx: NodeContext) -> Value:
    """The input; the mask output, which ONNX leaves undefined in inference before version
    12 (runtimes differ), is an error when something reads it."""
    if _mask_wanted(ctx):
        raise ctx.error(f"the mask output ({ctx.node.output[1]!r}) is not defined in inference "
                        f"before Dropout version 12 (ONNX does not say what it holds)")
    return ctx.input(0)


def _dropout_v1(ctx: NodeContext) -> Value:
    """Dropout (versions 1 to 6): the identity when ``is_test`` is 1 or ``ratio`` is 0;
    training mode (``is_test`` 0, the default, with a ratio above 0) and the mask output
    are errors."""
    if not ctx.attr("is_test", 0) and float(ctx.attr("ratio", 0.5)) != 0.0:
        raise _training_error(ctx, "is_test=0")
    return _old_dropout(ctx)


def _dropout_v7(ctx: NodeContext) -> Value:
    """Dropout (versions 7 to 11, inference only): the identity; the mask output is an
    error (ONNX does not define it in inference before version 12)."""
    return _old_dropout(ctx)


def _dropout_v12(ctx: NodeContext) -> Value | Sequence[Value]:
    """Dropout (version 12 on): the identity with an all-true bool mask when
    ``training_mode`` is false or absent; ``training_mode`` must be known while importing,
    and true is an error unless ``ratio`` is known to be 0."""
    why = "it tells inference (the identity) from training (random zeroes)"
    if ctx.has_input(2) and bool(ctx.known(2, "training_mode", why).reshape(-1)[0]):
        ratio = float(ctx.known(1).reshape(-1)[0]) if ctx.has_input(1) else 0.5
        if ratio != 0.0:
            raise _training_error(ctx, f"training_mode is true with ratio {ratio}")
    if _mask_wanted(ctx):
        return [ctx.input(0), np.ones(ctx.shape(0), dtype=bool)]
    return ctx.input(0)


# -- data-dependent output shapes ----------------------------------------------------------------
def _nonzero(ctx: NodeContext) -> Value:
    """NonZero: folded when its input is known while importing; otherwise an error (the
    output's shape depends on the data)."""
    if not ctx.is_known(0):
        raise _data_dependent(ctx, 0)
    return np.array(np.nonzero(ctx.known(0)), dtype=np.int64).reshape(
        ctx.known(0).ndim, -1)


def _unique(ctx: NodeContext) -> Sequence[Value]:
    """Unique: folded when its input is known while importing (sorted or in order of first
    occurrence, flattened or along ``axis``); otherwise an error (the output's shape depends
    on the data)."""
    if not ctx.is_known(0):
        raise _data_dependent(ctx, 0)
    x = ctx.known(0)
    axis = ctx.attr("axis")
    if axis is not None and not -x.ndim <= int(axis) < x.ndim:
        raise ctx.error(f"expected an axis in [{-x.ndim}, {x.ndim}), found {axis}")
    ax = None if axis is None else int(axis) % x.ndim
    values, first, inverse, counts = np.unique(
        x.reshape(-1) if ax is None else x, return_index=True, return_inverse=True,
        return_counts=True, axis=ax)
    inverse = inverse.reshape(-1)
    if not ctx.attr("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values = np.take(values, order, axis=0 if ax is None else ax)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return [values, *(a.astype(np.int64) for a in (first, inverse, counts))]


def _compress(ctx: NodeContext) -> Value:
    """Compress: ``take`` of the positions where ``condition`` is true, when ``condition``
    is known while importing; a computed condition is an error (the output's shape depends
    on the data)."""
    if not ctx.is_known(1):
        raise _data_dependent(ctx, 1)
    condition = ctx.known(1).reshape(-1).astype(bool)
    shape = ctx.shape(0)
    axis = ctx.attr("axis")
    size = int(np.prod(shape)) if axis is None else None
    if axis is not None:
        if not -len(shape) <= int(axis) < len(shape):
            raise ctx.error(f"expected an axis in [{-len(shape)}, {len(shape)}), found {axis}")
        size = shape[int(axis) % len(shape)]
    if condition.size > size:
        raise ctx.error(f"expected a condition of at most {size} values, found "
                        f"{condition.size}")
    indices = np.flatnonzero(condition).astype(np.int64)
    data = ctx.input(0)
    if axis is None:
        data = relay.reshape(data, newshape=(size,))
        return relay.take(data, const(indices), axis=0)
    return relay.take(data, const(indices), axis=int(axis) % len(shape))


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "Constant": _constant,
    "Cast": _cast,
    "CastLike": _cast_like,
    "BitCast": _bit_cast,
    "Identity": _identity,
    "Dropout": {1: _dropout_v1, 7: _dropout_v7, 12: _dropout_v12},
    "NonZero": _nonzero,
    "Unique": _unique,
    "Compress": _compress,
}
