"""IR foundations shared by both IR kinds: types, attributes, modules, structural equality."""

from passhost.ir.attrs import Attrs
from passhost.ir.expr import BaseExpr, BaseFunc, GlobalVar
from passhost.ir.module import IRModule
from passhost.ir.node import FrozenDict, Node, Span
from passhost.ir.structural import structural_equal, structural_hash
from passhost.ir.types import DTYPES, FuncType, TensorType, TupleType, Type

__all__ = [
    "DTYPES", "Attrs", "BaseExpr", "BaseFunc", "FrozenDict", "FuncType", "GlobalVar",
    "IRModule", "Node", "Span", "TensorType", "TupleType", "Type", "structural_equal",
    "structural_hash",
]
