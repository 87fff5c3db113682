"""Operator declarations; importing this package registers every operator."""

from passhost.relay.op import annotation, nn, qnn, reduce, tensor, transform
from passhost.relay.op.registry import LayoutInfo, Op, OpPattern, define_op, get_op, list_ops

__all__ = [
    "LayoutInfo", "Op", "OpPattern", "define_op", "get_op", "list_ops",
    "annotation", "nn", "qnn", "reduce", "tensor", "transform",
]
