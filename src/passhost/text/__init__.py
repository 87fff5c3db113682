"""passhost's IR text format: one printer and one parser for modules holding graph
functions and PrimFuncs side by side. See docs/ir-text-format.md."""

from passhost.text.module import parse_expr, parse_module, print_expr, print_module

parse = parse_module

__all__ = ["parse", "parse_expr", "parse_module", "print_expr", "print_module"]
