"""The TIR passes the build runs at its phases: each a ``prim_func_pass``.

* ``tir.Simplify``: fold constant integer and bool arithmetic, drop single-iteration loops
  and decided branches;
* ``tir.AnnotateLoops``: mark parallel and vectorised loops;
* ``tir.ReuseBuffers``: let allocations whose lifetimes do not overlap share memory.
"""

from passhost.tir.transform.annotate_loops import AnnotateLoops
from passhost.tir.transform.reuse_buffers import ReuseBuffers, reuse_buffers
from passhost.tir.transform.simplify import Simplify, simplify

__all__ = ["AnnotateLoops", "ReuseBuffers", "Simplify", "reuse_buffers", "simplify"]
