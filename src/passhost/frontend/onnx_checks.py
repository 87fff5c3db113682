"""Checks of an ONNX graph's structure and of each node against its operator's schema.

They run before any converter, so that a malformed model is an :class:`OnnxImportError`
naming the node (or graph value) at fault rather than a failure deep inside a converter:
the number of inputs and outputs, required inputs left empty, attributes of the wrong type,
unknown or missing attributes, names defined twice, graph outputs nothing produces.
"""

from __future__ import annotations

from collections.abc import Iterable

from onnx import AttributeProto, GraphProto, NodeProto, defs

from passhost.frontend.errors import OnnxImportError
from passhost.frontend.onnx_context import describe_node

__all__ = ["check_graph", "check_node"]

_SINGLE = defs.OpSchema.FormalParameterOption.Single


def _type_name(code: int) -> str:
    try:
        return AttributeProto.AttributeType.Name(code)
    except ValueError:
        return f"<unknown attribute type {code}>"


def _count(low: int, high: int) -> str:
    """``low`` to ``high`` in words (ONNX writes "no upper bound" as 2**31 - 1)."""
    if low == high:
        return str(low)
    if high >= 2**31 - 1:
        return f"at least {low}"
    return f"{low} to {high}"


def check_node(node: NodeProto, schema: defs.OpSchema) -> None:
    """Raise unless ``node`` fits ``schema``: its input and output counts, required inputs
    given, and every attribute known to the operator, of the declared type, and present
    when required."""
    where = describe_node(node)
    version = f"{schema.name} version {schema.since_version}"
    n_in, n_out = len(node.input), len(node.output)
    if not schema.min_input <= n_in <= schema.max_input:
        raise OnnxImportError(f"{where}: expected {_count(schema.min_input, schema.max_input)} "
                              f"inputs ({version}), found {n_in}")
    if not schema.min_output <= n_out <= schema.max_output:
        raise OnnxImportError(f"{where}: expected "
                              f"{_count(schema.min_output, schema.max_output)} outputs "
                              f"({version}), found {n_out}")
    for index, formal in enumerate(schema.inputs):
        if formal.option == _SINGLE and index < n_in and not node.input[index]:
            raise OnnxImportError(f"{where}: input {index} ({formal.name}) is required, found "
                                  f"it empty")
    declared = schema.attributes
    for attr in node.attribute:
        if attr.name not in declared:
            raise OnnxImportError(f"{where}: attribute {attr.name!r} is not one of {version}'s "
                                  f"attributes ({', '.join(sorted(declared)) or 'none'})")
        expected = int(declared[attr.name].type.value)
        if attr.ref_attr_name or attr.type != expected:
            found = f"a reference to {attr.ref_attr_name!r}" if attr.ref_attr_name else \
                _type_name(attr.type)
            raise OnnxImportError(f"{where}: attribute {attr.name!r}: expected "
                                  f"{_type_name(expected)}, found {found}")
    given = {attr.name for attr in node.attribute}
    missing = sorted(name for name, a in declared.items() if a.required and name not in given)
    if missing:
        names = ", ".join(repr(name) for name in missing)
        raise OnnxImportError(f"{where}: expected attribute{'s' if len(missing) > 1 else ''} "
                              f"{names} ({version} requires it), found none")


def _duplicates(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    twice = []
    for name in names:
        if name in seen and name not in twice:
            twice.append(name)
        seen.add(name)
    return twice


def check_graph(graph: GraphProto) -> None:
    """Raise if a name is defined twice (graph inputs, initializers, node outputs), if a
    graph output is defined nowhere, or if the graph has sparse initializers or no outputs."""
    if graph.sparse_initializer:
        raise OnnxImportError(f"sparse initializers are not supported, found "
                              f"{[t.values.name for t in graph.sparse_initializer]}")
    if not graph.output:
        raise OnnxImportError("expected the graph to have at least one output, found none")
    for what, names in (("graph input", [i.name for i in graph.input]),
                        ("initializer", [t.name for t in graph.initializer])):
        twice = _duplicates(names)
        if twice:
            raise OnnxImportError(f"{what} names must be unique, found {twice} more than once")
    defined = {i.name: f"graph input {i.name!r}" for i in graph.input}
    defined.update({t.name: f"initializer {t.name!r}" for t in graph.initializer})
    for node in graph.node:
        for name in node.output:
            if not name:
                continue
            if name in defined:
                raise OnnxImportError(f"{describe_node(node)}: output {name!r} is already "
                                      f"defined by {defined[name]} (every value must be "
                                      f"defined once)")
            defined[name] = describe_node(node)
    missing = [o.name for o in graph.output if o.name not in defined]
    if missing:
        raise OnnxImportError(f"graph output(s) {missing} are not produced by any node, graph "
                              f"input or initializer")
