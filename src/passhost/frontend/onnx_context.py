"""The view of one ONNX node that an operator converter works with.

A value in the graph is either a graph expression or, when it is known while importing
(constants, initializers, shapes and anything folded from them), a NumPy array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import AttributeProto, NodeProto, TensorProto, helper

from passhost.frontend.errors import OnnxImportError, OnnxUnknownOperandError
from passhost.frontend.onnx_data import tensor_array
from passhost.ir.types import TensorType
from passhost.relay.expr import Expr

#: What a converter returns for each output: an expression or a value known now.
Value = Expr | np.ndarray


def describe_node(node: NodeProto) -> str:
    """The node for messages: op type and name (its outputs when it has no name)."""
    if node.name:
        return f"{node.op_type} node {node.name!r}"
    return f"{node.op_type} node (unnamed, outputs {list(node.output)})"


class NodeContext:
    """One node's inputs (as expressions or known arrays), attributes and error helper."""

    def __init__(self, node: NodeProto, opset: int,
                 expr_of: Callable[[str], Expr],
                 known_of: Callable[[str], np.ndarray | None],
                 decode_tensor: Callable[[TensorProto, str], np.ndarray] = tensor_array,
                 ) -> None:
        self.node = node
        self.opset = opset
        self._expr_of = expr_of
        self._known_of = known_of
        self._decode_tensor = decode_tensor
        self._attrs: dict[str, Any] = {}
        for a in node.attribute:
            if a.ref_attr_name or a.type == AttributeProto.UNDEFINED:
                raise self.error(f"attribute {a.name!r}: expected a value of a known type, "
                                 f"found type {a.type} (ref_attr_name {a.ref_attr_name!r})")
            self._attrs[a.name] = helper.get_attribute_value(a)

    def mapped(self, expr: Callable[[Expr], Expr],
               array: Callable[[np.ndarray], np.ndarray]) -> NodeContext:
        """This node with every input expression passed through ``expr`` and every input
        known while importing through ``array`` (each input mapped once)."""
        exprs: dict[str, Expr] = {}

        def expr_of(name: str) -> Expr:
            if name not in exprs:
                exprs[name] = expr(self._expr_of(name))
            return exprs[name]

        def known_of(name: str) -> np.ndarray | None:
            value = self._known_of(name)
            return None if value is None else array(value)

        return NodeContext(self.node, self.opset, expr_of, known_of, self._decode_tensor)

    @property
    def where(self) -> str:
        """The node's description for messages: op type and name."""
        return describe_node(self.node)

    @property
    def num_inputs(self) -> int:
        """How many inputs the node lists (including omitted optional ones)."""
        return len(self.node.input)

    def has_input(self, index: int) -> bool:
        """Whether optional input ``index`` is given (present and not the empty name)."""
        return index < len(self.node.input) and self.node.input[index] != ""

    def input(self, index: int) -> Expr:
        """Input ``index`` as a graph expression."""
        if not self.has_input(index):
            raise self.error(f"expected input {index}, found none")
        return self._expr_of(self.node.input[index])

    def known(self, index: int, what: str | None = None, why: str | None = None) -> np.ndarray:
        """Input ``index`` as an array known while importing (a constant, an initializer or a
        folded shape computation); otherwise the error says ``what`` the input is and ``why``
        it must be known."""
        if not self.has_input(index):
            raise self.error(f"expected {what or 'input'} (input {index}), found none")
        value = self._known_of(self.node.input[index])
        if value is None:
            raise self.unknown_operand(index, what, why)
        return value

    def unknown_operand(self, index: int, what: str | None = None,
                        why: str | None = None) -> OnnxUnknownOperandError:
        """The error for input ``index`` (``what`` it is), which must be known while
        importing (``why``) but is computed from graph inputs."""
        name = self.node.input[index]
        subject = f"{what} (input {index}, {name!r})" if what else f"input {index} ({name!r})"
        reason = f": {why}" if why else ""
        return OnnxUnknownOperandError(
            f"{self.where}: {subject} must be known while importing{reason} (a constant, an "
            f"initializer or computed from them and from shapes), found a tensor computed "
            f"from graph inputs", name)

    def is_known(self, index: int) -> bool:
        """Whether input ``index`` is given and known while importing."""
        return self.has_input(index) and self._known_of(self.node.input[index]) is not None

    def known_ints(self, index: int, attr: str | None = None) -> list[int] | None:
        """Integers from input ``index`` or, when absent, attribute ``attr`` (None if neither
        is given): ONNX moved several attributes (axes, pads, split) to inputs."""
        if self.has_input(index):
            return [int(v) for v in self.known(index).reshape(-1)]
        if attr is not None and attr in self._attrs:
            value = self._attrs[attr]
            return [int(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
        return None

    def dtype(self, index: int) -> str:
        """The dtype of input ``index``; a known input stays known (it does not become a
        graph value)."""
        if self.is_known(index):
            return self.known(index).dtype.name
        return str(self.tensor_type(index).dtype)

    def tensor_type(self, index: int) -> TensorType:
        """The static type of input ``index``."""
        ty = self.input(index).checked_type
        if not isinstance(ty, TensorType):
            raise self.error(f"expected input {index} to be a tensor, found {ty}")
        return ty

    def shape(self, index: int) -> tuple[int, ...]:
        """The static shape of input ``index``."""
        known = self._known_of(self.node.input[index]) if self.has_input(index) else None
        if known is not None:
            return tuple(known.shape)
        return tuple(int(d) for d in self.tensor_type(index).shape)

    def attr(self, name: str, default: Any = None) -> Any:
        """Attribute ``name`` (strings decoded, tensors as arrays), or ``default``."""
        if name not in self._attrs:
            return default
        value = self._attrs[name]
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, TensorProto):
            return self._decode_tensor(value, f"{self.where}: attribute {name!r}")
        return value

    def required_attr(self, name: str) -> Any:
        """Attribute ``name``, which the operator requires."""
        value = self.attr(name)
        if value is None:
            raise self.error(f"expected attribute {name!r}, found none")
        return value

    def error(self, message: str) -> OnnxImportError:
        """An import error about this node."""
        return OnnxImportError(f"{self.where}: {message}")
