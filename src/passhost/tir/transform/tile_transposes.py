"""tir.TileTransposes: walk a transposing loop pair in tiles, so its strided reads hit L1.

A transpose lowers to ``for i < A: for j < B: out[..., i, j] = f(in[..., j, i], ...)``:
the store runs along ``j``, and the load steps a whole row of ``in`` for each ``j``, so
every load touches a different cache line and each line is fetched again for the next
``i``, once the ``B`` lines of a pass have left L1 (ConvNeXt's NHWC-to-NCHW residual add,
96 x 3136: 2.5 ms of its 92). In tiles of ``TI`` rows ``i`` by ``TJ`` columns ``j``,

    for io < A / TI: for jo < B / TJ: for ii < TI: for ji < TJ:
        out[..., io, ii, jo, ji] = f(in[..., jo, ji, io, ii], ...)

a tile reads ``TJ`` lines of ``TI`` floats each, and they stay in L1 while its ``TI`` rows
use them; the stores stay contiguous along ``ji``, which AnnotateLoops vectorises.

The pair is the innermost two loops of a nest (serial, from 0, constant extents) around
one ``BufferStore``. It is tiled when the store has ``j`` as its last index, some load has
``i`` as its last index and ``j`` before it, and every access indexes each of ``i`` and
``j`` only as a whole index, at a dimension of the loop's extent (the access then goes
through a view of its buffer splitting those dimensions in two). ``TI`` is the largest of
:data:`ROW_TILES` dividing ``A`` and ``TJ`` the largest of :data:`COLUMN_TILES` dividing
``B`` and smaller than it; a pair without them is left alone.
"""

from __future__ import annotations

import attrs

from passhost.ir.module import IRModule
from passhost.tir.expr import BufferLoad, Var, const
from passhost.tir.function import Buffer, PrimFunc
from passhost.tir.stmt import BufferStore, For, Stmt
from passhost.tir.transform.collapse_loops import (
    ViewAccesses,
    loop_chain,
    loop_extent,
    rewrap,
    rewrite_nests,
)
from passhost.tir.transform.prim_func_pass import prim_func_pass
from passhost.tir.visitor import post_order
from passhost.transform.context import PassContext

__all__ = ["COLUMN_TILES", "ROW_TILES", "TileTransposes", "tile_transposes"]

#: Rows (``i``) of a tile, the largest dividing the loop's extent: 16 float32 fill a line.
ROW_TILES = (16, 8)
#: Columns (``j``) of a tile, the largest dividing the loop's extent.
COLUMN_TILES = (64, 32, 16)


def _largest_divisor(extent: int, tiles: tuple[int, ...], below: int) -> int | None:
    """The first of ``tiles`` dividing ``extent`` and smaller than ``below``."""
    return next((t for t in tiles if extent % t == 0 and t < below), None)


def _positions(indices: tuple, var: Var) -> list[int]:
    return [d for d, index in enumerate(indices) if index is var]


class _SplitAccesses(ViewAccesses):
    """Rewrites each access indexing ``i`` (extent ``a``) or ``j`` (extent ``b``) into one
    through a view splitting those dimensions into (outer, tile); ``failed`` when an access
    does not index them as whole indices at dimensions of those extents."""

    def __init__(self, loops: tuple[Var, Var, Var, Var, Var, Var],
                 extents: tuple[int, int], tiles: tuple[int, int]) -> None:
        super().__init__()
        self.i, self.j, self.io, self.ii, self.jo, self.ji = loops
        self.extents, self.tiles = extents, tiles
        self.views: dict[tuple[int, tuple[int, ...]], Buffer] = {}
        self.failed = False

    def view(self, buf: Buffer, indices: tuple) -> tuple[Buffer, tuple] | None:
        """The split view and indices replacing an access, or None when it stays."""
        split: dict[int, tuple[int, int, Var, Var]] = {}
        for var, extent, tile, outer, inner in ((self.i, self.extents[0], self.tiles[0],
                                                 self.io, self.ii),
                                                (self.j, self.extents[1], self.tiles[1],
                                                 self.jo, self.ji)):
            at = _positions(indices, var)
            if len(at) > 1 or (at and buf.shape[at[0]] != extent):
                self.failed = True
                return None
            if at:
                split[at[0]] = (extent // tile, tile, outer, inner)
        if not split:
            return None
        shape: list[int] = []
        new_indices: list = []
        for d, (size, index) in enumerate(zip(buf.shape, indices)):
            if d in split:
                outer_size, tile, outer, inner = split[d]
                shape += [outer_size, tile]
                new_indices += [outer, inner]
            else:
                shape.append(size)
                new_indices.append(index)
        key = (id(buf), tuple(sorted(split)))
        view = self.views.get(key)
        if view is None:
            view = self.views[key] = attrs.evolve(buf, shape=tuple(shape))
        return view, tuple(new_indices)


def _transposing(store: BufferStore, i: Var, j: Var) -> bool:
    """Whether ``store`` writes along ``j`` while one of its loads reads along ``i`` with
    ``j`` in an outer dimension."""
    if not store.indices or store.indices[-1] is not j:
        return False
    return any(isinstance(n, BufferLoad) and n.indices and n.indices[-1] is i
               and any(index is j for index in n.indices[:-1])
               for n in post_order(store.value))


def tile_pair(outer: For, inner: For) -> For | None:
    """``for i: for j: store`` in tiles (see the module docstring), or None when the pair
    is no transpose this pass tiles."""
    a, b = loop_extent(outer), loop_extent(inner)
    store = inner.body
    if a is None or b is None or not isinstance(store, BufferStore):
        return None
    i, j = outer.loop_var, inner.loop_var
    if not _transposing(store, i, j):
        return None
    ti, tj = _largest_divisor(a, ROW_TILES, a + 1), _largest_divisor(b, COLUMN_TILES, b)
    if ti is None or tj is None:
        return None
    io, ii = Var(f"{i.name_hint}_outer", i.dtype), Var(f"{i.name_hint}_inner", i.dtype)
    jo, ji = Var(f"{j.name_hint}_outer", j.dtype), Var(f"{j.name_hint}_inner", j.dtype)
    mutator = _SplitAccesses((i, j, io, ii, jo, ji), (a, b), (ti, tj))
    body = mutator.visit(store)
    if mutator.failed or any(n is i or n is j for n in post_order(body)):
        return None
    def loop(var: Var, extent: int, loop_body: Stmt) -> For:
        return For(var, const(0, var.dtype), const(extent, var.dtype), "serial", loop_body,
                   span=outer.span)

    return loop(io, a // ti, loop(jo, b // tj, loop(ii, ti, loop(ji, tj, body))))


def _tiled(nest: For) -> For:
    """``nest`` with its innermost pair of loops tiled, when it is a transpose."""
    chain = loop_chain(nest)
    inner = tile_pair(chain[-2], chain[-1]) if len(chain) >= 2 else None
    return nest if inner is None else rewrap(chain[:-2], inner)


def tile_transposes(func: PrimFunc) -> PrimFunc:
    """``func`` with the transposing loop pairs of its nests tiled."""
    return rewrite_nests(func, _tiled)


@prim_func_pass(opt_level=2, name="tir.TileTransposes")
class TileTransposes:
    """Walk transposing loop pairs in tiles (see the module docstring)."""

    def transform_function(self, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        """``func`` with its transposing loop pairs tiled."""
        return tile_transposes(func)
