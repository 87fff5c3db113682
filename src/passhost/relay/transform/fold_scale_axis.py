"""FoldScaleAxis: fold per-channel constant scales into convolution and dense weights.

Two internal rewrites run on each optimisable graph function, then FoldConstant (a nested
pass call) turns the new weight products into constants:

- **backward**: ``multiply(conv2d(x, W), s)``, where ``s`` varies only along the output
  channel axis, becomes ``conv2d(x, multiply(W, s'))`` with ``s'`` laid along the kernel's
  ``O`` axis. Between the convolution (or ``nn.dense``) and the multiply there may be
  ``add`` of a constant, ``nn.bias_add`` along the channel axis (the bias is scaled too) and
  ``nn.relu`` when every scale is positive; each of those values must have one user.
- **forward**: ``conv2d(multiply(x, s), W)`` (``groups == 1``, ``s`` varying only along the
  input channel axis) becomes ``conv2d(x, multiply(W, s'))`` with ``s'`` along the ``I``
  axis, when every user of the multiply is such a convolution, possibly through ``nn.relu``
  (positive scales) and ``add`` of a constant (non-zero scales; the constant is divided by
  the scale).

Convolutions whose data (forward) or output (backward) is channel-blocked (``NCHW16c``) are
left alone.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from passhost.ir.expr import BaseExpr
from passhost.ir.module import IRModule
from passhost.ir.types import FLOAT_DTYPES, TensorType
from passhost.relay.expr import Call, Constant, Function
from passhost.relay.op import nn
from passhost.relay.op import tensor as tn
from passhost.relay.op.layout import channel_block
from passhost.relay.transform.common import map_graph_functions
from passhost.relay.transform.fold_constant import FoldConstant, is_primitive_function
from passhost.relay.type_infer import infer_type
from passhost.relay.visitor import ExprMutator, post_order
from passhost.transform.context import PassContext
from passhost.transform.passes import module_pass

__all__ = ["FoldScaleAxis", "channel_vector", "fold_scale_axis_function"]

Users = dict[int, list[BaseExpr]]
PlanFinder = Callable[[list[BaseExpr], Users], dict[int, object]]


@module_pass(opt_level=3, name="FoldScaleAxis", required=("InferType",))
class FoldScaleAxis:
    """Fold constant per-channel scales into the weights of the convolutions (and dense
    layers) next to them, then fold the new weight arithmetic into constants."""

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        """Backward then forward folding in every optimisable graph function, then
        FoldConstant."""
        mod = map_graph_functions(mod, fold_scale_axis_function)
        return FoldConstant()(mod)


def fold_scale_axis_function(func: Function) -> Function:
    """``func`` with backward then forward scale folding applied (``func`` itself when no
    scale folds); the new weight products are left for FoldConstant."""
    func = _rewrite(func, _backward_plans, _BackwardFolder)
    return _rewrite(func, _forward_plans, _ForwardFolder)


# -- shared helpers ---------------------------------------------------------------------------
def channel_vector(value: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """``value`` as a ``(shape[axis],)`` vector when it broadcasts into ``shape`` varying only
    along ``axis``, else None."""
    if value.ndim > len(shape):
        return None
    padded = (1,) * (len(shape) - value.ndim) + value.shape
    if any(d != 1 for i, d in enumerate(padded) if i != axis):
        return None
    if padded[axis] not in (1, shape[axis]):
        return None
    return np.ascontiguousarray(np.broadcast_to(value.reshape(-1), (shape[axis],)))


def _along(vec: np.ndarray, axis: int, ndim: int) -> Constant:
    shape = [1] * ndim
    shape[axis] = vec.shape[0]
    return Constant(vec.reshape(shape))


def _op_call(node: BaseExpr, op: BaseExpr) -> bool:
    return isinstance(node, Call) and node.op is op


def _is_float_tensor(node: BaseExpr) -> bool:
    ty = node.checked_type
    return isinstance(ty, TensorType) and ty.dtype in FLOAT_DTYPES


def _users(order: list[BaseExpr]) -> Users:
    users: Users = {}
    for node in order:
        for child in node.children():
            users.setdefault(id(child), []).append(node)
    return users


def _scaled_multiply(node: BaseExpr) -> tuple[int, Constant] | None:
    """``(position of the scaled value, scale)`` when ``node`` multiplies a value by a
    constant without broadcasting it to a larger shape."""
    if not _op_call(node, tn.multiply):
        return None
    for pos in (0, 1):
        value, scale = node.args[pos], node.args[1 - pos]
        if (isinstance(scale, Constant) and not isinstance(value, Constant)
                and _is_float_tensor(value) and value.checked_type == node.checked_type):
            return pos, scale
    return None


def _rewrite(func: Function, find: PlanFinder, folder: type[_Folder]) -> Function:
    infer_type(func)  # at once: typing new nodes one by one during the search costs more
    order = post_order(func, stop=is_primitive_function)
    plans = find(order, _users(order))
    if not plans:
        return func
    return folder(plans).visit(func)  # type: ignore[return-value]


class _Folder(ExprMutator):
    """A mutator applying per-node plans found on the original graph."""

    def __init__(self, plans: dict[int, object]) -> None:
        super().__init__()
        self.plans = plans


# -- backward folding ---------------------------------------------------------------------------
@attrs.frozen
class _Anchor:
    """The weighted operator a scale folds into: its call, the channel axis of its output
    and where the channel (``O``) axis of its weight is."""

    call: Call
    out_axis: int
    weight_axis: int
    weight_ndim: int


@attrs.frozen
class _BackwardPlan:
    """Fold ``vector`` (the scale ``scale`` as a vector) into ``anchor``; ``steps`` are the
    calls from the multiply's operand down to the anchor (excluded)."""

    anchor: _Anchor
    steps: tuple[Call, ...]
    scale: Constant
    vector: np.ndarray


