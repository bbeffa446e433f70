"""Read a file inside the data roots through one descriptor that no symlink swap can redirect.

Checking a path and then opening it is a race: between the two, a directory or the file can be
replaced by a symlink to anything the service can read. So the path is resolved once (symlinks
the user placed inside the roots are followed there, as for registered datasets), checked against
the roots, and then opened component by component from the root's own descriptor with
``O_NOFOLLOW``: if any component became a symlink since, the open fails instead of following
it. The file's type and size are checked on that same descriptor (``fstat``) and the bytes are
read from it, so what was checked is what is read.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["read_inside"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _root_of(real: Path, roots: list[Path]) -> Path | None:
    for root in roots:
        base = root.resolve()
        if real == base or real.is_relative_to(base):
            return base
    return None


def _open_beneath(base: Path, relative: Path) -> int:
    """A descriptor of ``base/relative`` reached without following any symlink below ``base``."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        parts = relative.parts
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def read_inside(text: str, roots: list[Path], max_bytes: int) -> bytes:
    """The bytes of the file ``text`` names inside ``roots`` (a relative path is tried under each).

    Raises ``ValueError`` (``path_not_allowed``, ``too_many_bytes``, ``not_a_file``) for a path that
    is outside, not a regular file, swapped for a symlink meanwhile, or larger than ``max_bytes``.
    """
    if "\x00" in text:
        raise ValueError("path_not_allowed: the path contains NUL")
    candidates = [Path(text)] if Path(text).is_absolute() else [r / text for r in roots]
    for candidate in candidates:
        try:
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        base = _root_of(real, roots)
        if base is None or real == base:
            continue
        try:
            fd = _open_beneath(base, real.relative_to(base))
        except OSError:  # ELOOP / ENOTDIR: a component became a symlink after the check
            raise ValueError(f"path_not_allowed: {text!r} changed while it was opened (a symlink "
                             "appeared in its path); it is not read") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"not_a_file: {text!r} is not a regular file")
            if info.st_size > max_bytes:
                raise ValueError(f"too_many_bytes: {info.st_size} bytes (max {max_bytes})")
            chunks, total = [], 0
            while chunk := os.read(fd, min(1 << 20, max_bytes + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > max_bytes:  # grew since fstat
                    raise ValueError(f"too_many_bytes: more than {max_bytes} bytes")
            return b"".join(chunks)
        finally:
            os.close(fd)
    raise ValueError(f"path_not_allowed: {text!r} is not a file inside CONTEXTSHIFT_DATA_ROOTS")
