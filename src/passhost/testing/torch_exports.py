"""Small PyTorch models of real architectures, exported to ONNX by ``torch.onnx.export``: the
models of the export tests (``tests/test_onnx_exports.py``) and of the export benchmark
(``benchmarks/onnx_exports.py``).

Each model is one of :data:`MODEL_NAMES`: a transformers model from a tiny configuration
(BERT, GPT-2, a T5 encoder, LLaMA, ViT, a Whisper encoder, EfficientNet, ConvNeXt,
SegFormer) or a few ``torch.nn`` layers reproducing an architecture's blocks (MobileNetV3),
with random weights from a fixed seed, exported at one static input shape.

- :func:`build`: the model in eval mode and its example inputs (NumPy arrays by input name);
- :func:`export`: build a model and export it to an ONNX file in a folder;
- :func:`export_module`: export any torch module at its example inputs (how :func:`export`
  does it; the full-size models of ``benchmarks/`` use it too);
- :func:`positional`: a transformers model wrapped to take its inputs positionally;
- :func:`randomise_batch_norms`: random statistics for a model's batch norms;
- :func:`op_types`: the operator types an ONNX model uses;
- :func:`error_bound`: how far an output may be from onnxruntime's.

The exporter is torch's default, the ``torch.export``-based one (``dynamo=True``, which needs
``onnxscript``), at its default opset :data:`OPSET`, with its graph optimisation on (batch
norms fold into convolutions, shape arithmetic into constants), as a user running
``torch.onnx.export`` gets it. The TorchScript exporter (``dynamo=False``) is deprecated and
cannot export transformers' LLaMA (``aten::diff``).

Importing this module needs only NumPy; torch, transformers and onnx are imported on first
use (the ``exports`` extra of passhost's ``pyproject.toml`` installs them).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ATOL", "MODEL_NAMES", "OPSET", "RTOL", "ExportedModel", "build", "error_bound",
           "export", "export_module", "op_types", "positional", "randomise_batch_norms"]

#: The ONNX opset the models are exported at.
OPSET = 20
#: The seed of every model's weights and inputs.
SEED = 20261122
#: An output matches onnxruntime's when ``max|got - want| <= RTOL * max|want| + ATOL``.
RTOL = 1e-4
ATOL = 1e-6


@dataclass(frozen=True)
class ExportedModel:
    """One exported model: its name, ONNX file and example inputs (NumPy arrays by input
    name, in the file's input order)."""

    name: str
    path: Path
    inputs: dict[str, np.ndarray]


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def _tokens(vocab: int, length: int) -> np.ndarray:
    """A batch of one random token sequence (int64)."""
    return _rng().integers(0, vocab, (1, length), dtype=np.int64)


def _normal(*shape: int) -> np.ndarray:
    """Random float32 values from the standard normal distribution."""
    return _rng().standard_normal(shape, dtype=np.float32)


def positional(model: Any, names: Sequence[str], key: str) -> Any:
    """``model`` (a transformers model) wrapped into a module in eval mode that takes the
    inputs ``names`` positionally and returns the output ``key``."""
    from torch import nn

    class Positional(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: Any) -> Any:
            return self.model(**dict(zip(names, args)))[key]

    return Positional().eval()


def _hf(model: Any, inputs: dict[str, np.ndarray], key: str = "last_hidden_state") -> Any:
    return positional(model, list(inputs), key), inputs


def _bert() -> tuple[Any, dict[str, np.ndarray]]:
    """BERT: token, position and segment embeddings, LayerNorm, attention with a padding
    mask (the last tokens masked out), GELU feed-forward."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=32)
    mask = np.ones((1, 12), np.int64)
    mask[0, 9:] = 0
    inputs = {"input_ids": _tokens(100, 12), "attention_mask": mask,
              "token_type_ids": np.zeros((1, 12), np.int64)}
    return _hf(BertModel(config), inputs)


def _gpt2() -> tuple[Any, dict[str, np.ndarray]]:
    """GPT-2: learned positions, causal attention, Conv1D (addmm) projections, GELU (tanh)."""
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=1, eos_token_id=1, use_cache=False)
    return _hf(GPT2Model(config), {"input_ids": _tokens(100, 12)})


def _t5_encoder() -> tuple[Any, dict[str, np.ndarray]]:
    """T5 v1.1 encoder: a relative position bias gathered from a learned table (the buckets
    fold to constants at a static length), RMS LayerNorm without a mean, gated GELU (tanh
    form) feed-forward."""
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                      relative_attention_num_buckets=8, relative_attention_max_distance=16,
                      feed_forward_proj="gated-gelu", use_cache=False)
    return _hf(T5EncoderModel(config), {"input_ids": _tokens(100, 12)})


def _llama() -> tuple[Any, dict[str, np.ndarray]]:
    """LLaMA decoder: RMSNorm, rotary position embeddings (rotate-half: slices, negation,
    concatenation), grouped-query causal attention (keys and values expanded over the
    heads), SiLU-gated feed-forward."""
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=32, use_cache=False)
    return _hf(LlamaModel(config), {"input_ids": _tokens(100, 12)})


def _vit() -> tuple[Any, dict[str, np.ndarray]]:
    """ViT: patch embedding convolution, class token, pre-norm encoder, GELU."""
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, image_size=32, patch_size=8)
    return _hf(ViTModel(config, add_pooling_layer=False), {"pixel_values": _normal(1, 3, 32, 32)})


def _whisper_encoder() -> tuple[Any, dict[str, np.ndarray]]:
    """Whisper's audio encoder: two Conv1d layers with GELU over log-mel frames, sinusoidal
    positions, pre-norm attention."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(num_mel_bins=16, d_model=32, encoder_layers=2,
                           encoder_attention_heads=2, encoder_ffn_dim=64,
                           max_source_positions=16)
    return _hf(WhisperEncoder(config), {"input_features": _normal(1, 16, 32)})


