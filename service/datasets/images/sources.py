"""Where an upload's images come from: the encoded bytes of each row's image, bounded.

Three shapes of upload carry images:

* a table (CSV, Parquet, JSON Lines) whose ``image`` column holds file paths; each must
  resolve inside ``CONTEXTSHIFT_DATA_ROOTS`` (the same rule as registered datasets:
  symlinks followed and ``..`` collapsed before the check; a relative path is taken
  relative to each root in turn);
* a ``.zip`` or ``.tar`` archive holding the images and ONE manifest table (``.csv``,
  ``.parquet`` or ``.jsonl``) whose ``image`` column names archive members; members are
  bounded in count (``CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS``) and each image in bytes, and a
  member named with ``..``, an absolute path, or a link is refused;
* Parquet whose ``image`` column holds the bytes, or the ``{bytes, path}`` struct that
  Hugging Face ``datasets`` writes.
"""
from __future__ import annotations

import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import pandas as pd

from service.datasets.paths import inside_roots
from service.errors import BadUpload, InvalidRequest, UploadTooLarge

ARCHIVE_SUFFIXES = (".zip", ".tar")
IMAGE_COLUMN = "image"
MANIFEST_SUFFIXES = (".csv", ".parquet", ".pq", ".jsonl", ".ndjson")


def is_archive(filename: str) -> bool:
    return (filename or "").lower().endswith(ARCHIVE_SUFFIXES)


@dataclass(frozen=True)
class ImageLimits:
    """Bounds on one upload's images."""

    max_pixels: int
    max_bytes: int
    max_images: int
    max_archive_members: int

    @classmethod
    def from_settings(cls, settings: Any) -> "ImageLimits":
        return cls(int(settings.max_image_pixels), int(settings.max_image_bytes),
                   int(settings.max_images), int(settings.max_archive_members))


# a row's image: a thunk that returns its bytes (or raises ValueError naming why not)
Loader = Callable[[], bytes]


def _safe_member(name: str, filename: str) -> str:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or name.startswith(("/", "\\")) or ":" in path.parts[0]:
        raise BadUpload(f"Archive {filename!r} has a member outside the archive: {name!r}.",
                        code="unsafe_archive_member", details={"file": filename, "member": name})
    return str(path)


class Archive:
    """A bounded view of a ``.zip``/``.tar`` upload: member names checked, sizes known."""

    def __init__(self, path: Path, filename: str, limits: ImageLimits):
        self.filename = filename
        self.limits = limits
        self._zip = self._tar = None
        try:
            if filename.lower().endswith(".zip"):
                self._zip = zipfile.ZipFile(path)
                infos = [(i.filename, i.file_size, i) for i in self._zip.infolist() if not i.is_dir()]
            else:
                self._tar = tarfile.open(path, mode="r:")
                members = self._tar.getmembers()
                for m in members:
                    if m.issym() or m.islnk() or m.isdev():
                        raise BadUpload(f"Archive {filename!r} holds a link or device {m.name!r}.",
                                        code="unsafe_archive_member", details={"file": filename, "member": m.name})
                infos = [(m.name, m.size, m) for m in members if m.isfile()]
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
            raise BadUpload(f"File {filename!r} is not a readable archive: {exc}", code="invalid_archive",
                            details={"file": filename}) from None
        if len(infos) > limits.max_archive_members:
            raise UploadTooLarge(f"Archive {filename!r} has {len(infos)} members; the limit is "
                                 f"{limits.max_archive_members}.",
                                 details={"file": filename, "limit": "CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS"})
        self.members = {_safe_member(name, filename): (size, info) for name, size, info in infos}

    def close(self) -> None:
        for handle in (self._zip, self._tar):
            if handle is not None:
                handle.close()

    def read(self, name: str, max_bytes: int) -> bytes:
        size, info = self.members[name]
        if size > max_bytes:
            raise ValueError(f"too_many_bytes: member {name!r} has {size} bytes (max {max_bytes})")
        if self._zip is not None:
            with self._zip.open(info) as fh:
                data = fh.read(max_bytes + 1)  # the declared size may lie: read at most one byte more
        else:
            fh = self._tar.extractfile(info)
            data = fh.read(max_bytes + 1) if fh is not None else b""
        if len(data) > max_bytes:
            raise ValueError(f"too_many_bytes: member {name!r} exceeds {max_bytes} bytes")
        return data

    def manifest(self) -> str:
        found = [n for n in self.members if n.lower().endswith(MANIFEST_SUFFIXES)]
        if len(found) != 1:
            raise BadUpload(f"Archive {self.filename!r} needs exactly one manifest table (.csv, .parquet "
                            f"or .jsonl) with an {IMAGE_COLUMN!r} column; found {found[:10] or 'none'}.",
                            code="invalid_archive", details={"file": self.filename, "manifests": found[:10]})
        return found[0]

    def loader(self, name: Any) -> Loader:
        def load() -> bytes:
            key = str(PurePosixPath(str(name)))
            if key not in self.members:
                raise ValueError(f"not_in_archive: {str(name)!r} is not a member of the archive")
            return self.read(key, self.limits.max_bytes)
        return load


def path_loaders(values: pd.Series, roots: list[Path], limits: ImageLimits) -> list[Loader]:
    """Loaders for an ``image`` column of file paths, each checked inside ``roots``."""
    if not roots:
        raise InvalidRequest("Image paths need CONTEXTSHIFT_DATA_ROOTS (the folders images may be read "
                             "from); upload a .zip/.tar with the images instead.", code="paths_disabled")

    def loader(value: Any) -> Loader:
        def load() -> bytes:
            text = str(value)
            candidates = [Path(text)] if Path(text).is_absolute() else [r / text for r in roots]
            for file in candidates:
                if file.is_file() and inside_roots(file, roots):
                    size = file.stat().st_size
                    if size > limits.max_bytes:
                        raise ValueError(f"too_many_bytes: {size} bytes (max {limits.max_bytes})")
                    return file.read_bytes()
            raise ValueError(f"path_not_allowed: {text!r} is not a file inside CONTEXTSHIFT_DATA_ROOTS")
        return load
    return [loader(v) for v in values]


def cell_loaders(values: pd.Series, limits: ImageLimits,
                 archive: Archive | None = None) -> list[Loader]:
    """Loaders for Parquet cells holding bytes, or ``{bytes, path}`` structs (Hugging Face)."""
    def loader(value: Any) -> Loader:
        def load() -> bytes:
            cell = value
            if isinstance(cell, dict):
                data = cell.get("bytes")
                if data is None and cell.get("path") and archive is not None:
                    return archive.loader(cell["path"])()
                cell = data
            if isinstance(cell, (bytes, bytearray, memoryview)):
                if len(cell) > limits.max_bytes:
                    raise ValueError(f"too_many_bytes: {len(cell)} bytes (max {limits.max_bytes})")
                return bytes(cell)
            raise ValueError("no_bytes: the image cell holds no bytes")
        return load
    return [loader(v) for v in values]
