"""Import a TFLite model (subgraph 0) as a typed graph-level module and its parameters.

The graph inputs become ``main``'s data parameters, in the model's order and named by
their tensor names; every constant tensor an operator reads (a buffer with data) becomes
a parameter, bound by name at build time, as ONNX initializers do. Data stays NHWC;
int8 operators become ``qnn`` operators with TFLite's integer semantics (see
:mod:`passhost.frontend.tflite_ops`). The declared type of every operator output is
checked against the computed one, so a model that disagrees with itself is reported at the
operator that produced the difference.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from passhost.errors import AttrError, IRTypeError
from passhost.frontend.errors import TfliteImportError
from passhost.frontend.tflite_context import OpContext, type_problem
from passhost.frontend.tflite_ops import CONVERTERS
from passhost.frontend.tflite_reader import ModelInfo, OperatorInfo, TensorInfo, read_model
from passhost.ir.module import IRModule
from passhost.ir.types import TensorType
from passhost.relay.expr import Expr, Function, Tuple, Var, var
from passhost.relay.transform import InferType

__all__ = ["from_tflite"]

_INPUT_DTYPES = ("float32", "int8", "int32")


def from_tflite(model: str | os.PathLike[str] | bytes,
                shape: Mapping[str, Sequence[int]] | None = None,
                ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import ``model`` (the bytes of a ``.tflite`` file, or its path); ``shape``
    overrides the shapes of graph inputs by name. Returns the typed module and its
    parameters (name -> array)."""
    return _Importer(read_model(model), dict(shape or {})).run()


def _check_supported(operators: Sequence[OperatorInfo]) -> None:
    """Raise once, listing every unsupported operator type with its count and indices."""
    unsupported: dict[str, list[int]] = {}
    for op in operators:
        if op.custom_code is not None or op.op not in CONVERTERS:
            unsupported.setdefault(op.key, []).append(op.index)
    if unsupported:
        lines = []
        for key, indices in sorted(unsupported.items()):
            custom = " (custom operator)" if key.startswith("CUSTOM(") else ""
            listed = ", ".join(str(i) for i in indices)
            lines.append(f"  {key} x{len(indices)}{custom}: operators {listed}")
        raise TfliteImportError(f"the model uses {len(unsupported)} unsupported operator "
                                f"type(s):\n" + "\n".join(lines))


class _Importer:
    """The state of one import: expressions by tensor index, parameters, data inputs."""

    def __init__(self, model: ModelInfo, shapes: dict[str, Sequence[int]]) -> None:
        self.model = model
        self.tensors = model.tensors
        self.shapes = shapes
        self.exprs: dict[int, Expr] = {}
        self.params: dict[str, np.ndarray] = {}
        self.param_vars: list[Var] = []
        self.data_vars: list[Var] = []
        self.names: set[str] = set()
        self.param_cache: dict[tuple[int, tuple[int, ...]], Var] = {}

    def run(self) -> tuple[IRModule, dict[str, np.ndarray]]:
        """Convert the whole subgraph."""
        _check_supported(self.model.operators)
        self._add_inputs()
        for op in self.model.operators:
            self._convert(op)
        if not self.model.outputs:
            raise TfliteImportError("expected the subgraph to have outputs, found none")
        outputs = [self._expr(i, "graph output") for i in self.model.outputs]
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        func = Function([*self.data_vars, *self.param_vars], body)
        return InferType()(IRModule.from_expr(func)), self.params

    def _name(self, t: TensorInfo) -> str:
        """The tensor's name, or ``tensor_<index>`` when it is empty or already taken."""
        name = t.name if t.name and t.name not in self.names else f"tensor_{t.index}"
        self.names.add(name)
        return name

    def _add_inputs(self) -> None:
        inputs = [self.tensors[i] for i in self.model.inputs]
        extra = sorted(set(self.shapes) - {t.name for t in inputs})
        if extra:
            raise TfliteImportError(f"shape names inputs {extra}; the graph's inputs are "
                                    f"{[t.name for t in inputs]}")
        for t in inputs:
            if t.dtype not in _INPUT_DTYPES:
                raise TfliteImportError(f"graph input {type_problem(t, _INPUT_DTYPES)}")
            shape = tuple(int(d) for d in self.shapes.get(t.name, t.shape))
            if any(d < 1 for d in shape):
                raise TfliteImportError(f"graph input {t.where}: expected a static shape, "
                                        f"found {list(shape)}; give it with "
                                        f"shape={{{t.name!r}: (...)}}")
            v = var(self._name(t), shape=shape, dtype=t.dtype)
            self.exprs[t.index] = v
            self.data_vars.append(v)

    def _param(self, t: TensorInfo, array: np.ndarray) -> Var:
        """The parameter holding ``array``, the data of constant tensor ``t``."""
        key = (t.index, tuple(array.shape))
        if key not in self.param_cache:
            v = var(self._name(t), shape=array.shape, dtype=array.dtype.name)
            self.params[v.name_hint] = array
            self.param_vars.append(v)
            self.param_cache[key] = v
        return self.param_cache[key]

    def _expr(self, index: int, user: str) -> Expr:
        if index in self.exprs:
            return self.exprs[index]
        t = self.tensors[index]
        if t.data is None:
            raise TfliteImportError(
                f"{user}: {t.where} is not produced by any earlier operator, is not a graph "
                f"input and its buffer {t.buffer} holds no data (missing buffer data?)")
        try:
            return self._param(t, t.array())
        except TfliteImportError as exc:
            raise TfliteImportError(f"{user}: {exc}") from exc

    def _convert(self, op: OperatorInfo) -> None:
        ctx = OpContext(op, self.tensors, self._expr, self._param)
        if len(op.outputs) != 1:
            raise ctx.error(f"expected one output, found {len(op.outputs)}")
        try:
            expr = CONVERTERS[op.op](ctx)
            ty = expr.checked_type
        except TfliteImportError:
            raise
        except (IRTypeError, AttrError, ValueError) as exc:
            raise ctx.error(str(exc)) from exc
        out = ctx.output()
        if not isinstance(ty, TensorType) or ty.dtype != out.dtype or \
                (not self.shapes and tuple(ty.shape) != out.shape):
            raise ctx.error(f"computed {ty}, but the model declares {out.where} as "
                            f"{out.dtype}{list(out.shape)}")
        self.exprs[out.index] = expr
