"""Annotation operators marking the regions an external compiler takes over.

``annotation.compiler_begin(x, compiler=K)`` marks where a value enters a region for target
kind ``K``; ``annotation.compiler_end(y, compiler=K)`` marks where a value leaves it.
AnnotateTarget inserts them and PartitionGraph turns each region into a module function.
Both are the identity on values.
"""

from __future__ import annotations

from typing import Any

from passhost.ir.attrs import Attrs, attrs_class, str_field
from passhost.ir.types import Type
from passhost.relay.op.registry import ArgTypes, OpPattern, define_op

__all__ = ["CompilerAttrs", "compiler_begin", "compiler_end"]


@attrs_class
class CompilerAttrs(Attrs):
    """Attributes of the compiler annotations: the target kind owning the region."""

    compiler: str = str_field("")


def _annotation_rel(args: ArgTypes, attrs_value: CompilerAttrs) -> Type:
    """Any value (tensor or tuple), passed through; the compiler must be named."""
    if not attrs_value.compiler:
        args.fail_attr("compiler", "a target kind name", "''")
    return args[0]


def _identity(_attrs: object, value: Any) -> Any:
    return value


compiler_begin = define_op(
    "annotation.compiler_begin", inputs=("data",), attrs=CompilerAttrs,
    type_rel=_annotation_rel, compute=_identity, pattern=OpPattern.OPAQUE,
    description="Start of a region offloaded to an external compiler (the identity).")
compiler_end = define_op(
    "annotation.compiler_end", inputs=("data",), attrs=CompilerAttrs,
    type_rel=_annotation_rel, compute=_identity, pattern=OpPattern.OPAQUE,
    description="End of a region offloaded to an external compiler (the identity).")
