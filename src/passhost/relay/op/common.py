"""Type-relation helpers shared by operator declarations."""

from __future__ import annotations

from passhost.ir.types import TensorType, Type
from passhost.relay.op.registry import ArgTypes


def identity_rel(args: ArgTypes, _attrs: object) -> Type:
    """The result has the type of the first argument (which must be a tensor)."""
    return args.tensor(0)


def broadcast_shape(args: ArgTypes, i: int, j: int) -> tuple[int, ...]:
    """NumPy broadcasting of the shapes of arguments ``i`` and ``j``."""
    a, b = args.tensor(i).shape, args.tensor(j).shape
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        da = a[-k] if k <= len(a) else 1
        db = b[-k] if k <= len(b) else 1
        if da != db and 1 not in (da, db):
            args.fail(j, f"a shape broadcastable with {args.tensor(i)}", args.tensor(j))
        out.append(db if da == 1 else da)
    return tuple(reversed(out))


def broadcast_rel(args: ArgTypes, _attrs: object) -> Type:
    """Two tensors of one dtype, broadcast together."""
    dtype = args.same_dtype(0, 1)
    return TensorType(broadcast_shape(args, 0, 1), dtype)


def compare_rel(args: ArgTypes, _attrs: object) -> Type:
    """Two tensors of one dtype, broadcast together; the result is bool."""
    args.same_dtype(0, 1)
    return TensorType(broadcast_shape(args, 0, 1), "bool")


def normalize_axis(args: ArgTypes, attr: str, axis: int, ndim: int) -> int:
    """``axis`` (possibly negative) as an index in ``range(ndim)``, or an error naming
    attribute ``attr``."""
    if not -ndim <= axis < ndim:
        args.fail_attr(attr, f"an axis in [{-ndim}, {ndim})", axis)
    return axis % ndim
