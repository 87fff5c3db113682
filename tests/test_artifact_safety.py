"""Loading artifacts is safe: corrupt and crafted files, built from a real saved model (the
zoo MLP for the cpu target), are each refused with one clear ArtifactError before any code
runs over their data; random damage never gives any other outcome."""

from __future__ import annotations

import io
import json
import re
import shutil
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import passhost_cpu_target.plugin
from artifact_files import (
    CHECKSUM,
    METADATA,
    edit_metadata,
    read_members,
    rewrite,
    tar_header,
    write_members,
)
from passhost.backend import build
from passhost.cli import main
from passhost.ir.module import IRModule
from passhost.relay.interpreter import evaluate
from passhost.runtime import ArtifactError, kernel_call, load_artifact
from passhost.runtime.kernel_call import COPY
from passhost.runtime.plan import ExecutorPlan, PlanError, Step, TensorEntry
from passhost.runtime.plan_check import check_plan_calls
from passhost.runtime.prim_func_check import PrimFuncCheckError, check_prim_func
from passhost.testing import registered, use_host
from passhost.tir import PrimFunc, Var, decl_buffer
from passhost.transform import PassContext
from passhost.workloads.zoo import get_model

X = np.random.default_rng(7).standard_normal((1, 1, 28, 28)).astype("float32")


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """The zoo MLP built for cpu and saved once: (path of the pristine artifact, the
    outputs the interpreter gives for X); the cpu plugin stays registered meanwhile."""
    mod, params = get_model("mlp")
    with use_host() as host, registered(passhost_cpu_target.plugin, "cpu", host):
        with PassContext(opt_level=3):
            compiled = build(mod, "cpu", params)
        path = tmp_path_factory.mktemp("mlp") / "mlp.tar"
        compiled.save(path)
        yield path, evaluate(mod, data=X, **params)


@pytest.fixture
def artifact(mlp, tmp_path):
    """A fresh copy of the MLP's artifact for one test to damage."""
    path = tmp_path / "mlp.tar"
    shutil.copyfile(mlp[0], path)
    return path


def _refused(path, pattern: str) -> str:
    with pytest.raises(ArtifactError, match=pattern) as info:
        load_artifact(path)
    assert str(path) in str(info.value)
    return str(info.value)


def test_the_pristine_artifact_runs_like_the_interpreter(mlp):
    path, want = mlp
    got = load_artifact(path).executor()(X)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    assert list(read_members(path))[-1] == CHECKSUM


def _point_step_at_the_bias(meta):
    """The issue's one-character change: the dense step reads the 512-element bias as its
    512x784 weight (``"args": [1, 2, 3, 4]`` -> ``[1, 3, 3, 4]``)."""
    step = meta["plan"]["steps"][1]
    assert step["func"] == "fused_nn_dense_add_nn_relu" and step["args"] == [1, 2, 3, 4]
    step["args"][1] = 3


def test_one_character_in_a_step_is_caught_by_the_whole_checksum(artifact):
    edit_metadata(artifact, _point_step_at_the_bias, seal=False)
    _refused(artifact, r"checksum\.sha256 does not match its members \(metadata\.json was "
                       r"changed")


def test_one_character_in_a_step_is_caught_by_the_plan_check_when_resealed(artifact):
    edit_metadata(artifact, _point_step_at_the_bias)
    _refused(artifact, r"step 1 \(fused_nn_dense_add_nn_relu\), PrimFunc "
                       r"@fused_nn_dense_add_nn_relu of target 'cpu': tensor 3 is "
                       r"float32\[512\], but parameter 1 \(buffer %p1\) is "
                       r"float32\[512, 784\]")


@pytest.mark.parametrize("tensor, field, value, message", [
    (4, "shape", [2, 256], r"tensor 4 is float32\[2, 256\], but parameter 3 \(buffer %\w+\) "
                           r"is float32\[1, 512\]"),
    (1, "dtype", "int32", r"tensor 1 is int32\[1, 784\], but parameter 1 \(buffer %\w+\) is "
                          r"float32\[1, 784\]"),
])
def test_a_step_tensor_unlike_its_buffer_is_refused(artifact, tensor, field, value, message):
    """Each change keeps the tensor in its storage block, so only the TIR check sees it."""
    edit_metadata(artifact, lambda m: m["plan"]["tensors"][tensor].update({field: value}))
    _refused(artifact, message)


