"""A directory source: files dropped in a folder, each taken once, read without following links.

The folder is opened once and every file is opened relative to it with ``O_NOFOLLOW``; the
opened descriptor must be a regular file whose real path (``/proc/self/fd/N``) lies inside
the allowed roots, and that same open file is hashed and parsed. So a file swapped for a
symlink between listing and reading is refused, not read from wherever the link points.

A file is remembered by path and content hash (rewritten with new content, it is taken
again). A run takes at most ``CONTEXTSHIFT_MONITOR_MAX_ROWS_PER_RUN`` rows and
``CONTEXTSHIFT_MONITOR_MAX_BYTES_PER_RUN`` file bytes (and 1,000 files): the files past the
bound wait, untouched, for the next run. A file name that is not UTF-8 cannot be recorded,
and a file larger than a whole run's bound can never be taken: both are skipped with a note
on the run (:attr:`Batch.notes`), every run, until they are renamed or the bound is raised.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from service.datasets.paths import inside_roots
from service.errors import ServiceError
from service.monitors.batch import Batch, SourceLimits

if TYPE_CHECKING:  # read lazily: listing a folder with nothing new needs no pandas
    import pandas as pd

MAX_FILES_PER_RUN = 1000
_CHUNK = 1 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)  # a FIFO never blocks


@dataclass
class _Run:
    """What one run has taken so far, against its bounds."""

    max_rows: int
    max_bytes: int
    frames: list[pd.DataFrame] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: int = 0
    size: int = 0
    left: int = 0  # files left for the next run


def _fd_path(fd: int) -> Path:
    """A path that opens the very file ``fd`` has open (the name it was opened by may be gone)."""
    return Path(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else Path(f"/dev/fd/{fd}")


def _real_inside(fd: int, roots: list[Path], named: Path) -> bool:
    """Does the file open as ``fd`` lie inside ``roots``? Without ``/proc``, its name ``named`` is checked."""
    if not _fd_path(fd).is_symlink():
        return inside_roots(named, roots)
    real = Path(os.readlink(_fd_path(fd)))
    return any(real == r or real.is_relative_to(r) for r in (root.resolve() for root in roots))


def _digest(fd: int) -> str:
    digest = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _names(dir_fd: int, pattern: str, run: _Run) -> list[str]:
    names = []
    for name in sorted(os.listdir(dir_fd)):
        if name.startswith(".") or not fnmatch.fnmatchcase(name, pattern):
            continue
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:  # a surrogate-escaped byte: the name cannot be stored nor shown as is
            run.notes.append(f"skipped a file whose name is not UTF-8 ({name.encode('utf-8', 'surrogateescape')!r}):"
                             " rename it")
            continue
        names.append(name)
    return names


def _take_one(dir_fd: int, folder: Path, name: str, taken: set[tuple[str, str]], roots: list[Path] | None,
              run: _Run) -> bool:
    """Take file ``name`` into ``run`` if it is new and fits; False once the run is full."""
    flags = _FILE_FLAGS | (_NOFOLLOW if roots is not None else 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:  # a symlink (ELOOP with O_NOFOLLOW), or the file vanished since the listing
        return True
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (roots is not None and not _real_inside(fd, roots, folder / name)):
            return True
        path = str(folder / name)
        digest = _digest(fd)
        if (path, digest) in taken:
            return True
        if info.st_size > run.max_bytes:
            run.notes.append(f"skipped {name!r}: {info.st_size} bytes, more than one run reads "
                             f"(CONTEXTSHIFT_MONITOR_MAX_BYTES_PER_RUN = {run.max_bytes})")
            return True
        if run.files and (run.size + info.st_size > run.max_bytes or len(run.files) >= MAX_FILES_PER_RUN):
            return False
        from service.datasets import ingest  # lazy: pandas (~0.6 s), only for a file not taken before

        try:
            frame = ingest.read_table(_fd_path(fd), name)  # the same open file, whatever its name is now
        except ServiceError as exc:  # taken, so that one bad file does not fail every later run
            run.notes.append(f"skipped {name!r}: it cannot be read as a table ({exc.code})")
            run.files.append((path, digest))
            return True
    finally:
        os.close(fd)
    if len(frame) > run.max_rows:
        run.notes.append(f"skipped {name!r}: {len(frame)} rows, more than one run takes "
                         f"(CONTEXTSHIFT_MONITOR_MAX_ROWS_PER_RUN = {run.max_rows})")
        return True
    if run.files and run.rows + len(frame) > run.max_rows:
        return False
    run.frames.append(frame)
    run.files.append((path, digest))
    run.rows, run.size = run.rows + len(frame), run.size + info.st_size
    return True


@dataclass(frozen=True)
class DirectorySource:
    """A monitored folder (:class:`service.monitors.sources.Source`); ``roots=None`` trusts it (CLI)."""

    definition: Mapping[str, Any]  # {"type": "directory", "path", "pattern"}
    roots: list[Path] | None
    limits: SourceLimits

    def ready(self) -> None:
        """Without ``CONTEXTSHIFT_MONITOR_ROOTS`` no folder is readable: the fault is the setting, not the folder."""
        if self.roots is not None and not self.roots:
            raise ServiceError("Directory sources are disabled in this process: CONTEXTSHIFT_MONITOR_ROOTS is not "
                               "set. Set it to the folder(s) monitors may read (as the server that defined the "
                               "monitor has it) and run again.", code="directory_sources_disabled", status_code=409)

    def take(self, taken: set[tuple[str, str]], watermark: str | None = None) -> Batch:
        self.ready()
        return take_directory(self.definition, taken, self.roots, max_rows=self.limits.max_rows,
                              max_bytes=self.limits.max_file_bytes)


def take_directory(source: Mapping[str, Any], taken: set[tuple[str, str]], roots: list[Path] | None, *,
                   max_rows: int, max_bytes: int) -> Batch:
    """Files matching the pattern that were not taken before, at most ``max_rows`` rows and ``max_bytes``
    file bytes; ``roots=None`` trusts the folder (CLI)."""
    folder = Path(source["path"])
    run = _Run(max_rows=int(max_rows), max_bytes=int(max_bytes))
    dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if roots is not None and not _real_inside(dir_fd, roots, folder):
            raise PermissionError(f"the monitored folder {folder.name!r} now lies outside the allowed roots")
        names = _names(dir_fd, source.get("pattern") or "*.csv", run)
        for index, name in enumerate(names):
            if not _take_one(dir_fd, folder, name, taken, roots, run):
                run.left = len(names) - index
                break
    finally:
        os.close(dir_fd)
    if run.left:
        run.notes.append(f"the run was full ({len(run.files)} file(s), {run.rows} rows, {run.size} bytes); "
                         f"the {run.left} file(s) after it in the listing wait for the next run")
    if not run.frames:
        return Batch(frame=None, notes=tuple(run.notes))
    import pandas as pd  # lazy: ~0.6 s; a cron run with nothing new must not load it

    frame = pd.concat(run.frames, ignore_index=True)
    return Batch(frame=frame, files=run.files, description=f"{len(run.files)} file(s) from {folder.name}",
                 notes=tuple(run.notes))
