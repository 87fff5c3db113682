"""What a cpu module sets around each run: the BLAS thread limit and the threads of its
compiled loops (the target option ``num-threads``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

__all__ = ["run_scope_factory", "thread_scope"]


def thread_scope(num_threads: int) -> Callable[[], AbstractContextManager[Any]] | None:
    """A factory of contexts limiting BLAS to ``num_threads`` threads, or None for 0
    (leave the BLAS library's own default, at no cost)."""
    if num_threads == 0:
        return None
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()

    def scope() -> AbstractContextManager[Any]:
        return controller.limit(limits=num_threads, user_api="blas")

    return scope


def run_scope_factory(blas_threads: int, set_loop_threads: Callable[[], None] | None,
                      ) -> Callable[[], AbstractContextManager[Any]] | None:
    """The factory of the contexts entered around each run: the BLAS limit of
    :func:`thread_scope` (for ``blas_threads`` > 0) after ``set_loop_threads()`` (the
    compiled loops' library may be shared with another module); None when neither."""
    blas = thread_scope(blas_threads)
    if set_loop_threads is None:
        return blas

    def scope() -> AbstractContextManager[Any]:
        set_loop_threads()
        return blas() if blas is not None else nullcontext()

    return scope
