"""Counts and sizes of an uploaded archive, read from its headers before any library parses it.

``zipfile`` reads a zip's whole central directory into memory and builds an object per entry
before anyone can count them, and ``tarfile`` on Python before 3.11.10 parses a pax header in
time quadratic in its length. So both archives are walked here first, with fixed-size reads:

* zip: the end-of-central-directory record (and its zip64 form) gives the entry count and the
  directory's size and offset; the directory is then walked entry by entry (46 bytes plus the
  name, extra and comment lengths it declares), so a directory with more entries than the
  record claims is caught too. Nothing is decompressed.
* tar: every 512-byte header block is read and its checksum verified; pax (``x``/``g``) and GNU
  long-name (``L``/``K``) headers larger than :data:`MAX_EXTENDED_HEADER` are refused before
  ``tarfile`` could parse them, and members are counted as they go by.

Each refusal is an :class:`ArchiveRefused` with ``code`` and the limit it met; the caller turns
it into a 4xx.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ArchiveRefused", "MAX_CENTRAL_DIRECTORY", "MAX_EXTENDED_HEADER", "count_tar_members",
           "count_zip_members"]

MAX_EXTENDED_HEADER = 8 * 1024  # pax/GNU long-name data: a path needs at most 4 KB (PATH_MAX)
MAX_CENTRAL_DIRECTORY = 128 * 1024 * 1024  # zipfile holds the directory in memory at once
MAX_NAME = 4096  # bytes of one member name (PATH_MAX)
_EOCD = b"PK\x05\x06"
_EOCD64 = b"PK\x06\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"
_BLOCK = 512
_EXTENDED = (b"x", b"g", b"X", b"L", b"K")


@dataclass
class ArchiveRefused(Exception):
    """An archive refused from its headers; ``code`` names the rule, ``limit`` the setting if any."""

    code: str
    message: str
    limit: str | None = None
    count: int | None = None

    def __str__(self) -> str:
        return self.message


def _zip_end(fh, size: int) -> tuple[int, int, int]:
    """``(entries, directory size, directory offset)`` from the end records."""
    tail_len = min(size, 22 + 65535)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        raise ArchiveRefused("invalid_archive", "no end-of-central-directory record (not a zip, or truncated)")
    _, _, _, _, entries, cd_size, cd_offset, _ = struct.unpack("<4s4H2LH", tail[at:at + 22])
    locator = tail[at - 20:at] if at >= 20 else b""
    if locator.startswith(_EOCD64_LOCATOR):  # zip64: the real numbers are in the zip64 record
        record_offset = struct.unpack("<Q", locator[8:16])[0]
        if record_offset + 56 > size:
            raise ArchiveRefused("invalid_archive", "the zip64 end record points past the end of the file")
        fh.seek(record_offset)
        record = fh.read(56)
        if not record.startswith(_EOCD64):
            raise ArchiveRefused("invalid_archive", "the zip64 end record is missing")
        entries, cd_size, cd_offset = struct.unpack("<QQQ", record[32:56])
    return entries, cd_size, cd_offset


def count_zip_members(path: Path, max_members: int) -> int:
    """Entries of the zip at ``path`` (directories included), refused past ``max_members``.

    The declared count is checked first (a zip claiming 4 million entries is refused after
    reading its last 64 KB); then the directory is walked without keeping anything, so a
    record that understates the count is caught before ``zipfile`` reads the directory.
    """
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        entries, cd_size, cd_offset = _zip_end(fh, size)
        if entries > max_members:
            raise _too_many(entries, max_members)
        if cd_size > MAX_CENTRAL_DIRECTORY:
            raise ArchiveRefused("archive_too_large", f"its central directory is {cd_size:,} bytes, more than "
                                 f"{MAX_CENTRAL_DIRECTORY:,}")
        if cd_offset + cd_size > size:
            raise ArchiveRefused("invalid_archive", "the central directory lies past the end of the file")
        fh.seek(cd_offset)
        seen, left = 0, cd_size
        while left >= 46:
            head = fh.read(46)
            if len(head) < 46 or not head.startswith(_CENTRAL):
                break  # zipfile names the fault when it reads the directory
            name_len, extra_len, comment_len = struct.unpack("<3H", head[28:34])
            if name_len > MAX_NAME:
                raise ArchiveRefused("invalid_archive", f"a member name of {name_len:,} bytes (max {MAX_NAME})")
            seen += 1
            if seen > max_members:
                raise _too_many(seen, max_members, at_least=True)
            skip = name_len + extra_len + comment_len
            fh.seek(skip, 1)
            left -= 46 + skip
    return seen


def _too_many(count: int, limit: int, *, at_least: bool = False) -> ArchiveRefused:
    many = f"at least {count:,}" if at_least else f"{count:,}"
    return ArchiveRefused("too_many_members", f"it has {many} members; the limit is {limit:,}",
                          limit="CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS", count=count)


def _octal(field: bytes) -> int:
    if field[:1] in (b"\x80", b"\xff"):  # GNU base-256 for sizes over 8 GB
        value = int.from_bytes(field[1:], "big")
        return -value if field[:1] == b"\xff" else value
    text = field.split(b"\x00", 1)[0].strip()
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise ArchiveRefused("invalid_archive", f"a tar header field is not a number: {text[:20]!r}") from None


def _checksum_ok(block: bytes) -> bool:
    stored = _octal(block[148:156])
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
    signed = sum(struct.unpack("148b", block[:148])) + 8 * 32 + sum(struct.unpack("356b", block[156:]))
    return stored in (unsigned, signed)


def count_tar_members(path: Path, max_members: int, *, max_extended: int = MAX_EXTENDED_HEADER) -> int:
    """Regular members and links of the tar at ``path``, counted from its 512-byte headers.

    Extended headers (pax ``x``/``g``, GNU ``L``/``K``) larger than ``max_extended`` bytes are
    refused unread; the walk stops at the end-of-archive blocks. Member data is skipped by seek.
    """
    counted, override = 0, None
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(0)
        while True:
            block = fh.read(_BLOCK)
            if len(block) < _BLOCK or block == b"\x00" * _BLOCK:
                break
            if not _checksum_ok(block):
                if counted == 0 and fh.tell() == _BLOCK:
                    raise ArchiveRefused("invalid_archive", "the first tar header is damaged (not a tar file?)")
                raise ArchiveRefused("invalid_archive", f"a damaged tar header at byte {fh.tell() - _BLOCK:,}")
            kind = block[156:157]
            length = _octal(block[124:136])
            if length < 0 or fh.tell() + length > size:
                raise ArchiveRefused("invalid_archive", "a tar member runs past the end of the file")
            if override is not None:  # a pax "size" record stands for the member after it
                length, override = override, None
            if kind in _EXTENDED and length > max_extended:
                raise ArchiveRefused("tar_header_too_large", f"an extended tar header of {length:,} bytes (pax "
                                     f"or GNU long name); the limit is {max_extended:,}")
            if kind in (b"x", b"X"):
                override = _pax_size(fh.read(length))
                fh.seek(-length, 1)
            elif kind not in _EXTENDED and kind != b"5":
                counted += 1
                if counted > max_members:
                    raise _too_many(counted, max_members, at_least=True)
            fh.seek((length + _BLOCK - 1) // _BLOCK * _BLOCK, 1)
    return counted


def _pax_size(data: bytes) -> int | None:
    """The ``size`` record of a pax header (``"<length> size=<n>\n"`` records), read in one pass."""
    pos, found = 0, None
    while pos < len(data) and data[pos:pos + 1] != b"\x00":
        space = data.find(b" ", pos, pos + 20)
        if space < 0 or not data[pos:space].isdigit() or int(data[pos:space]) <= 0:
            raise ArchiveRefused("invalid_archive", "a malformed pax header record")
        end = pos + int(data[pos:space])
        key, _, value = data[space + 1:end - 1].partition(b"=")
        if key == b"size":
            try:
                found = int(value)
            except ValueError:
                raise ArchiveRefused("invalid_archive", "a pax size that is not a number") from None
        pos = end
    return found
