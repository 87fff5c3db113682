"""What was left to run when a pass raised, in the textual pipeline syntax.

Each Sequential the error left records its position (``note_position``), so the passes
still to run are: the failing pass; when it ran inside a step rather than being it (a
dependency, or a pass called from a pass's body), that step again; then the later steps at
each enclosing level.
"""

from __future__ import annotations

from typing import Any

from passhost.plugins.names import is_name
from passhost.transform.notes import failure_positions
from passhost.transform.passes import Pass
from passhost.transform.pipeline import (
    PassElement,
    PassTextError,
    Pipeline,
    SequentialElement,
    format_pipeline,
    parse_pipeline,
    pass_to_element,
)


def remaining_pipeline(info: Any, error: BaseException
                       ) -> tuple[str | None, str | None, str | None]:
    """``(failing pass, remaining pipeline, stops before)`` as text for the pass ``info``
    that raised ``error``: the failing pass's element (None when it has no text form, and
    then no pipeline either), the pipeline from it on, and the name of the first later pass
    without a text form, where the pipeline had to stop (None if it did not)."""
    positions = failure_positions(error)
    passes: list[Pass | str] = []
    if positions:
        sequential, index = positions[0]
        steps = sequential.passes  # type: ignore[attr-defined]
        if steps[index].info is not info:
            passes.append(info.name)
        passes.extend(steps[index:])
        for sequential, index in positions[1:]:
            passes.extend(sequential.passes[index + 1:])  # type: ignore[attr-defined]
    else:
        passes.append(info.name)
    elements = []
    for item in passes:
        try:
            elements.append(_named(item) if isinstance(item, str) else pass_to_element(item))
        except PassTextError as err:
            if not elements:
                return None, None, None
            return str(elements[0]), format_pipeline(Pipeline(tuple(elements))), err.name
    return str(elements[0]), format_pipeline(Pipeline(tuple(elements))), None


def _named(name: str) -> PassElement:
    """The element of a pass known only by name: its name, if that is a registered pass."""
    from passhost.plugins.manager import get_host

    if not is_name(name) or name not in get_host().registries.passes:
        raise PassTextError(name)
    return PassElement(name)


def pipeline_names(text: str | None) -> list[str]:
    """The names of the passes and named pipelines in a pipeline text, nested ones too."""
    if not text:
        return []
    names = []
    stack = list(parse_pipeline(text).elements)
    while stack:
        element = stack.pop()
        if isinstance(element, SequentialElement):
            stack.extend(element.children)
        else:
            names.append(element.name)
    return names
