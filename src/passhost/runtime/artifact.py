"""Artifacts: a compiled model saved as one ``.tar`` of data, never code.

Members, in this order (a reader finds ``metadata.json`` wherever it is)::

    lowered.txt            the lowered module as text, constants left out (for people)
    params.npz             the parameters (NumPy .npz, uncompressed, read without pickle)
    tir/<kind>.txt         each target's PrimFuncs as text: the modules are rebuilt from it
    modules/<kind>/<file>  each target's generated sources (for people and firmware builds)
    metadata.json          format, versions (passhost and each target's plugin), target,
                           inputs, outputs, the executor plan, each member's SHA-256
    checksum.sha256        a SHA-256 over every member before it (name and data), in order

The metadata comes after the members it lists the checksums of so that saving is one pass:
each member is hashed on another thread while it is written.

Loading trusts nothing in the file: member sizes are checked against the file's size
before anything is read (:mod:`.tar_reader`), array sizes against their member's
(:mod:`.npz`), every byte against the checksums, and the plan against the PrimFuncs it
calls and the parameters it reads (:mod:`.plan_check`), so that no artifact, corrupt or
crafted, can make the code it runs index out of bounds. Then each target's
``tir_to_runtime`` generates its module again from the TIR text: nothing stored in an
artifact is ever executed. Every refusal is an :class:`ArtifactError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from passhost._version import __version__
from passhost.errors import PasshostError, UnknownNameError
from passhost.ir.module import IRModule
from passhost.plugins.manager import get_host
from passhost.runtime.compiled import CompiledModule
from passhost.runtime.module import Module, find_function
from passhost.runtime.npz import NpzError, read_npz, write_npz
from passhost.runtime.plan import ExecutorPlan, PlanError
from passhost.runtime.plan_check import check_params, check_plan_calls
from passhost.runtime.tar_reader import (
    Data,
    Piece,
    TarFormatError,
    pieces_of,
    read_tar,
    write_tar,
)
from passhost.tir.function import PrimFunc

__all__ = ["FORMAT", "FORMAT_VERSION", "ArtifactError", "load_artifact", "restore_dtype",
           "save_artifact"]

#: The ``format`` field of every artifact's metadata.
FORMAT = "passhost-artifact"
#: The artifact layout version this passhost writes and reads.
FORMAT_VERSION = 3

_METADATA = "metadata.json"
_CHECKSUM = "checksum.sha256"


class ArtifactError(PasshostError):
    """An artifact cannot be loaded: not an artifact, corrupt, truncated, from another
    version, or needing a target plugin that is not installed."""


def _plugin_of(kind: str) -> dict[str, str | None]:
    host = get_host()
    entry = host.registries.targets.entry(kind)
    record = host.records.get(entry.provider)
    return {"distribution": entry.distribution,
            "version": record.version if record is not None else None}


def restore_dtype(arr: np.ndarray, dtype: np.dtype | str | None) -> np.ndarray:
    """``arr`` viewed as ``dtype`` when NumPy's .npy format stored it as raw bytes of that
    size (it does so for dtypes it does not know itself, such as bfloat16)."""
    dtype = None if dtype is None else np.dtype(dtype)
    if dtype is not None and arr.dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize:
        return arr.view(dtype)
    return arr


def _members(compiled: CompiledModule) -> dict[str, list[Piece]]:
    """Every member but the metadata and the checksum, each as the pieces of its data."""
    from passhost.text.module import print_module

    try:
        params = write_npz(compiled.params)
    except NpzError as err:
        raise ArtifactError(f"cannot save the parameters: {err}") from None
    members: dict[str, list[Piece]] = {"lowered.txt": [compiled.ir_text.encode()],
                                       "params.npz": params}
    for kind, mod in compiled.tir.items():
        members[f"tir/{kind}.txt"] = [print_module(mod).encode()]
    for module in (compiled.module, *compiled.module.imported_modules):
        for name, text in getattr(module, "files", {}).items():
            members[f"modules/{module.type_key}/{name}"] = [text.encode()]
    return members


def _signature(plan: ExecutorPlan) -> dict[str, list[dict[str, Any]]]:
    """The ``inputs`` and ``outputs`` fields of the metadata of ``plan``."""
    return {"inputs": [{"name": n, "shape": list(t.shape), "dtype": t.dtype}
                       for n, t in plan.inputs],
            "outputs": [{"shape": list(plan.tensors[o].shape), "dtype": plan.tensors[o].dtype}
                        for o in plan.outputs]}


def _digest(members: Sequence[tuple[str, object]], digests: Mapping[str, bytes]) -> bytes:
    """The content of ``checksum.sha256`` for ``members``: the SHA-256 of each member's
    name and the SHA-256 of its data (``digests``, name -> raw digest), in order, each name
    preceded by its length, so no change, addition, removal or reordering of members keeps
    it."""
    sha = hashlib.sha256()
    for name, _ in members:
        encoded = name.encode()
        sha.update(len(encoded).to_bytes(8, "big") + encoded + digests[name])
    return f"{sha.hexdigest()}\n".encode()


def _sha256_of(data: Data) -> bytes:
    """The raw SHA-256 of a member's data."""
    sha = hashlib.sha256()
    for piece in pieces_of(data):
        sha.update(piece)
    return sha.digest()


