"""Import an ONNX model as a typed graph-level module and its parameters.

Initializers become parameters (bound by name at build time); the other graph inputs become
``main``'s data parameters. Shapes are static, so every shape computation (``Shape``,
``ConstantOfShape``, arithmetic on them) is folded to a constant while importing.

A malformed model is an :class:`OnnxImportError` naming the node or value at fault: the
graph's structure and each node's inputs, outputs and attributes are checked against the
operator's schema before its converter runs, and the errors a converter or an operator's
type relation raises on bad values are re-raised naming the node.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, NodeProto, TensorProto, ValueInfoProto, defs

from passhost.errors import PasshostError
from passhost.frontend.errors import OnnxImportError
from passhost.frontend.onnx_checks import check_graph, check_node
from passhost.frontend.onnx_context import NodeContext, Value, describe_node
from passhost.frontend.onnx_data import passhost_dtype, tensor_array
from passhost.frontend.onnx_registry import (
    OPSET_RANGE,
    Converter,
    converter_table,
    find_converter,
    is_default_domain,
    operator_version,
)
from passhost.ir.module import IRModule
from passhost.ir.types import DTYPES, is_float_dtype
from passhost.relay.expr import Expr, Function, Tuple, Var, const, var
from passhost.relay.interpreter import evaluate
from passhost.relay.transform import InferType

__all__ = ["from_onnx", "load_model"]

#: What converters and operator type relations raise on bad values: re-raised naming the node.
_CONVERSION_ERRORS = (PasshostError, ArithmeticError, IndexError, KeyError, TypeError,
                      ValueError)


def load_model(model: str | os.PathLike[str] | ModelProto) -> ModelProto:
    """The model itself, or the model read from the file at path ``model`` (tensors in
    external files are left there: :func:`from_onnx` reads them from the model's
    directory)."""
    if isinstance(model, ModelProto):
        return model
    path = os.fspath(model)
    form = onnx.serialization.registry.get_format_from_file_extension(Path(path).suffix)
    try:
        if form in (None, "protobuf"):  # as onnx.load decides: binary unless named as text
            return _parse_mapped(path)
        return onnx.load(path, load_external_data=False)
    except (OSError, DecodeError, ValueError) as exc:
        raise OnnxImportError(f"{os.fspath(model)}: expected an ONNX model file, could not "
                              f"read it: {exc}") from exc


def _parse_mapped(path: str) -> ModelProto:
    """The binary model in the file at ``path``, parsed from the file's pages mapped into
    memory rather than from a copy read first (onnx.load reads one: ResNet-50's 100 MB took
    0.18 s to load, 0.09 s to parse mapped)."""
    model = ModelProto()
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:  # nothing to map
            model.ParseFromString(b"")
            return model
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped, \
                memoryview(mapped) as view:
            model.ParseFromString(view)
    return model


def from_onnx(model: str | os.PathLike[str] | ModelProto,
              shape: Mapping[str, Sequence[int]] | None = None,
              base_dir: str | os.PathLike[str] | None = None,
              ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import ``model`` (a path or an ``onnx.ModelProto``); ``shape`` overrides the shapes of
    graph inputs by name. Tensors in external files are read from ``base_dir`` (by default
    the model file's directory; a ModelProto with external tensors needs it). Returns the
    typed module and its parameters (name -> array). The model is not modified."""
    if base_dir is None and not isinstance(model, ModelProto):
        base_dir = Path(os.fspath(model)).parent
    directory = None if base_dir is None else Path(os.fspath(base_dir))
    return _Importer(load_model(model), dict(shape or {}), directory).run()


def _opset(model: ModelProto) -> int:
    for entry in model.opset_import:
        if is_default_domain(entry.domain):
            version = int(entry.version)
            lo, hi = OPSET_RANGE
            if not lo <= version <= hi:
                raise OnnxImportError(f"expected a model of ONNX opset {lo} to {hi}, found "
                                      f"opset {version}")
            return version
    raise OnnxImportError(f"expected the model to import the default ONNX opset, found "
                          f"{[(e.domain, e.version) for e in model.opset_import]}")


def _op_key(node: NodeProto) -> str:
    return node.op_type if is_default_domain(node.domain) else f"{node.domain}.{node.op_type}"


def _converter(node: NodeProto, opset: int) -> Converter | None:
    """The converter for ``node`` at the model's default-domain ``opset``."""
    version = operator_version(node.op_type, "", opset) if is_default_domain(node.domain) \
        else None
    return find_converter(_op_key(node), version)


