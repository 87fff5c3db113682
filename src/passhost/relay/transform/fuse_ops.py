"""FuseOps: group operator calls into ``Primitive`` functions by their fusion pattern.

One walk over the function body in topological order decides the groups; a second builds a
``fn [Primitive=1]`` per group and calls it with the group's inputs. Every operator call ends
up in exactly one group (a lone operator gets a group of its own). Tuples, projections,
calls of functions, nested ``Primitive``/``Composite`` functions and ``annotation.*`` calls
stay outside the groups. Nested plain functions are fused on their own.

Grouping. Each operator call N starts a group of its own. Then N absorbs the group of the
producer P of an operand when

- N is the only user of P's value (and P is not the function's result),
- the patterns allow it (``_ABSORBS``): an elementwise or broadcast N absorbs elementwise,
  broadcast, injective, out-elementwise-fusable and reduction groups; an injective or
  reduction N absorbs elementwise, broadcast and injective groups; out-elementwise-fusable
  and opaque calls absorb nothing, and nothing absorbs an opaque group,
- the group keeps at most one anchor (an out-elementwise-fusable or reduction call),
- a group anchored by an out-elementwise-fusable call (a convolution, a matrix product) is
  absorbed only by a call whose result has the anchor's shape: its tail is then an
  epilogue, computed where the anchor writes each element. A broadcast that enlarges the
  result (squeeze-and-excitation's ``x * sigmoid(conv(mean(x)))``, whose convolution
  gives one value per channel) starts a group of its own,
- the group keeps at most ``max_depth`` operator calls.

One more rule chains two anchors (config option ``relay.FuseOps.chain_depthwise``, on by
default): a depthwise convolution (``nn.conv2d`` of NCHW data with as many groups as
channels, OIHW weights) absorbs the group of a pointwise one (1x1, stride 1, unpadded,
undilated, ungrouped, NCHW and OIHW) producing its data, epilogue included, when it is
that group's only user. MobileNetV2's and EfficientNet-B0's blocks widen their data with
the one and filter it with the other; in one group, a target can compute them together so
that the wide tensor between them never goes to memory (the cpu target's chained kernel),
and any other runs the two calls in order.

Another keeps a broadcast before an anchor (config option ``relay.FuseOps.scale_pointwise``,
on by default): a pointwise convolution (as above) absorbs the group of a lone ``multiply``
producing its data when that scales the data per channel (one operand shaped like the
result, the other ``[1 or N, C, 1, 1]``), as squeeze-and-excitation's ``x * gate`` before
EfficientNet-B0's projection layers, and the convolution is its only user. A convolution is
linear, so a target can fold the scale into the weights (``O x C`` products for the
multiply's ``C x H x W``) instead of passing over the data; any other runs the two calls in
order.

Producers are tried in operand order and each is absorbed if the group built so far, with
it, still keeps these rules (so ``add(conv_a, conv_b)`` takes one convolution, not both).
A lone call cheap to compute again (injective, or a ``cast``) used several times joins the
group of its users when they all belong to one group, each of which may absorb it, so
that a diamond over a reshape or a cast becomes one loop nest (``_merge_into_users``).
Calls with a tuple result (``nn.batch_norm``, ``split``) count as opaque: alone in their
group, their projections outside. A tuple literal given to an operator's tuple input
(``concatenate((a, b))``) is rebuilt inside that operator's group, so groups take tensors
in; its fields count as the operator's operands.

Why this is safe, diamonds included. Invariant: every member of a group other than its
output has all of its users inside the group. It holds for a new group of one call, and
absorbing P's group into N keeps it: P's only user is N, and P's group already kept it.
Hence the only edge leaving a group leaves its output N, towards nodes after N in
topological order, while every member comes before or is N: no path leaves a group and
comes back, so replacing each group by one call keeps the graph acyclic, and each group has
exactly one output value. In a diamond ``a -> (b, c) -> d``, ``a`` has two users, so it is
a group boundary; ``d`` may absorb ``b`` and ``c``, and ``a`` is computed once, outside.

Parameters of a group are named ``p0, p1, ...`` in order of first use. Scalar constants stay
inside the group; other constants become parameters, so weights stay in the caller.
"""

from __future__ import annotations

from typing import Annotated, Any, cast

from attrs import frozen

from passhost.errors import OptionError
from passhost.ir import traversal
from passhost.ir.expr import BaseExpr, GlobalVar
from passhost.ir.module import IRModule
from passhost.ir.types import TensorType
from passhost.plugins.options import BOOL, INT, OptionSpec
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.op.nn import Conv2DAttrs
from passhost.relay.op.registry import OpPattern
from passhost.relay.transform.common import optimisable
from passhost.relay.transform.function_pass import function_pass
from passhost.relay.type_infer import infer_type
from passhost.relay.visitor import post_order
from passhost.transform.context import PassContext

