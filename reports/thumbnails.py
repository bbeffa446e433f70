"""Thumbnails of production rows inside the top limitations, for the HTML report.

A reader trusts "dim illumination" more after seeing the dim photos. For each of the top
:data:`TOP_LIMITATIONS` change limitations that select rows (a ``definition``), and then of the
top :data:`TOP_STANDING` standing ones (a slice that was already weak in the benchmark, e.g.
dim images, is about image rows too), up to
:data:`PER_LIMITATION` production rows inside it are drawn (seeded, so the same audit shows the
same rows) and shown as :data:`SIDE` px JPEG data URIs. The image bytes come through ``read``,
a callable the caller passes (row position in ``production`` -> encoded image bytes or
``None``): this module reads no files. The images together stay under :data:`MAX_PAYLOAD`
bytes, so the report stays well under 2 MB.

Off unless asked; for the dermatology (medical) domain, whose images are patient data, asked
for is not enough: :func:`thumbnail_strips` refuses with a note unless ``medical_ok``.
"""
from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from PIL import Image

from domains import evaluate
from reports.result import LimitationRecord

__all__ = ["MAX_PAYLOAD", "PER_LIMITATION", "SIDE", "TOP_LIMITATIONS", "TOP_STANDING", "MEDICAL_DOMAINS", "data_uri",
           "thumbnail_strips"]

TOP_LIMITATIONS = 5
TOP_STANDING = 3
PER_LIMITATION = 8
SIDE = 64
MAX_PAYLOAD = 600_000  # bytes of data URIs in all: 40 thumbnails of about 3 KB need a tenth of it
MEDICAL_DOMAINS = ("dermatology", "medical")
_QUALITY = 75

Reader = Callable[[int], "bytes | None"]


def data_uri(encoded: bytes, side: int = SIDE) -> str | None:
    """``encoded`` (any image Pillow reads) as a ``side`` px JPEG data URI; ``None`` if unreadable."""
    try:
        with Image.open(io.BytesIO(encoded)) as opened:
            opened.draft("RGB", (side, side))  # JPEG: decode at the reduced size directly
            image = opened.convert("RGB")
            image.thumbnail((side, side))
            buf = io.BytesIO()
            image.save(buf, "JPEG", quality=_QUALITY)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _rows(definition: str, production: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    try:
        inside = np.flatnonzero(evaluate(definition, production).to_numpy(dtype=bool))
    except (ValueError, KeyError, TypeError):
        return np.empty(0, dtype=int)
    if len(inside) > PER_LIMITATION:
        inside = np.sort(rng.choice(inside, PER_LIMITATION, replace=False))
    return inside


def thumbnail_strips(limitations: Sequence[LimitationRecord], production: pd.DataFrame, read: Reader, *,
                     seed: int = 0, domain: str | None = None, medical_ok: bool = False
                     ) -> tuple[dict[str, list[str]], str | None]:
    """``({limitation key: [data URI, ...]}, note)``: the strips, and why some are missing.

    Parameters
    ----------
    limitations : the ranked limitations (the AuditResult's ``limitations``)
    production : the production rows the definitions select from
    read : row position -> encoded image bytes (``None``: no image for that row)
    seed : the audit's seed; each limitation draws its rows from ``(seed, rank)``
    domain, medical_ok : a medical domain shows nothing unless ``medical_ok``
    """
    if domain in MEDICAL_DOMAINS and not medical_ok:
        return {}, ("Thumbnails were not shown: the dermatology domain's images are patient data; "
                    "set report_thumbnails_medical to show them.")
    with_rows = sorted((lim for lim in limitations if lim.definition), key=lambda lim: lim.rank)
    ranked = ([lim for lim in with_rows if lim.claim == "change"][:TOP_LIMITATIONS]
              + [lim for lim in with_rows if lim.claim != "change"][:TOP_STANDING])
    strips: dict[str, list[str]] = {}
    spent, capped = 0, False
    for lim in ranked:
        rng = np.random.default_rng([seed, lim.rank])
        uris = []
        for row in _rows(lim.definition or "", production, rng):  # every ranked one has a definition
            encoded = read(int(row))
            uri = data_uri(encoded) if encoded else None
            if uri is None:
                continue
            if spent + len(uri) > MAX_PAYLOAD:
                capped = True
                break
            spent += len(uri)
            uris.append(uri)
        if uris:
            strips[lim.key or str(lim.rank)] = uris
        if capped:
            break
    note = f"Thumbnails stopped at {spent // 1000} KB of images, to keep the report small." if capped else None
    return strips, note
