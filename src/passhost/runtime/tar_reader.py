"""A strict reader of the tar files artifacts are: POSIX ustar, regular members only.

Python's ``tarfile`` reads the data of extended headers (pax, GNU long names) by their
declared sizes before a caller can look at them, and expands sparse members to their
declared sizes: a small crafted file can make it allocate gigabytes. This reader takes only
what :func:`write_tar` writes: ustar headers (with a valid header checksum) of regular
files, each declaring no more data than the rest of the file holds, so the memory it takes
is at most the file's size. Anything else (sparse members, links, devices, directories,
extended headers, sizes in base-256, duplicate or unsafe names, a file ending early) is a
:class:`TarFormatError` naming the member.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterable, Sequence
from typing import BinaryIO

from passhost.errors import PasshostError

__all__ = ["Data", "Piece", "TarFormatError", "pieces_of", "read_tar", "write_tar"]

_BLOCK = 512
_MAGIC = b"ustar\x0000"  # magic and version of POSIX ustar
_REGULAR = (b"0", b"\x00")
_TYPES = {
    b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device",
    b"4": "a block device", b"5": "a directory", b"6": "a FIFO", b"7": "a contiguous file",
    b"x": "a pax extended header", b"g": "a pax global header",
    b"L": "a GNU long name", b"K": "a GNU long link name", b"S": "a GNU sparse file",
    b"D": "a GNU directory dump", b"M": "a GNU multi-volume continuation",
    b"V": "a GNU volume label",
}


class TarFormatError(PasshostError):
    """A tar file this reader does not take: malformed, truncated or holding anything
    besides regular members of sizes the file can hold."""


#: A piece of a member written in pieces: bytes, or a view of an array's memory.
Piece = bytes | memoryview
#: A member's data: bytes, or pieces to write one after the other.
Data = bytes | Sequence[Piece]


def pieces_of(data: Data) -> Sequence[Piece]:
    """``data`` as a sequence of pieces."""
    return (data,) if isinstance(data, bytes) else data


def write_tar(out: BinaryIO, members: Iterable[tuple[str, Data]]) -> None:
    """Write ``members`` (name, data), in order, as a ustar file :func:`read_tar` reads:
    each header, then the data as it is (no copy in between), padded to whole blocks."""
    for name, data in members:
        pieces = pieces_of(data)
        size = sum(memoryview(piece).nbytes for piece in pieces)
        info = tarfile.TarInfo(name)
        info.size = size
        info.mode = 0o644
        try:
            header = info.tobuf(tarfile.USTAR_FORMAT, "utf-8", "strict")
        except ValueError as err:  # a name or size ustar cannot hold
            raise TarFormatError(f"member {name!r} cannot be written: {err}") from None
        out.write(header)
        for piece in pieces:
            out.write(piece)
        out.write(bytes(-size % _BLOCK))
    out.write(bytes(2 * _BLOCK))  # the end-of-archive marker


def _octal(field: bytes, what: str, where: str) -> int:
    if field[:1] and field[0] & 0x80:
        raise TarFormatError(f"{where}: {what} is in base-256 (over 8 GiB); artifacts use "
                             f"octal sizes only")
    text = field.split(b"\x00", 1)[0].strip(b" ")
    if not text or any(c not in b"01234567" for c in text):
        raise TarFormatError(f"{where}: {what} field {field!r} is not an octal number")
    return int(text, 8)


def _name(header: bytes, offset: int) -> str:
    raw = header[:100].split(b"\x00", 1)[0]
    prefix = header[345:500].split(b"\x00", 1)[0]
    if prefix:
        raw = prefix + b"/" + raw
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TarFormatError(f"the member at byte {offset} has a name that is not "
                             f"UTF-8: {raw!r}") from None
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts) \
            or "\\" in name:
        raise TarFormatError(f"member {name!r} (at byte {offset}): unsafe or empty name "
                             f"(absolute, '..', '.', empty parts or backslashes)")
    return name


def _header(header: bytes, offset: int) -> tuple[str, int]:
    """The name and declared size of the member whose header is ``header``."""
    where = f"the header at byte {offset}"
    declared = _octal(header[148:156], "the header checksum", where)
    actual = sum(header[:148]) + 8 * 0x20 + sum(header[156:])
    if declared != actual:
        raise TarFormatError(f"{where} is corrupt (header checksum {declared}, computed "
                             f"{actual})")
    name = _name(header, offset)
    kind = header[156:157]
    if kind not in _REGULAR:
        what = _TYPES.get(kind, f"of type {kind!r}")
        raise TarFormatError(f"member {name!r} is {what}; artifacts hold regular files only")
    if header[257:265] != _MAGIC:
        raise TarFormatError(f"member {name!r}: not a POSIX ustar header (magic "
                             f"{header[257:265]!r})")
    return name, _octal(header[124:136], "the size", f"member {name!r}")


def read_tar(path: str | os.PathLike[str]) -> list[tuple[str, bytes]]:
    """The members (name, data) of the ustar file at ``path``, in file order; every size
    is checked against the file's own size before the member is read."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # before opening: a FIFO would block
        raise TarFormatError("not a regular file")
    with open(path, "rb") as f:
        total = os.fstat(f.fileno()).st_size
        members: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        offset = 0
        while True:
            header = f.read(_BLOCK)
            if len(header) < _BLOCK:
                raise TarFormatError(f"truncated: the file ends at byte {offset + len(header)} "
                                     f"where a member header or the end-of-archive block "
                                     f"should be")
            if header == bytes(_BLOCK):
                return members
            name, size = _header(header, offset)
            if name in seen:
                raise TarFormatError(f"member {name!r} appears twice")
            seen.add(name)
            start = offset + _BLOCK
            if size > total - start:
                raise TarFormatError(f"member {name!r} declares {size} bytes, but the file "
                                     f"holds only {max(total - start, 0)} more "
                                     f"(truncated or oversized)")
            data = f.read(size)
            if len(data) != size:
                raise TarFormatError(f"member {name!r}: truncated (read {len(data)} of "
                                     f"{size} bytes)")
            members.append((name, data))
            offset = start + -(-size // _BLOCK) * _BLOCK
            f.seek(offset)
