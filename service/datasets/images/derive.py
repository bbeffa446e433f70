"""Images to derived columns: the one extraction path of an upload and of a registered dataset.

:func:`derive_images` reads each row's image through its loader, decodes it once within the
limits and derives its context with :mod:`imagecontext`, reusing the cache by image hash
(:mod:`service.datasets.images.cache`): an image already seen is not decoded again. :func:`derive_frame`
turns a manifest (one loader per row) into the table an audit reads: the manifest's columns
minus ``image``, the row's image hash and path (role ``ignore``), the derived values (role
``feature``), the appearance embedding (role ``embedding``) and the domain pack's mapped context
columns (role ``context``; a column the user supplied wins). The upload calls it on the whole
manifest in the service (:mod:`service.datasets.images.intake`); the Dask engine on each partition of a
registered dataset, on the workers (:mod:`service.audits.engine.images`).
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from service.datasets.images.cache import DETAIL_KEY, THUMBNAIL_KEY, ImageCache, detail, thumbnail
from service.datasets.images.sources import IMAGE_COLUMN, ImageLimits
from service.errors import ValidationFailed

# imagecontext (OpenCV, scikit-image) is imported inside the functions that use it: it
# costs ~0.3 s of start-up, which an API or CLI that never sees an image should not pay.
POOL_MIN_IMAGES = 16  # below this, starting worker processes costs more than it saves
BATCH_PER_WORKER = 64  # encoded images held per worker between two batches
HASH_COLUMN = "image_sha256"  # kept (role ignore) so a report can show the row's thumbnail
PATH_COLUMN = "image_path"  # kept (role ignore) so the next-round plan can name the images to label


def _derive(data: bytes, max_pixels: int, max_bytes: int) -> tuple[dict | None, list | None, str | None]:
    """Worker: ``(values, embedding, error)`` of one encoded image (picklable, no state)."""
    import cv2  # lazy: OpenCV, with imagecontext below: only the derivation workers need them

    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    cv2.setNumThreads(1)  # one image per process: OpenCV's own threads would oversubscribe
    try:
        decoded = imagecontext.decode(data, max_pixels=max_pixels, max_bytes=max_bytes)
        values = {**imagecontext.extract(decoded), THUMBNAIL_KEY: thumbnail(decoded.rgb),
                  DETAIL_KEY: detail(decoded.rgb)}
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
            for sha, (vals, emb, failure) in zip(shas, results):
                for i in todo[sha]:
                    if failure is not None:
                        errors[i] = failure
                    else:
                        values[i], embeddings[i] = vals, emb
                # derived, with no error: _derive gives the values and the embedding, or neither
                if vals is not None and emb is not None and cache is not None:
                    cache.put(sha, vals, emb)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    for i, sha in enumerate(row_hashes):
        if values[i] is not None:
            values[i] = {**values[i], HASH_COLUMN: sha}
    return values, embeddings, errors


@dataclass(frozen=True)
class DerivedFrame:
    """A manifest with its images replaced by derived columns, and the rows that failed."""

    table: pd.DataFrame  # the rows whose image was read, ``image`` dropped, derived columns added
    added: tuple[str, ...]  # pack context columns derived from image values
    errors: dict[int, str]  # row position in the manifest -> why its image failed


def derive_frame(frame: pd.DataFrame, loaders: list, *, limits: ImageLimits, cache: ImageCache | None,
                 pack: Any, workers: int | None = None) -> DerivedFrame:
    """Derive every row's image of ``frame`` (one loader per row) into its table: what an upload
    stores, and what the Dask engine computes per partition of a registered dataset."""
    values, embeddings, errors = derive_images(loaders, limits, cache, workers)
    keep = [i for i in range(len(frame)) if i not in errors]
    if not keep:  # no image was read: nothing to tabulate (check_errors refuses the upload)
        return DerivedFrame(frame.drop(columns=[IMAGE_COLUMN]).iloc[:0], (), errors)
    table = _table(frame, keep, values, embeddings)
    added: tuple[str, ...] = ()
    if pack is not None and getattr(pack, "derived", None):
        table, added = pack.derive_context(table)
    return DerivedFrame(table, tuple(added), errors)


def cache_dir(settings: Any) -> Path:
    """Where derived values are cached by image hash (one folder per extractor version)."""
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    return Path(settings.data_dir) / "cache" / "images" / imagecontext.EXTRACTOR_VERSION


def derived_roles(columns: Any, added: tuple[str, ...]) -> dict[str, str]:
    """Roles of the columns an image table gains (the user's schema may still override them)."""
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    roles = {c: "feature" for c in imagecontext.COLUMNS}
    roles.update({c: "embedding" for c in imagecontext.embedding_columns()})
    roles.update({c: "context" for c in added})
    roles[HASH_COLUMN] = "ignore"
    if PATH_COLUMN in columns:
        roles[PATH_COLUMN] = "ignore"
    return roles


def check_count(shown: str, n_images: int, limits: ImageLimits) -> None:
    if n_images > limits.max_images:
        raise ValidationFailed(f"File {shown!r} has {n_images} images; the limit is {limits.max_images} "
                               "(CONTEXTSHIFT_MAX_IMAGES).", code="too_many_images",
                               details={"file": shown, "limit": limits.max_images})


def check_errors(shown: str, errors: dict[int, str], *, n_rows: int, on_error: str) -> None:
    """422 ``bad_images`` when an image failed and ``on_error`` is ``fail``, or when none was read."""
    if errors and on_error == "fail":
        rows = skipped_rows(errors)
        raise ValidationFailed(f"File {shown!r}: {len(errors)} image(s) could not be read; first: row "
                               f"{rows[0]['row']}: {rows[0]['error']}. Fix them, or send "
                               '"on_image_error": "skip" in the schema to keep the other rows.',
                               code="bad_images", details={"file": shown, "rows": rows})
    if len(errors) >= n_rows:
        raise ValidationFailed(f"File {shown!r}: no image could be read.", code="bad_images",
                               details={"file": shown, "rows": skipped_rows(errors)})


def skipped_rows(errors: dict[int, str]) -> list[dict[str, Any]]:
    """Rows (1-based) whose image failed, with why; the first 1000."""
    return [{"row": i + 1, "error": errors[i]} for i in sorted(errors)[:1000]]


def _table(frame: pd.DataFrame, keep: list[int], values: list, embeddings: list) -> pd.DataFrame:
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    base = frame.drop(columns=[IMAGE_COLUMN]).iloc[keep].reset_index(drop=True)
    derived = pd.DataFrame([values[i] for i in keep], columns=list(imagecontext.COLUMNS))
    for name in derived.columns:  # None in numeric columns: floats with NaN, not object
        if name not in imagecontext.TEXT_COLUMNS:
            derived[name] = pd.to_numeric(derived[name], errors="coerce").astype(float)
    emb = pd.DataFrame(np.asarray([embeddings[i] for i in keep], dtype=np.float32),
                       columns=list(imagecontext.embedding_columns()))
    derived[HASH_COLUMN] = [values[i].get(HASH_COLUMN) for i in keep]
    paths = [_image_path(frame[IMAGE_COLUMN].iat[i]) for i in keep]
    if any(p is not None for p in paths):
        derived[PATH_COLUMN] = paths
    derived = derived[[c for c in derived.columns if c not in base.columns]]  # the user's columns win
    emb = emb.iloc[:, :0] if any(c.startswith(imagecontext.EMBEDDING_PREFIX) for c in base) else emb
    return pd.concat([base, derived, emb], axis=1)


def _image_path(cell: Any) -> str | None:
    """Where a row's image came from: its path (or archive member), the path of a ``{bytes, path}``
    struct; None for bare bytes."""
    if isinstance(cell, str):
        return cell
    if isinstance(cell, dict) and isinstance(cell.get("path"), str):
        return cell["path"]
    return None
