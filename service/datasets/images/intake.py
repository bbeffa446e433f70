"""Images in an upload become derived columns beside the table's own, before it is stored.

:func:`prepare_upload` recognises an upload that carries images (see
:mod:`service.datasets.images.sources`), decodes each image once within the limits, derives its
context with :mod:`imagecontext` and writes ONE Parquet table: the manifest's columns
(minus ``image``), each row's image hash ``image_sha256`` (role ``ignore``: it finds the
row's thumbnail in the cache, :mod:`service.datasets.images.cache`), the derived
``img_*``/``face_*``/``skin_*`` values (role ``feature``),
the appearance embedding ``emb_*`` (role ``embedding``) and the domain pack's
mapped context columns (role ``context``; a column the user supplied wins). The usual
streamed upload then validates and stores that table, so nothing half-written is stored.

Derived values are cached by the image's SHA-256 under ``data_dir/cache/images/<version>``
and computed in a process pool (``CONTEXTSHIFT_IMAGE_WORKERS``, default one per core) when there
are enough images to pay for it; at most ``CONTEXTSHIFT_MAX_IMAGE_UPLOADS`` uploads derive at
once (the others wait up to ``CONTEXTSHIFT_IMAGE_UPLOAD_WAIT_S``, then 429), which bounds the
child processes. Each distinct image (path or member name) is read and derived once however
many rows name it. Every count is checked before the work it limits: the manifest's rows and,
with the columns the images will add, its cells, before any image is read. A refused upload
removes the cache entries it created (unless a stored dataset holds the same image). A row
whose image cannot be read or decoded is an error naming the row; the
upload answers 422 listing them, unless the schema field asks ``"on_image_error": "skip"``,
which keeps the other rows and records the skipped ones.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from service.datasets import ingest
from service.datasets.bounded import UploadLimits
from service.datasets.images.cache import forget_images
from service.datasets.images.derive import (
    HASH_COLUMN,
    PATH_COLUMN,
    cache_dir,
    check_count,
    check_errors,
    derive_images,
    derived_roles,
    skipped_rows,
)
from service.datasets.images.once import RecordingCache, check_cells, derivation_slot, derive_once
from service.datasets.images.origins import column_sources
from service.datasets.images.parquet_images import ParquetImages, read_parquet_manifest
from service.datasets.images.sources import IMAGE_COLUMN, Archive, ImageLimits, is_archive, path_loaders
from service.errors import BadUpload, InvalidRequest
from service.settings import Settings

# imagecontext (OpenCV, scikit-image) is imported inside the functions that use it: it
# costs ~0.3 s of start-up, which an API or CLI that never sees an image should not pay.
ON_IMAGE_ERROR = ("fail", "skip")
__all__ = ["HASH_COLUMN", "PATH_COLUMN", "ON_IMAGE_ERROR", "Prepared", "derive_images", "on_image_error",
           "prepare_file", "prepare_upload"]


@dataclass(frozen=True)
class Prepared:
    """The derived table to store instead of the upload, and what was derived."""

    path: Path
    filename: str
    roles: dict[str, str]
    metadata: dict[str, Any] = field(default_factory=dict)
    own_dir: bool = False
    cached: frozenset[str] = frozenset()  # image hashes this upload added to the cache

    def discard(self) -> None:
        """Remove the derived table (and its folder when it was made for it)."""
        self.path.unlink(missing_ok=True)
        if self.own_dir:
            shutil.rmtree(self.path.parent, ignore_errors=True)

    def refused(self, data_dir: Path) -> None:
        """The upload was refused after its images were derived: remove the cache entries it
        added, unless a stored dataset holds the same image."""
        forget_images(data_dir, self.cached)

    def schema(self, user_schema: Any) -> dict[str, Any]:
        """The user's schema with the derived columns' roles added (the user's roles win)."""
        columns = dict(self.roles)
        if isinstance(user_schema, dict):
            given = user_schema.get("columns", user_schema)
            if isinstance(given, dict):
                columns.update({k: v for k, v in given.items() if k != "on_image_error"})
        return {"columns": columns}


def _has_image_column(path: Path, filename: str) -> bool:
    name = filename.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            return IMAGE_COLUMN in pq.read_schema(path).names
        if name.endswith(".csv"):
            with open(path, encoding="utf-8-sig", errors="replace") as fh:
                header = fh.readline(1 << 16)
            return IMAGE_COLUMN in [c.strip().strip('"') for c in header.rstrip("\r\n").split(",")]
        if name.endswith((".jsonl", ".ndjson")):
            with open(path, encoding="utf-8", errors="replace") as fh:
                first = json.loads(fh.readline(1 << 20) or "{}")
            return isinstance(first, dict) and IMAGE_COLUMN in first
    except Exception:  # unreadable: leave it to the table reader, which names the fault
        return False
    return False


def on_image_error(user_schema: Any) -> str:
    """The schema's ``on_image_error`` (``fail`` unless it says ``skip``); 422 for anything else."""
    choice = user_schema.get("on_image_error", "fail") if isinstance(user_schema, dict) else "fail"
    if choice not in ON_IMAGE_ERROR:
        raise InvalidRequest(f"on_image_error must be 'fail' or 'skip', got {choice!r}.",
                             code="invalid_schema", details={"field": "on_image_error"})
    return choice


def prepare_upload(settings: Any, spooled: Path, *, filename: str, pack: Any, user_schema: Any,
                   tmp_dir: Path) -> Prepared | None:
    """The derived table for an upload that carries images, or ``None`` for a plain table."""
    archive = None
    if is_archive(filename):
        archive = Archive(spooled, filename, ImageLimits.from_settings(settings))
    elif not _has_image_column(spooled, filename):
        return None
    cache = RecordingCache(cache_dir(settings))
    scratch: list[Path] = []
    try:
        return _prepare(settings, spooled, filename, pack, user_schema, tmp_dir, archive, cache, scratch)
    except BaseException:
        forget_images(settings.data_dir, cache.created)
        raise
    finally:
        for path in scratch:
            path.unlink(missing_ok=True)
        if archive is not None:
            archive.close()


def _spool_member(archive: Archive, name: str, target: Path, upload: UploadLimits) -> None:
    """Write an archive member (the manifest) to ``target`` in 1 MB steps, bounded as an upload is."""
    try:
        with open(target, "wb") as out:
            for chunk in archive.stream(name, upload.max_decompressed_bytes):
                out.write(chunk)
    except ValueError as exc:
        if str(exc).startswith("too_many_bytes"):
            raise upload.too_much_data(f"{archive.filename}:{name}") from None
        raise BadUpload(f"Archive {archive.filename!r}: the manifest {name!r} cannot be read ({exc}).",
                        code="invalid_archive", details={"file": archive.filename, "member": name}) from None


def _read_manifest(path: Path, filename: str, settings: Any, limits: ImageLimits) -> tuple[pd.DataFrame, str]:
    """The manifest and its image column's kind (``paths``, ``bytes``, ``struct``), its rows
    counted against ``CONTEXTSHIFT_MAX_IMAGES`` while it is read (Parquet: from its footer)."""
    upload = UploadLimits.from_settings(settings)
    if filename.lower().endswith((".parquet", ".pq")):
        return read_parquet_manifest(path, filename, limits, upload)
    chunks, n_rows = [], 0
    for chunk in ingest.iter_chunks(path, filename, upload, chunk_cells=settings.upload_chunk_cells):
        n_rows += len(chunk)
        check_count(filename, n_rows, limits)  # stop reading at the first row past the limit
        chunks.append(chunk)
    frame = pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]
    if IMAGE_COLUMN not in frame.columns:
        raise BadUpload(f"File {filename!r} has no {IMAGE_COLUMN!r} column naming each row's image.",
                        code="no_image_column", details={"file": filename})
    return frame, "paths"


