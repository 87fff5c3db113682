"""The inference race's models: full-size architectures from transformers configurations
(the configurations' default sizes are the published models'), a one-layer transformer
encoder, and the MLP, ResNet-18 and MobileNetV2 of ``onnx_models.py`` (the models of
the peers' figures in benchmarks/README.md), all with random weights from a fixed seed; nothing
is downloaded.

- :data:`MODELS`: what each model is, by name; :data:`SMALL`: the ones ``--quick`` races;
- :func:`onnx_file`: the model's ONNX file, exported once into a cache folder;
- :func:`example_inputs`: its inputs (NumPy arrays by input name, in the file's order);
- :func:`torch_forward`: the same network as PyTorch eager (needs torch).

The torch models are exported with ``torch.onnx.export`` exactly as the export tests' tiny
models are (:func:`passhost.testing.torch_exports.export_module`). A cached file is keyed by
the model's name alone: delete the cache folder after changing a builder here. The PyTorch
twin is rebuilt from the same seed, so its weights equal the cached file's; the race checks
its output against onnxruntime's before timing it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_models

from passhost.testing.torch_exports import export_module, positional, randomise_batch_norms

#: The seed of every model's weights and inputs.
SEED = 20261125
#: The token sequence length of the language models.
SEQUENCE = 128
#: The images' side for the vision models.
IMAGE = 224
#: The one-layer encoder's sequence length and width.
ENCODER_SEQUENCE, ENCODER_WIDTH = 16, 64


@dataclass(frozen=True)
class RaceModel:
    """One model of the race: what it is, and how to make it.

    Exactly one of ``onnx_builder`` (an ONNX graph written with ``onnx.helper``) and
    ``torch_builder`` (a torch module in eval mode taking the inputs positionally) is set.
    """

    about: str
    inputs: Callable[[], dict[str, np.ndarray]]
    onnx_builder: Callable[[], onnx.ModelProto] | None = None
    torch_builder: Callable[[], Any] | None = None


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def _image() -> dict[str, np.ndarray]:
    return {"pixel_values": _rng().standard_normal((1, 3, IMAGE, IMAGE), dtype=np.float32)}


def _tokens(vocab: int) -> np.ndarray:
    return _rng().integers(0, vocab, (1, SEQUENCE), dtype=np.int64)


def _bert_inputs() -> dict[str, np.ndarray]:
    return {"input_ids": _tokens(30522), "attention_mask": np.ones((1, SEQUENCE), np.int64),
            "token_type_ids": np.zeros((1, SEQUENCE), np.int64)}


def _he_scaled(model: Any) -> None:
    """Draw every convolution's and linear layer's weights from N(0, 2 / fan-in) (He), and
    give the batch norms random statistics near the identity, so that signals keep their
    scale through depth: with transformers' initialisation (std 0.02, batch norm scales
    included) MobileNetV2's and EfficientNet's logits are 0, and any output would match."""
    import torch
    from torch import nn

    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, nn.Conv2d | nn.Linear):
                nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
    randomise_batch_norms(model)


def _classifier(config_name: str, model_name: str, **config: Any) -> Callable[[], Any]:
    """A builder of transformers' ``model_name`` (an image classifier with 1000 classes)
    from ``config_name`` with ``config`` over its defaults, returning the logits, with
    weights from :func:`_he_scaled`."""

    def build() -> Any:
        import transformers

        settings = {"num_labels": 1000, **config}
        model = getattr(transformers, model_name)(getattr(transformers, config_name)(**settings))
        _he_scaled(model)
        return positional(model.eval(), ["pixel_values"], "logits")

    return build


def _text(config_name: str, model_name: str, names: list[str],
          **config: Any) -> Callable[[], Any]:
    """A builder of transformers' ``model_name`` (a text model without a head) from
    ``config_name`` with ``config`` over its defaults, returning the last hidden state."""

    def build() -> Any:
        import transformers

        model = getattr(transformers, model_name)(getattr(transformers, config_name)(**config))
        return positional(model.eval(), names, "last_hidden_state")

    return build


def _encoder() -> Any:
    """One ``torch.nn.TransformerEncoderLayer``: 4 heads, feed-forward 256, exact GELU."""
    from torch import nn

    return nn.TransformerEncoderLayer(ENCODER_WIDTH, 4, 256, dropout=0.0, activation="gelu",
                                      batch_first=True).eval()


#: The race's models by name, in the order the race takes them.
MODELS: dict[str, RaceModel] = {
    "mlp": RaceModel("MLP 784-512-512-10 (onnx.helper)",
                     lambda: {"x": _rng().standard_normal((1, 784), dtype=np.float32)},
                     onnx_builder=onnx_models.mlp),
    "encoder": RaceModel(
        f"torch.nn.TransformerEncoderLayer, seq {ENCODER_SEQUENCE}, d {ENCODER_WIDTH}",
        lambda: {"src": _rng().standard_normal((1, ENCODER_SEQUENCE, ENCODER_WIDTH),
                                               dtype=np.float32)},
        torch_builder=_encoder),
    "resnet-18": RaceModel("ResNet-18 (onnx.helper), 224x224",
                           lambda: {"x": _image()["pixel_values"]},
                           onnx_builder=onnx_models.resnet18),
    "mobilenet-v2-onnx": RaceModel("MobileNetV2 1.0 (onnx.helper), 224x224",
                                   lambda: {"x": _image()["pixel_values"]},
                                   onnx_builder=onnx_models.mobilenet_v2),
    "resnet-50": RaceModel("ResNetConfig() (ResNet-50), 224x224", _image,
                           torch_builder=_classifier("ResNetConfig",
                                                     "ResNetForImageClassification")),
    "mobilenet-v2": RaceModel("MobileNetV2Config() (1.0, 224)", _image,
                              torch_builder=_classifier("MobileNetV2Config",
                                                        "MobileNetV2ForImageClassification")),
    "efficientnet-b0": RaceModel(
        "EfficientNetConfig at B0 (width 1.0, depth 1.0, 224, hidden 1280)", _image,
        torch_builder=_classifier("EfficientNetConfig", "EfficientNetForImageClassification",
                                  width_coefficient=1.0, depth_coefficient=1.0,
                                  image_size=IMAGE, hidden_dim=1280, dropout_rate=0.2)),
    "convnext-t": RaceModel("ConvNextConfig() (ConvNeXt-T), 224x224", _image,
                            torch_builder=_classifier("ConvNextConfig",
                                                      "ConvNextForImageClassification")),
    "vit-b16": RaceModel("ViTConfig() (ViT-B/16), 224x224", _image,
                         torch_builder=_classifier("ViTConfig", "ViTForImageClassification")),
    "bert-base": RaceModel(f"BertConfig() (BERT-base), seq {SEQUENCE}", _bert_inputs,
                           torch_builder=_text("BertConfig", "BertModel", list(_bert_inputs()))),
    "gpt2": RaceModel(f"GPT2Config() (GPT-2 small, 124M), seq {SEQUENCE}",
                      lambda: {"input_ids": _tokens(50257)},
                      torch_builder=_text("GPT2Config", "GPT2Model", ["input_ids"],
                                          use_cache=False)),
    "llama": RaceModel(
        f"LlamaConfig: 4 layers, hidden 512, 8 heads (4 key-value), ffn 1536, "
        f"vocab 32000, seq {SEQUENCE}",
        lambda: {"input_ids": _tokens(32000)},
        torch_builder=_text("LlamaConfig", "LlamaModel", ["input_ids"], hidden_size=512,
                            intermediate_size=1536, num_hidden_layers=4,
                            num_attention_heads=8, num_key_value_heads=4, vocab_size=32000,
                            max_position_embeddings=2048, use_cache=False)),
}
#: The models ``--quick`` races: those that take well under a second to export and run.
SMALL = ("mlp", "encoder")


def example_inputs(name: str) -> dict[str, np.ndarray]:
    """Model ``name``'s inputs: NumPy arrays by input name, in the ONNX file's order."""
    return MODELS[name].inputs()


def _torch_module(name: str) -> Any:
    """Model ``name``'s torch module, weights drawn from :data:`SEED`."""
    import torch

    torch.manual_seed(SEED)
    builder = MODELS[name].torch_builder
    assert builder is not None, name
    return builder()


def onnx_file(name: str, cache: Path) -> Path:
    """Model ``name``'s ONNX file ``cache/<name>.onnx``, built or exported when missing (to
    a temporary name first, so an interrupted export leaves no file that looks whole)."""
    path = cache / f"{name}.onnx"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / f"{name}.onnx.{os.getpid()}.partial"
    model = MODELS[name]
    try:
        if model.onnx_builder is not None:
            onnx.save(model.onnx_builder(), partial)
        else:
            export_module(_torch_module(name), example_inputs(name), partial)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def torch_forward(name: str, path: Path) -> Callable[..., Any]:
    """Model ``name`` as PyTorch eager, taking its inputs (tensors) positionally; ``path`` is
    its ONNX file, whose weights the twins of the ``onnx.helper`` models copy. Needs torch
    (ImportError without it)."""
    if MODELS[name].onnx_builder is not None:
        return onnx_models.to_torch(onnx.load(path))
    return _torch_module(name)
