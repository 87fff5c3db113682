"""Import an ONNX model as a typed graph-level module and its parameters.

Initializers become parameters (bound by name at build time); the other graph inputs become
``main``'s data parameters. Shapes are static, so every shape computation (``Shape``,
``ConstantOfShape``, arithmetic on them) is folded to a constant while importing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, NodeProto, ValueInfoProto, helper, numpy_helper

from passhost.errors import AttrError, IRTypeError
from passhost.frontend.errors import OnnxImportError
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import (
    OPSET_RANGE,
    Converter,
    converter_table,
    find_converter,
    is_default_domain,
    operator_version,
)
from passhost.ir.module import IRModule
from passhost.relay.expr import Expr, Function, Tuple, Var, const, var
from passhost.relay.interpreter import evaluate
from passhost.relay.transform import InferType

__all__ = ["from_onnx", "load_model"]


def load_model(model: str | os.PathLike[str] | ModelProto) -> ModelProto:
    """The model itself, or the model read from the file at path ``model``."""
    if isinstance(model, ModelProto):
        return model
    try:
        return onnx.load(os.fspath(model))
    except (OSError, DecodeError, ValueError) as exc:
        raise OnnxImportError(f"{os.fspath(model)}: expected an ONNX model file, could not "
                              f"read it: {exc}") from exc


def from_onnx(model: str | os.PathLike[str] | ModelProto,
              shape: Mapping[str, Sequence[int]] | None = None,
              ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import ``model`` (a path or an ``onnx.ModelProto``); ``shape`` overrides the shapes of
    graph inputs by name. Returns the typed module and its parameters (name -> array)."""
    return _Importer(load_model(model), dict(shape or {})).run()


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


class _Importer:
    """The state of one import: values by name, parameters and data inputs."""

    def __init__(self, model: ModelProto, shapes: dict[str, Sequence[int]]) -> None:
        self.graph = model.graph
        self.opset = _opset(model)
        self.shapes = shapes
        self.initializers = {t.name: numpy_helper.to_array(t) for t in self.graph.initializer}
        self.exprs: dict[str, Expr] = {}
        self.known: dict[str, np.ndarray] = {}
        self.params: dict[str, np.ndarray] = {}
        self.param_vars: list[Var] = []
        self.data_vars: list[Var] = []

    def run(self) -> tuple[IRModule, dict[str, np.ndarray]]:
        """Convert the whole graph."""
        _check_supported(self.graph.node, self.opset)
        self._add_inputs()
        for node in self.graph.node:
            self._convert(node)
        outputs = [self._expr(o.name, "graph output") for o in self.graph.output]
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        func = Function([*self.data_vars, *self.param_vars], body)
        mod = InferType()(IRModule.from_expr(func))
        return mod, self.params

    def _add_inputs(self) -> None:
        names = {i.name for i in self.graph.input if i.name not in self.initializers}
        extra = sorted(set(self.shapes) - names)
        if extra:
            raise OnnxImportError(f"shape names inputs {extra}; the graph's data inputs are "
                                  f"{sorted(names)}")
        for info in self.graph.input:
            if info.name not in self.initializers:
                v = var(info.name, shape=self._input_shape(info), dtype=_input_dtype(info))
                self.exprs[info.name] = v
                self.data_vars.append(v)

    def _input_shape(self, info: ValueInfoProto) -> tuple[int, ...]:
        if info.name in self.shapes:
            return tuple(int(d) for d in self.shapes[info.name])
        dims = info.type.tensor_type.shape.dim
        if not all(d.HasField("dim_value") for d in dims):
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
            expr: Expr = const(self.known[name])
        elif name in self.initializers:
            array = self.initializers[name]
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
            if array is None or array.dtype.kind == "f":
                return False
        return True

    def _convert(self, node: NodeProto) -> None:
        fold = self._foldable(node)

        def expr_of(name: str) -> Expr:
            if fold:
                return const(self._known(name))
            return self._expr(name, ctx.where)

        ctx = NodeContext(node, self.opset, expr_of, self._known)
        for name in node.input:
            if name and not self._defined(name):
                raise ctx.error(f"input {name!r} is not produced by any earlier node, graph "
                                f"input or initializer (missing initializer?)")
        try:
            convert = _converter(node, self.opset)
            assert convert is not None  # _check_supported saw every node
            result = convert(ctx)
            values = list(result) if isinstance(result, (list, tuple)) else [result]
            names = list(node.output[:len(values)])
            if len(values) < len([n for n in node.output if n]):
                raise ctx.error(f"expected {len(node.output)} outputs, converter made "
                                f"{len(values)}")
            for name, value in zip(names, values):
                if name:
                    self._store(name, value, fold)
        except (IRTypeError, AttrError) as exc:
            raise ctx.error(str(exc)) from exc

    def _store(self, name: str, value: Value, fold: bool) -> None:
        if isinstance(value, np.ndarray):
            self.known[name] = value
        elif fold:
            self.known[name] = np.asarray(evaluate(Function([], value)))
        else:
            value.checked_type  # noqa: B018 - type each node now, so errors name it
            self.exprs[name] = value


def _input_dtype(info: ValueInfoProto) -> str:
    elem = info.type.tensor_type.elem_type
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem)).name
    except (KeyError, TypeError) as exc:
        raise OnnxImportError(f"graph input {info.name!r}: expected a tensor element type, "
                              f"found {elem}") from exc
