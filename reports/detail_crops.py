"""1:1 crops of native pixels beside the findings whose context lives in fine detail.

A thumbnail shrinks away what a compression, noise or sharpness finding is about: the 8x8 JPEG
grid, ringing, grain, blur. For each of the limitations :mod:`reports.thumbnails` shows (the top
change and standing ones that select rows) whose definition names such a context — one of
``detail_columns``, the image columns read on native pixels and the pack's contexts derived from
them — up to :data:`PER_LIMITATION` production rows inside it are drawn (seeded) and their
stored native crops embedded as they are (lossless PNG, no re-encoding: a JPEG of a JPEG's blocks
would add blocks of its own), together under :data:`MAX_PAYLOAD` bytes. Bytes come through
``read`` (row position -> PNG bytes or ``None``): this module reads no files. The same medical
refusal as the thumbnails applies.

>>> names_detail('compression == "heavy"', ("compression", "img_noise"))
True
>>> names_detail('skin_tone in ["brown"]', ("compression",))
False
"""
from __future__ import annotations

import base64
import re
from collections.abc import Callable, Collection, Sequence

import numpy as np
import pandas as pd

from domains import evaluate
from reports.result import LimitationRecord
from reports.thumbnails import MEDICAL_DOMAINS, TOP_LIMITATIONS, TOP_STANDING

__all__ = ["MAX_PAYLOAD", "PER_LIMITATION", "detail_strips", "names_detail"]

PER_LIMITATION = 4  # a crop is ~10 KB against a thumbnail's ~3: fewer rows, each in full detail
MAX_PAYLOAD = 400_000
_PNG = b"\x89PNG\r\n\x1a\n"


def names_detail(definition: str | None, detail_columns: Collection[str]) -> bool:
    """Whether a slice definition selects rows by one of ``detail_columns``."""
    if not definition or not detail_columns:
        return False
    pattern = r"\b(" + "|".join(re.escape(c) for c in detail_columns) + r")\b"
    return re.search(pattern, definition) is not None


def detail_strips(limitations: Sequence[LimitationRecord], production: pd.DataFrame,
                  read: Callable[[int], "bytes | None"], detail_columns: Collection[str], *,
                  seed: int = 0, domain: str | None = None, medical_ok: bool = False) -> dict[str, list[str]]:
    """``{limitation key: [PNG data URI, ...]}`` of native crops, for the limitations about fine detail.

    Parameters
    ----------
    limitations : the ranked limitations (the AuditResult's ``limitations``)
    production : the production rows the definitions select from
    read : row position -> the stored crop's PNG bytes (``None``: none stored)
    detail_columns : the columns (and derived contexts) whose findings get crops
    seed, domain, medical_ok : as :func:`reports.thumbnails.thumbnail_strips`
    """
    if domain in MEDICAL_DOMAINS and not medical_ok:
        return {}
    with_rows = sorted((lim for lim in limitations if lim.definition), key=lambda lim: lim.rank)
    ranked = ([lim for lim in with_rows if lim.claim == "change"][:TOP_LIMITATIONS]
              + [lim for lim in with_rows if lim.claim != "change"][:TOP_STANDING])
    strips: dict[str, list[str]] = {}
    spent = 0
    for lim in ranked:
        definition = lim.definition
        if definition is None or not names_detail(definition, detail_columns):
            continue
        try:
            inside = np.flatnonzero(evaluate(definition, production).to_numpy(dtype=bool))
        except (ValueError, KeyError, TypeError):
            continue
        rng = np.random.default_rng([seed, lim.rank, 1])  # not the thumbnails' draw: other rows, other looks
        if len(inside) > PER_LIMITATION:
            inside = np.sort(rng.choice(inside, PER_LIMITATION, replace=False))
        uris: list[str] = []
        for row in inside:
            encoded = read(int(row))
            if not encoded or not encoded.startswith(_PNG):
                continue
            uri = "data:image/png;base64," + base64.b64encode(encoded).decode("ascii")
            if spent + len(uri) > MAX_PAYLOAD:
                return strips | ({lim.key or str(lim.rank): uris} if uris else {})
            spent += len(uri)
            uris.append(uri)
        if uris:
            strips[lim.key or str(lim.rank)] = uris
    return strips
