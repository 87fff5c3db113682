"""Structural equality and hashing of IR (both kinds), iterative and DAG-aware.

Two values are structurally equal when they have the same shape of nodes and the same
values, with bound variables compared up to renaming: variables are matched where they are
bound (function parameters, loop variables, ...), and each later use must agree with that
match. Free variables are equal only to themselves unless ``map_free_vars`` is set.
Each node class says which of its fields count, and how, in its ``_sfields``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from passhost.ir.module import IRModule
from passhost.ir.node import BIND, FrozenDict, Node

__all__ = ["structural_equal", "structural_hash"]


def _as_items(value: Any) -> list[Any] | None:
    """Children of a container value, or None when it is not a container."""
    if isinstance(value, (tuple, list)):
        return list(value)
    if isinstance(value, FrozenDict):
        return [x for kv in value.items() for x in kv]
    return None


def _module_parts(mod: IRModule) -> tuple[Any, ...]:
    names = sorted(mod)
    return (tuple(names), tuple(mod[n] for n in names), mod.attrs)


def _arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


#: What every float NaN inside a value becomes in :func:`_nan_free`.
_NAN = ("float", "nan")


def _nan_free(value: Any) -> Any:
    """``value`` (a scalar, a tuple or list of values, or an attrs instance such as an
    operator's attributes) with every float NaN replaced by :data:`_NAN`, so that NaN
    attributes compare and hash equal (as arrays do, by their bytes); others unchanged."""
    if isinstance(value, float):
        return _NAN if value != value else value
    if isinstance(value, (tuple, list)):
        return type(value)(_nan_free(v) for v in value)
    fields = getattr(type(value), "__attrs_attrs__", None)
    if fields is not None:
        return (type(value), tuple(_nan_free(getattr(value, f.name)) for f in fields))
    return value


def _values_equal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return _arrays_equal(a, b)
    return bool(_nan_free(a) == _nan_free(b))


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """True when ``lhs`` and ``rhs`` (nodes, modules, or containers of them) are equal up to
    renaming of bound variables."""
    var_map: dict[int, Any] = {}
    rev_map: dict[int, Any] = {}
    done: set[tuple[int, int]] = set()
    keep_alive: list[Any] = []
    stack: list[tuple[Any, Any, bool]] = [(lhs, rhs, False)]

    def bind(a: Any, b: Any) -> bool:
        ma, mb = var_map.get(id(a)), rev_map.get(id(b))
        if ma is None and mb is None:
            var_map[id(a)] = b
            rev_map[id(b)] = a
            return True
        return ma is b and mb is a

    while stack:
        a, b, binding = stack.pop()
        if isinstance(a, IRModule) or isinstance(b, IRModule):
            if not (isinstance(a, IRModule) and isinstance(b, IRModule)):
                return False
            pa, pb = _module_parts(a), _module_parts(b)
            keep_alive.append((pa, pb))
            stack.append((pa, pb, False))
            continue
        if isinstance(a, Node) or isinstance(b, Node):
            if type(a) is not type(b):
                return False
            if a is b and not binding:
                continue
            key = (id(a), id(b))
            if key in done and not binding:
                continue
            cls = type(a)
            if cls._is_var:
                mapped = var_map.get(id(a))
                if mapped is None and rev_map.get(id(b)) is None:
                    if not (binding or map_free_vars) and a is not b:
                        return False
                    bind(a, b)
                elif not bind(a, b):
                    return False
            done.add(key)
            pending: list[tuple[Any, Any, bool]] = []
            for name, kind in cls._sfields:
                va, vb = getattr(a, name), getattr(b, name)
                if kind == BIND:
                    items_a, items_b = _as_items(va), _as_items(vb)
                    if items_a is None:
                        items_a, items_b = [va], [vb]
                    if items_b is None or len(items_a) != len(items_b):
                        return False
                    for x, y in zip(items_a, items_b):
                        if x is None or y is None:
                            if x is not y:
                                return False
                            continue
                        pending.append((x, y, True))
                elif isinstance(va, (Node, tuple, list, FrozenDict, IRModule)):
                    pending.append((va, vb, False))
                elif not _values_equal(va, vb):
                    return False
            # Fields are compared in declaration order, so bindings come before uses.
            stack.extend(reversed(pending))
            continue
        items_a = _as_items(a)
        if items_a is not None:
            items_b = _as_items(b)
            if items_b is None or type(a) is not type(b) or len(items_a) != len(items_b):
                return False
            stack.extend((x, y, False) for x, y in zip(reversed(items_a), reversed(items_b)))
            continue
        if not _values_equal(a, b):
            return False
    return True


def _value_hash(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return hash((value.dtype.name, value.shape, value.tobytes()))
    if isinstance(value, Mapping):
        return hash(tuple(value.items()))
    return hash((type(value).__name__, _nan_free(value)))  # NaN hashes by id otherwise


def structural_hash(value: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with :func:`structural_equal` (equal values hash equally)."""
    var_index: dict[int, int] = {}
    memo: dict[int, int] = {}
    keep_alive: list[Any] = []
    # Each frame: (value, binding, state); state None = not expanded, else child count.
    stack: list[tuple[Any, bool, int | None]] = [(value, False, None)]
    results: list[int] = []
    while stack:
        v, binding, count = stack.pop()
        if isinstance(v, IRModule):
            v = _module_parts(v)
            keep_alive.append(v)
        if count is not None:
            parts = results[len(results) - count:] if count else []
            del results[len(results) - count:]
            if isinstance(v, Node):
                h = hash((type(v).__name__, *parts))
                memo[id(v)] = h
            else:
                h = hash(("seq", *parts))
            results.append(h)
            continue
        if isinstance(v, Node):
            cls = type(v)
            if cls._is_var:
                if binding and id(v) not in var_index:
                    var_index[id(v)] = len(var_index)
                idx = var_index.get(id(v))
                if idx is None and map_free_vars:
                    var_index[id(v)] = idx = len(var_index)
                tag = ("var", idx) if idx is not None else ("free", id(v))
                fields = [getattr(v, n) for n, _ in cls._sfields]
                results.append(hash((tag, *(_value_hash(f) for f in fields))))
                continue
            if id(v) in memo:
                results.append(memo[id(v)])
                continue
            children = []
            for name, kind in cls._sfields:
                fv = getattr(v, name)
                children.append((fv, kind == BIND))
            stack.append((v, binding, len(children)))
            # BIND fields are declared before the fields that use them, so push in reverse
            # and they are processed first.
            for fv, is_bind in reversed(children):
                stack.append((fv, is_bind, None))
            continue
        items = _as_items(v)
        if items is not None:
            stack.append((v, binding, len(items)))
            for x in reversed(items):
                stack.append((x, binding, None))
            continue
        results.append(_value_hash(v))
    return results[0]
