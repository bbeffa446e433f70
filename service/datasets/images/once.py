"""An upload's images derived once each, within a bounded number of derivations at a time.

* :func:`check_cells`: the table an upload will store has the manifest's columns plus about 150
  per image (values, embedding, hash, path, the pack's contexts); rows x those columns must fit
  ``CONTEXTSHIFT_MAX_CELLS``, checked before any image is read, not after all were derived.
* :func:`derive_once`: a manifest that names the same path or member in many rows reads and
  derives it once; the rows then share its values (10⁵ rows naming one 50 MB member cost one
  read, not 10⁵).
* :func:`derivation_slot`: at most ``CONTEXTSHIFT_MAX_IMAGE_UPLOADS`` uploads derive at once,
  each with at most ``CONTEXTSHIFT_IMAGE_WORKERS`` child processes; another waits for a slot up to
  ``CONTEXTSHIFT_IMAGE_UPLOAD_WAIT_S`` (stopping if its client hangs up), then gets 429.
* :class:`RecordingCache`: the image cache, remembering which entries this upload created, so a
  refused upload can remove them; storing each result is also where a hang-up of the client is
  noticed while the pool derives.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Iterator

import numpy as np
import pandas as pd

from service.datasets.bounded import UploadLimits
from service.datasets.images.cache import ImageCache
from service.datasets.images.derive import HASH_COLUMN, PATH_COLUMN, DerivedFrame, derive_frame
from service.datasets.images.sources import IMAGE_COLUMN, ImageLimits
from service.disconnect import check_client
from service.errors import QueueFull, UploadTooLarge

__all__ = ["RecordingCache", "check_cells", "derivation_slot", "derive_once"]

_slots_guard = threading.Lock()
_slots: dict[int, threading.BoundedSemaphore] = {}
RETRY_AFTER_S = 30


class RecordingCache(ImageCache):
    """An :class:`ImageCache` that records the hashes it stored (``created``)."""

    def __init__(self, directory) -> None:
        super().__init__(directory)
        self.created: set[str] = set()

    def put(self, sha: str, values: dict, embedding: list) -> None:
        check_client()  # once per image derived: a hang-up stops the pool's work here
        super().put(sha, values, embedding)
        self.created.add(sha)


def stored_columns(frame: pd.DataFrame, pack: Any) -> int:
    """Columns of the table an image upload stores: the manifest's own (less ``image``), every
    derived value and embedding dimension, hash and path, and the pack's derived contexts."""
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    own = {str(c) for c in frame.columns if c != IMAGE_COLUMN}
    derived = set(imagecontext.COLUMNS) | set(imagecontext.embedding_columns()) | {HASH_COLUMN, PATH_COLUMN}
    contexts = {c for c in (getattr(pack, "derived", None) or {}) if c not in own}
    return len(own | derived) + len(contexts - derived)


def check_cells(shown: str, frame: pd.DataFrame, pack: Any, upload: UploadLimits) -> None:
    """413 ``too_many_cells`` when rows x stored columns exceed ``CONTEXTSHIFT_MAX_CELLS``."""
    n_columns = stored_columns(frame, pack)
    if len(frame) * n_columns <= upload.max_cells:
        return
    most = upload.max_cells // n_columns
    raise UploadTooLarge(
        f"File {shown!r}: {len(frame):,} images x {n_columns} columns (the images add about "
        f"{n_columns - frame.shape[1] + 1} each) = {len(frame) * n_columns:,} cells, more than "
        f"CONTEXTSHIFT_MAX_CELLS ({upload.max_cells:,}); send at most {most:,} images per upload, or raise "
        "the limit. Nothing was derived.", code="too_many_cells",
        details={"file": shown, "limit": "CONTEXTSHIFT_MAX_CELLS", "max_cells": upload.max_cells,
                 "images": len(frame), "columns": n_columns, "max_images_for_these_columns": most})


def _semaphore(n: int) -> threading.BoundedSemaphore:
    with _slots_guard:
        return _slots.setdefault(n, threading.BoundedSemaphore(n))


@contextlib.contextmanager
def derivation_slot(settings: Any) -> Iterator[None]:
    """Hold one of the ``CONTEXTSHIFT_MAX_IMAGE_UPLOADS`` derivation slots of this process."""
    slots = _semaphore(int(settings.max_image_uploads))
    deadline = time.monotonic() + float(settings.image_upload_wait_s)
    while not slots.acquire(timeout=min(1.0, max(0.0, deadline - time.monotonic()))):
        check_client()
        if time.monotonic() >= deadline:
            raise QueueFull(f"{settings.max_image_uploads} image upload(s) are being derived already "
                            "(CONTEXTSHIFT_MAX_IMAGE_UPLOADS); try again shortly.", retry_after_s=RETRY_AFTER_S,
                            code="image_uploads_busy",
                            details={"limit": "CONTEXTSHIFT_MAX_IMAGE_UPLOADS",
                                     "max_image_uploads": settings.max_image_uploads})
    try:
        yield
    finally:
        slots.release()


def derive_once(frame: pd.DataFrame, loaders: list, *, keyed: bool, limits: ImageLimits, cache: ImageCache,
                pack: Any, workers: int | None) -> DerivedFrame:
    """:func:`service.datasets.images.derive.derive_frame`, reading each distinct ``image`` value
    once when ``keyed`` (paths and member names); rows keep their own other columns."""
    if not keyed:
        return derive_frame(frame, loaders, limits=limits, cache=cache, pack=pack, workers=workers)
    codes, uniques = pd.factorize(frame[IMAGE_COLUMN].astype(object), use_na_sentinel=False)
    if len(uniques) == len(frame):
        return derive_frame(frame, loaders, limits=limits, cache=cache, pack=pack, workers=workers)
    first = np.unique(codes, return_index=True)[1]  # the first row naming each distinct image
    distinct = derive_frame(frame.iloc[first].reset_index(drop=True), [loaders[i] for i in first],
                            limits=limits, cache=cache, pack=None, workers=workers)
    failed = distinct.errors
    position = {d: j for j, d in enumerate(d for d in range(len(first)) if d not in failed)}
    rows = [i for i, code in enumerate(codes) if code not in failed]
    errors = {i: failed[code] for i, code in enumerate(codes) if code in failed}
    own = [c for c in frame.columns if c != IMAGE_COLUMN]
    image_columns = [c for c in distinct.table.columns if c not in own]
    table = pd.concat([frame[own].iloc[rows].reset_index(drop=True),
                       distinct.table[image_columns].iloc[[position[codes[i]] for i in rows]].reset_index(drop=True)],
                      axis=1)
    added: tuple[str, ...] = ()
    if pack is not None and getattr(pack, "derived", None) and len(table):
        table, added = pack.derive_context(table)
    return DerivedFrame(table, tuple(added), errors)