def test_a_step_with_a_missing_argument_or_function_is_refused(artifact):
    edit_metadata(artifact, lambda m: m["plan"]["steps"][4].update(args=[10]))
    _refused(artifact, r"step 4 \(fused_nn_softmax\).*passes 1 tensors, the PrimFunc takes 2")
    edit_metadata(artifact, lambda m: m["plan"]["steps"][4].update(func="exec", args=[10, 11]))
    _refused(artifact, r"step 4 calls 'exec', which is no PrimFunc of the targets' TIR")


def _edit_tir(path, old: str, new: str, occurrences: int = 1) -> None:
    """Replace the first of the ``occurrences`` of ``old`` by ``new`` in tir/cpu.txt,
    checksums resealed."""
    def change(members):
        text = members["tir/cpu.txt"].decode()
        assert text.count(old) == occurrences
        members["tir/cpu.txt"] = text.replace(old, new, 1).encode()

    rewrite(path, change)


_SOFTMAX_BUFFERS = ("  buffer %p0: float32[1, 10] = match(%p0_data, data=%p0_data);\n"
                    "  buffer %softmax: float32[1, 10] = match(%softmax_data, "
                    "data=%softmax_data);\n")


def test_tir_that_is_consistent_but_not_the_plans_is_refused(artifact):
    """The softmax PrimFunc's buffers rewritten over [2, 5] fit neither its loops nor the
    plan; the loops' bounds are checked first."""
    _edit_tir(artifact, _SOFTMAX_BUFFERS, _SOFTMAX_BUFFERS.replace("[1, 10]", "[2, 5]"))
    _refused(artifact, r"PrimFunc @fused_nn_softmax: the store to %softmax \(shape \[2, 5\]\) "
                       r"may index dimension 1 with %i1_1 in \[0, 9\], outside \[0, 4\]")


def test_a_kernel_call_reading_the_bias_as_its_weight_is_refused(artifact):
    """One token changed in the TIR: the dense kernel would read 512x784 floats from the
    512 of the bias."""
    _edit_tir(artifact, "%T, %p0, %p1);", "%T, %p0, %p2);", occurrences=3)
    _refused(artifact, r"member tir/cpu\.txt: PrimFunc @fused_nn_dense_add_nn_relu: kernel "
                       r"call of 'nn\.dense': its buffers are ill-typed: nn\.dense: argument "
                       r"'weight' expected a 2-D tensor, found Tensor\[\(512\), float32\]")


def test_a_buffer_view_larger_than_its_memory_is_refused(artifact):
    _edit_tir(artifact, _SOFTMAX_BUFFERS,
              _SOFTMAX_BUFFERS + "  buffer %big: float32[100] = decl(%p0_data);\n")
    _refused(artifact, r"PrimFunc @fused_nn_softmax: buffer %big \(float32\[100\]\) is larger "
                       r"than the 40 bytes of %p0_data")


def test_a_kernel_call_writing_the_wrong_shape_is_refused(artifact):
    output = "  buffer %T: float32[1, 512] = match(%T_data, data=%T_data);\n"
    _edit_tir(artifact, output, output.replace("[1, 512]", "[512]"), occurrences=2)
    _refused(artifact, r"kernel call of 'nn\.dense': the operator gives \['float32\[1, 512\]'\] "
                       r"for these inputs, the outputs are \['buffer %T \(float32\[512\]\)'\]")


def test_a_loop_nest_indexing_out_of_its_buffer_is_refused(artifact):
    """The softmax's loops, given a shorter output buffer, would store past its end."""
    _edit_tir(artifact, _SOFTMAX_BUFFERS,
              _SOFTMAX_BUFFERS.replace("%softmax: float32[1, 10]", "%softmax: float32[1, 9]"))
    _refused(artifact, r"PrimFunc @fused_nn_softmax: the store to %softmax \(shape \[1, 9\]\) "
                       r"may index dimension 1")


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _params(members) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(members["params.npz"])) as npz:
        return {name: npz[name] for name in npz.files}


@pytest.mark.parametrize("change, found", [
    (lambda p1: p1[:256], r"float32\[256\]"),
    (lambda p1: p1.astype("float64"), r"float64\[512\]"),
    (lambda p1: p1.reshape(1, 512), r"float32\[1, 512\]"),
])
def test_a_parameter_of_the_wrong_shape_or_dtype_is_refused(artifact, change, found):
    def replace(members):
        params = _params(members)
        params["p1"] = change(params["p1"])
        members["params.npz"] = _npz(**params)

    rewrite(artifact, replace)
    _refused(artifact, r"member params\.npz does not fit the executor plan: tensor 3: "
                       r"parameter 'p1': expected float32\[512\], found " + found)


