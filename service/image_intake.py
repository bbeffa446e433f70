"""Images in an upload become derived columns beside the table's own, before it is stored.

:func:`prepare_upload` recognises an upload that carries images (see
:mod:`service.image_sources`), decodes each image once within the limits, derives its
context with :mod:`imagecontext` and writes ONE Parquet table: the manifest's columns
(minus ``image``), each row's image hash ``image_sha256`` (role ``ignore``: it finds the
row's thumbnail in the cache, :mod:`service.image_cache`), the derived
``img_*``/``face_*``/``skin_*`` values (role ``feature``),
the appearance embedding ``img_emb_*`` (role ``embedding``) and the domain pack's
mapped context columns (role ``context``; a column the user supplied wins). The usual
streamed upload then validates and stores that table, so nothing half-written is stored.

Derived values are cached by the image's SHA-256 under ``data_dir/cache/images/<version>``
and computed in a process pool (one worker per core) when there are enough images to pay
for it. A row whose image cannot be read or decoded is an error naming the row; the
upload answers 422 listing them, unless the schema field asks ``"on_image_error": "skip"``,
which keeps the other rows and records the skipped ones.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import tempfile
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from service.errors import BadUpload, InvalidRequest, ValidationFailed
from service.image_cache import THUMBNAIL_KEY, ImageCache, thumbnail
from service.image_origins import column_sources
from service.image_sources import (IMAGE_COLUMN, Archive, ImageLimits, cell_loaders, is_archive,
                                   path_loaders)

# imagecontext (OpenCV, scikit-image) is imported inside the functions that use it: it
# costs about a second of start-up, which an API or CLI that never sees an image should not pay.
POOL_MIN_IMAGES = 16  # below this, starting worker processes costs more than it saves
ON_IMAGE_ERROR = ("fail", "skip")
BATCH_PER_WORKER = 64  # encoded images held per worker between two batches
HASH_COLUMN = "image_sha256"  # kept (role ignore) so a report can show the row's thumbnail
PATH_COLUMN = "image_path"  # kept (role ignore) so the next-round plan can name the images to label


@dataclass(frozen=True)
class Prepared:
    """The derived table to store instead of the upload, and what was derived."""

    path: Path
    filename: str
    roles: dict[str, str]
    metadata: dict[str, Any] = field(default_factory=dict)
    own_dir: bool = False

    def discard(self) -> None:
        """Remove the derived table (and its folder when it was made for it)."""
        self.path.unlink(missing_ok=True)
        if self.own_dir:
            shutil.rmtree(self.path.parent, ignore_errors=True)

    def schema(self, user_schema: Any) -> dict[str, Any]:
        """The user's schema with the derived columns' roles added (the user's roles win)."""
        columns = dict(self.roles)
        if isinstance(user_schema, dict):
            given = user_schema.get("columns", user_schema)
            if isinstance(given, dict):
                columns.update({k: v for k, v in given.items() if k != "on_image_error"})
        return {"columns": columns}


def _derive(data: bytes, max_pixels: int, max_bytes: int) -> tuple[dict | None, list | None, str | None]:
    """Worker: ``(values, embedding, error)`` of one encoded image (picklable, no state)."""
    import cv2

    import imagecontext

    cv2.setNumThreads(1)  # one image per process: OpenCV's own threads would oversubscribe
    try:
        decoded = imagecontext.decode(data, max_pixels=max_pixels, max_bytes=max_bytes)
        values = {**imagecontext.extract(decoded), THUMBNAIL_KEY: thumbnail(decoded.rgb)}
        return values, imagecontext.embed(decoded).tolist(), None
    except imagecontext.ImageError as err:
        return None, None, str(err)


def derive_images(loaders: list, limits: ImageLimits, cache: ImageCache | None,
                  workers: int | None = None) -> tuple[list, list, dict[int, str]]:
    """Derived values and embeddings per row (``None`` where it failed) and errors by row.

    Images are read and derived :data:`BATCH_PER_WORKER` per worker at a time, so memory
    holds one batch of encoded images, not the upload's.
    """
    values: list = [None] * len(loaders)
    embeddings: list = [None] * len(loaders)
    row_hashes: list = [None] * len(loaders)
    errors: dict[int, str] = {}
    n_workers = workers or os.cpu_count() or 1
    pool = None
    if len(loaders) >= POOL_MIN_IMAGES and n_workers > 1:
        # spawn, not fork: a child forked from a process whose OpenCV/server threads hold locks
        # can hang on its first image (seen here: workers idle forever after a fork)
        pool = ProcessPoolExecutor(max_workers=n_workers, mp_context=multiprocessing.get_context("spawn"))
    batch = BATCH_PER_WORKER * n_workers
    try:
        for start in range(0, len(loaders), batch):
            todo: dict[str, list[int]] = {}
            payload: dict[str, bytes] = {}
            for i in range(start, min(start + batch, len(loaders))):
                try:
                    data = loaders[i]()
                except (ValueError, OSError) as err:
                    errors[i] = str(err)
                    continue
                sha = hashlib.sha256(data).hexdigest()
                hit = cache.get(sha) if cache is not None else None
                row_hashes[i] = sha
                if hit is not None:
                    values[i], embeddings[i] = hit
                else:
                    todo.setdefault(sha, []).append(i)
                    payload[sha] = data
            shas = list(todo)
            args = ([payload[s] for s in shas], [limits.max_pixels] * len(shas), [limits.max_bytes] * len(shas))
            if pool is not None and len(shas) > 1:
                results = list(pool.map(_derive, *args, chunksize=max(1, len(shas) // (4 * n_workers))))
            else:
                results = [_derive(*a) for a in zip(*args)]
            for sha, (vals, emb, err) in zip(shas, results):
                for i in todo[sha]:
                    if err is not None:
                        errors[i] = err
                    else:
                        values[i], embeddings[i] = vals, emb
                if err is None and cache is not None:
                    cache.put(sha, vals, emb)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    for i, sha in enumerate(row_hashes):
        if values[i] is not None:
            values[i] = {**values[i], HASH_COLUMN: sha}
    return values, embeddings, errors


def _read_manifest(path: Path, filename: str, settings: Any) -> pd.DataFrame:
    if filename.lower().endswith((".parquet", ".pq")):
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pandas()
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise BadUpload(f"File {filename!r} is not valid Parquet: {exc}", code="invalid_parquet",
                            details={"file": filename}) from None
    from service import ingest
    from service.bounded import UploadLimits

    return ingest.read_table(path, filename, UploadLimits.from_settings(settings))


def _has_image_column(path: Path, filename: str) -> bool:
    name = filename.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq

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


def _on_error(user_schema: Any) -> str:
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
    try:
        return _prepare(settings, spooled, filename, pack, user_schema, tmp_dir, archive)
    finally:
        if archive is not None:
            archive.close()


def _prepare(settings, spooled, filename, pack, user_schema, tmp_dir, archive) -> Prepared:
    import imagecontext

    limits = ImageLimits.from_settings(settings)
    on_error = _on_error(user_schema)
    if archive is not None:
        manifest_name = archive.manifest()
        manifest_path = tmp_dir / f"manifest-{uuid.uuid4().hex}{Path(manifest_name).suffix}"
        manifest_path.write_bytes(archive.read(manifest_name, settings.max_upload_bytes))
        try:
            frame = _read_manifest(manifest_path, manifest_name, settings)
        finally:
            manifest_path.unlink(missing_ok=True)
        shown = f"{filename}:{manifest_name}"
    else:
        frame, shown = _read_manifest(spooled, filename, settings), filename
    if IMAGE_COLUMN not in frame.columns:
        raise BadUpload(f"File {shown!r} has no {IMAGE_COLUMN!r} column naming each row's image.",
                        code="no_image_column", details={"file": shown})
    if len(frame) > limits.max_images:
        raise ValidationFailed(f"File {shown!r} has {len(frame)} images; the limit is {limits.max_images} "
                               "(CONTEXTSHIFT_MAX_IMAGES).", code="too_many_images",
                               details={"file": shown, "limit": limits.max_images})
    column = frame[IMAGE_COLUMN]
    sample = column.dropna().head(1).tolist()
    if archive is not None and not (sample and isinstance(sample[0], (bytes, dict))):
        loaders = [archive.loader(v) for v in column]
    elif sample and isinstance(sample[0], (bytes, bytearray, dict)):
        loaders = cell_loaders(column, limits, archive)
    else:
        loaders = path_loaders(column, list(settings.data_roots), limits)
    cache = ImageCache(Path(settings.data_dir) / "cache" / "images" / imagecontext.EXTRACTOR_VERSION)
    values, embeddings, errors = derive_images(loaders, limits, cache)
    if errors and on_error == "fail":
        rows = [{"row": i + 1, "error": errors[i]} for i in sorted(errors)]
        raise ValidationFailed(f"File {shown!r}: {len(errors)} image(s) could not be read; first: row "
                               f"{rows[0]['row']}: {rows[0]['error']}. Fix them, or send "
                               '"on_image_error": "skip" in the schema to keep the other rows.',
                               code="bad_images", details={"file": shown, "rows": rows[:1000]})
    keep = [i for i in range(len(frame)) if i not in errors]
    if not keep:
        raise ValidationFailed(f"File {shown!r}: no image could be read.", code="bad_images",
                               details={"file": shown, "rows": [{"row": i + 1, "error": e} for i, e in errors.items()]})
    table = _table(frame, keep, values, embeddings)
    added: tuple[str, ...] = ()
    domain = getattr(pack, "pack", pack)  # the upload path passes a view holding the pack
    if domain is not None and getattr(domain, "derived", None):
        table, added = domain.derive_context(table)
    out = tmp_dir / f"images-{uuid.uuid4().hex}.parquet"
    table.to_parquet(out, index=False)
    roles = {c: "feature" for c in imagecontext.COLUMNS}
    roles.update({c: "embedding" for c in imagecontext.embedding_columns()})
    roles.update({c: "context" for c in added})
    roles[HASH_COLUMN] = "ignore"
    if PATH_COLUMN in table.columns:
        roles[PATH_COLUMN] = "ignore"
    metadata = {"extractor_version": imagecontext.EXTRACTOR_VERSION, "source": shown,
                "n_images": len(keep), "derived_context": list(added),
                "derived_columns": list(imagecontext.COLUMNS),
                "columns": column_sources([c for c in frame.columns if c != IMAGE_COLUMN], added, domain),
                "skipped_rows": [{"row": i + 1, "error": errors[i]} for i in sorted(errors)][:1000]}
    return Prepared(out, Path(filename).stem + ".parquet", roles, metadata)


def _table(frame: pd.DataFrame, keep: list[int], values: list, embeddings: list) -> pd.DataFrame:
    import imagecontext

    base = frame.drop(columns=[IMAGE_COLUMN]).iloc[keep].reset_index(drop=True)
    derived = pd.DataFrame([values[i] for i in keep], columns=list(imagecontext.COLUMNS))
    for name in derived.columns:  # None in numeric columns: floats with NaN, not object
        if name not in ("img_format", "img_chroma_subsampling", "face_pose", "skin_ita_category", "skin_source"):
            derived[name] = pd.to_numeric(derived[name], errors="coerce").astype(float)
    emb = pd.DataFrame(np.asarray([embeddings[i] for i in keep], dtype=np.float32),
                       columns=list(imagecontext.embedding_columns()))
    derived[HASH_COLUMN] = [values[i].get(HASH_COLUMN) for i in keep]
    paths = [_image_path(frame[IMAGE_COLUMN].iat[i]) for i in keep]
    if any(p is not None for p in paths):
        derived[PATH_COLUMN] = paths
    derived = derived[[c for c in derived.columns if c not in base.columns]]  # the user's columns win
    emb = emb[[c for c in emb.columns if c not in base.columns]]
    return pd.concat([base, derived, emb], axis=1)


def _image_path(cell: Any) -> str | None:
    """Where a row's image came from: its path (or archive member), the path of a ``{bytes, path}``
    struct; None for bare bytes."""
    if isinstance(cell, str):
        return cell
    if isinstance(cell, dict) and isinstance(cell.get("path"), str):
        return cell["path"]
    return None


def prepare_file(path: str | Path, *, pack: Any, user_schema: Any) -> Prepared | None:
    """:func:`prepare_upload` for a local file (the CLI): image paths may lie beside the
    manifest or inside ``CONTEXTSHIFT_DATA_ROOTS``; the derived table goes to a fresh
    temporary folder (:meth:`Prepared.discard` removes it)."""
    from service.settings import Settings

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