def _anchor(node: BaseExpr, dtype: str) -> _Anchor | None:
    """``node`` as a convolution or dense layer whose weight can absorb a scale."""
    if not isinstance(node, Call) or node.op not in (nn.conv2d, nn.dense):
        return None
    if any(arg.checked_type.dtype != dtype for arg in node.args):
        return None
    if node.op is nn.dense:
        return _Anchor(node, node.checked_type.ndim - 1, 0, 2)
    attrs_value = node.attrs
    out_layout = attrs_value.out_layout or attrs_value.data_layout
    if channel_block(out_layout):
        return None
    return _Anchor(node, out_layout.index("C"), attrs_value.kernel_layout.index("O"), 4)


def _backward_chain(value: BaseExpr, users: Users) -> tuple[list[Call], BaseExpr]:
    """The single-user relu/add/bias_add calls below ``value`` and the node under them."""
    steps: list[Call] = []
    node = value
    while (len(users.get(id(node), ())) == 1 and isinstance(node, Call)
           and node.op in (nn.relu, tn.add, nn.bias_add)):
        if node.op is tn.add:
            pos = _add_operand(node)
            if pos is None:
                break
            steps.append(node)
            node = node.args[pos]
        else:
            steps.append(node)
            node = node.args[0]
    return steps, node


def _add_operand(node: Call) -> int | None:
    """Which argument of an ``add`` is the value when the other is a constant that does not
    broadcast it to a larger shape."""
    for pos in (0, 1):
        value, other = node.args[pos], node.args[1 - pos]
        if isinstance(other, Constant) and not isinstance(value, Constant):
            return pos if value.checked_type == node.checked_type else None
    return None


def _backward_plan(mul: Call, users: Users) -> _BackwardPlan | None:
    """How to fold the scale of ``mul`` into the convolution or dense below it, if it can."""
    found = _scaled_multiply(mul)
    if found is None:
        return None
    pos, scale = found
    steps, bottom = _backward_chain(mul.args[pos], users)
    out_ty = mul.checked_type
    anchor = _anchor(bottom, out_ty.dtype)
    if anchor is None or len(users.get(id(bottom), ())) != 1:
        return None
    vector = channel_vector(scale.data, out_ty.shape, anchor.out_axis)
    if vector is None or not _steps_allow(steps, vector, anchor.out_axis, out_ty.ndim):
        return None
    return _BackwardPlan(anchor, tuple(steps), scale, vector)


def _steps_allow(steps: list[Call], vector: np.ndarray, axis: int, ndim: int) -> bool:
    """relu needs positive scales; bias_add must add along the channel axis."""
    for step in steps:
        if step.op is nn.relu and not np.all(vector > 0):
            return False
        if step.op is nn.bias_add and step.attrs.axis % ndim != axis:
            return False
    return True


def _backward_plans(order: list[BaseExpr], users: Users) -> dict[int, object]:
    plans: dict[int, object] = {}
    for node in order:
        if _op_call(node, tn.multiply):
            plan = _backward_plan(node, users)  # type: ignore[arg-type]
            if plan is not None:
                plans[id(node)] = plan
    return plans


class _BackwardFolder(_Folder):
    """Replaces each planned multiply by the chain below it, rebuilt on a scaled weight."""

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """The planned multiply's replacement, or the call rebuilt as usual."""
        plan = self.plans.get(id(call))
        if plan is None:
            return super().visit_call(call, op, args)
        return self.rebuild(plan)  # type: ignore[arg-type]

    def rebuild(self, plan: _BackwardPlan) -> BaseExpr:
        """The anchor on its scaled weight, then each step on top, its bias scaled."""
        memo = self.memo
        anchor = plan.anchor
        data, weight = (memo[id(a)] for a in anchor.call.args)
        kernel_scale = _along(plan.vector, anchor.weight_axis, anchor.weight_ndim)
        new: BaseExpr = Call(anchor.call.op, [data, tn.multiply(weight, kernel_scale)],
                             anchor.call.attrs, span=anchor.call.span)
        below = anchor.call
        for step in reversed(plan.steps):
            args = [memo[id(a)] for a in step.args]
            pos = 0 if step.args[0] is below else 1
            args[pos] = new
            if step.op is tn.add:
                args[1 - pos] = tn.multiply(args[1 - pos], plan.scale)
            elif step.op is nn.bias_add:
                args[1] = tn.multiply(args[1], Constant(plan.vector))
            new = Call(step.op, args, step.attrs, span=step.span)
            below = step
        return new


