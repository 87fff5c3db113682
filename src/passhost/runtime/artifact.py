"""Artifacts: a compiled model saved as one ``.tar`` of data, never code.

Members::

    metadata.json          format, versions (passhost and each target's plugin), target,
                           inputs, outputs, the executor plan, each member's SHA-256
    lowered.txt            the lowered module as text, constants left out (for people)
    tir/<kind>.txt         each target's PrimFuncs as text: the modules are rebuilt from it
    params.npz             the parameters (NumPy .npz, read without pickle)
    modules/<kind>/<file>  each target's generated sources (for people and firmware builds)

Loading parses the TIR text and asks each target's ``tir_to_runtime`` to generate its
module again, so nothing stored in an artifact is ever executed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from passhost._version import __version__
from passhost.errors import PasshostError
from passhost.plugins.manager import get_host
from passhost.runtime.compiled import CompiledModule
from passhost.runtime.module import Module, find_function
from passhost.runtime.plan import ExecutorPlan, PlanError

__all__ = ["FORMAT", "FORMAT_VERSION", "ArtifactError", "load_artifact", "restore_dtype",
           "save_artifact"]

#: The ``format`` field of every artifact's metadata.
FORMAT = "passhost-artifact"
#: The artifact layout version this passhost writes and reads.
FORMAT_VERSION = 1

_METADATA = "metadata.json"


class ArtifactError(PasshostError):
    """An artifact cannot be loaded: not an artifact, corrupt, truncated, from another
    version, or needing a target plugin that is not installed."""


def _plugin_of(kind: str) -> dict[str, str | None]:
    host = get_host()
    entry = host.registries.targets.entry(kind)
    record = host.records.get(entry.provider)
    return {"distribution": entry.distribution,
            "version": record.version if record is not None else None}


def _npz(params: Mapping[str, np.ndarray]) -> bytes:
    for name, arr in params.items():
        if np.asarray(arr).dtype.hasobject:
            raise ArtifactError(f"parameter {name!r} holds Python objects; artifacts store "
                                f"numeric arrays only")
    buf = io.BytesIO()
    np.savez(buf, **{name: np.asarray(arr) for name, arr in params.items()})
    return buf.getvalue()


def restore_dtype(arr: np.ndarray, dtype: np.dtype | str | None) -> np.ndarray:
    """``arr`` viewed as ``dtype`` when NumPy's .npy format stored it as raw bytes of that
    size (it does so for dtypes it does not know itself, such as bfloat16)."""
    dtype = None if dtype is None else np.dtype(dtype)
    if dtype is not None and arr.dtype.kind == "V" and arr.dtype.itemsize == dtype.itemsize:
        return arr.view(dtype)
    return arr


def _members(compiled: CompiledModule) -> dict[str, bytes]:
    from passhost.text.module import print_module

    members = {"lowered.txt": compiled.ir_text.encode(), "params.npz": _npz(compiled.params)}
    for kind, mod in compiled.tir.items():
        members[f"tir/{kind}.txt"] = print_module(mod).encode()
    for module in (compiled.module, *compiled.module.imported_modules):
        for name, text in getattr(module, "files", {}).items():
            members[f"modules/{module.type_key}/{name}"] = text.encode()
    return members


def save_artifact(compiled: CompiledModule, path: str | os.PathLike[str]) -> None:
    """Write ``compiled`` to ``path`` (replaced atomically: a failed save loses nothing)."""
    members = _members(compiled)
    plan = compiled.plan
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "passhost_version": __version__,
        "target": compiled.target,
        "plugins": {kind: _plugin_of(kind) for kind in compiled.tir},
        "inputs": [{"name": n, "shape": list(t.shape), "dtype": t.dtype}
                   for n, t in plan.inputs],
        "outputs": [{"shape": list(plan.tensors[o].shape), "dtype": plan.tensors[o].dtype}
                    for o in plan.outputs],
        "plan": plan.to_json(),
        "modules": {m.type_key: sorted(getattr(m, "files", {}))
                    for m in (compiled.module, *compiled.module.imported_modules)},
        "checksums": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
    }
    members = {_METADATA: json.dumps(metadata, indent=1).encode(), **members}
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w") as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_members(path: Path) -> dict[str, bytes]:
    try:
        with tarfile.open(path, mode="r:") as tar:
            members = {}
            for info in tar:
                if not info.isfile():
                    raise ArtifactError(f"{path}: member {info.name!r} is not a regular file")
                handle = tar.extractfile(info)
                members[info.name] = handle.read() if handle is not None else b""
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such artifact file") from None
    except (tarfile.TarError, EOFError, OSError) as err:
        raise ArtifactError(f"{path}: not a passhost artifact, or truncated or corrupt "
                            f"({type(err).__name__}: {err})") from None
    if _METADATA not in members:
        raise ArtifactError(f"{path}: not a passhost artifact (no {_METADATA})")
    return members


def _check_metadata(path: Path, members: dict[str, bytes]) -> dict[str, Any]:
    try:
        meta = json.loads(members[_METADATA])
    except (ValueError, UnicodeDecodeError) as err:
        raise ArtifactError(f"{path}: {_METADATA} is not valid JSON ({err})") from None
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
    checksums = meta.get("checksums")
    if not isinstance(checksums, dict):
        raise ArtifactError(f"{path}: {_METADATA} has no member checksums")
    for name, digest in checksums.items():
        if name not in members:
            raise ArtifactError(f"{path}: member {name!r} is missing (truncated artifact?)")
        if hashlib.sha256(members[name]).hexdigest() != digest:
            raise ArtifactError(f"{path}: member {name!r} is corrupt (checksum mismatch)")
    return meta


def _minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _check_plugins(path: Path, meta: dict[str, Any]) -> None:
    for kind, info in dict(meta.get("plugins", {})).items():
        wanted = (info or {}).get("version")
        installed = _plugin_of(kind)
        if wanted and installed["version"] and _minor(wanted) != _minor(installed["version"]):
            raise ArtifactError(
                f"{path}: target {kind!r} was compiled with {installed['distribution']} "
                f"{wanted}, installed is {installed['version']}: rebuild the artifact")


def load_artifact(path: str | os.PathLike[str]) -> CompiledModule:
    """Read an artifact written by :func:`save_artifact` and rebuild its runtime modules."""
    from passhost.target import Target, hooks, parse_targets
    from passhost.text.module import parse_module

    path = Path(path)
    members = _read_members(path)
    meta = _check_metadata(path, members)
    try:
        targets: tuple[Target, ...] = parse_targets(str(meta.get("target", "")))
    except PasshostError as err:
        raise ArtifactError(f"{path}: cannot use the artifact's target "
                            f"{meta.get('target')!r}: {err}") from None
    _check_plugins(path, meta)
    try:
        plan = ExecutorPlan.from_json(meta.get("plan", {}))
    except PlanError as err:
        raise ArtifactError(f"{path}: {err}") from None
    dtypes = {t.name: np.dtype(t.dtype) for t in plan.tensors if t.kind == "param"}
    try:
        with np.load(io.BytesIO(members["params.npz"]), allow_pickle=False) as npz:
            params = {name: restore_dtype(npz[name], dtypes.get(name)) for name in npz.files}
    except (KeyError, ValueError, OSError) as err:
        raise ArtifactError(f"{path}: params.npz cannot be read ({err})") from None
    tir = {}
    modules: dict[str, Module] = {}
    for target in targets:
        kind = target.kind.name
        member = f"tir/{kind}.txt"
        if member not in members:
            continue
        tir[kind] = parse_module(members[member].decode(), source_name=f"{path}:{member}")
        with target:
            runtime = hooks.tir_to_runtime(target, tir[kind])
        if not isinstance(runtime, Module):
            raise ArtifactError(f"{path}: target {kind!r} did not rebuild its runtime module")
        modules[kind] = runtime
    host_kind = targets[-1].kind.name
    if host_kind not in modules:
        raise ArtifactError(f"{path}: member tir/{host_kind}.txt is missing")
    host = modules[host_kind]
    for target in targets[:-1]:
        if target.kind.name in modules:
            host.import_module(modules[target.kind.name])
    missing = sorted({s.func for s in plan.steps if find_function(host, s.func) is None})
    if missing:
        raise ArtifactError(f"{path}: the plan calls functions no module has: {missing[:5]}")
    return CompiledModule(target=str(meta["target"]), plan=plan, params=params, module=host,
                          tir=tir, ir_text=members.get("lowered.txt", b"").decode())