def _check_supported(nodes: Sequence[NodeProto], opset: int) -> None:
    """Raise once, listing every unsupported operator type with its count and node names."""
    unsupported: dict[str, list[str]] = {}
    for node in nodes:
        if _converter(node, opset) is None:
            key = _op_key(node)
            known = converter_table().get(key)
            if known:
                version = operator_version(node.op_type, "", opset)
                key = f"{key} version {version} (passhost converts versions >= {min(known)})"
            unsupported.setdefault(key, []).append(node.name or "<unnamed>")
    if unsupported:
        lines = [f"  {key} x{len(names)}: {', '.join(names)}"
                 for key, names in sorted(unsupported.items())]
        raise OnnxImportError(f"the model uses {len(unsupported)} unsupported operator "
                              f"type(s):\n" + "\n".join(lines))


def _schema(node: NodeProto, opset: int) -> defs.OpSchema | None:
    """The schema of a default-domain ``node`` at ``opset`` (None in other domains)."""
    if not is_default_domain(node.domain):
        return None
    try:
        return defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:
        raise OnnxImportError(f"{describe_node(node)}: ONNX opset {opset} has no operator "
                              f"{node.op_type}") from None


class _Importer:
    """The state of one import: values by name, parameters and data inputs."""

    def __init__(self, model: ModelProto, shapes: dict[str, Sequence[int]],
                 base_dir: Path | None) -> None:
        self.graph = model.graph
        self.opset = _opset(model)
        self.shapes = shapes
        self.base_dir = base_dir
        check_graph(self.graph)
        self.initializers = {t.name: self._decode(t, f"initializer {t.name!r}")
                             for t in self.graph.initializer}
        self.producers = {name: node for node in self.graph.node for name in node.output
                          if name}
        self.exprs: dict[str, Expr] = {}
        self.known: dict[str, np.ndarray] = {}
        self.params: dict[str, np.ndarray] = {}
        self.param_vars: list[Var] = []
        self.data_vars: list[Var] = []

    def _decode(self, tensor: TensorProto, what: str) -> np.ndarray:
        return tensor_array(tensor, what, self.base_dir)

    def run(self) -> tuple[IRModule, dict[str, np.ndarray]]:
        """Convert the whole graph."""
        _check_supported(self.graph.node, self.opset)
        self._add_inputs()
        for node in self.graph.node:
            self._convert(node)
        outputs = [self._expr(o.name, f"graph output {o.name!r}") for o in self.graph.output]
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        func = Function([*self.data_vars, *self.param_vars], body)
        try:
            mod = InferType()(IRModule.from_expr(func))
        except _CONVERSION_ERRORS as exc:
            raise OnnxImportError(f"the graph's outputs: {_message(exc)}") from exc
        return mod, self.params

    def _add_inputs(self) -> None:
        names = {i.name for i in self.graph.input if i.name not in self.initializers}
        extra = sorted(set(self.shapes) - names)
        if extra:
            raise OnnxImportError(f"shape names inputs {extra}; the graph's data inputs are "
                                  f"{sorted(names)}")
        for info in self.graph.input:
            if info.name not in self.initializers:
                dtype = _input_dtype(info)
                v = var(info.name, shape=self._input_shape(info), dtype=dtype)
                self.exprs[info.name] = v
                self.data_vars.append(v)

    def _input_shape(self, info: ValueInfoProto) -> tuple[int, ...]:
        if info.name in self.shapes:
            given = self.shapes[info.name]
            try:
                dims = tuple(int(d) for d in given)
            except (TypeError, ValueError):
                dims = (-1,)
            if any(d < 0 for d in dims):
                raise OnnxImportError(f"shape[{info.name!r}]: expected a sequence of "
                                      f"non-negative ints, found {given!r}")
            return dims
        tensor_type = info.type.tensor_type
        if not tensor_type.HasField("shape"):
            raise OnnxImportError(f"graph input {info.name!r}: expected a static shape, found "
                                  f"none (unknown rank); give it with "
                                  f"shape={{{info.name!r}: (...)}}")
        dims = tensor_type.shape.dim
        if not all(d.HasField("dim_value") and d.dim_value >= 0 for d in dims):
            found = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                     for d in dims]
            raise OnnxImportError(f"graph input {info.name!r}: expected a static shape, found "
                                  f"{found}; give it with shape={{{info.name!r}: (...)}}")
        return tuple(int(d.dim_value) for d in dims)

    def _defined(self, name: str) -> bool:
        return name in self.exprs or name in self.known or name in self.initializers

    def _expr(self, name: str, user: str) -> Expr:
        if name in self.exprs:
            return self.exprs[name]
        if name in self.known:
            expr: Expr = const(_graph_array(self.known[name], name, user),
                               self.known[name].dtype.name)
        elif name in self.initializers:
            array = _graph_array(self.initializers[name], name, user)
            expr = var(name, shape=array.shape, dtype=array.dtype.name)
            self.params[name] = array
            self.param_vars.append(expr)
        else:
            raise OnnxImportError(f"{user}: input {name!r} is not produced by any node, graph "
                                  f"input or initializer (missing initializer?)")
        self.exprs[name] = expr
        return expr

    def _known(self, name: str) -> np.ndarray | None:
        if name in self.known:
            return self.known[name]
        return self.initializers.get(name)

    def _foldable(self, node: NodeProto) -> bool:
        """Whether every input is known and none is a floating-point parameter."""
        for name in node.input:
            if not name or name in self.known:
                continue
            array = self.initializers.get(name)
            if array is None or is_float_dtype(array.dtype.name):
                return False
        return True

    def _check_defined(self, node: NodeProto) -> None:
        for name in node.input:
            if not name or self._defined(name):
                continue
            producer = self.producers.get(name)
            if producer is not None:
                raise OnnxImportError(
                    f"{describe_node(node)}: input {name!r} is produced by "
                    f"{describe_node(producer)}, which comes later: nodes must be in "
                    f"topological order (is there a cycle?)")
            raise OnnxImportError(f"{describe_node(node)}: input {name!r} is not produced by "
                                  f"any earlier node, graph input or initializer (missing "
                                  f"initializer?)")

    def _convert(self, node: NodeProto) -> None:
        schema = _schema(node, self.opset)
        if schema is not None:
            check_node(node, schema)
        self._check_defined(node)
        fold = self._foldable(node)

        def expr_of(name: str) -> Expr:
            if fold:
                array = _graph_array(self._known(name), name, describe_node(node))
                return const(array, array.dtype.name)
            return self._expr(name, describe_node(node))

        try:
            ctx = NodeContext(node, self.opset, expr_of, self._known, self._decode)
            convert = _converter(node, self.opset)
            assert convert is not None  # _check_supported saw every node
            result = convert(ctx)
            values = list(result) if isinstance(result, (list, tuple)) else [result]
            missing = [name for name in node.output[len(values):] if name]
            if missing:
                raise ctx.error(f"expected a value for output(s) {missing}, the converter "
                                f"made {len(values)} output(s)")
            for name, value in zip(node.output, values):
                if name:
                    self._store(name, value, fold)
        except OnnxImportError:
            raise
        except _CONVERSION_ERRORS as exc:
            raise OnnxImportError(f"{describe_node(node)}: {_message(exc)}") from exc

    def _store(self, name: str, value: Value, fold: bool) -> None:
        if isinstance(value, np.ndarray):
            self.known[name] = value
        elif fold:
            self.known[name] = np.asarray(evaluate(Function([], value)))
        else:
            value.checked_type  # noqa: B018 - type each node now, so errors name it
            self.exprs[name] = value


def _message(exc: Exception) -> str:
    """The message of ``exc``: passhost's own errors say what is wrong; others (a converter
    indexing past a list, say) keep their type to tell what happened."""
    return str(exc) if isinstance(exc, PasshostError) else f"{type(exc).__name__}: {exc}"


def _graph_array(array: np.ndarray | None, name: str, user: str) -> np.ndarray:
    """``array`` (the value of ``name``), checked to be of a dtype graph values may have."""
    if array is None:
        raise OnnxImportError(f"{user}: input {name!r} is not known while importing")
    if array.dtype.name not in DTYPES:
        raise OnnxImportError(f"{user}: input {name!r} is of dtype {array.dtype.name}, which "
                              f"passhost has no tensors of (it has {', '.join(DTYPES)})")
    return array


def _input_dtype(info: ValueInfoProto) -> str:
    kind = info.type.WhichOneof("value")
    if kind != "tensor_type":
        raise OnnxImportError(f"graph input {info.name!r}: expected a tensor, found "
                              f"{kind or 'no type'} (passhost imports tensors only)")
    return passhost_dtype(info.type.tensor_type.elem_type, f"graph input {info.name!r}")