def test_plan_and_parameters_changed_together_still_meet_the_tir(artifact):
    """An attacker who makes the plan and params.npz agree is stopped by the PrimFuncs."""
    def change(members):
        meta = json.loads(members[METADATA])
        meta["plan"]["tensors"][2]["shape"] = [512, 1]
        members[METADATA] = json.dumps(meta).encode()
        params = _params(members)
        params["p0"] = params["p0"][:, :1].copy()
        members["params.npz"] = _npz(**params)

    rewrite(artifact, change)
    _refused(artifact, r"tensor 2 is float32\[512, 1\], but parameter 1 \(buffer %p1\) is "
                       r"float32\[512, 784\]")


def test_parameters_missing_or_unused_are_refused(artifact, mlp):
    rewrite(artifact, lambda m: m.update({"params.npz": _npz(**{
        k: v for k, v in _params(m).items() if k != "p5"})}))
    _refused(artifact, r"tensor 9: parameter 'p5' is missing")
    shutil.copyfile(mlp[0], artifact)
    rewrite(artifact, lambda m: m.update({"params.npz": _npz(**_params(m),
                                                              extra=np.zeros(3))}))
    _refused(artifact, r"parameters \['extra'\] are not read by the plan")


def test_metadata_inputs_and_outputs_must_be_the_plans(artifact):
    edit_metadata(artifact, lambda m: m["inputs"][0].update(shape=[1, 1, 28, 29]))
    _refused(artifact, r"metadata\.json: inputs .* are not the executor plan's")
    edit_metadata(artifact, lambda m: m["inputs"][0].update(shape=[1, 1, 28, 28]))
    edit_metadata(artifact, lambda m: m["outputs"][0].update(dtype="float16"))
    _refused(artifact, r"metadata\.json: outputs .* are not the executor plan's")


def test_a_storage_too_small_or_a_repeated_input_is_refused(artifact):
    def shrink(by):
        def edit(m):
            m["plan"]["storage_sizes"][m["plan"]["tensors"][4]["storage"]] -= by
        return edit

    edit_metadata(artifact, shrink(1))
    _refused(artifact, r"tensor 4 \(2048 bytes\) does not fit storage \d+ \(2047 bytes\)")
    edit_metadata(artifact, shrink(-1))
    edit_metadata(artifact, lambda m: m["plan"]["tensors"].append(
        {"kind": "input", "shape": [1], "dtype": "float32", "name": "data"}))
    _refused(artifact, r"inputs \['data'\] appear more than once")


@pytest.mark.parametrize("plan", [[1], {"tensors": {"a": 1}}, {"tensors": [[]]},
                                  {"tensors": [{"kind": "input", "shape": [1e400]}]}])
def test_a_plan_of_the_wrong_json_types_is_refused(artifact, plan):
    edit_metadata(artifact, lambda m: m.update(plan=plan))
    _refused(artifact, r"metadata\.json: malformed executor plan")


def test_wrong_json_types_elsewhere_in_the_metadata_are_refused(artifact):
    edit_metadata(artifact, lambda m: m.update(plugins=["cpu"]))
    _refused(artifact, r"'plugins' is not an object")
    rewrite(artifact, lambda m: m.update({METADATA: b"[" * 100_000 + b"]" * 100_000}))
    _refused(artifact, r"metadata\.json is not valid JSON")


# -- the container: sizes, member kinds and names, order -------------------------------------