def _sha256(members: Iterable[tuple[str, Data]]) -> dict[str, bytes]:
    """Name -> the raw SHA-256 of the data of every member."""
    return {name: _sha256_of(data) for name, data in members}


def _stream(compiled: CompiledModule, hasher: ThreadPoolExecutor,
            ) -> Iterator[tuple[str, Data]]:
    """The members of the artifact of ``compiled`` in order: each one is hashed on
    ``hasher``'s thread while the caller writes it (hashing and writing release the GIL),
    then the metadata with their checksums, then the checksum over everything."""
    members = _members(compiled)
    hashed = {}
    for name, data in members.items():
        hashed[name] = hasher.submit(_sha256_of, data)
        yield name, data
    digests = {name: future.result() for name, future in hashed.items()}
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "passhost_version": __version__,
        "target": compiled.target,
        "plugins": {kind: _plugin_of(kind) for kind in compiled.tir},
        **_signature(compiled.plan),
        "plan": compiled.plan.to_json(),
        "modules": {m.type_key: sorted(getattr(m, "files", {}))
                    for m in (compiled.module, *compiled.module.imported_modules)},
        "checksums": {name: digest.hex() for name, digest in digests.items()},
    }
    text = json.dumps(metadata, indent=1).encode()
    digests[_METADATA] = _sha256_of(text)
    yield _METADATA, text
    yield _CHECKSUM, _digest([(name, None) for name in (*members, _METADATA)], digests)


