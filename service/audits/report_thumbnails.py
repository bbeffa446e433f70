"""The audit report re-rendered with thumbnails of production rows, when the audit asked for them.

The pipeline renders the report from the AuditResult; this adds, for an audit with
``report_thumbnails``, the thumbnails :mod:`reports.thumbnails` picks, read from the image cache
through each production row's ``image_sha256`` (:mod:`service.datasets.images.cache`). A production table
without image hashes (not an image upload) gets a note instead.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from reports.result import as_result
from reports.thumbnails import thumbnail_strips
from service.datasets.images.cache import read_thumbnail
from service.datasets.images.derive import HASH_COLUMN

__all__ = ["with_thumbnails"]


def with_thumbnails(outcome: Any, production: pd.DataFrame, settings: Any, *, options: dict, domain: str) -> Any:
    """``outcome`` with its HTML re-rendered with thumbnails (unchanged when not asked for)."""
    if not options.get("report_thumbnails"):
        return outcome
    from reports import render_html  # lazy: SciPy (~1.2 s); the audit worker imports this module at API start-up

    result = as_result(outcome.result)  # validated once, for the thumbnails' picks and the rendering
    if HASH_COLUMN in production.columns:
        hashes = production[HASH_COLUMN].to_numpy()
        strips, note = thumbnail_strips(result.limitations, production,
                                        lambda i: read_thumbnail(settings, hashes[i]),
                                        seed=int(options.get("seed") or 0), domain=domain,
                                        medical_ok=bool(options.get("report_thumbnails_medical")))
    else:
        strips, note = {}, "Thumbnails were asked for, but the production data was not uploaded with its images."
    return replace(outcome, html=render_html(result, thumbnails=strips, thumbnail_note=note))
