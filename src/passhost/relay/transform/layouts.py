"""Layout strings: axis letters such as ``"NCHW"`` naming the axes of a tensor in order.

A plain layout is a string of distinct upper-case letters; two layouts of the same letters are
permutations of each other. A layout may also split a primal (upper-case) axis, its inner part
written as the factor and the lower-case letter (``NCHW16c``, parsed by
:func:`~passhost.relay.op.layout.layout_axes`). ``layout_transform`` moves a tensor between any
two layouts of the same primal axes.
"""

from __future__ import annotations

from passhost.relay.op.layout import layout_axes

__all__ = [
    "default_kernel_layout", "is_layout", "is_permutation", "primal_layout", "remap_axis",
    "same_axes",
]


def is_layout(layout: object) -> bool:
    """True for a non-empty string of distinct upper-case axis letters."""
    return (isinstance(layout, str) and layout != "" and layout.isascii() and layout.isupper()
            and layout.isalpha() and len(set(layout)) == len(layout))


def is_permutation(layout: str, other: str) -> bool:
    """True when ``layout`` and ``other`` are layouts of the same axis letters."""
    return is_layout(layout) and is_layout(other) and sorted(layout) == sorted(other)


def primal_layout(layout: str) -> str:
    """``layout`` (a valid one) with its split axes whole: ``NCHW`` for ``NCHW16c``."""
    axes = layout_axes(layout)
    assert axes is not None, layout
    return "".join(letter for letter, factor in axes if not factor)


def same_axes(layout: object, other: str) -> bool:
    """True when ``layout`` and ``other`` are layouts of the same primal axes, each possibly
    permuted and split (``NCHW``, ``NHWC`` and ``NCHW16c``)."""
    return (isinstance(layout, str) and layout_axes(layout) is not None
            and layout_axes(other) is not None
            and sorted(primal_layout(layout)) == sorted(primal_layout(other)))


def remap_axis(axis: int, original: str, current: str) -> int:
    """The index in ``current`` of the axis that is ``axis`` in ``original`` (which may be
    negative, counted from the end); both plain layouts."""
    return current.index(original[axis % len(original)])


def default_kernel_layout(data_layout: str, depthwise: bool) -> str:
    """The kernel layout that goes with a convolution data layout: ``HWIO`` for ``NHWC``
    (``HWOI`` for a depthwise convolution), ``OIHW`` otherwise."""
    if data_layout == "NHWC":
        return "HWOI" if depthwise else "HWIO"
    return "OIHW"