def save_artifact(compiled: CompiledModule, path: str | os.PathLike[str]) -> None:
    """Write ``compiled`` to ``path`` (replaced atomically: a failed save loses nothing)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as raw, ThreadPoolExecutor(1) as hasher:
            write_tar(raw, _stream(compiled, hasher))
        os.replace(tmp, path)
    except TarFormatError as err:
        Path(tmp).unlink(missing_ok=True)
        raise ArtifactError(f"{path}: {err}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_members(path: Path) -> list[tuple[str, bytes]]:
    try:
        members = read_tar(path)
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such artifact file") from None
    except OSError as err:
        raise ArtifactError(f"{path}: cannot be read ({err.strerror or err})") from None
    except TarFormatError as err:
        raise ArtifactError(f"{path}: not a passhost artifact, or truncated or corrupt: "
                            f"{err}") from None
    if _METADATA not in dict(members):
        raise ArtifactError(f"{path}: not a passhost artifact (no {_METADATA})")
    return members


def _check_metadata(path: Path, members: Mapping[str, bytes]) -> dict[str, Any]:
    """The metadata, once its format and versions are the ones this passhost reads."""
    try:
        meta = json.loads(members[_METADATA])
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise ArtifactError(f"{path}: {_METADATA} is not valid JSON "
                            f"({type(err).__name__}: {err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ArtifactError(f"{path}: not a passhost artifact (format is "
                            f"{meta.get('format') if isinstance(meta, dict) else meta!r})")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ArtifactError(f"{path}: artifact format version {version!r}; this passhost "
                            f"{__version__} reads version {FORMAT_VERSION}: rebuild the "
                            f"artifact with this passhost")
    written = str(meta.get("passhost_version"))
    if _minor(written) != _minor(__version__):
        raise ArtifactError(f"{path}: written by passhost {written}, this is passhost "
                            f"{__version__}: rebuild the artifact with this passhost")
    return meta


def _check_integrity(path: Path, members: list[tuple[str, bytes]],
                     meta: Mapping[str, Any]) -> None:
    """Every member listed in the metadata is there with its SHA-256, no other member is,
    and ``checksum.sha256``, the last member, covers all of them, the metadata included."""
    checksums = meta.get("checksums")
    if not isinstance(checksums, dict) or not all(
            isinstance(v, str) for v in checksums.values()):
        raise ArtifactError(f"{path}: {_METADATA} has no member checksums")
    data = dict(members)
    digests = _sha256((n, d) for n, d in members if n != _CHECKSUM)
    for name, digest in checksums.items():
        if name not in digests:
            raise ArtifactError(f"{path}: member {name!r} is missing (truncated artifact?)")
        if digests[name].hex() != digest:
            raise ArtifactError(f"{path}: member {name!r} is corrupt (checksum mismatch)")
    extra = [n for n, _ in members if n not in checksums and n not in (_METADATA, _CHECKSUM)]
    if extra:
        raise ArtifactError(f"{path}: unexpected member {extra[0]!r} (not in the "
                            f"checksums of {_METADATA})")
    if members[-1][0] != _CHECKSUM:
        where = "is missing" if _CHECKSUM not in data else "is not the last member"
        raise ArtifactError(f"{path}: member {_CHECKSUM!r} {where} (truncated artifact?)")
    if members[-1][1] != _digest(members[:-1], digests):
        raise ArtifactError(f"{path}: the artifact is corrupt: {_CHECKSUM} does not match "
                            f"its members ({_METADATA} was changed, or members were "
                            f"reordered)")


def _minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _recorded_distribution(meta: Mapping[str, Any], kind: str) -> str | None:
    """The distribution the artifact records as providing target ``kind``, if it names one
    (a name pip could install: letters, digits, ``.``, ``_``, ``-``)."""
    plugins = meta.get("plugins")
    info = plugins.get(kind) if isinstance(plugins, dict) else None
    name = info.get("distribution") if isinstance(info, dict) else None
    if isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name):
        return name
    return None


def _check_plugins(path: Path, meta: Mapping[str, Any], kinds: Sequence[str]) -> None:
    plugins = meta.get("plugins", {})
    if not isinstance(plugins, dict):
        raise ArtifactError(f"{path}: {_METADATA}: 'plugins' is not an object")
    for kind in kinds:
        info = plugins.get(kind)
        wanted = info.get("version") if isinstance(info, dict) else None
        installed = _plugin_of(kind)
        if isinstance(wanted, str) and installed["version"] \
                and _minor(wanted) != _minor(installed["version"]):
            raise ArtifactError(
                f"{path}: target {kind!r} was compiled with {installed['distribution']} "
                f"{wanted}, installed is {installed['version']}: rebuild the artifact")


def _plan(path: Path, meta: Mapping[str, Any]) -> ExecutorPlan:
    """The executor plan, well formed and agreeing with the metadata's inputs and outputs."""
    try:
        plan = ExecutorPlan.from_json(meta.get("plan", {}))
    except PlanError as err:
        raise ArtifactError(f"{path}: {_METADATA}: {err}") from None
    for field, value in _signature(plan).items():
        if meta.get(field) != value:
            raise ArtifactError(f"{path}: {_METADATA}: {field} {meta.get(field)!r} are not "
                                f"the executor plan's {value!r}")
    return plan


def _params(path: Path, members: Mapping[str, bytes], plan: ExecutorPlan,
            ) -> dict[str, np.ndarray]:
    """The parameters, each with its tensor's shape and dtype."""
    if "params.npz" not in members:
        raise ArtifactError(f"{path}: member 'params.npz' is missing")
    try:
        arrays = read_npz(members["params.npz"])
    except NpzError as err:
        raise ArtifactError(f"{path}: member params.npz: {err}") from None
    dtypes = {t.name: t.dtype for t in plan.tensors if t.kind == "param"}
    params = {name: restore_dtype(arr, dtypes.get(name)) for name, arr in arrays.items()}
    try:
        check_params(plan, params)
    except PlanError as err:
        raise ArtifactError(f"{path}: member params.npz does not fit the executor plan: "
                            f"{err}") from None
    return params


