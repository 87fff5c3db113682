"""The TIR passes the build runs at its phases: each a ``prim_func_pass`` (defined here).

* ``tir.Simplify``: fold constant integer and bool arithmetic, drop single-iteration loops
  and decided branches;
* ``tir.CollapseLoops``: merge short innermost loops of a nest into one;
* ``tir.TileTransposes``: walk transposing loop pairs in tiles;
* ``tir.VectorizeReductions``: accumulate sums in vector lanes;
* ``tir.AnnotateLoops``: mark parallel and vectorised loops;
* ``tir.ReuseBuffers``: let allocations whose lifetimes do not overlap share memory.
"""

from passhost.tir.transform.annotate_loops import AnnotateLoops
from passhost.tir.transform.collapse_loops import CollapseLoops, collapse_loops
from passhost.tir.transform.prim_func_pass import PrimFuncPass, prim_func_pass
from passhost.tir.transform.reuse_buffers import ReuseBuffers, reuse_buffers
from passhost.tir.transform.simplify import Simplify, simplify
from passhost.tir.transform.tile_transposes import TileTransposes, tile_transposes
from passhost.tir.transform.vectorize_reductions import (
    VectorizeReductions,
    vectorize_reductions,
)

__all__ = ["AnnotateLoops", "CollapseLoops", "PrimFuncPass", "ReuseBuffers", "Simplify",
           "TileTransposes", "VectorizeReductions", "collapse_loops", "prim_func_pass",
           "reuse_buffers", "simplify", "tile_transposes", "vectorize_reductions"]