__all__ = ["CHAIN_DEPTHWISE", "MAX_DEPTH", "SCALE_POINTWISE", "FuseOps"]

_P = OpPattern
_TO_ANY = frozenset({_P.ELEMWISE, _P.BROADCAST, _P.INJECTIVE, _P.OUT_ELEMWISE_FUSABLE,
                     _P.COMM_REDUCE})
_TO_INJECTIVE = frozenset({_P.ELEMWISE, _P.BROADCAST, _P.INJECTIVE})
#: Consumer pattern -> the group kinds a call of that pattern may absorb.
_ABSORBS: dict[OpPattern, frozenset[OpPattern]] = {
    _P.ELEMWISE: _TO_ANY, _P.BROADCAST: _TO_ANY,
    _P.INJECTIVE: _TO_INJECTIVE, _P.COMM_REDUCE: _TO_INJECTIVE,
}
#: Patterns of which a group holds at most one call.
_ANCHORS = frozenset({_P.OUT_ELEMWISE_FUSABLE, _P.COMM_REDUCE})
#: The marker of a value used by more than one node (or by the function's caller).
_SHARED = object()
#: The config option giving ``max_depth`` when the pass is made without one.
MAX_DEPTH = OptionSpec("relay.FuseOps.max_depth", INT, 256,
                       "the most operators FuseOps puts in one Primitive function")
#: The config option turning on the chaining of pointwise and depthwise convolutions.
CHAIN_DEPTHWISE = OptionSpec("relay.FuseOps.chain_depthwise", BOOL, True,
                             "FuseOps groups a depthwise convolution with the 1x1 one "
                             "giving its data")
#: The config option turning on the folding of per-channel scales into 1x1 convolutions.
SCALE_POINTWISE = OptionSpec("relay.FuseOps.scale_pointwise", BOOL, True,
                             "FuseOps groups a 1x1 convolution with the per-channel scaling "
                             "of its data")


@function_pass(opt_level=0, name="FuseOps", required=("InferType",))
class FuseOps:
    """Group operator calls into ``Primitive`` functions of at most ``max_depth`` calls
    (default: the config option ``relay.FuseOps.max_depth``; at opt level 0, one call each).
    """

    def __init__(self, max_depth: Annotated[
            int | None, "most operators in one group (default: the config option "
                        "relay.FuseOps.max_depth)"] = None) -> None:
        self.max_depth = None if max_depth is None else _check_depth(max_depth, "max_depth")

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        """``func`` with its operator calls grouped (``func`` itself if it has none)."""
        if not optimisable(func) or func.attrs.get("Composite"):
            return func
        depth = self.max_depth
        if depth is None:
            depth = _check_depth(ctx.get_config(MAX_DEPTH.name, MAX_DEPTH.default),
                                 f"config option {MAX_DEPTH.name}")
        if ctx.opt_level == 0:
            depth = 1
        rules = _Rules(*(option.check(ctx.get_config(option.name, option.default),
                                      "config option")
                         for option in (CHAIN_DEPTHWISE, SCALE_POINTWISE)))
        return _fuse(func, depth, rules)


