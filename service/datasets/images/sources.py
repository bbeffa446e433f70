"""Where an upload's images come from: the encoded bytes of each row's image, bounded.

Three shapes of upload carry images:

* a table (CSV, Parquet, JSON Lines) whose ``image`` column holds file paths; each must
  resolve inside ``CONTEXTSHIFT_DATA_ROOTS`` (the same rule as registered datasets:
  symlinks followed and ``..`` collapsed before the check; a relative path is taken
  relative to each root in turn), and is then read through one descriptor opened without
  following symlinks (:mod:`service.datasets.images.open_inside`), so a path swapped for a
  symlink after the check is not read;
* a ``.zip`` or ``.tar`` archive holding the images and ONE manifest table (``.csv``,
  ``.parquet`` or ``.jsonl``) whose ``image`` column names archive members; members are
  counted from the archive's headers before ``zipfile``/``tarfile`` read them
  (``CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS``, :mod:`service.datasets.images.archive_headers`), each
  member is inflated in 1 MB steps up to its byte limit (a header that lies about the size, a
  bad CRC or a corrupt stream is that row's error, never a crash), everything inflated from one
  archive counts against ``CONTEXTSHIFT_MAX_DECOMPRESSED_MB``, and a member named with ``..``,
  an absolute path, or a link is refused;
* Parquet whose ``image`` column holds the bytes, or the ``{bytes, path}`` struct that
  Hugging Face ``datasets`` writes (read one row group at a time:
  :mod:`service.datasets.images.parquet_images`).

Every loop that inflates or reads checks whether the client hung up
(:func:`service.disconnect.check_client`) and stops if so.
"""
from __future__ import annotations

import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Callable

import pandas as pd

from service.datasets.images.archive_headers import ArchiveRefused, count_tar_members, count_zip_members
from service.datasets.images.open_inside import read_inside
from service.disconnect import check_client
from service.errors import BadUpload, InvalidRequest, UploadTooLarge

MB = 1024 * 1024

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
    max_inflated_bytes: int = 1024 * MB  # all members read from one archive, manifest included

    @classmethod
    def from_settings(cls, settings: Any) -> "ImageLimits":
        return cls(int(settings.max_image_pixels), int(settings.max_image_bytes),
                   int(settings.max_images), int(settings.max_archive_members),
                   int(settings.max_decompressed_mb * MB))


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
        self.inflated = 0
        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        infos: list[tuple[str, int, zipfile.ZipInfo | tarfile.TarInfo]]
        try:
            if filename.lower().endswith(".zip"):
                count_zip_members(path, limits.max_archive_members)  # before zipfile reads the directory
                self._zip = zipfile.ZipFile(path)
                infos = [(i.filename, i.file_size, i) for i in self._zip.infolist() if not i.is_dir()]
            else:
                count_tar_members(path, limits.max_archive_members)  # before tarfile parses a header
                self._tar = tarfile.open(path, mode="r:")
                members = self._tar.getmembers()
                for m in members:
                    if m.issym() or m.islnk() or m.isdev():
                        raise BadUpload(f"Archive {filename!r} holds a link or device {m.name!r}.",
                                        code="unsafe_archive_member", details={"file": filename, "member": m.name})
                infos = [(m.name, m.size, m) for m in members if m.isfile()]
        except ArchiveRefused as exc:
            self.close()
            if exc.code == "too_many_members":
                raise UploadTooLarge(f"Archive {filename!r}: {exc}.", code="too_many_members",
                                     details={"file": filename, "limit": exc.limit, "members_at_least": exc.count,
                                              "max_members": limits.max_archive_members}) from None
            raise BadUpload(f"Archive {filename!r} is refused: {exc}.", code=exc.code,
                            details={"file": filename}) from None
        except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError, zlib.error) as exc:
            self.close()
            raise BadUpload(f"File {filename!r} is not a readable archive: {exc}", code="invalid_archive",
                            details={"file": filename}) from None
        except BaseException:
            self.close()
            raise
        if len(infos) > limits.max_archive_members:
            self.close()
            raise UploadTooLarge(f"Archive {filename!r} has {len(infos)} members; the limit is "
                                 f"{limits.max_archive_members}.", code="too_many_members",
                                 details={"file": filename, "limit": "CONTEXTSHIFT_MAX_ARCHIVE_MEMBERS"})
        try:
            self.members = {_safe_member(name, filename): (size, info) for name, size, info in infos}
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for handle in (self._zip, self._tar):
            if handle is not None:
                handle.close()

    def stream(self, name: str, max_bytes: int):
        """The member's bytes in chunks of at most 1 MB, at most ``max_bytes`` in all (``ValueError``
        past it, or for a member whose data is damaged), counted against the archive's budget."""
        size, info = self.members[name]
        if size > max_bytes:  # the declared size, from the header, before inflating anything
            raise ValueError(f"too_many_bytes: member {name!r} has {size} bytes (max {max_bytes})")
        total = 0
        try:
            fh: IO[bytes] | None
            if self._zip is not None:
                assert isinstance(info, zipfile.ZipInfo)  # the members of a zip
                fh = self._zip.open(info)
            else:
                assert self._tar is not None and isinstance(info, tarfile.TarInfo)  # not a zip, so a tar
                fh = self._tar.extractfile(info)
            if fh is None:
                return
            with fh:
                while True:
                    check_client()
                    chunk = fh.read(min(MB, max_bytes + 1 - total))  # the declared size may lie
                    if not chunk:
                        return
                    total += len(chunk)
                    self.inflated += len(chunk)
                    if total > max_bytes:
                        raise ValueError(f"too_many_bytes: member {name!r} exceeds {max_bytes} bytes")
                    if self.inflated > self.limits.max_inflated_bytes:
                        raise UploadTooLarge(
                            f"Archive {self.filename!r} expands to more than {self.limits.max_inflated_bytes / MB:g} "
                            "MB (CONTEXTSHIFT_MAX_DECOMPRESSED_MB); upload fewer or smaller images.",
                            code="decompressed_too_large",
                            details={"file": self.filename, "limit": "CONTEXTSHIFT_MAX_DECOMPRESSED_MB"})
                    yield chunk
        except (zipfile.BadZipFile, zlib.error, EOFError, tarfile.TarError, NotImplementedError,
                RuntimeError) as exc:  # a bad CRC, a corrupt stream, an encrypted or unknown method
            raise ValueError(f"corrupt_member: member {name!r} cannot be read: {exc}") from None

    def read(self, name: str, max_bytes: int) -> bytes:
        return b"".join(self.stream(name, max_bytes))

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
    """Loaders for an ``image`` column of file paths, each checked inside ``roots`` and read
    through the descriptor that was checked (:func:`service.datasets.images.open_inside.read_inside`)."""
    if not roots:
        raise InvalidRequest("Image paths need CONTEXTSHIFT_DATA_ROOTS (the folders images may be read "
                             "from); upload a .zip/.tar with the images instead.", code="paths_disabled")

    def loader(value: Any) -> Loader:
        def load() -> bytes:
            check_client()
            return read_inside(str(value), roots, limits.max_bytes)
        return load
    return [loader(v) for v in values]
