"""Real exported models against onnxruntime: small random-weight transformers (BERT, GPT-2, a
T5 encoder, LLaMA, ViT), a Whisper audio encoder and CNNs (MobileNetV3, EfficientNet,
ConvNeXt, SegFormer), exported by ``torch.onnx.export`` (``passhost.testing.torch_exports``),
imported by passhost, built for the cpu target and run; onnxruntime runs the same file.

Needs the ``exports`` extra (torch, transformers, onnxscript), which ``dev.sh`` installs; the
module skips itself where it is missing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxscript")  # torch.onnx.export's default exporter needs it
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from passhost.testing import torch_exports  # noqa: E402
from passhost.testing.torch_exports import ExportedModel  # noqa: E402
from test_frontend_onnx import run_onnxruntime, run_passhost  # noqa: E402

#: Operators each model is here for: the export must keep using them (an exporter that fused
#: them away would leave the model testing something else).
CHARACTERISTIC_OPS = {
    "bert": {"Gelu", "LayerNormalization", "Softmax", "Where"},
    "gpt2": {"Gemm", "Tanh", "Pow", "Split"},
    "t5-encoder": {"ReduceMean", "Sqrt", "Reciprocal", "Tanh"},
    "llama": {"Sigmoid", "Neg", "Slice", "Concat", "ReduceMean", "Expand"},
    "vit": {"Conv", "Concat", "Gelu", "LayerNormalization"},
    "whisper-encoder": {"Conv", "Gelu", "LayerNormalization"},
    "mobilenet-v3": {"HardSwish", "HardSigmoid", "Conv"},
    "efficientnet": {"Sigmoid", "Conv", "ReduceMean"},
    "convnext": {"Conv", "LayerNormalization", "Gelu", "Transpose"},
    "segformer": {"Resize", "Conv", "Softmax", "Gelu"},
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ExportedModel]:
    """Export each model once per module run, on first use."""
    directory = tmp_path_factory.mktemp("exports")
    cache: dict[str, ExportedModel] = {}

    def get(name: str) -> ExportedModel:
        if name not in cache:
            cache[name] = torch_exports.export(name, directory)
        return cache[name]

    return get


def test_every_model_has_its_characteristic_operators():
    assert set(CHARACTERISTIC_OPS) == set(torch_exports.MODEL_NAMES)


@pytest.mark.parametrize("name", torch_exports.MODEL_NAMES)
def test_the_export_uses_the_operators_of_its_architecture(exported, name):
    model = onnx.load(exported(name).path)
    missing = CHARACTERISTIC_OPS[name] - set(torch_exports.op_types(model))
    assert not missing, f"{name}: the export no longer uses {sorted(missing)}"


@pytest.mark.parametrize("name", torch_exports.MODEL_NAMES)
def test_the_exported_model_runs_like_onnxruntime(exported, name):
    case = exported(name)
    model = onnx.load(case.path)
    want = run_onnxruntime(model, case.inputs)
    got = run_passhost(model, case.inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        err = float(np.max(np.abs(g - w)))
        bound = torch_exports.error_bound(w)
        assert err <= bound, f"{name}: max |passhost - onnxruntime| {err:.3g} > {bound:.3g}"


def test_an_unknown_model_name_is_refused():
    with pytest.raises(KeyError, match="unknown model 'resnet'; expected one of bert, gpt2"):
        torch_exports.build("resnet")