def _check_depth(value: object, what: str) -> int:
    """``value`` as a max_depth, or an error naming the pass and ``what`` gave it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"FuseOps: {what} must be an int, found {value!r}")
    if value < 1:
        raise ValueError(f"FuseOps: {what} must be at least 1, found {value!r}")
    return value


@frozen
class _Rules:
    """The optional rules (see the module's notes): depthwise convolutions absorb pointwise
    ones (``chain``), pointwise convolutions absorb per-channel scales of their data
    (``scale``)."""

    chain: bool
    scale: bool


def _fuse(func: Function, max_depth: int, rules: _Rules) -> Function:
    """``func`` with its operator calls (and those of nested plain functions) grouped, the
    optional ``rules`` applied."""
    infer_type(func)
    order = post_order(func.body, stop=lambda n: isinstance(n, Function))
    inner = [n for n in order if isinstance(n, Function)]
    nested = {id(n): _fuse_nested(n, max_depth, rules) for n in inner}
    calls = [n for n in order if _fusable(n)]
    if not calls and all(nested[id(n)] is n for n in inner):
        return func
    owner = _assign_groups(calls, _users(order, func.body), _all_users(order), max_depth,
                           rules)
    body = _rebuild(func.body, _build_groups(calls, owner), nested)
    return Function(func.params, body, func.ret_type, func.attrs, span=func.span)


def _fuse_nested(func: Function, max_depth: int, rules: _Rules) -> Function:
    """A nested function fused on its own (Primitive and Composite ones as they are)."""
    if func.attrs.get("Primitive") or func.attrs.get("Composite"):
        return func
    return _fuse(func, max_depth, rules)


def _fusable(node: BaseExpr) -> bool:
    """True for the operator calls that go into groups (``annotation.*`` ones do not)."""
    return (isinstance(node, Call) and not isinstance(node.op, (Function, GlobalVar))
            and not node.op.name.startswith("annotation."))


def _pattern(call: Call) -> OpPattern:
    """The call's fusion pattern; calls with a tuple result are opaque."""
    pattern = call.op.pattern
    if pattern == _P.TUPLE or not isinstance(call.checked_type, TensorType):
        return _P.OPAQUE
    return pattern


def _users(order: list[BaseExpr], root: BaseExpr) -> dict[int, object]:
    """Node id -> its only user, or ``_SHARED`` when several nodes (or the caller) use it."""
    users: dict[int, object] = {id(root): _SHARED}
    for node in order:
        if isinstance(node, (Function, GlobalVar)):
            continue
        for child in node.children():
            previous = users.setdefault(id(child), node)
            if previous is not node:
                users[id(child)] = _SHARED
    return users


def _all_users(order: list[Any]) -> dict[int, list[BaseExpr]]:
    """Node id -> the nodes using it, once each (the function's caller not counted)."""
    users: dict[int, list[BaseExpr]] = {}
    for node in order:
        if isinstance(node, (Function, GlobalVar)):
            continue
        for child in {id(c): c for c in node.children()}.values():
            users.setdefault(id(child), []).append(node)
    return users


def _tuple_input(call: Call, arg: BaseExpr, index: int) -> bool:
    """True when ``arg`` is a tuple literal given to one of ``call``'s tuple inputs; the
    group rebuilds it inside."""
    return isinstance(arg, Tuple) and call.op.inputs[index] in call.op.tuple_inputs


def _operands(call: Call) -> list[tuple[BaseExpr, BaseExpr]]:
    """(operand, its user) pairs of ``call``: its arguments, with tuple literals given to a
    tuple input replaced by their fields (whose user is the tuple)."""
    out: list[tuple[BaseExpr, BaseExpr]] = []
    for i, arg in enumerate(call.args):
        if _tuple_input(call, arg, i):
            out.extend((f, arg) for f in arg.fields)
        else:
            out.append((arg, call))
    return out


class _Group:
    """A group while it is being grown: its output call, its number of calls, its kind (the
    pattern that decides what may absorb it: its anchor's, else the widest of its calls')
    and, when its anchor is out-elementwise-fusable, that anchor and its result shape."""

    __slots__ = ("anchor", "anchor_shape", "kind", "output", "size")

    def __init__(self, call: Call) -> None:
        self.output = call
        self.kind = _pattern(call)
        self.size = 1
        ty = call.checked_type
        fusable = self.kind is _P.OUT_ELEMWISE_FUSABLE and isinstance(ty, TensorType)
        self.anchor: Call | None = call if fusable else None
        self.anchor_shape = ty.shape if fusable and isinstance(ty, TensorType) else None


def _assign_groups(calls: list[Call], users: dict[int, object],
                   all_users: dict[int, list[BaseExpr]], max_depth: int,
                   rules: _Rules) -> dict[int, Call]:
    """Call id -> the output call of its group; ``calls`` are in topological order."""
    groups: dict[int, _Group] = {}
    absorbed_by: dict[int, Call] = {}
    for call in calls:
        group = groups[id(call)] = _Group(call)
        allowed = _ABSORBS.get(group.kind, frozenset())
        data = call.args[0] if call.args else None
        other = None if data is None else groups.get(id(data))
        if data is not None and other is not None and id(data) not in absorbed_by \
                and _sole_use(data, call, call, users) \
                and group.size + other.size <= max_depth \
                and _absorbs_data(call, other, rules):
            group.size += other.size
            absorbed_by[id(data)] = call
        if not allowed:
            continue
        for operand, user in _operands(call):
            if id(operand) in absorbed_by or not _sole_use(operand, user, call, users):
                continue
            other = groups.get(id(operand))
            if other is not None and _can_absorb(group, other, allowed, max_depth) \
                    and _epilogue_shaped(call, other):
                group.size += other.size
                group.kind = _combined_kind(group.kind, other.kind)
                group.anchor_shape = group.anchor_shape or other.anchor_shape
                group.anchor = group.anchor or other.anchor
                absorbed_by[id(operand)] = call
    owner: dict[int, Call] = {}
    for call in reversed(calls):
        consumer = absorbed_by.get(id(call))
        owner[id(call)] = call if consumer is None else owner[id(consumer)]
        if consumer is None:
            _merge_into_users(call, groups, owner, all_users, max_depth)
    return owner


def _nchw_conv2d(call: Call) -> bool:
    """True for an ``nn.conv2d`` of NCHW data and OIHW weights into NCHW."""
    if getattr(call.op, "name", None) != "nn.conv2d":
        return False
    attrs = cast(Conv2DAttrs, call.attrs)
    return (attrs.data_layout == "NCHW" and attrs.kernel_layout == "OIHW"
            and attrs.out_layout in ("", "NCHW"))


def _pointwise(call: Call) -> bool:
    """True for a 1x1, stride-1, unpadded, undilated, ungrouped NCHW convolution."""
    if not _nchw_conv2d(call):
        return False
    attrs, weight = cast(Conv2DAttrs, call.attrs), call.args[1].checked_type
    return (isinstance(weight, TensorType) and tuple(weight.shape[2:]) == (1, 1)
            and attrs.groups == 1 and tuple(attrs.strides) == (1, 1)
            and tuple(attrs.dilation) == (1, 1) and not any(attrs.padding))


def _depthwise(call: Call) -> bool:
    """True for an NCHW convolution with one group per channel, one output per group."""
    if not _nchw_conv2d(call):
        return False
    data, out = call.args[0].checked_type, call.checked_type
    return (isinstance(data, TensorType) and isinstance(out, TensorType) and data.ndim == 4
            and cast(Conv2DAttrs, call.attrs).groups == data.shape[1] == out.shape[1] > 1)


def _channel_scale(call: Call) -> bool:
    """True for a ``multiply`` of a 4-D tensor shaped like its result by one value per
    channel (``[1 or N, C, 1, 1]``), in either order."""
    out = call.checked_type
    if getattr(call.op, "name", None) != "multiply" or not isinstance(out, TensorType) \
            or out.ndim != 4:
        return False
    types = [a.checked_type for a in call.args]
    if not all(isinstance(t, TensorType) for t in types):
        return False
    shapes = [tuple(cast(TensorType, t).shape) for t in types]
    n, c = out.shape[:2]
    scales = {(1, c, 1, 1), (n, c, 1, 1)} - {tuple(out.shape)}
    return any(shapes[i] == tuple(out.shape) and shapes[1 - i] in scales for i in (0, 1))


def _absorbs_data(call: Call, data: _Group, rules: _Rules) -> bool:
    """True when an optional rule lets ``call`` absorb ``data``, the group producing its
    first operand: a depthwise convolution a pointwise one's (``rules.chain``), a
    pointwise convolution a lone per-channel scale (``rules.scale``)."""
    if rules.chain and _depthwise(call):
        return data.anchor is not None and _pointwise(data.anchor)
    if rules.scale and _pointwise(call):
        return data.size == 1 and _channel_scale(data.output)
    return False


def _recomputable(call: Call) -> bool:
    """True for a call cheap enough to compute again for each of its users in a group: an
    injective one (a reshape, a transpose) or a ``cast``."""
    return _pattern(call) is _P.INJECTIVE or getattr(call.op, "name", None) == "cast"


def _merge_into_users(call: Call, groups: dict[int, _Group], owner: dict[int, Call],
                      all_users: dict[int, list[BaseExpr]], max_depth: int) -> None:
    """Put the group of one recomputable ``call`` into the group of its users when they
    all belong to one group (the diamond GPT-2's GELU makes of a reshape and of the cast
    of its cube) and each of them may absorb it. Every edge leaving ``call``'s group then
    enters that group, so merging keeps the graph acyclic; ``owner`` of later calls is
    final, the calls being visited last to first."""
    group = groups[id(call)]
    found = all_users.get(id(call), [])
    users = [u for u in found if isinstance(u, Call) and id(u) in owner]
    if group.size != 1 or not _recomputable(call) or len(users) < 2 \
            or len(users) != len(found):
        return
    target = owner[id(users[0])]
    merged = groups[id(target)]
    if any(owner[id(u)] is not target or group.kind not in _ABSORBS.get(_pattern(u), ())
           for u in users) or merged.size + 1 > max_depth \
            or merged.kind is _P.OUT_ELEMWISE_FUSABLE:  # an epilogue stays a chain
        return
    merged.size += 1
    merged.kind = _combined_kind(merged.kind, group.kind)
    owner[id(call)] = target


def _sole_use(operand: BaseExpr, user: BaseExpr, call: Call, users: dict[int, object]) -> bool:
    """True when ``operand`` is used by ``call`` alone (directly or through a tuple literal
    only ``call`` uses)."""
    return users.get(id(operand)) is user and (user is call or users.get(id(user)) is call)


def _can_absorb(group: _Group, other: _Group, allowed: frozenset[OpPattern],
                max_depth: int) -> bool:
    """True when ``group`` may take in ``other`` by pattern, size and anchors."""
    return (other.kind in allowed and group.size + other.size <= max_depth
            and not (group.kind in _ANCHORS and other.kind in _ANCHORS))


def _epilogue_shaped(call: Call, other: _Group) -> bool:
    """True unless ``other`` is anchored by an out-elementwise-fusable call whose result
    shape is not ``call``'s."""
    if other.anchor_shape is None:
        return True
    ty = call.checked_type
    return isinstance(ty, TensorType) and ty.shape == other.anchor_shape


def _combined_kind(a: OpPattern, b: OpPattern) -> OpPattern:
    """The kind of a merged group: its anchor's pattern, else the wider of the two."""
    if a in _ANCHORS:
        return a
    if b in _ANCHORS:
        return b
    return max(a, b)


def _build_groups(calls: list[Call], owner: dict[int, Call],
                  ) -> dict[int, tuple[Function, list[BaseExpr]]]:
    """Output call id -> (its Primitive function, the group's inputs in parameter order)."""
    members: dict[int, list[Call]] = {}
    for call in calls:
        members.setdefault(id(owner[id(call)]), []).append(call)
    return {key: _primitive(group) for key, group in members.items()}


def _primitive(members: list[Call]) -> tuple[Function, list[BaseExpr]]:
    """The Primitive function computing a group (members in topological order, the output
    last) and the values to call it with."""
    inside: dict[int, BaseExpr] = {}
    params: list[Var] = []
    inputs: list[BaseExpr] = []

    def operand(value: BaseExpr) -> BaseExpr:
        found = inside.get(id(value))
        if found is not None:
            return found
        if isinstance(value, Constant) and value.data.ndim == 0:
            return value
        param = Var(f"p{len(params)}", value.checked_type)
        params.append(param)
        inputs.append(value)
        inside[id(value)] = param
        return param

    for call in members:
        args = [Tuple([operand(f) for f in arg.fields], span=arg.span)
                if _tuple_input(call, arg, i) else operand(arg)
                for i, arg in enumerate(call.args)]
        inside[id(call)] = Call(call.op, args, call.attrs, span=call.span)
    output = members[-1]
    func = Function(params, inside[id(output)], output.checked_type, {"Primitive": 1})
    return func, inputs


def _rebuild(root: BaseExpr, groups: dict[int, tuple[Function, list[BaseExpr]]],
             nested: dict[int, Function]) -> BaseExpr:
    """The new body: each group output becomes a call of its Primitive function; the
    other nodes still needed are rebuilt on their new children."""

    def children(node: BaseExpr) -> tuple[BaseExpr, ...] | list[BaseExpr]:
        group = groups.get(id(node))
        if group is not None:
            return group[1]
        return () if isinstance(node, (Function, GlobalVar)) else node.children()

    new: dict[int, BaseExpr] = {}
    for node in traversal.post_order([root], children):
        key = id(node)
        group = groups.get(key)
        if group is not None:
            new[key] = Call(group[0], [new[id(i)] for i in group[1]], span=node.span)
        elif isinstance(node, Function):
            new[key] = nested[key]
        else:
            new[key] = _with_children(node, new)
    return new[id(root)]


def _with_children(node: BaseExpr, new: dict[int, BaseExpr]) -> BaseExpr:
    """``node`` on its rewritten children (``node`` itself when none changed)."""
    if isinstance(node, Call):
        op = new[id(node.op)] if isinstance(node.op, (Function, GlobalVar)) else node.op
        args = [new[id(a)] for a in node.args]
        if op is node.op and all(a is b for a, b in zip(args, node.args)):
            return node
        return Call(op, args, node.attrs, span=node.span)
    if isinstance(node, Tuple):
        fields = [new[id(f)] for f in node.fields]
        if all(a is b for a, b in zip(fields, node.fields)):
            return node
        return Tuple(fields, span=node.span)
    if isinstance(node, TupleGetItem):
        value = new[id(node.tuple_value)]
        if value is node.tuple_value:
            return node
        return TupleGetItem(value, node.index, span=node.span)
    return node
