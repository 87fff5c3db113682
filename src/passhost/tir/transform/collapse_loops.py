"""tir.CollapseLoops: merge short innermost loops of a nest into one.

An elementwise stage over ``[C, 14, 14]`` lowers to three loops, and its innermost loop of
14 iterations is too short to vectorise well: a 16-lane vector loop over 14 elements runs
entirely in its scalar remainder. When every buffer access in a perfectly nested pair of
loops ``for i < A: for j < B`` reads or writes either at ``[..., i, j, ...]`` (adjacent
positions, the ``j`` dimension of extent ``B``) or at indices involving neither, the pair
is one loop ``for f < A * B`` over views that merge those two dimensions, and the access
is at ``[..., f, ...]``: the same elements in the same order.

For each outermost nest, the chain of perfectly nested serial loops from 0 with constant
extents is collapsed from its innermost loop outwards while the merged extent stays below
:data:`MIN_INNER_EXTENT` and at least one loop of the chain is left outside (the loop
AnnotateLoops makes parallel). A pair whose accesses do not fit, or whose loop variables are
used anywhere but as such an index, ends the collapse there.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from passhost.ir.module import IRModule
from passhost.tir.expr import BufferLoad, IntImm, Var
from passhost.tir.function import Buffer, PrimFunc
from passhost.tir.stmt import BufferStore, For
from passhost.tir.transform.annotate_loops import outermost_loops
from passhost.tir.transform.prim_func_pass import prim_func_pass
from passhost.tir.visitor import StmtExprMutator, post_order
from passhost.transform.context import PassContext

__all__ = ["MIN_INNER_EXTENT", "CollapseLoops", "ViewAccesses", "collapse_loops",
           "collapse_pair", "loop_chain", "loop_extent", "rewrap", "rewrite_nests"]

#: Innermost loops shorter than this are merged with the loop around them.
MIN_INNER_EXTENT = 64


def loop_extent(loop: For) -> int | None:
    """The constant extent of a serial loop from 0, else None."""
    if loop.kind != "serial" or not (isinstance(loop.min, IntImm) and loop.min.value == 0):
        return None
    return loop.extent.value if isinstance(loop.extent, IntImm) else None


class ViewAccesses(StmtExprMutator):
    """Rewrites each buffer access that :meth:`view` maps to a view of its buffer and new
    indices (a subclass says how); ``failed`` is set by :meth:`view` when an access does
    not fit."""

    failed = False

    def view(self, buf: Buffer, indices: tuple) -> tuple[Buffer, tuple] | None:
        """The view and indices replacing an access, or None when it stays as it is."""
        raise NotImplementedError

    def visit_buffer_load(self, node: BufferLoad) -> BufferLoad:
        """The load through its view, if it has one."""
        found = self.view(node.buffer, node.indices)
        return node if found is None else BufferLoad(found[0], found[1], span=node.span)

    def visit_buffer_store(self, node: BufferStore) -> BufferStore:
        """The store through its view, if it has one."""
        found = self.view(node.buffer, node.indices)
        if found is None:
            return node
        return BufferStore(found[0], node.value, found[1], span=node.span)


class _MergeAccesses(ViewAccesses):
    """Rewrites the accesses at ``[..., i, j, ...]`` into accesses at ``[..., f, ...]`` of
    views merging the two dimensions; ``failed`` when an access uses ``i`` or ``j`` any
    other way it can see (other uses are caught afterwards)."""

    def __init__(self, i: Var, j: Var, f: Var, inner_extent: int) -> None:
        super().__init__()
        self.i, self.j, self.f = i, j, f
        self.inner_extent = inner_extent
        self.views: dict[tuple[int, int], Buffer] = {}
        self.failed = False

    def view(self, buf: Buffer, indices: tuple) -> tuple[Buffer, tuple] | None:
        """The merged view and indices replacing an access, or None when it stays."""
        at_i = [d for d, index in enumerate(indices) if index is self.i]
        at_j = [d for d, index in enumerate(indices) if index is self.j]
        if not at_i and not at_j:
            return None
        if not (len(at_i) == len(at_j) == 1 and at_j[0] == at_i[0] + 1
                and buf.shape[at_j[0]] == self.inner_extent):
            self.failed = True
            return None
        d = at_i[0]
        view = self.views.get((id(buf), d))
        if view is None:
            shape = (*buf.shape[:d], buf.shape[d] * buf.shape[d + 1], *buf.shape[d + 2:])
            view = self.views[(id(buf), d)] = attrs.evolve(buf, shape=shape)
        return view, (*indices[:d], self.f, *indices[d + 2:])


def collapse_pair(outer: For, inner: For) -> For | None:
    """``for i: for j: body`` as one loop, or None when its accesses do not allow it."""
    a, b = loop_extent(outer), loop_extent(inner)
    if a is None or b is None:
        return None
    i, j = outer.loop_var, inner.loop_var
    f = Var(f"{i.name_hint}_{j.name_hint}", i.dtype)
    merge = _MergeAccesses(i, j, f, b)
    body = merge.visit(inner.body)
    if merge.failed or any(n is i or n is j for n in post_order(body)):
        return None
    return For(f, 0, a * b, "serial", body, span=outer.span)


def loop_chain(nest: For) -> list[For]:
    """The loops of ``nest`` that are perfectly nested from the outermost."""
    chain = [nest]
    while isinstance(chain[-1].body, For):
        chain.append(chain[-1].body)
    return chain


def _collapsed(nest: For) -> For:
    """``nest`` with its short innermost loops merged (see the module docstring)."""
    chain = loop_chain(nest)
    extents = [loop_extent(loop) for loop in chain]
    inner, inner_extent = chain[-1], extents[-1]
    keep = len(chain) - 1  # chain[keep:] is merged into `inner`
    while keep > 1 and inner_extent is not None and inner_extent < MIN_INNER_EXTENT:
        pair = collapse_pair(chain[keep - 1], inner)
        if pair is None:
            break
        inner, inner_extent = pair, pair.extent.value
        keep -= 1
    if inner is chain[-1]:
        return nest
    return rewrap(chain[:keep], inner)


def rewrap(outer: list[For], inner: For) -> For:
    """``inner`` inside the loops ``outer`` (outermost first), as they were."""
    for loop in reversed(outer):
        inner = attrs.evolve(loop, body=inner)
    return inner


class _Replace(StmtExprMutator):
    def __init__(self, replacements: dict[int, For]) -> None:
        super().__init__()
        self.replacements = replacements

    def visit_for(self, loop: For) -> For:
        """The rewritten nest in place of an outermost loop."""
        return self.replacements.get(id(loop), loop)


def rewrite_nests(func: PrimFunc, rewrite: Callable[[For], For]) -> PrimFunc:
    """``func`` with each outermost loop nest replaced by ``rewrite(nest)`` (``func``
    itself when every nest comes back unchanged)."""
    replacements = {}
    for nest in outermost_loops(func.body):
        new = rewrite(nest)
        if new is not nest:
            replacements[id(nest)] = new
    if not replacements:
        return func
    return func.with_body(_Replace(replacements).visit(func.body))


def collapse_loops(func: PrimFunc) -> PrimFunc:
    """``func`` with the short innermost loops of its nests merged."""
    return rewrite_nests(func, _collapsed)


@prim_func_pass(opt_level=2, name="tir.CollapseLoops")
class CollapseLoops:
    """Merge short innermost loops of a nest into one (see the module docstring)."""

    def transform_function(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        """``func`` with its short innermost loops merged."""
        return collapse_loops(func)
