"""Neural-network operators (``nn.*``): convolution, dense, normalisation, pooling, ..."""

from __future__ import annotations

import numpy as np

from passhost.relay.op.common import identity_rel
from passhost.relay.op.registry import OpPattern, define_op

__all__ = ["relu"]


def _relu(_attrs: object, x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), dtype=x.dtype))


relu = define_op(
    "nn.relu", inputs=("data",), type_rel=identity_rel, compute=_relu,
    pattern=OpPattern.ELEMWISE, description="max(x, 0), elementwise.")
