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
``i`` in its last index and ``j`` before it, and every access indexes each of ``i`` and
``j`` in one dimension only, as ``v`` or ``base + v`` with ``base`` a constant multiple of
the tile by its form (``h * 64``: GPT-2's keys, transposed per head from ``[128, 768]``),
at a dimension the tile divides (the access then goes through a view of its buffer
splitting those dimensions in two). ``TI`` is the largest of :data:`ROW_TILES` dividing
``A`` and ``TJ`` the largest of :data:`COLUMN_TILES` dividing ``B`` and smaller than it; a
pair without them is left alone (ViT-B/16's 197 tokens).
"""

from __future__ import annotations

import attrs

from passhost.ir.module import IRModule
from passhost.tir.expr import Add, BufferLoad, IntImm, Mul, PrimExpr, Var, const
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


def _uses(index: PrimExpr, var: Var) -> bool:
    return any(n is var for n in post_order(index))


def _divided(expr: PrimExpr, tile: int) -> PrimExpr | None:
    """``expr / tile`` when ``expr`` is a constant or a product by a constant that ``tile``
    divides, else None."""
    if isinstance(expr, IntImm):
        return const(expr.value // tile, expr.dtype) if expr.value % tile == 0 else None
    if isinstance(expr, Mul):
        for x, k in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(k, IntImm) and k.value % tile == 0:
                return x if k.value == tile else Mul(x, const(k.value // tile, k.dtype))
    return None


def _tile_base(index: PrimExpr, var: Var, tile: int) -> PrimExpr | None:
    """For an index ``var`` or ``base + var`` (``base`` a multiple of ``tile`` by its form,
    see :func:`_divided`), the index of its first tile: 0 or ``base / tile``; else None."""
    if index is var:
        return const(0, var.dtype)
    if isinstance(index, Add):
        for base, v in ((index.a, index.b), (index.b, index.a)):
            if v is var and not _uses(base, var):
                return _divided(base, tile)
    return None


class _SplitAccesses(ViewAccesses):
    """Rewrites each access indexing ``i`` or ``j`` into one through a view splitting
    those dimensions into (tiles, tile); ``failed`` when an access indexes them some other
    way than ``var`` or ``base + var`` (see :func:`_tile_base`) at a dimension the tile
    divides."""

    def __init__(self, loops: tuple[Var, Var, Var, Var, Var, Var],
                 tiles: tuple[int, int]) -> None:
        super().__init__()
        self.i, self.j, self.io, self.ii, self.jo, self.ji = loops
        self.tiles = tiles
        self.views: dict[tuple[int, tuple[int, ...]], Buffer] = {}
        self.failed = False

    def view(self, buf: Buffer, indices: tuple) -> tuple[Buffer, tuple] | None:
        """The split view and indices replacing an access, or None when it stays."""
        split: dict[int, tuple[int, PrimExpr, Var, Var]] = {}
        for var, other, tile, outer, inner in ((self.i, self.j, self.tiles[0], self.io,
                                                self.ii),
                                               (self.j, self.i, self.tiles[1], self.jo,
                                                self.ji)):
            at = [d for d, index in enumerate(indices) if _uses(index, var)]
            if not at:
                continue
            base = _tile_base(indices[at[0]], var, tile) if len(at) == 1 else None
            if base is None or buf.shape[at[0]] % tile or _uses(base, other):
                self.failed = True
                return None
            split[at[0]] = (tile, base, outer, inner)
        if not split:
            return None
        shape: list[int] = []
        new_indices: list = []
        for d, (size, index) in enumerate(zip(buf.shape, indices)):
            if d in split:
                tile, base, outer, inner = split[d]
                shape += [size // tile, tile]
                first = outer if isinstance(base, IntImm) and base.value == 0 else \
                    Add(base, outer)
                new_indices += [first, inner]
            else:
                shape.append(size)
                new_indices.append(index)
        key = (id(buf), tuple(sorted(split)))
        view = self.views.get(key)
        if view is None:
            view = self.views[key] = attrs.evolve(buf, shape=tuple(shape))
        return view, tuple(new_indices)


def _transposing(store: BufferStore, i: Var, j: Var) -> bool:
    """Whether ``store`` writes along ``j`` while one of its loads reads along ``i`` (its
    last index ``i`` or ``base + i``) with ``j`` in an outer dimension."""
    if not store.indices or store.indices[-1] is not j:
        return False
    return any(isinstance(n, BufferLoad) and n.indices and _uses(n.indices[-1], i)
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
    mutator = _SplitAccesses((i, j, io, ii, jo, ji), (ti, tj))
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