def _peak_bytes_of_loading(path) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(ArtifactError):
            load_artifact(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_small_file_declaring_a_2gib_member_is_refused_without_allocating(tmp_path):
    path = tmp_path / "big.tar"
    path.write_bytes((tar_header(METADATA, 2**31) + b"{}").ljust(20 * 1024, b"\0"))
    start = time.perf_counter()
    _refused(path, r"member 'metadata\.json' declares 2147483648 bytes, but the file holds "
                   r"only 19968 more")
    assert time.perf_counter() - start < 1.0
    assert _peak_bytes_of_loading(path) < 1 << 20


def test_a_gnu_sparse_member_is_refused_without_expanding_it(tmp_path):
    """The issue's 20 KB file whose sparse member expands to 2 GiB: one 1-byte chunk at
    the end of a 2 GiB hole (GNU header: sparse map at 386, real size at 483)."""
    extra = {386: f"{2**31 - 1:011o}\0{1:011o}\0".encode(), 483: f"{2**31:011o}\0".encode()}
    header = tar_header("params.npz", 512, b"S", magic=b"ustar  \0", extra=extra)
    path = tmp_path / "sparse.tar"
    path.write_bytes((header + b"x" * 512).ljust(20 * 1024, b"\0"))
    _refused(path, r"member 'params\.npz' is a GNU sparse file; artifacts hold regular files")
    assert _peak_bytes_of_loading(path) < 1 << 20


@pytest.mark.parametrize("typeflag, what", [
    (b"2", "a symbolic link"), (b"1", "a hard link"), (b"3", "a character device"),
    (b"5", "a directory"), (b"x", "a pax extended header"), (b"L", "a GNU long name"),
])
def test_links_devices_and_extended_headers_are_refused(artifact, typeflag, what):
    data = artifact.read_bytes()
    artifact.write_bytes(tar_header("lowered.txt", 0, typeflag) + data)
    _refused(artifact, f"member 'lowered.txt' is {what}")


@pytest.mark.parametrize("name", ["../metadata.json", "/etc/passwd", "tir/./cpu.txt",
                                  "tir//cpu.txt"])
def test_unsafe_member_names_are_refused(artifact, name):
    artifact.write_bytes(tar_header(name, 0) + artifact.read_bytes())
    _refused(artifact, "unsafe or empty name")


def test_a_size_in_base_256_is_refused(artifact):
    header = bytearray(tar_header("lowered.txt", 0))
    header[124:136] = b"\x80" + (2**40).to_bytes(11, "big")
    header[148:156] = b" " * 8
    header[148:156] = f"{sum(header):06o}\0 ".encode()
    artifact.write_bytes(bytes(header) + artifact.read_bytes())
    _refused(artifact, "base-256")


def test_a_corrupt_header_is_refused(artifact):
    data = bytearray(artifact.read_bytes())
    data[5] ^= 0x01  # in the first member's name: the header checksum no longer fits
    artifact.write_bytes(bytes(data))
    _refused(artifact, r"the header at byte 0 is corrupt \(header checksum")


def test_duplicate_extra_missing_and_reordered_members_are_refused(artifact, mlp):
    members = read_members(artifact)
    names = list(members)

    def write(items):
        with open(artifact, "wb") as out:
            from passhost.runtime.tar_reader import write_tar
            write_tar(out, items)

    write([*members.items(), ("lowered.txt", b"again")])
    _refused(artifact, r"member 'lowered\.txt' appears twice")
    write([*members.items(), ("notes.txt", b"hi")])
    _refused(artifact, r"unexpected member 'notes\.txt'")
    write_members(artifact, {n: d for n, d in members.items() if n != "tir/cpu.txt"})
    _refused(artifact, r"member 'tir/cpu\.txt' is missing")
    write_members(artifact, {n: d for n, d in members.items() if n != CHECKSUM})
    _refused(artifact, r"member 'checksum\.sha256' is missing")
    write([(n, members[n]) for n in [CHECKSUM, *names[:-1]]])
    _refused(artifact, r"member 'checksum\.sha256' is not the last member")
    swapped = [names[0], names[2], names[1], *names[3:]]
    write_members(artifact, {n: members[n] for n in swapped})
    _refused(artifact, r"checksum\.sha256 does not match its members .*reordered")


def _member_offsets(path) -> list[int]:
    """Where each member's header starts."""
    offsets, pos, data = [], 0, path.read_bytes()
    while data[pos:pos + 512] != bytes(512):
        offsets.append(pos)
        size = int(data[pos + 124:pos + 135], 8)
        pos += 512 + -(-size // 512) * 512
    return offsets


def test_what_is_no_regular_file_is_refused(tmp_path):
    _refused(tmp_path, "not a regular file")
    with pytest.raises(ArtifactError, match="/dev/null: not a passhost artifact, or truncated "
                                            "or corrupt: not a regular file"):
        load_artifact("/dev/null")


def test_truncated_files_are_refused(artifact, mlp):
    data = mlp[0].read_bytes()
    offsets = _member_offsets(mlp[0])
    for cut in (0, 100, 600, offsets[2] + 700, len(data) // 2, offsets[-1], offsets[-1] + 512):
        artifact.write_bytes(data[:cut])
        _refused(artifact, "truncated")


def test_storage_blocks_sharing_bytes_while_live_or_misaligned_are_refused(artifact):
    edit_metadata(artifact, lambda m: m["plan"].update(
        storage_offsets=[0] * len(m["plan"]["storage_offsets"])))
    _refused(artifact, r"tensors \d+ and \d+ are live at once and share bytes of the arena")
    edit_metadata(artifact, lambda m: m["plan"].update(
        storage_offsets=[64 * k + 8 for k in range(len(m["plan"]["storage_offsets"]))]))
    _refused(artifact, r"storage offsets \[8, 72, .*\] are not non-negative multiples of 64")


def test_an_old_format_version_says_rebuild(artifact):
    edit_metadata(artifact, lambda m: m.update(format_version=1))
    _refused(artifact, r"artifact format version 1; this passhost .* reads version 3: "
                       r"rebuild the artifact")


# -- parameters: sizes declared inside params.npz -----------------------------------------------

def _npy_declaring(shape, data: bytes) -> bytes:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape!r}, }}".encode()
    header = header.ljust(118, b" ") + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


