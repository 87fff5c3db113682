"""Layer helpers for the model zoo: each creates its parameter variables by name.

Every variable carries a type annotation, so the helpers compute parameter shapes from the
input's (lazily inferred) ``checked_type``.
"""

from __future__ import annotations

from collections.abc import Sequence

from passhost.ir.types import TensorType
from passhost.relay import nn
from passhost.relay.expr import Expr, Var, var

__all__ = [
    "batch_norm_infer", "conv2d", "conv_kernel_layout", "dense_add_bias", "layer_norm",
    "tensor_type",
]


def tensor_type(expr: Expr) -> TensorType:
    """The (inferred) tensor type of ``expr``."""
    ty = expr.checked_type
    if not isinstance(ty, TensorType):
        raise TypeError(f"expected a tensor-valued expression, found type {ty}")
    return ty


def conv_kernel_layout(data_layout: str, is_depthwise: bool = False) -> str:
    """The kernel layout the zoo uses with ``data_layout`` (OIHW, HWIO or depthwise HWOI)."""
    if data_layout == "NCHW":
        return "OIHW"
    if data_layout == "NHWC":
        return "HWOI" if is_depthwise else "HWIO"
    raise ValueError(f"unsupported data layout {data_layout!r}")


def _pair(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    a, b = value
    return (int(a), int(b))


def conv2d(data: Expr, weight: Var | None = None, *, name: str, channels: int,
           kernel_size: int | Sequence[int], strides: int | Sequence[int] = (1, 1),
           padding: int | Sequence[int] = (0, 0), dilation: int | Sequence[int] = (1, 1),
           groups: int = 1, data_layout: str = "NCHW", kernel_layout: str | None = None,
           ) -> Expr:
    """A 2-D convolution without bias; creates ``<name>_weight`` unless ``weight`` is given."""
    kernel_size = _pair(kernel_size)
    if kernel_layout is None:
        kernel_layout = conv_kernel_layout(data_layout)
    if weight is None:
        ty = tensor_type(data)
        in_channels = ty.shape[data_layout.index("C")]
        if in_channels % groups:
            raise ValueError(f"{name}: {in_channels} input channels do not split into "
                             f"{groups} groups")
        dims = {"O": channels, "I": in_channels // groups, "H": kernel_size[0],
                "W": kernel_size[1]}
        shape = tuple(dims[c] for c in kernel_layout)
        weight = var(f"{name}_weight", shape=shape, dtype=ty.dtype)
    return nn.conv2d(data, weight, strides=_pair(strides), padding=_pair(padding),
                     dilation=_pair(dilation), groups=groups, channels=channels,
                     kernel_size=kernel_size, data_layout=data_layout,
                     kernel_layout=kernel_layout)


def batch_norm_infer(data: Expr, gamma: Var | None = None, beta: Var | None = None,
                     moving_mean: Var | None = None, moving_var: Var | None = None, *,
                     name: str, axis: int = 1, epsilon: float = 1e-5, center: bool = True,
                     scale: bool = True) -> Expr:
    """Inference-mode batch norm (output 0 of ``nn.batch_norm``); creates ``<name>_gamma``,
    ``_beta``, ``_moving_mean`` and ``_moving_var`` (even when unused) unless given."""
    ty = tensor_type(data)
    shape = (ty.shape[axis],)

    def make(suffix: str) -> Var:
        return var(f"{name}_{suffix}", shape=shape, dtype=ty.dtype)

    gamma = gamma if gamma is not None else make("gamma")
    beta = beta if beta is not None else make("beta")
    moving_mean = moving_mean if moving_mean is not None else make("moving_mean")
    moving_var = moving_var if moving_var is not None else make("moving_var")
    return nn.batch_norm(data, gamma, beta, moving_mean, moving_var, axis=axis,
                         epsilon=epsilon, center=center, scale=scale)[0]


def dense_add_bias(data: Expr, weight: Var | None = None, bias: Var | None = None, *,
                   units: int, name: str) -> Expr:
    """``nn.dense`` then ``nn.bias_add(axis=-1)``; creates ``<name>_weight`` (units x in)
    and ``<name>_bias`` unless given."""
    ty = tensor_type(data)
    if weight is None:
        weight = var(f"{name}_weight", shape=(units, ty.shape[-1]), dtype=ty.dtype)
    if bias is None:
        bias = var(f"{name}_bias", shape=(units,), dtype=ty.dtype)
    out = nn.dense(data, weight, units=units)
    return nn.bias_add(out, bias, axis=-1)


def layer_norm(data: Expr, gamma: Var | None = None, beta: Var | None = None, *, name: str,
               axis: int = -1, epsilon: float = 1e-5) -> Expr:
    """``nn.layer_norm`` over ``axis``; creates ``<name>_gamma`` and ``<name>_beta``."""
    ty = tensor_type(data)
    shape = (ty.shape[axis],)
    if gamma is None:
        gamma = var(f"{name}_gamma", shape=shape, dtype=ty.dtype)
    if beta is None:
        beta = var(f"{name}_beta", shape=shape, dtype=ty.dtype)
    return nn.layer_norm(data, gamma, beta, axis=axis, epsilon=epsilon)