def _prepare(settings, spooled, filename, pack, user_schema, tmp_dir, archive, cache, scratch) -> Prepared:
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    limits = ImageLimits.from_settings(settings)
    on_error = on_image_error(user_schema)
    source = spooled
    if archive is not None:
        manifest_name = archive.manifest()
        source = tmp_dir / f"manifest-{uuid.uuid4().hex}{Path(manifest_name).suffix}"
        scratch.append(source)
        _spool_member(archive, manifest_name, source, UploadLimits.from_settings(settings))
        shown = f"{filename}:{manifest_name}"
    else:
        manifest_name = shown = filename
    frame, kind = _read_manifest(source, manifest_name, settings, limits)
    frame = frame.rename(columns=str)
    domain = getattr(pack, "pack", pack)  # the upload path passes a view holding the pack
    check_cells(shown, frame, domain, UploadLimits.from_settings(settings))
    if kind != "paths":
        loaders = ParquetImages(source, shown, limits, archive).loaders()
    elif archive is not None:
        loaders = [archive.loader(v) for v in frame[IMAGE_COLUMN]]
    else:
        loaders = path_loaders(frame[IMAGE_COLUMN], list(settings.data_roots), limits)
    with derivation_slot(settings):
        derived = derive_once(frame, loaders, keyed=kind == "paths", limits=limits, cache=cache, pack=domain,
                              workers=settings.image_workers or None)
    check_errors(shown, derived.errors, n_rows=len(frame), on_error=on_error)
    out = tmp_dir / f"images-{uuid.uuid4().hex}.parquet"
    derived.table.to_parquet(out, index=False)
    metadata = {"extractor_version": imagecontext.EXTRACTOR_VERSION, "source": shown,
                "n_images": len(derived.table), "derived_context": list(derived.added),
                "derived_columns": list(imagecontext.COLUMNS),
                "columns": column_sources([c for c in frame.columns if c != IMAGE_COLUMN], derived.added, domain),
                "skipped_rows": skipped_rows(derived.errors)}
    return Prepared(out, Path(filename).stem + ".parquet", derived_roles(derived.table.columns, derived.added),
                    metadata, cached=frozenset(cache.created))


def prepare_file(path: str | Path, *, pack: Any, user_schema: Any) -> Prepared | None:
    """:func:`prepare_upload` for a local file (the CLI): image paths may lie beside the
    manifest or inside ``CONTEXTSHIFT_DATA_ROOTS``; the derived table goes to a fresh
    temporary folder (:meth:`Prepared.discard` removes it)."""
    path = Path(path)
    if not path.is_file():
        return None
    base = Settings()
    settings = base.model_copy(update={"data_roots": [*base.data_roots, path.resolve().parent]})
    tmp_dir = Path(tempfile.mkdtemp(prefix="contextshift-images-"))
    try:
        prepared = prepare_upload(settings, path, filename=path.name, pack=pack,
                                  user_schema=user_schema, tmp_dir=tmp_dir)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    if prepared is None:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        return None
    return replace(prepared, own_dir=True)
