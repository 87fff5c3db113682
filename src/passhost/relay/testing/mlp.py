"""A multi-layer perceptron (as TVM's relay.testing.mlp, with configurable hidden layers)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.analysis import free_vars
from passhost.relay.expr import Function, var
from passhost.relay.testing import layers
from passhost.relay.testing.init import create_workload

__all__ = ["get_net", "get_workload"]


def get_net(batch_size: int, num_classes: int = 10,
            image_shape: tuple[int, ...] = (1, 28, 28), dtype: str = "float32",
            hidden_units: Sequence[int] = (128, 64)) -> Function:
    """The MLP graph function: batch_flatten, then dense + bias_add + relu per hidden layer
    (``fc1``, ``fc2``, ...), a final dense + bias_add and softmax."""
    data = var("data", shape=(batch_size, *image_shape), dtype=dtype)
    body = nn.batch_flatten(data)
    for i, units in enumerate(hidden_units, start=1):
        body = nn.relu(layers.dense_add_bias(body, units=units, name=f"fc{i}"))
    body = layers.dense_add_bias(body, units=num_classes, name=f"fc{len(hidden_units) + 1}")
    net = nn.softmax(body)
    return Function(free_vars(net), net)


def get_workload(batch_size: int = 1, num_classes: int = 10,
                 image_shape: tuple[int, ...] = (1, 28, 28), dtype: str = "float32",
                 hidden_units: Sequence[int] = (128, 64),
                 ) -> tuple[IRModule, dict[str, np.ndarray]]:
    """An MLP module and its deterministic parameters."""
    return create_workload(get_net(batch_size, num_classes, image_shape, dtype, hidden_units))
