"""End to end on the installed cpu target: every zoo model compiled with ``passhost.build``
and run by the executor equals passhost's reference interpreter (rtol 1e-4), directly and
after an artifact round trip; and the thread option reaches the runtime."""

from __future__ import annotations

import numpy as np
import pytest

import passhost
from passhost.relay.interpreter import evaluate
from passhost.runtime import load_artifact
from passhost.transform import PassContext
from passhost.workloads.zoo import get_model, list_models


def _inputs(mod, params, seed=0):
    rng = np.random.default_rng(seed)
    return {p.name_hint: rng.uniform(-1, 1, p.checked_type.shape).astype(p.checked_type.dtype)
            for p in mod["main"].params if p.name_hint not in params}


def _assert_close(got, want):
    want = list(want) if isinstance(want, tuple) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", [name for name, _ in list_models()])
def test_zoo_model_matches_the_interpreter(name, tmp_path):
    mod, params = get_model(name)
    inputs = _inputs(mod, params)
    want = evaluate(mod, **inputs, **params)
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, "cpu", params)
    _assert_close(compiled.executor()(**inputs), want)
    compiled.save(tmp_path / "m.tar")
    _assert_close(load_artifact(tmp_path / "m.tar").executor()(**inputs), want)


@pytest.mark.parametrize("opt_level", [0, 1, 2])
def test_lower_opt_levels_give_the_same_numbers(opt_level):
    mod, params = get_model("mobilenet-v2")
    inputs = _inputs(mod, params, seed=1)
    with PassContext(opt_level=opt_level):
        compiled = passhost.build(mod, "cpu -num-threads=1", params)
    _assert_close(compiled.executor()(**inputs), evaluate(mod, **inputs, **params))


def test_generated_source_is_visible_and_loading_regenerates_it(tmp_path):
    mod, params = get_model("mlp")
    with PassContext(opt_level=3):
        compiled = passhost.build(mod, "cpu -num-threads=2", params)
    source = compiled.get_source()
    assert "def fused_nn_dense" in source
    compiled.save(tmp_path / "mlp.tar")
    loaded = load_artifact(tmp_path / "mlp.tar")
    assert loaded.get_source() == source
    assert loaded.target == "cpu -num-threads=2"
