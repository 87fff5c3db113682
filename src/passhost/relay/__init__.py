"""The graph-level IR (Relay-like): expressions, operators, analyses, the interpreter.

Operator builders are available as in TVM: ``relay.add``, ``relay.nn.conv2d``,
``relay.qnn.conv2d``, ``relay.reshape``, ...
"""

from passhost.ir.expr import GlobalVar
from passhost.ir.module import IRModule
from passhost.ir.types import FuncType, TensorType, TupleType
from passhost.relay import analysis, transform
from passhost.relay.expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    Var,
    const,
    var,
)
from passhost.relay.interpreter import Interpreter, evaluate
from passhost.relay.op import get_op, nn, qnn
from passhost.relay.op import image as _image
from passhost.relay.op import layout as _layout
from passhost.relay.op import logic as _logic
from passhost.relay.op import movement as _movement
from passhost.relay.op import reduce as _reduce
from passhost.relay.op import search as _search
from passhost.relay.op import signal as _signal
from passhost.relay.op import tensor as _tensor
from passhost.relay.op import transform as _transform
from passhost.relay.op import unary as _unary
from passhost.relay.op import vision as _vision
from passhost.relay.op.image import *  # noqa: F403
from passhost.relay.op.layout import *  # noqa: F403
from passhost.relay.op.logic import *  # noqa: F403
from passhost.relay.op.movement import *  # noqa: F403
from passhost.relay.op.reduce import *  # noqa: F403
from passhost.relay.op.search import *  # noqa: F403
from passhost.relay.op.signal import *  # noqa: F403
from passhost.relay.op.tensor import *  # noqa: F403
from passhost.relay.op.transform import *  # noqa: F403
from passhost.relay.op.unary import *  # noqa: F403
from passhost.relay.op.vision import *  # noqa: F403
from passhost.relay.type_infer import infer_type
from passhost.relay.visitor import ExprMutator, ExprVisitor, post_order, post_order_visit

__all__ = [
    "Call", "Constant", "Expr", "ExprMutator", "ExprVisitor", "FuncType", "Function",
    "GlobalVar", "IRModule", "Interpreter", "TensorType", "Tuple", "TupleGetItem",
    "TupleType", "Var", "analysis", "const", "evaluate", "get_op", "infer_type", "nn",
    "post_order", "post_order_visit", "qnn", "transform", "var",
    *_image.__all__, *_layout.__all__, *_logic.__all__, *_movement.__all__, *_reduce.__all__,
    *_search.__all__, *_signal.__all__, *_tensor.__all__, *_transform.__all__, *_unary.__all__,
    *_vision.__all__,
]
