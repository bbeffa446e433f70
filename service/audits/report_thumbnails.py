"""The audit report re-rendered with what the images add: thumbnails of production rows, when the
audit asked for them, and beside every skin-tone finding (HTML and Markdown) the images' brightness and cast.

The pipeline renders the report from the AuditResult; this adds, for an audit with
``report_thumbnails``, the thumbnails :mod:`reports.thumbnails` picks (and, beside a finding about
compression, noise or sharpness, :mod:`reports.detail_crops`' 1:1 native crops), read from the image cache
through each production row's ``image_sha256`` (:mod:`service.datasets.images.cache`). A production table
without image hashes (not an image upload) gets a note instead. Whatever the options, a limitation
whose rows are chosen by skin tone gets :mod:`reports.skin_context`'s note when the production rows
carry the image-derived columns.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from reports.detail_crops import detail_strips
from reports.result import as_result
from reports.skin_context import skin_tone_notes
from reports.thumbnails import thumbnail_strips
from service.datasets.images.cache import read_detail, read_thumbnail
from service.datasets.images.derive import HASH_COLUMN

__all__ = ["with_thumbnails"]


def with_thumbnails(outcome: Any, production: pd.DataFrame, settings: Any, *, options: dict, domain: str) -> Any:
    """``outcome`` with its HTML re-rendered with thumbnails and skin-tone notes (unchanged when
    neither applies)."""
    asked = bool(options.get("report_thumbnails"))
    if not asked and "img_brightness" not in production.columns:
        return outcome
    result = as_result(outcome.result)  # validated once, for the thumbnails' picks and the rendering
    notes = skin_tone_notes(result.limitations, production)
    if not asked and not notes:
        return outcome
    from reports import render_html, render_markdown  # lazy: SciPy (~1.2 s); the worker imports this at start-up

    if notes:  # the Markdown report states the same note beside each skin-tone finding
        outcome = replace(outcome, markdown=render_markdown(result, image_notes=notes))
    if not asked:
        return replace(outcome, html=render_html(result, image_notes=notes))
    if HASH_COLUMN in production.columns:
        hashes = production[HASH_COLUMN].to_numpy()
        shown = {"seed": int(options.get("seed") or 0), "domain": domain,
                 "medical_ok": bool(options.get("report_thumbnails_medical"))}
        strips, note = thumbnail_strips(result.limitations, production,
                                        lambda i: read_thumbnail(settings, hashes[i]), **shown)
        crops = detail_strips(result.limitations, production, lambda i: read_detail(settings, hashes[i]),
                              _detail_contexts(result), **shown)
    else:
        strips, crops = {}, {}
        note = "Thumbnails were asked for, but the production data was not uploaded with its images."
    return replace(outcome, html=render_html(result, thumbnails=strips, thumbnail_note=note, image_notes=notes,
                                             crops=crops))


def _detail_contexts(result: Any) -> tuple[str, ...]:
    """The columns read on native pixels, and the contexts the pack derived from them (the deepfake
    pack's ``compression`` from ``img_jpeg_quality``): the findings a 1:1 crop illustrates."""
    import imagecontext  # lazy: OpenCV (~0.3 s), only for an image audit that asked for thumbnails

    derived = result.production.derived_context or {}
    return imagecontext.DETAIL_COLUMNS + tuple(
        name for name, origin in derived.items()
        if isinstance(origin, dict) and origin.get("from") in imagecontext.DETAIL_COLUMNS)
