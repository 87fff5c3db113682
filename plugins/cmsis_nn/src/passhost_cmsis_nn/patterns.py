"""The ``cmsis-nn`` pattern table: which graph patterns become CMSIS-NN calls.

Composite names and patterns (``[...]`` is optional; int8, and int16 for pools, add and mul):

- ``cmsis-nn.qnn_conv2d``: ``[nn.pad] -> qnn.conv2d -> [nn.bias_add | add] -> qnn.requantize
  -> [clip]`` (with the pad first; if that is refused, without it), convolution or depthwise;
- ``cmsis-nn.qnn_fully_connected``: ``[reshape] -> qnn.dense -> [nn.bias_add | add] ->
  qnn.requantize -> [clip]``;
- ``cmsis-nn.qnn_avg_pool2d``: ``cast -> nn.avg_pool2d -> cast -> [clip]``;
- ``cmsis-nn.qnn_max_pool2d``: ``nn.max_pool2d -> [clip]``;
- ``cmsis-nn.qnn_add`` / ``cmsis-nn.qnn_mul``: ``qnn.add | qnn.mul -> [clip]``;
- ``cmsis-nn.qnn_softmax``: ``qnn.softmax``.

Every entry's check reads the match with :mod:`passhost_cmsis_nn.layers`; what it refuses
(a kernel zero point other than 0, a depthwise convolution without bias, a fused pad more
than one larger at the end, a softmax output quantisation other than (1/256, -128), ...)
stays with the host target. :func:`rejection` tells why a match is refused.

:func:`partition_for_cmsis_nn` partitions a module outside the build flow (the registered
pipeline ``partition_for_cmsis_nn``, which ``passhost opt --passes`` also runs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from passhost.ir import IRModule
from passhost.relay import Expr
from passhost.relay.dataflow_pattern import Pattern, is_constant, is_op, wildcard
from passhost_cmsis_nn import layers
from passhost_cmsis_nn.layers import Layer, Unsupported

__all__ = [
    "KIND", "READERS", "partition_for_cmsis_nn", "pattern_table", "read_layer", "rejection",
]

#: The target kind (and the prefix of the composite names).
KIND = "cmsis-nn"

Reader = Callable[..., Layer]

#: Composite name -> the function reading a match of it as a CMSIS-NN call.
READERS: dict[str, Reader] = {
    f"{KIND}.qnn_conv2d": layers.read_conv2d,
    f"{KIND}.qnn_fully_connected": layers.read_fully_connected,
    f"{KIND}.qnn_avg_pool2d": layers.read_avg_pool2d,
    f"{KIND}.qnn_max_pool2d": layers.read_max_pool2d,
    f"{KIND}.qnn_add": layers.read_add,
    f"{KIND}.qnn_mul": layers.read_mul,
    f"{KIND}.qnn_softmax": layers.read_softmax,
}


def _consts(n: int) -> list[Pattern]:
    return [is_constant() for _ in range(n)]


def _with_clip(pattern: Pattern) -> Pattern:
    return pattern.optional(lambda x: is_op("clip")(x))


def _requantized(accumulate: Pattern) -> Pattern:
    """``accumulate -> [bias] -> qnn.requantize -> [clip]``."""
    biased = accumulate.optional(
        lambda x: is_op("nn.bias_add")(x, is_constant()) | is_op("add")(x, is_constant()))
    return _with_clip(is_op("qnn.requantize")(biased, *_consts(4)))


def _conv2d(fused_pad: bool) -> Pattern:
    data = is_op("nn.pad")(wildcard()) if fused_pad else wildcard()
    return _requantized(is_op("qnn.conv2d")(data, *_consts(5)))


def _fully_connected(fused_reshape: bool) -> Pattern:
    data = is_op("reshape")(wildcard()) if fused_reshape else wildcard()
    return _requantized(is_op("qnn.dense")(data, *_consts(5)))


def _avg_pool2d() -> Pattern:
    pooled = is_op("nn.avg_pool2d")(is_op("cast")(wildcard()))
    return _with_clip(is_op("cast")(pooled))


def _binary(op: str) -> Pattern:
    return _with_clip(is_op(op)(wildcard(), wildcard(), *_consts(6)))


def read_layer(name: str, root: Expr, const_of: layers.ConstOf = layers.constant_of,
               **options: Any) -> Layer:
    """Read the match of composite ``name`` rooted at ``root`` as a CMSIS-NN call (raises
    :class:`~passhost_cmsis_nn.layers.Unsupported` when the target does not take it)."""
    return READERS[name](root, const_of, **options)


def rejection(name: str, root: Expr, **options: Any) -> str | None:
    """Why the target refuses the match of composite ``name`` at ``root`` (None: taken)."""
    try:
        read_layer(name, root, **options)
    except Unsupported as err:
        return str(err)
    return None


def _check(name: str, **options: Any) -> Callable[[Expr], bool]:
    def check(root: Expr) -> bool:
        return rejection(name, root, **options) is None

    check.__name__ = f"check_{name.split('.')[-1]}"
    return check


def pattern_table(target: Any = None) -> list[tuple[str, Pattern, Callable[[Expr], bool]]]:
    """The entries ``(composite name, pattern, check)``, in the order they are tried (the
    same for every ``target``)."""
    conv, fc = f"{KIND}.qnn_conv2d", f"{KIND}.qnn_fully_connected"
    return [
        (conv, _conv2d(True), _check(conv, fused_pad=True)),
        (conv, _conv2d(False), _check(conv)),
        (fc, _fully_connected(True), _check(fc, fused_reshape=True)),
        (fc, _fully_connected(False), _check(fc)),
        (f"{KIND}.qnn_avg_pool2d", _avg_pool2d(), _check(f"{KIND}.qnn_avg_pool2d")),
        (f"{KIND}.qnn_max_pool2d", _with_clip(is_op("nn.max_pool2d")(wildcard())),
         _check(f"{KIND}.qnn_max_pool2d")),
        (f"{KIND}.qnn_add", _binary("qnn.add"), _check(f"{KIND}.qnn_add")),
        (f"{KIND}.qnn_mul", _binary("qnn.mul"), _check(f"{KIND}.qnn_mul")),
        (f"{KIND}.qnn_softmax", is_op("qnn.softmax")(wildcard(), *_consts(4)),
         _check(f"{KIND}.qnn_softmax")),
    ]



def partition_for_cmsis_nn(mod: IRModule, params: Mapping[str, Any] | None = None,
                           ) -> IRModule:
    """``mod`` with every match the target takes moved into a function tagged
    ``Compiler="cmsis-nn"``: ``params`` (name -> array) are bound to ``main`` first, then the
    pipeline ``partition_for_cmsis_nn`` runs (InferType, the pattern table's MergeComposite,
    AnnotateTarget, PartitionGraph). ``passhost.build`` does the same after its Optimize."""
    from passhost.relay.transform import bind_params_by_name
    from passhost.transform import build_pipeline
    from passhost_cmsis_nn.plugin import PIPELINE

    if params:
        arrays = {name: np.asarray(value) for name, value in params.items()}
        mod = mod.with_function("main", bind_params_by_name(mod["main"], arrays))
    return build_pipeline(PIPELINE)(mod)
