"""The TIR -> C printer: PrimFuncs as the C functions of one translation unit.

:func:`print_unit` (or :class:`CPrinter`) prints PrimFuncs into a :class:`CUnit` holding the
source and each function's signature. The convention (docs/targets.md, "The C printer"):

* every PrimFunc becomes ``int32_t symbol(params)``; a buffer parameter is a ``T *restrict``
  pointer to its flat C-contiguous elements (``const`` when never written), a scalar
  parameter its C value, a handle parameter without a buffer ``void *``;
* it returns 0; 1 when an ``AssertStmt`` fails, 2 when a heap allocation fails
  (``<prefix>_last_error()`` then gives the message in the calling thread);
* a parallel loop's body becomes a task function (:mod:`.outline`), run on the pool the
  loader sets in ``<prefix>_parallel`` (else OpenMP) with ``<prefix>_num_threads`` threads
  (0: OpenMP's default);
* the unit is C11 with GNU extensions (``-std=gnu11``), plus :attr:`CUnit.flags`.

Targets adapt it through :class:`CPrinter`'s options: an :class:`ExternPrinter` for their
``call_extern`` statements, freestanding units (no threads, heap or thread-locals), shared
scratch memory, no ``restrict``, no last-error state.
"""

from passhost.backend.c.dtypes import storage_type
from passhost.backend.c.errors import CCodegenError
from passhost.backend.c.expr import KernelArgs, KernelPrinter
from passhost.backend.c.extern import ExternArgs, ExternCall, ExternPrinter
from passhost.backend.c.function import STATUS_ASSERT, STATUS_NO_MEMORY
from passhost.backend.c.unit import STACK_LIMIT, CFunction, CParam, CPrinter, CUnit, print_unit

__all__ = [
    "STACK_LIMIT", "STATUS_ASSERT", "STATUS_NO_MEMORY", "CCodegenError", "CFunction", "CParam",
    "CPrinter", "CUnit", "ExternArgs", "ExternCall", "ExternPrinter", "KernelArgs",
    "KernelPrinter", "print_unit", "storage_type",
]