def _text(path: Path, members: Mapping[str, bytes], name: str) -> str:
    try:
        return members[name].decode("utf-8")
    except UnicodeDecodeError as err:
        raise ArtifactError(f"{path}: member {name!r} is not UTF-8 text ({err})") from None


def _parse_tir(path: Path, members: Mapping[str, bytes], kind: str) -> IRModule:
    """The PrimFuncs of target ``kind`` from ``tir/<kind>.txt``, each tagged with it and
    passing :func:`~passhost.runtime.prim_func_check.check_prim_func`."""
    from passhost.runtime.prim_func_check import PrimFuncCheckError, check_prim_func
    from passhost.text.module import parse_module

    member = f"tir/{kind}.txt"
    try:
        mod = parse_module(_text(path, members, member), source_name=f"{path}:{member}")
    except (PasshostError, RecursionError) as err:
        if isinstance(err, ArtifactError):
            raise
        raise ArtifactError(f"{path}: member {member} cannot be parsed: {err}") from None
    for name, func in mod.items():
        if not isinstance(func, PrimFunc) or func.attrs.get("target") != kind:
            raise ArtifactError(f"{path}: member {member}: @{name} is not a PrimFunc of "
                                f"target {kind!r}")
        try:
            check_prim_func(func, name)
        except PrimFuncCheckError as err:
            raise ArtifactError(f"{path}: member {member}: {err}") from None
    return mod


def load_artifact(path: str | os.PathLike[str]) -> CompiledModule:
    """Read an artifact written by :func:`save_artifact`, check it whole (sizes, checksum,
    the plan against the PrimFuncs and the parameters) and rebuild its runtime modules."""
    from passhost.target import Target, hooks, parse_targets

    path = Path(path)
    listed = _read_members(path)
    members = dict(listed)
    meta = _check_metadata(path, members)
    _check_integrity(path, listed, meta)
    try:
        targets: tuple[Target, ...] = parse_targets(str(meta.get("target", "")))
    except UnknownNameError as err:
        recorded = _recorded_distribution(meta, err.name)
        reason = (f"unknown target kind {err.name!r}{get_host().provided_by(recorded)}"
                  if recorded is not None else str(err))
        raise ArtifactError(f"{path}: cannot use the artifact's target "
                            f"{meta.get('target')!r}: {reason}") from None
    except PasshostError as err:
        raise ArtifactError(f"{path}: cannot use the artifact's target "
                            f"{meta.get('target')!r}: {err}") from None
    _check_plugins(path, meta, [t.kind.name for t in targets])
    plan = _plan(path, meta)
    params = _params(path, members, plan)
    host_kind = targets[-1].kind.name
    if f"tir/{host_kind}.txt" not in members:
        raise ArtifactError(f"{path}: member tir/{host_kind}.txt is missing")
    tir = {t.kind.name: _parse_tir(path, members, t.kind.name) for t in targets
           if f"tir/{t.kind.name}.txt" in members}
    try:
        check_plan_calls(plan, tir)
    except PlanError as err:
        raise ArtifactError(f"{path}: the executor plan does not fit the stored TIR: "
                            f"{err}") from None
    modules: dict[str, Module] = {}
    for target in targets:
        kind = target.kind.name
        if kind not in tir:
            continue
        try:
            with target:
                runtime = hooks.tir_to_runtime(target, tir[kind])
        except PasshostError as err:
            raise ArtifactError(f"{path}: target {kind!r} cannot rebuild its module from "
                                f"tir/{kind}.txt: {err}") from None
        if not isinstance(runtime, Module):
            raise ArtifactError(f"{path}: target {kind!r} did not rebuild its runtime module")
        modules[kind] = runtime
    host = modules[host_kind]
    for target in targets[:-1]:
        if target.kind.name in modules:
            host.import_module(modules[target.kind.name])
    missing = sorted({s.func for s in plan.steps if find_function(host, s.func) is None})
    if missing:
        raise ArtifactError(f"{path}: the plan calls functions no module has: {missing[:5]}")
    return CompiledModule(target=str(meta["target"]), plan=plan, params=params, module=host,
                          tir=tir, ir_text=_text(path, members, "lowered.txt")
                          if "lowered.txt" in members else "")
