"""ConvertLayout: move layout-sensitive operators to the layouts a backend prefers.

``ConvertLayout({"nn.conv2d": ["NHWC", "HWIO"]})`` rewrites every ``nn.conv2d`` to take NHWC
data and an HWIO kernel, and lets the new layout flow through the operators that do not care
(elementwise and broadcast operators, pools, operators with an axis attribute), so that
``layout_transform`` calls are needed only where the graph enters and leaves the converted
region. Kernel transforms of constant weights are left for FoldConstant.

A desired layout may split an axis (``{"nn.conv2d": ["NCHW16c", "OIHW"]}``, TVM's channel
blocks). A convolution whose input channels do not divide into the blocks (a network's stem of
3 channels) keeps its data whole (``NCHW``) and writes the blocked layout with ``out_layout``;
output channels that do not divide are written whole, and a call where neither divides stays
as it is. Operators with an axis attribute cannot follow a split layout and get their data
back in its original layout; a broadcast operand that cannot be split as the other operand
(a channel extent of 1) takes the operator back to the original layouts.

The walk is one post-order pass over each graph function. For every original value it keeps
the rewritten expression and a :class:`Layouts` pair: the value's *current* layout in the new
graph and its *original* layout (what the axes meant in the input graph); None means unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from typing import Annotated, Any, NamedTuple

from passhost.errors import AttrError, OptionError, UnknownNameError
from passhost.ir.attrs import Attrs
from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.ir.types import TensorType, TupleType
from passhost.plugins.options import STR_LIST_MAP
from passhost.relay.expr import Call, Function, Tuple, TupleGetItem
from passhost.relay.op.layout import (
    can_transform,
    layout_transform,
    primal_extents,
    transform_attrs,
)
from passhost.relay.op.registry import Op, OpPattern, get_op, list_ops
from passhost.relay.op.transform import ExpandDimsAttrs, expand_dims
from passhost.relay.transform.common import map_graph_functions
from passhost.relay.transform.layouts import (
    default_kernel_layout,
    is_permutation,
    primal_layout,
    remap_axis,
    same_axes,
)
from passhost.relay.type_infer import infer_type
from passhost.relay.visitor import post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["ConvertLayout", "Layouts"]

_PASS = "ConvertLayout"
#: Operators whose output has a fixed layout whatever their inputs' layouts.
_FIXED_OUTPUT = {"nn.dense": "NC", "qnn.dense": "NC"}
#: The value of a kernel layout that asks for the one matching the data layout.
_DEFAULT = "default"


class Layouts(NamedTuple):
    """The layouts of one tensor value: now (in the new graph) and in the original graph."""

    current: str | None
    original: str | None


_UNKNOWN = Layouts(None, None)
#: Layouts of a tensor, or of each field of a tuple value.
State = Layouts | tuple["State", ...]
_Result = tuple[BaseExpr, State]


# -- options --------------------------------------------------------------------------------
def _convertible(op: Op) -> bool:
    """Operators with data layout attributes followed by ``out_layout`` (convolutions, pools)."""
    names = op.layout.layout_attrs if op.layout is not None else ()
    return len(names) >= 2 and names[-1] == "out_layout"


def _convertible_op(name: object) -> Op:
    if not isinstance(name, str):
        raise OptionError(f"{_PASS}: desired_layouts keys are operator names, found {name!r}")
    try:
        op = get_op(name)
    except UnknownNameError:
        raise UnknownNameError("operator", name, [o.name for o in list_ops()],
                               where=f" in {_PASS} desired_layouts") from None
    if not _convertible(op):
        known = ", ".join(o.name for o in list_ops() if _convertible(o))
        raise OptionError(f"{_PASS}: operator {name} has no layout attributes to convert "
                          f"(convertible operators: {known})")
    return op


def _check_layout(op: Op, defaults: Attrs, attr: str, layout: object) -> None:
    base = getattr(defaults, attr)
    if not same_axes(layout, base):
        raise OptionError(f"{_PASS}: {op.name} {attr} {layout!r} is not a permutation of "
                          f"{base!r}, its axes possibly split (such as 'NCHW16c')")
    try:
        defaults.with_changes(**{attr: layout})
    except AttrError as err:
        raise OptionError(f"{_PASS}: {op.name} does not support {attr} {layout!r} "
                          f"({err})") from None


def _check_layouts(op: Op, layouts: object) -> tuple[str, ...]:
    names = op.layout.layout_attrs[:-1]
    if not isinstance(layouts, (str, Sequence)):
        raise OptionError(f"{_PASS}: the layouts of {op.name} are a list of strings, found "
                          f"{type(layouts).__name__} {layouts!r}")
    found = (layouts,) if isinstance(layouts, str) else tuple(layouts)
    if len(found) != len(names):
        raise OptionError(f"{_PASS}: {op.name} takes {len(names)} desired layout(s) "
                          f"({', '.join(names)}), found {list(found)}")
    defaults = op.attrs_cls()
    for i, (attr, layout) in enumerate(zip(names, found)):
        if not (i > 0 and layout == _DEFAULT):
            _check_layout(op, defaults, attr, layout)
    return found


def _check_desired(desired: object) -> dict[str, tuple[str, ...]]:
    """``desired`` validated: known convertible operators to layouts of their layouts' axes,
    permuted or split."""
    if not isinstance(desired, Mapping):
        raise OptionError(f"{_PASS}: desired_layouts maps operator names to layouts, found "
                          f"{type(desired).__name__} {desired!r}")
    return {name: _check_layouts(_convertible_op(name), layouts)
            for name, layouts in desired.items()}


# -- operator classification ----------------------------------------------------------------
@cache
def _kind(op: Op) -> str:
    """Which rule rewrites calls of ``op`` when it is not in the desired layouts."""
    info = op.layout
    if op.name in _FIXED_OUTPUT:
        return "fixed"
    if info is not None and info.layout_attrs:
        return "pool" if _convertible(op) and len(info.layout_attrs) == 2 else "pinned"
    if info is not None and info.axis_attrs:
        return "axis"
    if op.pattern == OpPattern.ELEMWISE and len(op.inputs) == 1:
        return "unary"
    if op.pattern == OpPattern.BROADCAST and len(op.inputs) == 2:
        return "binary"
    return "unaware"


def _shape(expr: BaseExpr) -> tuple[int, ...]:
    """The shape of the tensor ``expr`` of the input graph."""
    ty = expr.checked_type
    assert isinstance(ty, TensorType)
    return tuple(ty.shape)


def _rank(expr: BaseExpr) -> int | None:
    ty = expr.checked_type
    return ty.ndim if isinstance(ty, TensorType) else None


def _changed(attrs: Attrs, changes: Mapping[str, Any]) -> Attrs:
    """``attrs`` with ``changes`` (``attrs`` itself when they change nothing)."""
    if all(getattr(attrs, k) == v for k, v in changes.items()):
        return attrs
    return _with_changes(attrs, tuple(changes.items()))


@lru_cache(maxsize=4096)
def _with_changes(attrs: Attrs, changes: tuple[tuple[str, Any], ...]) -> Attrs:
    # Attrs compare by value, so calls with equal attributes share one validated copy.
    return attrs.with_changes(**dict(changes))


@cache
def _expand_attrs(count: int) -> ExpandDimsAttrs:
    return ExpandDimsAttrs(axis=0, num_newaxis=count)


def _rebuild(call: Call, args: Sequence[BaseExpr], attrs: Attrs | None = None,
             op: BaseExpr | None = None) -> Call:
    """``call`` with other arguments/attrs/callee; ``call`` itself when nothing differs."""
    op = call.op if op is None else op
    attrs = call.attrs if attrs is None else attrs
    if op is call.op and attrs is call.attrs and all(a is b for a, b in zip(args, call.args)):
        return call
    return Call(op, args, attrs, span=call.span)


def _needs_restore(state: State) -> bool:
    if type(state) is Layouts:
        return state.current is not None and state.current != state.original
    return any(_needs_restore(s) for s in state)


def _depthwise(call: Call, attrs: Attrs, data_attr: str) -> bool:
    """True for a convolution with one group per input channel (groups > 1)."""
    groups = getattr(attrs, "groups", 1)
    return groups > 1 and groups == primal_extents(_shape(call.args[0]),
                                                   getattr(attrs, data_attr))["C"]


def _fits(expr: BaseExpr, layout: str, dst: str) -> bool:
    """True when the tensor ``expr`` of the input graph, in ``layout``, can move to ``dst``."""
    return can_transform(_shape(expr), layout, dst)


def _broadcasts(shape: tuple[int, ...], rank: int, original: str, layout: str) -> bool:
    """True when an operand of ``shape``, given leading axes up to ``rank``, can move from
    ``original`` to ``layout`` (not a channel extent of 1 that ``layout`` splits, say); a
    scalar always can."""
    return not shape or can_transform((1,) * (rank - len(shape)) + shape, original, layout)


# -- the rewrite ----------------------------------------------------------------------------
class _Converter:
    """Rewrites one graph function; lives for one function (its memo tables are per walk)."""

    def __init__(self, desired: Mapping[str, tuple[str, ...]]) -> None:
        self.desired = desired
        self.new: dict[int, BaseExpr] = {}
        self.state: dict[int, State] = {}
        # (id of a new value, what, detail) -> the inserted call; each holds its key's value.
        self.inserted: dict[tuple[int, str, str], Call] = {}

    def run(self, func: Function) -> Function:
        """``func`` converted (``func`` itself when it uses none of the desired operators)."""
        infer_type(func)
        nodes = post_order(func.body, stop=lambda n: isinstance(n, Function))
        if not any(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in self.desired
                   for n in nodes):
            return func
        for node in nodes:
            self.new[id(node)], self.state[id(node)] = self._visit(node)
        body = self._restore(self.new[id(func.body)], self.state[id(func.body)])
        if body is func.body:
            return func
        return Function(func.params, body, func.ret_type, func.attrs, span=func.span)

    # -- inserted operators -----------------------------------------------------------------
    def _transform(self, expr: BaseExpr, src: str, dst: str) -> BaseExpr:
        """``expr`` moved from layout ``src`` to ``dst`` (one call per value and layouts)."""
        if src == dst:
            return expr
        key = (id(expr), src, dst)
        out = self.inserted.get(key)
        if out is None:
            out = self.inserted[key] = Call(layout_transform, (expr,), transform_attrs(src, dst))
        return out

    def _expand(self, expr: BaseExpr, count: int) -> BaseExpr:
        """``expr`` with ``count`` leading axes of length 1."""
        key = (id(expr), "expand_dims", str(count))
        out = self.inserted.get(key)
        if out is None:
            out = self.inserted[key] = Call(expand_dims, (expr,), _expand_attrs(count))
        return out

    def _restore(self, expr: BaseExpr, state: State) -> BaseExpr:
        """``expr`` back in its original layout (each field of a tuple)."""
        if type(state) is Layouts:
            if state.current is None:
                return expr
            return self._transform(expr, state.current, state.original)
        if not _needs_restore(state):
            return expr
        fields = (expr.fields if isinstance(expr, Tuple)
                  else [TupleGetItem(expr, i) for i in range(len(state))])
        return Tuple([self._restore(f, s) for f, s in zip(fields, state)], span=expr.span)

    def _to_layout(self, expr: BaseExpr, state: State, attr_layout: str, dst: str) -> BaseExpr:
        """An input an operator read as ``attr_layout`` in the original graph, now in ``dst``."""
        if type(state) is Layouts and state.current is not None:
            if state.original == attr_layout:
                return self._transform(expr, state.current, dst)
            expr = self._transform(expr, state.current, state.original)
        return self._transform(expr, attr_layout, dst)

    def _restored(self, args: Sequence[BaseExpr], states: Sequence[State]) -> list[BaseExpr]:
        return [self._restore(a, s) for a, s in zip(args, states)]

    # -- nodes ------------------------------------------------------------------------------
    def _visit(self, node: BaseExpr) -> _Result:
        if isinstance(node, Call):
            return self._call(node)
        if isinstance(node, Tuple):
            fields = [self.new[id(f)] for f in node.fields]
            state = tuple(self.state[id(f)] for f in node.fields)
            if all(a is b for a, b in zip(fields, node.fields)):
                return node, state
            return Tuple(fields, span=node.span), state
        if isinstance(node, TupleGetItem):
            value = self.new[id(node.tuple_value)]
            state = self.state[id(node.tuple_value)]
            field = state[node.index] if type(state) is tuple else _UNKNOWN
            if value is node.tuple_value:
                return node, field
            return TupleGetItem(value, node.index, span=node.span), field
        return node, _UNKNOWN

    def _call(self, call: Call) -> _Result:
        op = call.op
        args = [self.new[id(a)] for a in call.args]
        states = [self.state[id(a)] for a in call.args]
        if not isinstance(op, Op):
            new_op = self.new.get(id(op), op)
            return _rebuild(call, self._restored(args, states), op=new_op), _UNKNOWN
        layouts = self.desired.get(op.name)
        if layouts is not None:
            return self._convert(call, args, states, layouts)
        return _RULES[_kind(op)](self, call, args, states)

    # -- rules ------------------------------------------------------------------------------
    def _convert(self, call: Call, args: list[BaseExpr], states: list[State],
                 layouts: tuple[str, ...]) -> _Result:
        """Rule 1: an operator named in the desired layouts. Data or an output whose axes do
        not divide into a split desired layout's blocks stays whole (its primal layout)."""
        attrs = call.attrs
        names = call.op.layout.layout_attrs
        data_attr, out_attr, desired = names[0], names[-1], layouts[0]
        layout = getattr(attrs, data_attr)
        original = getattr(attrs, out_attr) or layout
        whole = primal_layout(desired)
        data_layout = desired if _fits(call.args[0], layout, desired) else whole
        out_layout = desired if _fits(call, original, desired) else whole
        if data_layout == out_layout == whole != desired:  # no block fits: leave it as it is
            return self._pinned(call, args, states)
        new_args = self._restored(args, states)
        new_args[0] = self._to_layout(args[0], states[0], layout, data_layout)
        changes = {data_attr: data_layout, out_attr: "" if out_layout == data_layout
                   else out_layout}
        for i in range(1, len(layouts)):
            dst = layouts[i]
            if dst == _DEFAULT:
                dst = default_kernel_layout(desired, _depthwise(call, attrs, data_attr))
            new_args[i] = self._transform(new_args[i], getattr(attrs, names[i]), dst)
            changes[names[i]] = dst
        new_call = _rebuild(call, new_args, _changed(attrs, changes))
        return new_call, Layouts(out_layout, original)

    def _pinned(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 2: inputs of an operator with layout attributes go back to those layouts."""
        attrs = call.attrs
        names = call.op.layout.layout_attrs
        new_args = self._restored(args, states)
        for i, name in enumerate(names[:-1][:len(args)]):
            layout = getattr(attrs, name)
            new_args[i] = self._to_layout(args[i], states[i], layout, layout)
        out = getattr(attrs, names[-1]) or getattr(attrs, names[0])
        return _rebuild(call, new_args), Layouts(out, out)

    def _pool(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 2: a pool follows its input's layout when that is one of its own axes,
        permuted or split, and the pool takes it."""
        attrs = call.attrs
        data_attr, out_attr = call.op.layout.layout_attrs
        layout, out = getattr(attrs, data_attr), getattr(attrs, out_attr)
        state = states[0]
        current = state.current if type(state) is Layouts else None
        if current is None or current == layout or state.original != layout \
                or not same_axes(current, layout):
            return self._pinned(call, args, states)
        new_out = "" if out in ("", layout) else out
        try:
            new_attrs = attrs.with_changes(**{data_attr: current, out_attr: new_out})
        except AttrError:  # the pool cannot take that layout: keep it where it is
            return self._pinned(call, args, states)
        return _rebuild(call, args, new_attrs), Layouts(new_out or current, out or layout)

    def _axis(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 3: the data keeps its layout and the axis attributes follow it (the data goes
        back to its original layout when that has split axes)."""
        new_args = [args[0], *self._restored(args[1:], states[1:])]
        state = states[0]
        if type(state) is not Layouts or state.current is None:
            return _rebuild(call, new_args), _UNKNOWN
        if not is_permutation(state.current, state.original):
            return self._unaware(call, args, states)
        attrs = call.attrs
        changes = {name: remap_axis(getattr(attrs, name), state.original, state.current)
                   for name in call.op.layout.axis_attrs}
        new_call = _rebuild(call, new_args, _changed(attrs, changes))
        ty = call.checked_type
        if isinstance(ty, TupleType):
            return new_call, (state, *(_UNKNOWN,) * (len(ty.fields) - 1))
        return new_call, state

    def _unary(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 4: an elementwise operator keeps its input's layout."""
        state = states[0]
        return _rebuild(call, args), state if type(state) is Layouts else _UNKNOWN

    def _binary(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 5: a broadcast operator works in the layout of its (higher-rank) known operand."""
        ranks = [_rank(a) for a in call.args]
        known = [type(s) is Layouts and s.current is not None for s in states]
        if None in ranks or not any(known):
            return self._unaware(call, args, states)
        k = (0 if ranks[0] >= ranks[1] else 1) if all(known) else known.index(True)
        o = 1 - k
        state, other = states[k], states[o]
        assert type(state) is Layouts and state.current is not None and state.original is not None
        layout, original = state.current, state.original
        shape, rank = _shape(call.args[o]), len(_shape(call.args[k]))
        if len(shape) > rank or not _broadcasts(shape, rank, original, layout):
            return self._unaware(call, args, states)
        new_args = list(args)
        if known[o] and len(shape) == rank and other.original == original:
            new_args[o] = self._transform(args[o], other.current, layout)
        else:
            new_args[o] = self._broadcast_operand(self._restore(args[o], other), len(shape),
                                                  rank, original, layout)
        return _rebuild(call, new_args), Layouts(layout, original)

    def _broadcast_operand(self, expr: BaseExpr, rank: int, full_rank: int, original: str,
                           layout: str) -> BaseExpr:
        """An operand of ``rank`` axes in its original layout, made to broadcast against a
        tensor of ``full_rank`` axes in the input graph, in ``original`` there and now in
        ``layout``: leading axes up to ``full_rank``, then a transform."""
        if rank == 0:
            return expr
        if rank < full_rank:
            expr = self._expand(expr, full_rank - rank)
        return self._transform(expr, original, layout)

    def _fixed(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 6: inputs in their original layouts; the output has the operator's layout."""
        out = _FIXED_OUTPUT[call.op.name]
        state = Layouts(out, out) if _rank(call) == len(out) else _UNKNOWN
        return _rebuild(call, self._restored(args, states)), state

    def _unaware(self, call: Call, args: list[BaseExpr], states: list[State]) -> _Result:
        """Rule 7: every input back in its original layout; the output layout is unknown."""
        return _rebuild(call, self._restored(args, states)), _UNKNOWN


_Rule = Callable[[_Converter, Call, list[BaseExpr], list[State]], _Result]
_RULES: dict[str, _Rule] = {
    "pinned": _Converter._pinned, "pool": _Converter._pool, "axis": _Converter._axis,
    "unary": _Converter._unary, "binary": _Converter._binary, "fixed": _Converter._fixed,
    "unaware": _Converter._unaware,
}


@module_pass(opt_level=3, name=_PASS, required=("InferType", "CanonicalizeOps"))
class ConvertLayout:
    """Convert the operators named in ``desired_layouts`` to those layouts, inserting
    ``layout_transform`` only where a value enters or leaves the converted region.

    ``desired_layouts`` maps an operator name to ``[data_layout, kernel_layout]`` (convolutions;
    the kernel layout may be ``"default"``) or ``[layout]`` (pools).
    """

    def __init__(self, desired_layouts: Annotated[
            Mapping[str, Sequence[str]] | None, STR_LIST_MAP,
            "op:data_layout[:kernel_layout];... e.g. nn.conv2d:NHWC:HWIO"] = None) -> None:
        self.desired_layouts = _check_desired({} if desired_layouts is None else desired_layouts)

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Convert each optimisable graph function; ``mod`` itself when nothing changes."""
        if not self.desired_layouts:
            return mod
        return map_graph_functions(mod, lambda f: _Converter(self.desired_layouts).run(f))
