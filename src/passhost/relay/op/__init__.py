"""Operator declarations (``define_op``), one module per family; the built-in plugin registers
them with the plugin host from its manifest."""

from passhost.relay.op import (
    activation,
    annotation,
    image,
    layout,
    logic,
    movement,
    nn,
    norm,
    pool,
    qnn,
    reduce,
    search,
    signal,
    tensor,
    transform,
    unary,
    vision,
    windows,
)
from passhost.relay.op.layout import channel_block
from passhost.relay.op.nn import Conv2DAttrs, DenseAttrs
from passhost.relay.op.pool import AvgPool2DAttrs, MaxPool2DAttrs
from passhost.relay.op.registry import LayoutInfo, Op, OpPattern, define_op, get_op, list_ops

__all__ = [
    "AvgPool2DAttrs", "Conv2DAttrs", "DenseAttrs", "MaxPool2DAttrs", "channel_block",
    "LayoutInfo", "Op", "OpPattern", "define_op", "get_op", "list_ops",
    "activation", "annotation", "image", "layout", "logic", "movement", "nn", "norm", "pool",
    "qnn",
    "reduce", "search", "signal", "tensor", "transform", "unary", "vision", "windows",
]
