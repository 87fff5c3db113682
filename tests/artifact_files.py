"""Tampering with artifact files in tests: members read and written in order, checksums
recomputed the way an attacker who knows the format would, and tar headers made by hand."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from passhost.runtime.tar_reader import read_tar, write_tar

METADATA, CHECKSUM = "metadata.json", "checksum.sha256"


def read_members(path: Path) -> dict[str, bytes]:
    """The members of the artifact at ``path`` (name -> data, in file order)."""
    return dict(read_tar(path))


def write_members(path: Path, members: dict[str, bytes]) -> None:
    """Write ``members`` in order as the tar file ``path``."""
    with open(path, "wb") as out:
        write_tar(out, members.items())


def reseal(members: dict[str, bytes]) -> dict[str, bytes]:
    """``members`` with every checksum made to fit them again: the metadata's per-member
    SHA-256s (when the metadata is a JSON object) and the final ``checksum.sha256``
    (computed independently of passhost's code, from the format's description)."""
    body = {n: d for n, d in members.items() if n != CHECKSUM}
    try:
        meta = json.loads(body[METADATA])
        meta["checksums"] = {n: hashlib.sha256(d).hexdigest() for n, d in body.items()
                             if n != METADATA}
        body[METADATA] = json.dumps(meta, indent=1).encode()
    except (ValueError, TypeError, RecursionError):  # no JSON object: seal the rest only
        pass
    sha = hashlib.sha256()
    for name, data in body.items():
        encoded = name.encode()
        sha.update(len(encoded).to_bytes(8, "big") + encoded + hashlib.sha256(data).digest())
    return {**body, CHECKSUM: f"{sha.hexdigest()}\n".encode()}


def rewrite(path: Path, change: Callable[[dict[str, bytes]], None], seal: bool = True) -> None:
    """Rewrite the artifact at ``path``: ``change(members)`` edits the member dict in place;
    with ``seal`` the checksums are then recomputed to fit."""
    members = read_members(path)
    change(members)
    write_members(path, reseal(members) if seal else members)


def edit_metadata(path: Path, edit: Callable[[dict], None], seal: bool = True) -> None:
    """Rewrite the artifact at ``path`` with ``edit(metadata)`` applied to its metadata."""
    def change(members: dict[str, bytes]) -> None:
        meta = json.loads(members[METADATA])
        edit(meta)
        members[METADATA] = json.dumps(meta, indent=1).encode()

    rewrite(path, change, seal)


def tar_header(name: str, size: int, typeflag: bytes = b"0", magic: bytes = b"ustar\x0000",
               extra: dict[int, bytes] | None = None) -> bytes:
    """A 512-byte tar header written by hand (``extra``: offset -> bytes placed in it),
    with a valid header checksum."""
    block = bytearray(512)
    block[0:len(name)] = name.encode()
    block[100:108] = b"0000644\x00"
    block[124:136] = f"{size:011o}\x00".encode()
    block[156:157] = typeflag
    block[257:265] = magic
    for offset, data in (extra or {}).items():
        block[offset:offset + len(data)] = data
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\x00 ".encode()
    return bytes(block)