def _efficientnet() -> tuple[Any, dict[str, np.ndarray]]:
    """EfficientNet: asymmetric zero padding, depthwise convolutions, SiLU, squeeze and
    excitation, batch norm."""
    from transformers import EfficientNetConfig, EfficientNetModel

    config = EfficientNetConfig(image_size=32, width_coefficient=0.25, depth_coefficient=0.5,
                                kernel_sizes=[3, 5], in_channels=[32, 16],
                                out_channels=[16, 24], strides=[1, 2],
                                num_block_repeats=[1, 2], expand_ratios=[1, 6],
                                depthwise_padding=[], hidden_dim=320)
    return _hf(EfficientNetModel(config), {"pixel_values": _normal(1, 3, 32, 32)},
               "pooler_output")


def _convnext() -> tuple[Any, dict[str, np.ndarray]]:
    """ConvNeXt: patchify stem, 7x7 depthwise convolutions, channels-last LayerNorm, GELU,
    layer scale, channels-first LayerNorm before downsampling."""
    from transformers import ConvNextConfig, ConvNextModel

    config = ConvNextConfig(num_stages=2, hidden_sizes=[16, 32], depths=[1, 1],
                            image_size=32)
    return _hf(ConvNextModel(config), {"pixel_values": _normal(1, 3, 32, 32)})


def _segformer() -> tuple[Any, dict[str, np.ndarray]]:
    """SegFormer semantic segmentation: overlapping patch embeddings, attention over a
    spatially reduced sequence, Mix-FFN (depthwise convolution, GELU) and an all-MLP decoder
    whose stages are resized (bilinear) to one resolution."""
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    config = SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                             hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2],
                             num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                             decoder_hidden_size=32, num_labels=3)
    return _hf(SegformerForSemanticSegmentation(config), {"pixel_values": _normal(1, 3, 64, 64)},
               "logits")


def _mobilenet_v3() -> tuple[Any, dict[str, np.ndarray]]:
    """MobileNetV3 (small-like, a few blocks): HardSwish, inverted residuals with depthwise
    convolutions and squeeze and excitation gated by HardSigmoid, batch norm."""
    from torch import nn

    def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1,
                act: type[nn.Module] | None = nn.Hardswish) -> list[nn.Module]:
        layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2,
                                             groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return [*layers, act()] if act is not None else layers

    class SqueezeExcite(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            squeezed = channels // 4
            self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(channels, squeezed, 1),
                                      nn.ReLU(), nn.Conv2d(squeezed, channels, 1),
                                      nn.Hardsigmoid())

        def forward(self, x: Any) -> Any:
            return x * self.gate(x)

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, hidden: int, cout: int, kernel: int, stride: int,
                     se: bool, act: type[nn.Module]) -> None:
            super().__init__()
            layers = [*conv_bn(cin, hidden, 1, act=act),
                      *conv_bn(hidden, hidden, kernel, stride, hidden, act=act)]
            if se:
                layers.append(SqueezeExcite(hidden))
            self.body = nn.Sequential(*layers, *conv_bn(hidden, cout, 1, act=None))
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            y = self.body(x)
            return x + y if self.residual else y

    model = nn.Sequential(
        *conv_bn(3, 16, 3, 2),
        InvertedResidual(16, 16, 16, 3, 2, True, nn.ReLU),
        InvertedResidual(16, 72, 24, 3, 2, False, nn.ReLU),
        InvertedResidual(24, 88, 24, 3, 1, False, nn.ReLU),
        InvertedResidual(24, 96, 40, 5, 2, True, nn.Hardswish),
        InvertedResidual(40, 120, 40, 5, 1, True, nn.Hardswish),
        *conv_bn(40, 96, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(96, 128), nn.Hardswish(),
        nn.Linear(128, 10))
    return model.eval(), {"pixel_values": _normal(1, 3, 64, 64)}


def randomise_batch_norms(model: Any) -> None:
    """Give every batch norm random statistics and affine parameters near the identity (a
    fresh one is the identity, which would hide a wrong normalisation)."""
    import torch
    from torch import nn

    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, nn.BatchNorm2d):
                for tensor, low, high in ((layer.weight, 0.5, 1.5), (layer.bias, -0.2, 0.2),
                                          (layer.running_mean, -0.2, 0.2),
                                          (layer.running_var, 0.5, 1.5)):
                    tensor.copy_(torch.rand(tensor.shape, generator=generator) *
                                 (high - low) + low)


