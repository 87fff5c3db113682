"""Small, well-typed example functions for every operator, for tests and fuzzing.

Each group of operators keeps its examples in ``examples_<group>.py`` as a list
``EXAMPLES`` of ``(op name, builder)`` pairs; a builder returns a graph ``Function`` whose
parameters accept any random values of their types (inputs with constraints, such as
indices, are constants inside the function).
"""

from __future__ import annotations

from collections.abc import Callable

from passhost.relay.expr import Function

Builder = Callable[[], Function]


def all_examples() -> list[tuple[str, Builder]]:
    """Every ``(op name, builder)`` pair of every operator group."""
    from passhost.relay.testing import (
        examples_annotation,
        examples_elemwise,
        examples_movement,
        examples_nn,
        examples_norm,
        examples_qnn,
        examples_reduce,
        examples_signal,
        examples_tensor,
        examples_vision,
        examples_windows,
    )

    return [*examples_nn.EXAMPLES, *examples_tensor.EXAMPLES, *examples_qnn.EXAMPLES,
            *examples_annotation.EXAMPLES, *examples_elemwise.EXAMPLES, *examples_reduce.EXAMPLES,
            *examples_movement.EXAMPLES, *examples_windows.EXAMPLES, *examples_norm.EXAMPLES,
            *examples_vision.EXAMPLES, *examples_signal.EXAMPLES]
