"""The BLAS thread limit of a cpu module's runs (the target option ``num-threads``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["thread_scope"]


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
