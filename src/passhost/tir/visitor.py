"""Iterative, memoised traversal and rewriting of TIR: statements, expressions, buffers and
PrimFuncs.

Nothing here recurses over the depth of the IR: a 100 000-statement sequence or a
10 000-deep expression is fine. Each node is visited once however many times it is used
(memoised on identity). The children of a node are the ``NODE`` and ``BIND`` fields of its
``_sfields``, in declaration order (so a ``For``'s ``min`` and ``extent``, then its loop
variable, then its body; a ``Buffer``'s child is its ``data`` pointer).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from passhost.ir import traversal
from passhost.ir.node import BIND, NODE, FrozenDict, Node
from passhost.tir.expr import PrimExpr, Var

__all__ = [
    "StmtExprMutator", "StmtExprVisitor", "children", "post_order", "post_order_visit",
    "substitute",
]

_FIELDS_CACHE: dict[type, tuple[tuple[str, bool], ...]] = {}


def _child_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(field name, is a binding) for the fields of ``cls`` that hold child nodes."""
    fields = _FIELDS_CACHE.get(cls)
    if fields is None:
        fields = tuple((name, kind == BIND) for name, kind in getattr(cls, "_sfields", ())
                       if kind in (NODE, BIND))
        _FIELDS_CACHE[cls] = fields
    return fields


def _field_nodes(value: Any) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            if isinstance(v, Node):
                yield v
    elif isinstance(value, FrozenDict):
        for k, v in value.items():
            if isinstance(k, Node):
                yield k
            if isinstance(v, Node):
                yield v


def children(node: Node) -> list[Node]:
    """The nodes ``node`` refers to directly, in field order (duplicates kept)."""
    out: list[Node] = []
    for name, _ in _child_fields(type(node)):
        out.extend(_field_nodes(getattr(node, name)))
    return out


def post_order(roots: Node | Iterable[Node],
               stop: Callable[[Node], bool] | None = None) -> list[Node]:
    """Every node reachable from ``roots``, each once, children before parents.

    Nodes for which ``stop`` is true are listed but not entered.
    """
    if isinstance(roots, Node):
        roots = (roots,)
    return traversal.post_order(roots, children, stop)


def post_order_visit(node: Node, fvisit: Callable[[Node], None]) -> None:
    """Call ``fvisit`` on every node reachable from ``node``, children first, each once."""
    for n in post_order(node):
        fvisit(n)


_SNAKE_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _snake(name: str) -> str:
    return _SNAKE_RE.sub("_", name).lower()


def _method_name(obj: object, cls: type) -> str:
    """The most specific ``visit_<kind>`` method ``obj`` has for nodes of class ``cls``:
    ``visit_add``, else ``visit_binary_op``, ``visit_prim_expr``, ..., ``visit_node``."""
    table = _METHOD_CACHE.setdefault(type(obj), {})
    name = table.get(cls)
    if name is None:
        name = "visit_node"
        for klass in cls.__mro__:
            candidate = "visit_" + _snake(klass.__name__)
            if hasattr(obj, candidate):
                name = candidate
                break
        table[cls] = name
    return name


_METHOD_CACHE: dict[type, dict[type, str]] = {}


class StmtExprVisitor:
    """Visit every node once, children first.

    Override ``visit_<kind>`` methods named after the node classes in snake case
    (``visit_for``, ``visit_buffer_store``, ``visit_add``, ``visit_var``, ``visit_buffer``,
    ``visit_prim_func``...). A node without its own method falls back to its base classes'
    (``visit_binary_op``, ``visit_cmp_op``, ``visit_prim_expr``, ``visit_stmt``), then to
    :meth:`visit_node`.
    """

    def visit(self, node: Node | Iterable[Node]) -> None:
        """Visit ``node`` (or several) and everything reachable from it."""
        for n in post_order(node):
            getattr(self, _method_name(self, type(n)))(n)

    def visit_node(self, node: Node) -> None:
        """Called for every node that has no more specific method (default: nothing)."""


def _rebuild(node: Node, memo: Mapping[int, Node]) -> Node:
    """``node`` with its children replaced by their rewritten versions (the same object when
    none changed). A bound variable rewritten into a non-variable is kept."""
    changes: dict[str, Any] = {}
    for name, binding in _child_fields(type(node)):
        value = getattr(node, name)
        new = _map_field(value, memo, binding)
        if new is not value:
            changes[name] = new
    if not changes:
        return node
    return attrs.evolve(node, **changes)


def _map_one(value: Any, memo: Mapping[int, Node], binding: bool) -> Any:
    if not isinstance(value, Node):
        return value
    new = memo.get(id(value), value)
    if binding and isinstance(value, Var) and not isinstance(new, Var):
        return value
    return new


def _map_field(value: Any, memo: Mapping[int, Node], binding: bool) -> Any:
    if isinstance(value, Node):
        return _map_one(value, memo, binding)
    if isinstance(value, (tuple, list)):
        items = [_map_one(v, memo, binding) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    if isinstance(value, FrozenDict):
        pairs = [(_map_one(k, memo, True), _map_one(v, memo, binding))
                 for k, v in value.items()]
        if all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items())):
            return value
        return FrozenDict(pairs)
    return value


class StmtExprMutator:
    """Rebuild TIR bottom-up.

    Each ``visit_<kind>`` method (named as for :class:`StmtExprVisitor`) receives the node
    with its children already rewritten -- the very same object when no child changed --
    and returns its replacement (default: that node). So an unchanged tree comes back as
    the same object, and shared nodes stay shared. ``self.memo`` maps ``id(original)`` to
    the replacement and persists across :meth:`visit` calls.

    Variables where they are bound (loop variables, let variables, allocations, buffer
    data, parameters) are visited like any other node; a binding rewritten into something
    that is not a ``Var`` keeps the original variable, so substituting an expression for
    a variable changes its uses only.
    """

    def __init__(self) -> None:
        self.memo: dict[int, Node] = {}
        self._keep: list[Node] = []

    def visit(self, node: Node) -> Any:
        """The rewritten ``node``."""
        memo = self.memo
        for n in post_order(node, stop=lambda m: id(m) in memo):
            if id(n) in memo:
                continue
            rebuilt = _rebuild(n, memo)
            memo[id(n)] = getattr(self, _method_name(self, type(n)))(rebuilt)
            self._keep.append(n)  # ids in memo must stay unique while the memo lives
        return memo[id(node)]

    def visit_node(self, node: Node) -> Node:
        """Replacement of a node without a more specific method (default: itself)."""
        return node


class _Substituter(StmtExprMutator):
    def __init__(self, vmap: Mapping[Var, Any]) -> None:
        super().__init__()
        self.vmap = vmap

    def visit_var(self, var: Var) -> Node:
        """The expression ``var`` maps to, or ``var`` itself."""
        value = self.vmap.get(var)
        if value is None:
            return var
        return value if isinstance(value, PrimExpr) else var


def substitute(node: Node, vmap: Mapping[Var, PrimExpr]) -> Any:
    """``node`` with each use of a variable in ``vmap`` replaced by its expression."""
    return _Substituter(vmap).visit(node)
