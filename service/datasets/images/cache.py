"""Derived values by image hash, and the small thumbnail and native crop kept beside them.

An upload's images are not kept: what a report may later show of a row's image is the
thumbnail (a 128 px JPEG) and a 1:1 crop of its native pixels (64 px, lossless PNG, about 10 KB:
:func:`imagecontext.detail_crop`, for findings about compression, noise or sharpness, which a
thumbnail shrinks away) stored with the image's derived values under
``data_dir/cache/images/<extractor version>/<sha[:2]>/<sha>.json``; the stored table keeps
each row's image hash (``image_sha256``, role ``ignore``) to find it.

Entries are removed with the data that holds them: :func:`forget_images` when an upload is
refused after deriving (the entries it created) and when a dataset is deleted (its images),
except an image a stored dataset still holds (its ``image_sha256`` column says so), in every
extractor version's folder.
"""
from __future__ import annotations

import base64
import io
import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from PIL import Image

__all__ = ["THUMBNAIL_KEY", "THUMBNAIL_SIDE", "DETAIL_KEY", "ImageCache", "dataset_image_hashes", "forget_images",
           "read_thumbnail", "read_detail", "thumbnail", "detail"]

THUMBNAIL_KEY = "image_thumbnail"  # beside the derived values in the cache, never a column
THUMBNAIL_SIDE = 128
DETAIL_KEY = "image_detail"  # the native crop, likewise


def thumbnail(rgb: np.ndarray) -> str:
    """A small JPEG of the image, base64: what a report may show of it (the upload is not kept)."""
    image = Image.fromarray(rgb)
    image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=80)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def detail(rgb: np.ndarray) -> str:
    """A 1:1 crop of the image's native pixels (:func:`imagecontext.detail_crop`) as a lossless PNG,
    base64: a re-encoding would add artefacts of its own to what the crop is there to show."""
    import imagecontext  # lazy, as in read_thumbnail

    buf = io.BytesIO()
    Image.fromarray(imagecontext.detail_crop(rgb)).save(buf, "PNG", optimize=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _read_cached(settings: Any, sha: Any, key: str) -> bytes | None:
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    if not isinstance(sha, str) or len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
        return None
    found = ImageCache(Path(settings.data_dir) / "cache" / "images" / imagecontext.EXTRACTOR_VERSION).get(sha)
    encoded = found[0].get(key) if found is not None else None
    return base64.b64decode(encoded) if isinstance(encoded, str) else None


def read_thumbnail(settings: Any, sha: Any) -> bytes | None:
    """The stored thumbnail (JPEG bytes) of the image with hash ``sha``, else ``None``."""
    return _read_cached(settings, sha, THUMBNAIL_KEY)


def read_detail(settings: Any, sha: Any) -> bytes | None:
    """The stored native crop (PNG bytes) of the image with hash ``sha``, else ``None``."""
    return _read_cached(settings, sha, DETAIL_KEY)


class ImageCache:
    """Derived values by image hash, one JSON file each, under ``directory``."""

    def __init__(self, directory: Path):
        self.directory = directory

    def _file(self, sha: str) -> Path:
        return self.directory / sha[:2] / f"{sha}.json"

    def get(self, sha: str) -> tuple[dict, list] | None:
        try:
            found = json.loads(self._file(sha).read_text())
            return found["values"], found["embedding"]
        except (OSError, ValueError, KeyError):
            return None

    def put(self, sha: str, values: dict, embedding: list) -> None:
        target = self._file(sha)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps({"values": values, "embedding": embedding}))
        os.replace(tmp, target)  # atomic: a concurrent reader sees all of it or none


_HASH = "image_sha256"  # the stored column naming each row's image (service.datasets.images.derive)
_HEX = frozenset("0123456789abcdef")


def _is_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


def dataset_image_hashes(folder: Path) -> set[str]:
    """The image hashes a stored dataset's parts hold (empty for a table without images)."""
    found: set[str] = set()
    for part in sorted(Path(folder).glob("*.parquet")) if Path(folder).is_dir() else [Path(folder)]:
        try:
            if _HASH in pq.read_schema(part).names:
                found.update(v for v in pq.read_table(part, columns=[_HASH]).column(0).to_pylist() if v)
        except (OSError, ValueError):  # a part that cannot be read holds nothing we can name
            continue
    return found


def forget_images(data_dir: Path, hashes: set[str] | frozenset[str]) -> int:
    """Remove the cached values and thumbnails of ``hashes`` that no stored dataset holds; how many."""
    if not hashes:
        return 0
    data_dir = Path(data_dir)
    held: set[str] = set()
    datasets = data_dir / "datasets"
    if datasets.is_dir():
        for folder in datasets.iterdir():
            held |= dataset_image_hashes(folder)
    removed = 0
    versions = [v for v in (data_dir / "cache" / "images").glob("*") if v.is_dir()]
    for sha in set(hashes) - held:
        if not _is_hash(sha):  # a stored column is the user's data: never a path to delete
            continue
        for version in versions:
            entry = ImageCache(version)._file(sha)
            if entry.exists():
                entry.unlink(missing_ok=True)
                removed += 1
    return removed
