"""Derived values by image hash, and the small thumbnail kept beside them.

An upload's images are not kept: what a report may later show of a row's image is the
thumbnail (a 128 px JPEG) stored with the image's derived values under
``data_dir/cache/images/<extractor version>/<sha[:2]>/<sha>.json``; the stored table keeps
each row's image hash (``image_sha256``, role ``ignore``) to find it.
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
from PIL import Image

__all__ = ["THUMBNAIL_KEY", "THUMBNAIL_SIDE", "ImageCache", "read_thumbnail", "thumbnail"]

THUMBNAIL_KEY = "image_thumbnail"  # beside the derived values in the cache, never a column
THUMBNAIL_SIDE = 128


def thumbnail(rgb: np.ndarray) -> str:
    """A small JPEG of the image, base64: what a report may show of it (the upload is not kept)."""
    image = Image.fromarray(rgb)
    image.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=80)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def read_thumbnail(settings: Any, sha: Any) -> bytes | None:
    """The stored thumbnail (JPEG bytes) of the image with hash ``sha``, else ``None``."""
    import imagecontext  # lazy: imagecontext (OpenCV) ~0.3 s; the API starts without it, only images need it

    if not isinstance(sha, str) or len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
        return None
    found = ImageCache(Path(settings.data_dir) / "cache" / "images" / imagecontext.EXTRACTOR_VERSION).get(sha)
    encoded = found[0].get(THUMBNAIL_KEY) if found is not None else None
    return base64.b64decode(encoded) if isinstance(encoded, str) else None


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