def test_an_array_declaring_more_than_its_member_holds_is_refused(artifact):
    """A crafted params.npz (sealed) whose header asks for 4 TiB: refused before NumPy
    allocates anything."""
    def change(members):
        import zipfile

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("p0.npy", _npy_declaring((2**40,), b"\0" * 64))
        members["params.npz"] = buf.getvalue()

    rewrite(artifact, change)
    _refused(artifact, r"params\.npz: array 'p0': its header declares float32\[1099511627776\] "
                       r"\(4398046511104 bytes\) but it holds 64 bytes")
    assert _peak_bytes_of_loading(artifact) < 8 << 20


def test_a_compressed_or_pickled_npz_is_refused(artifact, mlp):
    def compressed(members):
        buf = io.BytesIO()
        np.savez_compressed(buf, **_params(members))
        members["params.npz"] = buf.getvalue()

    rewrite(artifact, compressed)  # deflated: its members declare more than it holds
    _refused(artifact, r"member params\.npz: its members declare \d+ bytes, more than the "
                       r"\d+ it holds")

    def small_compressed(members):
        buf = io.BytesIO()
        np.savez_compressed(buf, p0=np.arange(4, dtype="float32"))
        members["params.npz"] = buf.getvalue()

    shutil.copyfile(mlp[0], artifact)
    rewrite(artifact, small_compressed)
    _refused(artifact, r"member 'p0\.npy' is compressed or encrypted")

    def pickled(members):
        buf = io.BytesIO()
        np.savez(buf, p0=np.array([{"x": 1}], dtype=object))
        members["params.npz"] = buf.getvalue()

    rewrite(artifact, pickled)
    _refused(artifact, r"array 'p0' holds Python objects")


# -- the command line --------------------------------------------------------------------------