# -- forward folding ----------------------------------------------------------------------------
@attrs.frozen
class _ForwardPlan:
    """The role of one node in a forward fold of ``scale``: ``drop`` (the multiply; its
    value operand is at ``pos``), ``bias`` (an add whose constant, at ``pos``, is divided by
    the scale) or ``weight`` (a convolution whose weight is scaled by ``kernel_scale``)."""

    role: str
    pos: int
    scale: Constant
    kernel_scale: Constant | None = None


def _forward_region(mul: Call, vector_of: Callable[[Call], np.ndarray | None], users: Users,
                    ) -> dict[int, _ForwardPlan] | None:
    """The plans for every node the scale of ``mul`` passes through, if all its paths end in
    convolutions that can absorb it."""
    pos, scale = _scaled_multiply(mul)  # type: ignore[misc]
    positive, nonzero = bool(np.all(scale.data > 0)), bool(np.all(scale.data != 0))
    plans = {id(mul): _ForwardPlan("drop", pos, scale)}
    todo = [mul]
    seen = {id(mul)}
    while todo:
        node = todo.pop()
        consumers = users.get(id(node), ())
        if not consumers:
            return None
        for user in consumers:
            if id(user) in seen:
                continue
            seen.add(id(user))
            if _op_call(user, nn.conv2d):
                feeds_data = user.args[0] is node and user.args[1] is not node
                vector = vector_of(user) if feeds_data else None  # type: ignore[arg-type]
                if vector is None:
                    return None
                kernel_scale = _along(vector, user.attrs.kernel_layout.index("I"), 4)
                plans[id(user)] = _ForwardPlan("weight", 1, scale, kernel_scale)
                continue
            if _op_call(user, nn.relu):
                if not positive:
                    return None
            elif _op_call(user, tn.add) and nonzero:
                value_pos = _add_operand(user)  # type: ignore[arg-type]
                if value_pos is None:
                    return None
                plans[id(user)] = _ForwardPlan("bias", 1 - value_pos, scale)
            else:
                return None
            todo.append(user)  # type: ignore[arg-type]
    return plans


def _conv_input_vector(scale: Constant, dtype: str) -> Callable[[Call], np.ndarray | None]:
    """For a convolution: ``scale`` as a vector along its input channels, or None when it
    cannot be folded into that convolution's weight."""

    def vector_of(conv: Call) -> np.ndarray | None:
        attrs_value = conv.attrs
        data_ty, layout = conv.args[0].checked_type, attrs_value.data_layout
        if (attrs_value.groups != 1 or channel_block(layout) or conv.checked_type.dtype != dtype
                or conv.args[1].checked_type.dtype != dtype):
            return None
        return channel_vector(scale.data, data_ty.shape, layout.index("C"))

    return vector_of


def _forward_plans(order: list[BaseExpr], users: Users) -> dict[int, object]:
    plans: dict[int, object] = {}
    for node in order:
        found = _scaled_multiply(node)
        if found is None:
            continue
        vector_of = _conv_input_vector(found[1], node.checked_type.dtype)
        region = _forward_region(node, vector_of, users)  # type: ignore[arg-type]
        if region is not None:
            plans.update(region)
    return plans


class _ForwardFolder(_Folder):
    """Drops each planned multiply, divides the biases after it and scales the weights of
    the convolutions it reaches."""

    def visit_call(self, call: Call, op: BaseExpr, args: list[BaseExpr]) -> BaseExpr:
        """The planned replacement of ``call``, or the call rebuilt as usual."""
        plan: _ForwardPlan | None = self.plans.get(id(call))  # type: ignore[assignment]
        if plan is None:
            return super().visit_call(call, op, args)
        if plan.role == "drop":
            return args[plan.pos]
        args = list(args)
        if plan.role == "bias":
            args[plan.pos] = tn.divide(args[plan.pos], plan.scale)
        else:
            args[plan.pos] = _scaled_weight(args[plan.pos], plan.kernel_scale)
        return Call(op, args, call.attrs, span=call.span)


def _scaled_weight(weight: BaseExpr, kernel_scale: Constant) -> Call:
    """``multiply(weight, kernel_scale)``; when ``weight`` is already a weight scaled by
    backward folding, the two scales are merged so the weight is multiplied once."""
    if (_op_call(weight, tn.multiply) and isinstance(weight.args[1], Constant)
            and weight.args[1].data.ndim == kernel_scale.data.ndim):
        merged = weight.args[1].data * kernel_scale.data
        return tn.multiply(weight.args[0], Constant(merged))
    return tn.multiply(weight, kernel_scale)
