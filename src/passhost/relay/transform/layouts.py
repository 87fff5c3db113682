"""Layout strings: axis letters such as ``"NCHW"`` naming the axes of a tensor in order.

A layout is a string of distinct upper-case letters; two layouts of the same letters are
permutations of each other, and ``layout_transform`` moves a tensor between them.
"""

from __future__ import annotations

__all__ = [
    "default_kernel_layout", "is_layout", "is_permutation", "remap_axis",
]


def is_layout(layout: object) -> bool:
    """True for a non-empty string of distinct upper-case axis letters."""
    return (isinstance(layout, str) and layout != "" and layout.isascii() and layout.isupper()
            and layout.isalpha() and len(set(layout)) == len(layout))


def is_permutation(layout: str, other: str) -> bool:
    """True when ``layout`` and ``other`` are layouts of the same axis letters."""
    return is_layout(layout) and is_layout(other) and sorted(layout) == sorted(other)


def remap_axis(axis: int, original: str, current: str) -> int:
    """The index in ``current`` of the axis that is ``axis`` in ``original`` (which may be
    negative, counted from the end)."""
    return current.index(original[axis % len(original)])


def default_kernel_layout(data_layout: str, depthwise: bool) -> str:
    """The kernel layout that goes with a convolution data layout: ``HWIO`` for ``NHWC``
    (``HWOI`` for a depthwise convolution), ``OIHW`` otherwise."""
    if data_layout == "NHWC":
        return "HWOI" if depthwise else "HWIO"
    return "OIHW"
