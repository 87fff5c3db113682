"""Artifacts: save and load round trip, and a clear error for every broken file."""

from __future__ import annotations

import hashlib
import json
import tarfile

import numpy as np
import pytest

from artifact_files import edit_metadata, rewrite
from passhost import relay
from passhost.backend import build
from passhost.ir.module import IRModule
from passhost.relay.expr import Function
from passhost.relay.interpreter import evaluate
from passhost.runtime import ArtifactError, ExecutorError, load_artifact
from passhost.runtime.plan import ExecutorPlan, PlanError
from passhost.transform import PassContext
from toy_targets import RefHostPlugin, ToyPlugin


@pytest.fixture
def targets(register_plugin) -> None:
    register_plugin(RefHostPlugin(), "ref-host")
    register_plugin(ToyPlugin(), "toy")


def _model():
    x = relay.var("x", shape=(2, 8))
    w = relay.var("w", shape=(6, 8))
    y = relay.nn.relu(relay.nn.dense(x, w))
    z = relay.add(y, y)
    params = {"w": np.random.default_rng(0).standard_normal((6, 8)).astype("float32")}
    return IRModule.from_expr(Function([x, w], relay.Tuple([z, relay.sigmoid(y)]))), params


@pytest.fixture
def saved(targets, tmp_path):
    mod, params = _model()
    with PassContext(opt_level=3):
        compiled = build(mod, "toy, ref-host", params)
    path = tmp_path / "model.tar"
    compiled.save(path)
    return path, mod, params


def test_round_trip_runs_the_same(saved):
    path, mod, params = saved
    loaded = load_artifact(path)
    x = np.random.default_rng(3).standard_normal((2, 8)).astype("float32")
    got = loaded.executor()(x)
    want = evaluate(mod, x=x, **params)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert loaded.target == "toy, ref-host"
    assert [m.type_key for m in loaded.module.imported_modules] == ["toy"]
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
        meta = json.loads(tar.extractfile("metadata.json").read())
    assert {"metadata.json", "lowered.txt", "params.npz", "tir/ref-host.txt", "tir/toy.txt",
            "modules/toy/toy.txt"} <= names
    assert meta["inputs"] == [{"name": "x", "shape": [2, 8], "dtype": "float32"}]
    assert set(meta["plugins"]) == {"toy", "ref-host"}


def test_members_come_in_the_documented_order_with_their_checksums(saved):
    """The data members first, then the metadata holding their SHA-256 (hashed while they
    were written), then the checksum over all of them."""
    path, _, _ = saved
    with tarfile.open(path) as tar:
        names = tar.getnames()
        data = {name: tar.extractfile(name).read() for name in names}
    assert names[0] == "lowered.txt" and names[-2:] == ["metadata.json", "checksum.sha256"]
    checksums = json.loads(data["metadata.json"])["checksums"]
    assert list(checksums) == names[:-2]
    for name in names[:-2]:
        assert checksums[name] == hashlib.sha256(data[name]).hexdigest()


def test_save_replaces_atomically_and_leaves_no_temporary(saved):
    path, _, _ = saved
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.tar"]


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_bytes(p.read_bytes()[:700]), "truncated|missing"),
    (lambda p: p.write_bytes(b"PK\x03\x04 not a tar at all" * 40), "not a passhost artifact"),
    (lambda p: p.unlink(), "no such artifact"),
])
def test_broken_files_give_clear_errors(saved, damage, message):
    path, _, _ = saved
    damage(path)
    with pytest.raises(ArtifactError, match=message):
        load_artifact(path)


def test_corrupt_member_is_found_by_its_checksum(saved):
    path, _, _ = saved

    def flip(members):
        data = bytearray(members["params.npz"])
        data[-40] ^= 0xFF
        members["params.npz"] = bytes(data)

    rewrite(path, flip, seal=False)
    with pytest.raises(ArtifactError, match=r"'params\.npz' is corrupt"):
        load_artifact(path)


def test_version_mismatch(saved):
    path, _, _ = saved
    edit_metadata(path, lambda m: m.update(passhost_version="7.3.0"))
    with pytest.raises(ArtifactError, match=r"written by passhost 7\.3\.0"):
        load_artifact(path)
    edit_metadata(path, lambda m: m.update(format_version=1))
    with pytest.raises(ArtifactError, match=r"format version 1.*rebuild the artifact"):
        load_artifact(path)


def test_missing_target_plugin_names_the_distribution(saved):
    path, _, _ = saved
    edit_metadata(path, lambda m: m.update(target="cmsis-nn, ref-host"))
    with pytest.raises(ArtifactError, match="pip install passhost-cmsis-nn"):
        load_artifact(path)


def test_a_missing_plugin_is_named_from_the_artifacts_own_record(saved):
    from passhost.plugins import get_host

    path, _, _ = saved
    edit_metadata(path, lambda m: m["plugins"]["toy"].update(distribution="passhost-toy"))
    get_host().unregister("toy")  # as if its distribution were not installed
    with pytest.raises(ArtifactError, match=r"unknown target kind 'toy' \(it is provided by "
                                            r"the plugin distribution passhost-toy; install "
                                            r"it with: pip install passhost-toy\)"):
        load_artifact(path)
    # a recorded name pip could not take is not repeated as advice
    edit_metadata(path, lambda m: m["plugins"]["toy"].update(distribution="x; rm -rf ~"))
    with pytest.raises(ArtifactError) as info:
        load_artifact(path)
    assert "pip install" not in str(info.value) and "unknown target kind 'toy'" in str(info.value)


def test_malformed_plan_is_rejected(saved):
    path, _, _ = saved
    edit_metadata(path, lambda m: m["plan"]["steps"][0].update(args=[0, 999]))
    with pytest.raises(ArtifactError, match="unknown tensors"):
        load_artifact(path)


def test_plan_json_round_trip_and_checks(saved):
    plan = load_artifact(saved[0]).plan
    assert ExecutorPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    bad = plan.to_json()
    bad["tensors"][-1]["storage"] = 99
    with pytest.raises(PlanError, match="storage 99 does not exist"):
        ExecutorPlan.from_json(bad)


def test_executor_input_errors(saved):
    executor = load_artifact(saved[0]).executor()
    with pytest.raises(ExecutorError, match=r"input 'x': expected float32\[2, 8\]"):
        executor.set_input("x", np.zeros((2, 9), "float32"))
    with pytest.raises(ExecutorError, match="unknown input 'y'"):
        executor.set_input("y", np.zeros((2, 8), "float32"))
    with pytest.raises(ExecutorError, match="missing inputs"):
        executor()
    with pytest.raises(ExecutorError, match="output 5 does not exist"):
        executor.get_output(5)


def test_a_scalar_parameter_keeps_its_shape(targets, tmp_path):
    """An unfused scalar constant is a 0-d parameter of the plan; it must not become (1,)."""
    x = relay.var("x", shape=(3,))
    mod = IRModule.from_expr(Function([x], relay.multiply(x, relay.const(np.float32(1.5)))))
    with PassContext(opt_level=3, disabled_pass=["FuseOps"]):
        compiled = build(mod, "ref-host")
    compiled.save(tmp_path / "scalar.tar")
    data = np.arange(3, dtype="float32")
    out = load_artifact(tmp_path / "scalar.tar").executor()(x=data)[0]
    np.testing.assert_array_equal(out, data * np.float32(1.5))
