"""The built-in model zoo by name: ``get_model("resnet-18")`` -> (IRModule, params)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from passhost.errors import UnknownNameError
from passhost.ir.module import IRModule

Workload = tuple[IRModule, dict[str, np.ndarray]]


def _resnet(layers: int) -> Callable[[], Workload]:
    def build() -> Workload:
        from passhost.relay.testing import resnet

        return resnet.get_workload(num_layers=layers)

    return build


def _mobilenet(version: int) -> Callable[[], Workload]:
    def build() -> Workload:
        from passhost.relay.testing import mobilenet

        return mobilenet.get_workload() if version == 1 else mobilenet.get_workload_v2()

    return build


def _mlp() -> Workload:
    from passhost.relay.testing import mlp

    return mlp.get_workload(hidden_units=(512, 512))


def _transformer() -> Workload:
    from passhost.relay.testing import transformer

    return transformer.get_workload()


_MODELS: dict[str, tuple[Callable[[], Workload], str]] = {
    "resnet-18": (_resnet(18), "ResNet-18, 1x3x224x224 NCHW, 1000 classes"),
    "resnet-34": (_resnet(34), "ResNet-34, 1x3x224x224 NCHW, 1000 classes"),
    "resnet-50": (_resnet(50), "ResNet-50 (bottleneck), 1x3x224x224 NCHW, 1000 classes"),
    "mobilenet-v1": (_mobilenet(1), "MobileNet v1, 1x3x224x224 NCHW, 1000 classes"),
    "mobilenet-v2": (_mobilenet(2), "MobileNetV2, 1x3x224x224 NCHW, 1000 classes"),
    "mlp": (_mlp, "MLP 784-512-512-10 on 1x1x28x28"),
    "transformer": (_transformer, "one transformer encoder block, 1x16x64"),
}


#: Short names (as ``passhost compile`` users type them) for zoo models.
ALIASES = {"resnet18": "resnet-18", "resnet34": "resnet-34", "resnet50": "resnet-50",
           "mobilenet": "mobilenet-v1", "mobilenetv2": "mobilenet-v2"}


def list_models() -> list[tuple[str, str]]:
    """(name, description) of every zoo model."""
    return [(name, desc) for name, (_, desc) in _MODELS.items()]


def is_model(name: str) -> bool:
    """Whether ``name`` (or its alias) names a zoo model."""
    return ALIASES.get(name, name) in _MODELS


def get_model(name: str) -> Workload:
    """Build zoo model ``name`` (or an alias such as ``resnet18``): its module and its
    (deterministic) parameters."""
    entry = _MODELS.get(ALIASES.get(name, name))
    if entry is None:
        raise UnknownNameError("zoo model", name, [*_MODELS, *ALIASES])
    return entry[0]()