def test_passhost_run_prints_the_refusal_without_a_traceback(artifact, capsys):
    edit_metadata(artifact, _point_step_at_the_bias)
    assert main(["run", str(artifact)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"passhost: error: {artifact}: the executor plan does not fit")
    assert "Traceback" not in err


# -- random damage ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference(mlp):
    """The pristine artifact's bytes and outputs for X."""
    return mlp[0].read_bytes(), load_artifact(mlp[0]).executor()(X)


def _loads_identically_or_is_refused(path, want) -> None:
    try:
        loaded = load_artifact(path)
    except ArtifactError:
        return
    for g, w in zip(loaded.executor()(X), want):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_random_damage_is_refused_or_harmless(reference, tmp_path_factory, data):
    """A byte flipped (mostly among the headers and the metadata at the start) or the file
    cut short: an ArtifactError, or (padding was hit) a model that runs identically."""
    pristine, want = reference
    damaged = bytearray(pristine)
    if data.draw(st.booleans(), "truncate"):
        damaged = damaged[:data.draw(st.integers(0, len(pristine) - 1), "length")]
    else:
        where = st.integers(0, 16 * 1024) | st.integers(0, len(pristine) - 1)
        damaged[data.draw(where, "position")] ^= data.draw(st.integers(1, 255), "mask")
    path = tmp_path_factory.getbasetemp() / "damaged.tar"
    path.write_bytes(bytes(damaged))
    _loads_identically_or_is_refused(path, want)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_resealed_damage_to_metadata_or_tir_never_escapes(reference, tmp_path_factory, data):
    """A byte flipped in metadata.json or tir/cpu.txt and every checksum made to fit (an
    attacker's edit): an ArtifactError, or a model that loads and runs over arrays of the
    plan's shapes, never any other exception."""
    pristine, want = reference
    path = tmp_path_factory.getbasetemp() / "resealed.tar"
    path.write_bytes(pristine)
    member = data.draw(st.sampled_from([METADATA, "tir/cpu.txt"]), "member")

    def flip(members):
        text = bytearray(members[member])
        text[data.draw(st.integers(0, len(text) - 1), "position")] ^= data.draw(
            st.integers(1, 255), "mask")
        members[member] = bytes(text)

    rewrite(path, flip)
    try:
        loaded = load_artifact(path)
    except ArtifactError:
        return
    outputs = loaded.executor()(X)
    assert [(o.shape, o.dtype) for o in outputs] == [(w.shape, w.dtype) for w in want]


def test_messages_name_the_file(artifact):
    edit_metadata(artifact, _point_step_at_the_bias)
    message = _refused(artifact, "step 1")
    assert re.match(re.escape(str(artifact)) + ": ", message)


# -- the checks themselves, on PrimFuncs and plans made in Python ------------------------------

def _prim_func(buffers, body, scalars=()):
    return PrimFunc([*(b.data for b in buffers), *scalars], {b.data: b for b in buffers},
                    body, attrs={"global_symbol": "f"})


def test_a_copy_between_buffers_of_different_sizes_is_refused():
    a, b = decl_buffer((4,), "float32", "a"), decl_buffer((5,), "float32", "b")
    with pytest.raises(PrimFuncCheckError, match=r"kernel call of 'copy': copies buffer %a "
                                                 r"\(float32\[4\]\) into buffer %b"):
        check_prim_func(_prim_func([a, b], kernel_call(COPY, None, [b], [a])), "f")
    c = decl_buffer((2, 2), "float32", "c")
    check_prim_func(_prim_func([a, c], kernel_call(COPY, None, [c], [a])), "f")


def test_a_parameter_matched_to_another_pointer_is_refused():
    a = decl_buffer((4,), "float32", "a")
    other = Var("other", "handle")
    func = PrimFunc([other], {other: a}, kernel_call(COPY, None, [a], [a]))
    with pytest.raises(PrimFuncCheckError, match=r"parameter %other is matched to buffer %a "
                                                 r"\(float32\[4\]\) over another pointer"):
        check_prim_func(func, "f")


def test_a_buffer_over_no_known_memory_is_refused():
    a = decl_buffer((4,), "float32", "a")
    stray = decl_buffer((4,), "float32", "stray")
    func = _prim_func([a], kernel_call(COPY, None, [a], [stray]))
    with pytest.raises(PrimFuncCheckError, match=r"buffer %stray \(float32\[4\]\) views "
                                                 r"%stray_data, which is no parameter"):
        check_prim_func(func, "f")


def _plan(tensors, steps):
    return ExecutorPlan(tuple(tensors), (64,), tuple(steps), (len(tensors) - 1,), (0,))


def test_a_step_calling_a_primfunc_with_a_scalar_parameter_is_refused():
    a, b = decl_buffer((4,), "float32", "a"), decl_buffer((4,), "float32", "b")
    n = Var("n", "int32")
    tir = {"cpu": IRModule({"f": _prim_func([a, b], kernel_call(COPY, None, [b], [a]), [n])})}
    plan = _plan([TensorEntry("input", (4,), "float32", "x"),
                  TensorEntry("storage", (4,), "float32", storage=0),
                  TensorEntry("storage", (4,), "float32", storage=0)], [Step("f", (0, 1, 2))])
    with pytest.raises(PlanError, match=r"parameter 2 \(%n: int32\) is not a buffer"):
        check_plan_calls(plan, tir)


def test_every_primfunc_a_name_may_reach_must_fit():
    """A name that is one PrimFunc's and another's global_symbol must fit both."""
    a, b = decl_buffer((4,), "float32", "a"), decl_buffer((4,), "float32", "b")
    c = decl_buffer((2,), "float32", "c")
    fits = _prim_func([a, b], kernel_call(COPY, None, [b], [a]))
    other = PrimFunc([c.data], {c.data: c}, kernel_call(COPY, None, [c], [c]),
                     attrs={"global_symbol": "f"})
    plan = _plan([TensorEntry("input", (4,), "float32", "x"),
                  TensorEntry("storage", (4,), "float32", storage=0)], [Step("f", (0, 1))])
    check_plan_calls(plan, {"cpu": IRModule({"f": fits})})
    with pytest.raises(PlanError, match=r"PrimFunc @g of target 'ext': the step passes 2 "
                                        r"tensors, the PrimFunc takes 1"):
        check_plan_calls(plan, {"cpu": IRModule({"f": fits}), "ext": IRModule({"g": other})})