#: The models' builders by name.
_BUILDERS: dict[str, Callable[[], tuple[Any, dict[str, np.ndarray]]]] = {
    "bert": _bert,
    "gpt2": _gpt2,
    "t5-encoder": _t5_encoder,
    "llama": _llama,
    "vit": _vit,
    "whisper-encoder": _whisper_encoder,
    "mobilenet-v3": _mobilenet_v3,
    "efficientnet": _efficientnet,
    "convnext": _convnext,
    "segformer": _segformer,
}
#: The names of the models :func:`build` and :func:`export` know.
MODEL_NAMES = tuple(_BUILDERS)


def build(name: str) -> tuple[Any, dict[str, np.ndarray]]:
    """Model ``name`` (one of :data:`MODEL_NAMES`) as a torch module in eval mode taking its
    inputs positionally, with random weights from a fixed seed, and its example inputs."""
    import torch

    if name not in _BUILDERS:
        raise KeyError(f"unknown model {name!r}; expected one of {', '.join(MODEL_NAMES)}")
    torch.manual_seed(SEED)
    model, inputs = _BUILDERS[name]()
    randomise_batch_norms(model)
    return model, inputs


def export(name: str, directory: str | Path) -> ExportedModel:
    """Build model ``name`` and export it with ``torch.onnx.export`` at its example inputs'
    static shapes to ``directory/<name>.onnx`` (weights inside the file)."""
    model, inputs = build(name)
    path = Path(directory) / f"{name}.onnx"
    export_module(model, inputs, path)
    return ExportedModel(name, path, inputs)


def export_module(model: Any, inputs: dict[str, np.ndarray], path: str | Path) -> None:
    """Export torch module ``model`` (in eval mode, taking ``inputs`` positionally) with
    ``torch.onnx.export`` at the inputs' static shapes to the ONNX file ``path`` (weights
    inside the file), as :func:`export` does."""
    import torch

    args = tuple(torch.from_numpy(a) for a in inputs.values())
    # The exporter warns about torch internals' deprecations, and its optimiser's constant
    # folding about log(0) and casts of infinities in attention masks: nothing to act on.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        torch.onnx.export(model, args, path, input_names=list(inputs), opset_version=OPSET,
                          dynamo=True, external_data=False, verbose=False)


def op_types(model: Any) -> list[str]:
    """The sorted operator types of ONNX model ``model`` (a ``ModelProto``), in its graph and
    subgraphs; a domain other than the default one prefixes its types
    (``com.microsoft.Gelu``), as in the importer's converter table."""
    from onnx import GraphProto, helper

    from passhost.frontend.onnx_registry import is_default_domain

    found: set[str] = set()

    def visit(graph: GraphProto) -> None:
        for node in graph.node:
            found.add(node.op_type if is_default_domain(node.domain)
                      else f"{node.domain}.{node.op_type}")
            for attr in node.attribute:
                value = helper.get_attribute_value(attr)
                for sub in value if isinstance(value, list) else [value]:
                    if isinstance(sub, GraphProto):
                        visit(sub)

    visit(model.graph)
    return sorted(found)


def error_bound(want: np.ndarray) -> float:
    """The largest absolute difference from onnxruntime's output ``want`` that passes:
    :data:`RTOL` of its largest magnitude plus :data:`ATOL`."""
    return RTOL * float(np.max(np.abs(want), initial=0.0)) + ATOL
